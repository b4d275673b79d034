"""Reads of the claims app, and the access helpers for conversations."""

from __future__ import annotations

import re
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


@dataclass(frozen=True)
class Cursor:
    """Where a client's last read ended: the conversation's change number.

    ``moment`` is set instead for a time cursor (``c<microseconds>``) handed
    out by earlier releases; it is still honoured, by time.
    """

    seq: int = 0
    moment: datetime | None = None


def cursor_encode(seq: int) -> str:
    """An opaque cursor: the number of the newest change the client was shown.

    Fixed width, so cursors also compare as strings (and above the ``c``
    time cursors of earlier releases).
    """
    return f"s{seq:012d}"


def cursor_decode(cursor: str) -> Cursor:
    if re.fullmatch(r"s[0-9]{1,17}", cursor):
        return Cursor(seq=int(cursor[1:]))
    if re.fullmatch(r"c[0-9]{1,17}", cursor):
        return Cursor(moment=datetime.fromtimestamp(int(cursor[1:]) / 1_000_000, tz=UTC))
    raise CursorError("Pass back a cursor this API returned, such as s000000000012.")


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
    conversation: Conversation, *, after: Cursor | None = None
) -> ConversationView:
    """Messages in order (customer, agent, staff) and pending questions, newer than ``after``.

    A turn's customer message and agent reply share the turn's time; a staff
    answer is at the moment it was given. Pending questions are listed when
    they changed after ``after`` (opened, answered, dismissed).

    "Newer" is by the conversation's change number, not by time: a turn that
    started before a staff answer but was stored after it is still newer than
    a cursor taken in between. The number is read first and only changes up
    to it are shown, so one stored while this reads waits for the next poll.
    """
    upto = Conversation.objects.values_list("change_seq", flat=True).get(pk=conversation.pk)

    def newer(seq: int, moment: datetime | None) -> bool:
        if seq > upto:
            return False
        if after is None:
            return True
        if after.moment is not None:
            return moment is not None and moment > after.moment
        return seq > after.seq

    turns = list(
        conversation.turns.filter(seq__lte=upto)
        .order_by("created_at", "pk")
        .select_related("pending_question")
    )
    entries = list(
        conversation.pending_questions.filter(seq__lte=upto).order_by("created_at", "pk")
    )
    timeline: list[tuple[datetime, int, dict]] = []
    shown_turns = []
    for turn in turns:
        if not newer(turn.seq, turn.created_at):
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
        if not newer(entry.seq, entry.updated_at):
            continue
        message = staff_message(entry)
        if message and entry.closed_at is not None:
            timeline.append((entry.closed_at, 2, message))
        pending.append(pending_question_public(entry))
    timeline.sort(key=lambda item: (item[0], item[1]))
    return ConversationView(
        conversation=conversation,
        turns=shown_turns,
        messages=[message for _, _, message in timeline],
        pending_questions=pending,
        cursor=cursor_encode(max(upto, after.seq if after else 0)),
    )


# --- the pending-answers queue as staff work it ---------------------------------

AGE_BUCKETS: tuple[tuple[str, float | None], ...] = (
    ("under 4 h", 4),
    ("4 to 24 h", 24),
    ("1 to 3 days", 72),
    ("3 to 7 days", 168),
    ("over a week", None),
)


def answer_deadlines() -> dict[str, int]:
    """Hours to answer, per reason: the queue lead's settings over the defaults."""
    from claims.models import DEFAULT_DEADLINE_HOURS, AnswerDeadline

    hours = {
        reason: DEFAULT_DEADLINE_HOURS.get(reason, 72) for reason in PendingQuestion.Reason.values
    }
    hours.update(dict(AnswerDeadline.objects.values_list("reason", "hours")))
    return hours


def pending_questions_with_due(queryset=None):
    """Entries annotated with ``due_at`` (created + the reason's deadline)."""
    from datetime import timedelta

    from django.db.models import Case, DateTimeField, ExpressionWrapper, F, Value, When

    queryset = PendingQuestion.objects.all() if queryset is None else queryset
    whens = [
        When(
            reason=reason,
            then=ExpressionWrapper(
                F("created_at") + Value(timedelta(hours=hours)), output_field=DateTimeField()
            ),
        )
        for reason, hours in answer_deadlines().items()
    ]
    return queryset.annotate(due_at=Case(*whens, output_field=DateTimeField()))


def pending_question_is_overdue(entry, *, now=None) -> bool:
    now = now or timezone.now()
    return (
        entry.status == PendingQuestion.Status.OPEN
        and getattr(entry, "due_at", None) is not None
        and entry.due_at < now
    )


@dataclass(frozen=True)
class QueueOverview:
    """Open entries counted by line, reason and age bucket, and the oldest ones."""

    buckets: tuple[str, ...]
    lines: list[dict]  # {line, rows: [{reason, label, hours, counts: [..], total, overdue}]}
    oldest: list[PendingQuestion]
    open_total: int
    overdue_total: int


def queue_overview(*, now=None, oldest_limit: int = 50) -> QueueOverview:
    now = now or timezone.now()
    deadlines = answer_deadlines()
    labels = dict(PendingQuestion.Reason.choices)
    open_entries = list(
        pending_questions_with_due(PendingQuestion.objects.filter(status="open"))
        .select_related("assignee")
        .order_by("created_at", "pk")
    )
    table: dict[str, dict[str, dict]] = {}
    overdue_total = 0
    for entry in open_entries:
        age_hours = (now - entry.created_at).total_seconds() / 3600
        index = next(
            i for i, (_, upper) in enumerate(AGE_BUCKETS) if upper is None or age_hours < upper
        )
        line = entry.line or "unconfirmed"
        row = table.setdefault(line, {}).setdefault(
            entry.reason,
            {
                "reason": entry.reason,
                "label": labels.get(entry.reason, entry.reason),
                "hours": deadlines.get(entry.reason),
                "counts": [0] * len(AGE_BUCKETS),
                "total": 0,
                "overdue": 0,
            },
        )
        row["counts"][index] += 1
        row["total"] += 1
        entry.overdue = pending_question_is_overdue(entry, now=now)
        if entry.overdue:
            row["overdue"] += 1
            overdue_total += 1
    lines = [
        {
            "line": line,
            # Shortest deadline first: complaints lead every table.
            "rows": sorted(rows.values(), key=lambda r: (r["hours"] or 0, r["reason"])),
        }
        for line, rows in sorted(table.items())
    ]
    return QueueOverview(
        buckets=tuple(name for name, _ in AGE_BUCKETS),
        lines=lines,
        oldest=open_entries[:oldest_limit],
        open_total=len(open_entries),
        overdue_total=overdue_total,
    )


@dataclass(frozen=True)
class ClauseRef:
    clause_id: str
    title: str
    pk: int | None  # the clause row in the version the turn used; None if gone


@dataclass(frozen=True)
class Evidence:
    """A turn's evidence as a person reads it."""

    turn: Turn | None
    message: str
    schedule: list[tuple[str, str]]
    wording: str
    wording_version_id: int | None
    wording_reason: str
    directory: list[ClauseRef]
    requested: list[ClauseRef]
    returned: list[ClauseRef]
    not_found: list[str]
    cited: list[ClauseRef]
    guard_findings: list[dict]
    limitations: list[str]
    reply: str


def pending_question_evidence(entry: PendingQuestion) -> Evidence:
    from knowledge.models import Clause

    turn = Turn.objects.filter(pending_question=entry).first()
    if turn is None:
        return Evidence(
            None, entry.question, [], entry.evidence.get("wording", ""), None,
            entry.evidence.get("wording_reason", ""), [], [], [], [], [], [], [], "",
        )  # fmt: skip
    pks: dict[str, int] = {}
    titles = {clause_id: title for clause_id, title in turn.directory}
    if turn.wording_version_id:
        for pk, clause_id, title in Clause.objects.filter(
            version_id=turn.wording_version_id
        ).values_list("pk", "clause_id", "title"):
            pks[clause_id] = pk
            titles.setdefault(clause_id, title)

    def refs(ids) -> list[ClauseRef]:
        return [ClauseRef(i, titles.get(i, ""), pks.get(i)) for i in ids]

    summary = turn.schedule_summary or {}

    def plain(value) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in value.items())
        if isinstance(value, list):
            return ", ".join(str(v).replace("_", " ") for v in value)
        return str(value)

    schedule = [
        (key.replace("_", " "), plain(value))
        for key, value in summary.items()
        if value not in (None, "", [], {})
    ]
    return Evidence(
        turn=turn,
        message=turn.message,
        schedule=schedule,
        wording=f"{turn.wording_document} {turn.wording_label}".strip(),
        wording_version_id=turn.wording_version_id,
        wording_reason=turn.wording_reason,
        directory=refs([clause_id for clause_id, _ in turn.directory]),
        requested=refs(turn.requested_ids),
        returned=refs(turn.returned_ids),
        not_found=list(turn.not_found_ids),
        cited=refs(turn.cited_ids),
        guard_findings=list(turn.guard_findings),
        limitations=list(turn.limitations),
        reply=turn.reply,
    )
