"""Writes of the claims app: conversations, turn records, the pending-answers queue."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from claims.agent.cards import CardRetrieval
from claims.agent.types import PENDING_REFERENCE
from claims.masking import name_digest, personal_data_mask, personal_data_scan
from claims.models import Conversation, PendingQuestion, ReplyRating, Turn
from knowledge.services.cards import cards_rating_count, cards_turn_count
from northwind.errors import PermissionDenied, ServiceError

if TYPE_CHECKING:
    from claims.agent.types import TurnOutcome


logger = logging.getLogger(__name__)


class PendingQuestionError(ServiceError):
    """A queue action that is not allowed in the entry's current state."""

    code = "pending_question_refused"


def conversation_line_confirm(*, conversation: Conversation) -> Conversation:
    """Confirm the conversation's line from the schedule of its policy number.

    An unknown number or a policy system that is down leaves the line
    unconfirmed: the first message's turn looks again and says why.
    """
    if not conversation.policy_number:
        return conversation
    from schedules.lookup import ScheduleSourceError, schedule_lookup

    try:
        lookup = schedule_lookup(conversation.policy_number)
    except ScheduleSourceError:
        return conversation
    if lookup.kind == "found" and conversation.line != lookup.evidence.line:
        conversation.line = lookup.evidence.line
        conversation.save(update_fields=["line", "updated_at"])
    return conversation


def reply_rate(*, turn: Turn, rating: str, comment: str = "") -> ReplyRating:
    """Record (or replace) the customer's rating of one reply; the comment is masked."""
    if rating not in ReplyRating.Rating.values:
        raise ServiceError(f"A rating is one of {', '.join(ReplyRating.Rating.values)}.")
    masked = personal_data_mask(comment.strip()) if comment.strip() else ""
    helpful = rating == ReplyRating.Rating.HELPFUL
    with transaction.atomic():
        existing = ReplyRating.objects.select_for_update().filter(turn=turn).first()
        if existing is None:
            entry = ReplyRating(turn=turn, rating=rating, comment=masked)
            entry._change_reason = "Rated by the client"
            entry.save()
            # The answer cards the reply cited share its rating (seed 001 §6.3).
            cards_rating_count(card_ids=turn.card_cited_ids, helpful=helpful, previous=None)
            return entry
        previous = existing.rating == ReplyRating.Rating.HELPFUL
        existing.rating = rating
        existing.comment = masked
        existing._change_reason = "Rating changed by the client"
        existing.save(update_fields=["rating", "comment", "updated_at"])
        cards_rating_count(card_ids=turn.card_cited_ids, helpful=helpful, previous=previous)
        return existing


def conversation_change_next(conversation_id: int, *, also: dict | None = None) -> int:
    """The next change number of a conversation, for a turn or a queue change.

    Call inside the transaction that stores the change: the UPDATE holds the
    conversation's row lock until commit, so numbers become visible in the
    order they were given and a client's ``?after=`` cursor never skips one.
    ``also`` names other fields of the conversation to write in the same
    UPDATE (a turn's confirmed policy, line and name digests), so a turn
    writes its conversation once.
    """
    quote = connection.ops.quote_name
    sets, params = ["change_seq = change_seq + 1"], []
    for name, value in (also or {}).items():
        field = Conversation._meta.get_field(name)
        sets.append(f"{quote(field.column)} = %s")  # type: ignore[union-attr]
        params.append(field.get_db_prep_save(value, connection))  # type: ignore[union-attr]
    table = quote(Conversation._meta.db_table)
    with connection.cursor() as cursor:  # one query: UPDATE … RETURNING (PostgreSQL, SQLite)
        cursor.execute(
            f"UPDATE {table} SET {', '.join(sets)} WHERE id = %s RETURNING change_seq",
            [*params, conversation_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise Conversation.DoesNotExist(f"There is no conversation {conversation_id}.")
    return int(row[0])


def pending_question_open(
    *,
    conversation_id: int,
    question: str,
    reason: str,
    line: str,
    policy_number: str,
    evidence: dict,
    conversation_updates: dict | None = None,
) -> PendingQuestion:
    """Put a question in the pending-answers queue (the record a reply may name).

    ``conversation_updates`` are written to the conversation in the same
    UPDATE that takes the entry's change number.
    """
    entry = PendingQuestion(
        conversation_id=conversation_id,
        question=question,
        reason=reason,
        line=line or "",
        policy_number=policy_number or "",
        evidence=evidence,
        seq=conversation_change_next(conversation_id, also=conversation_updates),
    )
    entry._change_reason = f"Opened by the claim agent: {reason}"
    entry.save()
    return entry


def _locked_open(entry_id: int) -> PendingQuestion:
    entry = PendingQuestion.objects.select_for_update().filter(pk=entry_id).first()
    if entry is None:
        raise PendingQuestionError(f"There is no pending question PQ-{entry_id}.")
    if entry.status != PendingQuestion.Status.OPEN:
        raise PendingQuestionError(
            f"{entry.reference} is {entry.status}; only open entries change."
        )
    return entry


def _check_queue_permission(user) -> None:
    if not user.has_perm("claims.change_pendingquestion"):
        raise PermissionDenied("You do not have permission to work the pending-answers queue.")


def _check_lead_permission(user) -> None:
    if not user.has_perm("claims.reassign_pendingquestion"):
        raise PermissionDenied("Only a queue lead can reassign entries.")


@transaction.atomic
def pending_question_release(*, entry_id: int, acting_user) -> PendingQuestion:
    """Give a taken entry back to the queue (its agent, or a queue lead, may)."""
    _check_queue_permission(acting_user)
    entry = _locked_open(entry_id)
    if entry.assignee_id is None:
        raise PendingQuestionError(f"{entry.reference} is not taken by anyone.")
    if entry.assignee_id != acting_user.pk and not acting_user.has_perm(
        "claims.reassign_pendingquestion"
    ):
        raise PermissionDenied(
            f"Only the agent who took {entry.reference} or a queue lead can release it."
        )
    previous = entry.assignee
    entry.assignee = None
    entry.taken_at = None
    by = "" if previous.pk == acting_user.pk else f" (was {previous})"
    entry._change_reason = f"Released by {acting_user}{by}"
    entry.save(update_fields=["assignee", "taken_at"])
    return entry


@transaction.atomic
def pending_question_reassign(*, entry_id: int, acting_user, assignee_id: int) -> PendingQuestion:
    """A queue lead hands an open entry to a named queue agent."""
    _check_queue_permission(acting_user)
    _check_lead_permission(acting_user)
    User = get_user_model()
    target = User.objects.filter(pk=assignee_id, is_active=True).first()
    if target is None or not target.has_perm("claims.change_pendingquestion"):
        raise PendingQuestionError("Entries can only go to an active queue agent.")
    entry = _locked_open(entry_id)
    if entry.assignee_id == target.pk:
        return entry
    previous = entry.assignee
    entry.assignee = target
    entry.taken_at = timezone.now()
    entry._change_reason = f"Reassigned to {target} by {acting_user}" + (
        f" (was {previous})" if previous else ""
    )
    entry.save(update_fields=["assignee", "taken_at"])
    return entry


@transaction.atomic
def pending_question_take(*, entry_id: int, acting_user) -> PendingQuestion:
    """Assign an open entry to the acting queue agent."""
    _check_queue_permission(acting_user)
    entry = _locked_open(entry_id)
    if entry.assignee_id and entry.assignee_id != acting_user.pk:
        raise PendingQuestionError(f"{entry.reference} is already taken by {entry.assignee}.")
    if entry.assignee_id == acting_user.pk:
        return entry  # already yours: nothing changes, no history row
    entry.assignee = acting_user
    entry.taken_at = timezone.now()
    entry._change_reason = f"Taken by {acting_user}"
    # updated_at is left alone: a take changes nothing a client sees.
    entry.save(update_fields=["assignee", "taken_at"])
    return entry


@transaction.atomic
def pending_question_answer(
    *, entry_id: int, acting_user, answer: str, proposed_content: str = ""
) -> PendingQuestion:
    """Record the staff answer; optionally propose it as new wording content."""
    _check_queue_permission(acting_user)
    if not answer.strip():
        raise PendingQuestionError("An answer cannot be empty.")
    entry = _locked_open(entry_id)
    if entry.assignee_id and entry.assignee_id != acting_user.pk:
        raise PendingQuestionError(f"{entry.reference} is taken by {entry.assignee}.")
    entry.assignee = acting_user
    entry.staff_answer = answer.strip()
    entry.proposed_content = proposed_content.strip()
    entry.status = PendingQuestion.Status.ANSWERED
    entry.closed_at = timezone.now()
    entry.closed_by = acting_user
    entry.seq = conversation_change_next(entry.conversation_id)
    entry._change_reason = f"Answered by {acting_user}"
    entry.save(
        update_fields=[
            "assignee",
            "staff_answer",
            "proposed_content",
            "status",
            "closed_at",
            "closed_by",
            "seq",
            "updated_at",
        ]
    )
    _client_notify(entry, "pending_question.answered")
    return entry


@transaction.atomic
def pending_question_dismiss(*, entry_id: int, acting_user, reason: str) -> PendingQuestion:
    """Close an entry that needs no answer (a duplicate, spam), with a reason."""
    _check_queue_permission(acting_user)
    if not reason.strip():
        raise PendingQuestionError("Say why the entry is dismissed.")
    entry = _locked_open(entry_id)
    if entry.assignee_id and entry.assignee_id != acting_user.pk:
        raise PendingQuestionError(f"{entry.reference} is taken by {entry.assignee}.")
    entry.assignee = acting_user
    entry.status = PendingQuestion.Status.DISMISSED
    entry.dismiss_reason = reason.strip()
    entry.closed_at = timezone.now()
    entry.closed_by = acting_user
    entry.seq = conversation_change_next(entry.conversation_id)
    entry._change_reason = f"Dismissed by {acting_user}: {reason.strip()}"
    entry.save(
        update_fields=[
            "assignee",
            "status",
            "dismiss_reason",
            "closed_at",
            "closed_by",
            "seq",
            "updated_at",
        ]
    )
    _client_notify(entry, "pending_question.dismissed")
    return entry


def _client_notify(entry: PendingQuestion, event_type: str) -> None:
    """Tell the conversation's API client, through its webhooks, inside the caller's transaction."""
    from claims.selectors import pending_question_public, staff_message
    from webhooks.services import webhook_events_emit

    data = {
        "conversation_id": entry.conversation_id,
        "pending_question": pending_question_public(entry),
        "message": staff_message(entry),
    }
    client_id = Conversation.objects.filter(pk=entry.conversation_id).values_list(
        "client_id", flat=True
    )[0]
    webhook_events_emit(client_id=client_id, event_type=event_type, data=data)


def conversation_message_mask(
    *,
    conversation_id: int,
    text: str,
    names: tuple[str, ...] = (),
    known_digests: tuple[str, ...] | None = None,
) -> tuple[str, list[str] | None]:
    """Mask a customer's message with what the conversation has learnt.

    Names on the schedule and names the customer gave in earlier messages are
    masked wherever they appear; the latter are remembered only as keyed
    digests (``Conversation.name_digests``). Returns the masked text and the
    new digest list, or None when nothing new was learnt. ``known_digests``
    are the conversation's digests if the caller has loaded them (the
    endpoint has: one query fewer per turn); None reads them.
    """
    known = (
        list(known_digests)
        if known_digests is not None
        else Conversation.objects.filter(pk=conversation_id)
        .values_list("name_digests", flat=True)
        .first()
    ) or []
    key = settings.SECRET_KEY
    result = personal_data_scan(text, names=names, known_digests=frozenset(known), digest_key=key)
    learnt = {
        name_digest(word, key=key)
        for name in result.names
        for word in name.split()
        if len(word.strip("'\u2019-.,")) >= 2
    }
    if learnt <= set(known):
        return result.text, None
    return result.text, sorted(set(known) | learnt)


def turn_record_save(*, outcome: TurnOutcome) -> Turn:
    """Store a turn: its pending question (if any), run record and confirmed facts.

    One transaction: the queue entry the reply names and the record that
    links to it exist together or not at all. The draft named the entry by
    ``PENDING_REFERENCE``; its reference is written into the reply here.
    """
    facts, wording, selection = outcome.facts, outcome.wording, outcome.selection
    request = outcome.request
    names = (facts.schedule.holder_name,) if facts.schedule else ()
    masked_message, digests = conversation_message_mask(
        conversation_id=request.conversation_id,
        text=request.message,
        names=names,
        known_digests=request.conversation_name_digests,
    )
    reason = outcome.draft.pending_reason
    cards = outcome.cards or CardRetrieval()
    returned_cards = [c.card_id for c in cards.returned]
    updates: dict = {}
    if facts.schedule is not None and (
        facts.policy_number != request.conversation_policy_number
        or facts.line != request.conversation_line
    ):
        updates = {"policy_number": facts.policy_number, "line": facts.line}
    if digests is not None:
        updates["name_digests"] = digests
    if updates:  # written with the change number: one UPDATE of the conversation per turn
        updates["updated_at"] = timezone.now()
    reply_sent = outcome.checked.text
    with transaction.atomic():
        pending = None
        if reason is not None:
            pending = pending_question_open(
                conversation_id=request.conversation_id,
                question=masked_message,
                reason=reason.value,
                line=facts.line or "",
                policy_number=facts.policy_number or "",
                evidence={
                    "guidance_status": outcome.draft.status.value,
                    "wording": f"{wording.document_id} {wording.label}".strip(),
                    "wording_reason": wording.reason,
                    "returned_ids": [c.clause_id for c in outcome.returned],
                    "fetch_detail": outcome.fetch_detail,
                    "trace_id": request.trace_id,
                    **(
                        {"tool_calls": [_tool_brief(r) for r in outcome.tool_results]}
                        if outcome.tool_results
                        else {}
                    ),
                },
                conversation_updates=updates,
            )
            reply_sent = reply_sent.replace(PENDING_REFERENCE, pending.reference)
        turn = Turn.objects.create(
            conversation_id=request.conversation_id,
            seq=(
                pending.seq
                if pending
                else conversation_change_next(request.conversation_id, also=updates)
            ),
            trace_id=request.trace_id,
            message=masked_message,
            reply=_codes_masked(reply_sent, outcome.tool_results),
            guidance_status=outcome.draft.status.value,
            line=facts.line or "",
            policy_number=facts.policy_number or "",
            wording_version_id=wording.version_id,
            wording_document=wording.document_id,
            wording_label=wording.label,
            wording_reason=wording.reason,
            directory=[list(entry) for entry in outcome.directory_entries],
            selection_raw=list(selection.raw) if selection else [],
            selection_rejected=selection.rejected if selection else "",
            requested_ids=list(selection.requested) if selection else [],
            returned_ids=[c.clause_id for c in outcome.returned],
            not_found_ids=list(outcome.not_found),
            cited_ids=list(outcome.checked.cited_ids),
            card_requested_ids=list(cards.requested),
            card_returned_ids=returned_cards,
            card_cited_ids=list(outcome.checked.cited_cards),
            card_conflicts=[list(pair) for pair in cards.conflicts],
            guard_findings=[
                {"rule": f.rule, "action": f.action, "excerpt": f.excerpt}
                for f in outcome.checked.findings
            ],
            limitations=list(outcome.draft.limitations),
            facts=facts.public(),
            schedule_summary=facts.schedule.masked_summary() if facts.schedule else None,
            timings_ms=outcome.timings_ms,
            model_name=outcome.model_name,
            model_fallback=outcome.model_fallback,
            draft_writer=outcome.draft.writer,
            pending_question=pending,
        )
        _tool_calls_save(turn, outcome, pending)
        if returned_cards:
            cards_turn_count(
                returned=returned_cards,
                cited=list(outcome.checked.cited_cards),
                conflict_losers=[loser for _, loser in cards.conflicts],
                at=turn.created_at,
            )
    turn.reply_sent = reply_sent  # what the customer reads, the one-time code included
    return turn


def _tool_brief(result) -> dict:
    return {"name": result.name, "risk": result.risk.value, "status": result.status}


def _codes_masked(text: str, results) -> str:
    """The reply as stored: a confirmation code is shown once and kept only as a hash."""
    for result in results:
        code = result.output.get("confirmation_code") if result.output else None
        if code:
            text = text.replace(code, "[code]")
    return text


def _tool_calls_save(turn: Turn, outcome: TurnOutcome, pending: PendingQuestion | None) -> None:
    """The audit rows of the turn's tool calls, and what an L3 call records."""
    from claims.agent.tool_set import confirmation_expiry, confirmation_hash
    from claims.models import ContactUpdateRequest, ToolCall

    request = outcome.request
    rows = []
    for result in outcome.tool_results:
        rows.append(
            ToolCall(
                turn=turn,
                conversation_id=request.conversation_id,
                trace_id=request.trace_id,
                call_id=result.call_id,
                name=result.name,
                risk=result.risk.value,
                status=result.status,
                requested_by=result.requested_by[:64],
                arguments_summary=result.arguments_summary,
                detail=result.detail[:1000],
                duration_ms=result.duration_ms,
            )
        )
        if result.name != "contact.update_request":
            continue
        if result.status == "needs_confirmation":
            ContactUpdateRequest.objects.create(
                conversation_id=request.conversation_id,
                policy_number=outcome.facts.policy_number or "",
                field=result.output["field"],
                new_value=result.output["new_value"],
                token_hash=confirmation_hash(
                    request.conversation_id, result.output["confirmation_code"]
                ),
                expires_at=confirmation_expiry(request.received_at),
            )
        elif result.status == "ok":
            # One use only: the row moves out of "awaiting" under its lock.
            changed = ContactUpdateRequest.objects.filter(
                pk=result.output["request_id"],
                status=ContactUpdateRequest.Status.AWAITING_CONFIRMATION,
            ).update(
                status=ContactUpdateRequest.Status.CONFIRMED,
                confirmed_at=timezone.now(),
                pending_question=pending,
            )
            if changed != 1:  # a second message with the same code, at the same moment
                logger.warning("contact update %s was confirmed twice", result.output)
    if rows:
        ToolCall.objects.bulk_create(rows)
