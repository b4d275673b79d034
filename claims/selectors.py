"""Reads of the claims app, and the access helpers for conversations."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.http import Http404
from django.utils import timezone

from claims.models import Conversation, PendingQuestion, Turn


def access_conversation(user, conversation_id: int, *, lock: bool = False) -> Conversation:
    """The conversation if ``user`` owns it; 404 otherwise (never a 403 that leaks ids)."""
    queryset = Conversation.objects.filter(pk=conversation_id, client_id=user.pk)
    if lock:
        queryset = queryset.select_for_update()
    conversation = queryset.first()
    if conversation is None:
        raise Http404("No such conversation.")
    return conversation


def access_turn(user, conversation_id: int, turn_id: int) -> Turn:
    """A turn of a conversation ``user`` owns; 404 otherwise."""
    conversation = access_conversation(user, conversation_id)
    turn = Turn.objects.filter(pk=turn_id, conversation=conversation).first()
    if turn is None:
        raise Http404("No such message in this conversation.")
    return turn


# --- the conversation as a client reads it -------------------------------------


class CursorError(ValueError):
    """A cursor the API did not hand out."""


def cursor_encode(moment: datetime) -> str:
    """An opaque cursor: the moment of the newest thing the client was shown."""
    return f"c{int(moment.timestamp() * 1_000_000)}"


def cursor_decode(cursor: str) -> datetime:
    if not cursor.startswith("c") or not cursor[1:].isdigit() or len(cursor) > 20:
        raise CursorError("Pass back a cursor this API returned, such as c1764550000000000.")
    return datetime.fromtimestamp(int(cursor[1:]) / 1_000_000, tz=UTC)


def _iso(moment: datetime) -> str:
    """The API's time format: local time with its offset, as DRF writes it."""
    return timezone.localtime(moment).isoformat()


def pending_question_public(entry: PendingQuestion) -> dict:
    """A pending question as the client sees it: no staff names, no evidence."""
    answered = entry.status == PendingQuestion.Status.ANSWERED
    return {
        "reference": entry.reference,
        "status": entry.status,
        "reason": entry.reason,
        "created_at": _iso(entry.created_at),
        "answered_at": _iso(entry.closed_at) if answered and entry.closed_at else None,
        "updated_at": _iso(entry.updated_at),
    }


def staff_message(entry: PendingQuestion) -> dict | None:
    """The staff answer as a message of the conversation (role only, never a name)."""
    if entry.status != PendingQuestion.Status.ANSWERED:
        return None
    return {
        "role": "staff",
        "text": entry.staff_answer,
        "at": _iso(entry.closed_at),
        "pending_reference": entry.reference,
    }


@dataclass(frozen=True)
class ConversationView:
    conversation: Conversation
    turns: list[Turn]
    messages: list[dict]
    pending_questions: list[dict]
    cursor: str


def conversation_view(
    conversation: Conversation, *, after: datetime | None = None
) -> ConversationView:
    """Messages in order (customer, agent, staff) and pending questions, newer than ``after``.

    A turn's customer message and agent reply share the turn's time; a staff
    answer is at the moment it was given. Pending questions are listed when
    they changed after ``after`` (opened, answered, dismissed).
    """
    turns = list(conversation.turns.order_by("created_at", "pk").select_related("pending_question"))
    entries = list(conversation.pending_questions.order_by("created_at", "pk"))
    newest = [conversation.created_at]
    timeline: list[tuple[datetime, int, dict]] = []
    shown_turns = []
    for turn in turns:
        newest.append(turn.created_at)
        if after is not None and turn.created_at <= after:
            continue
        shown_turns.append(turn)
        reference = turn.pending_question.reference if turn.pending_question else None
        at = _iso(turn.created_at)
        customer = {"role": "customer", "text": turn.message, "at": at, "turn_id": turn.pk}
        agent = {"role": "agent", "text": turn.reply, "at": at, "turn_id": turn.pk}
        if reference:
            agent["pending_reference"] = reference
        timeline.append((turn.created_at, 0, customer))
        timeline.append((turn.created_at, 1, agent))
    pending = []
    for entry in entries:
        newest.append(entry.updated_at)
        message = staff_message(entry)
        if message and (after is None or entry.closed_at > after):
            timeline.append((entry.closed_at, 2, message))
        if after is None or entry.updated_at > after:
            pending.append(pending_question_public(entry))
    timeline.sort(key=lambda item: (item[0], item[1]))
    return ConversationView(
        conversation=conversation,
        turns=shown_turns,
        messages=[message for _, _, message in timeline],
        pending_questions=pending,
        cursor=cursor_encode(max(newest + ([after] if after else []))),
    )
