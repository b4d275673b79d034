"""Writes of the claims app: conversations, turn records, the pending-answers queue."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from claims.models import Conversation, PendingQuestion, Turn


class PendingQuestionError(Exception):
    """A queue action that is not allowed in the entry's current state."""


def conversation_create(*, client, channel: str = "web", policy_number: str = "") -> Conversation:
    return Conversation.objects.create(
        client=client, channel=channel, policy_number=(policy_number or "").upper()
    )


def pending_question_open(
    *,
    conversation_id: int,
    question: str,
    reason: str,
    line: str,
    policy_number: str,
    evidence: dict,
) -> PendingQuestion:
    """Put a question in the pending-answers queue (the record a reply may name)."""
    entry = PendingQuestion(
        conversation_id=conversation_id,
        question=question,
        reason=reason,
        line=line or "",
        policy_number=policy_number or "",
        evidence=evidence,
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
        raise PendingQuestionError("You do not have permission to work the pending-answers queue.")


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
    entry._change_reason = f"Answered by {acting_user}"
    entry.save(
        update_fields=[
            "assignee",
            "staff_answer",
            "proposed_content",
            "status",
            "closed_at",
            "closed_by",
        ]
    )
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
    entry._change_reason = f"Dismissed by {acting_user}: {reason.strip()}"
    entry.save(update_fields=["assignee", "status", "dismiss_reason", "closed_at", "closed_by"])
    return entry


def turn_record_save(*, fields: dict, conversation_updates: dict, pending_id: int | None) -> Turn:
    """Store the run record and the conversation's confirmed facts, atomically."""
    with transaction.atomic():
        turn = Turn.objects.create(**fields, pending_question_id=pending_id)
        if conversation_updates:
            Conversation.objects.filter(pk=fields["conversation_id"]).update(
                **conversation_updates, updated_at=timezone.now()
            )
    return turn
