"""Step 1 of a turn: the facts the conversation has confirmed, and the schedule."""

from __future__ import annotations

from datetime import date

from claims.agent.types import Facts, PriorTurn, TurnRequest
from claims.models import Turn
from schedules.lookup import ScheduleSourceError, schedule_lookup

HISTORY_TURNS = 3


def turn_facts_load(request: TurnRequest, *, question_date: date) -> Facts:
    """Load the conversation's policy number, look up its schedule, and read history.

    The line is confirmed only by a found schedule. An unknown number is *no
    evidence*: nothing is guessed from it.
    """
    given = request.policy_number or request.conversation_policy_number or ""
    policy_number = given.strip().upper()
    # A follow-up reads only turns about the same policy: "and the petrol?"
    # after switching from a motor policy to a home one borrows nothing.
    history = tuple(
        PriorTurn(
            message=row["message"],
            cited_ids=tuple(row["cited_ids"]),
            returned_ids=tuple(row["returned_ids"]),
        )
        for row in reversed(
            Turn.objects.filter(
                conversation_id=request.conversation_id, policy_number=policy_number
            )
            .order_by("-created_at", "-pk")
            .values("message", "cited_ids", "returned_ids")[:HISTORY_TURNS]
        )
    )
    if not policy_number:
        return Facts(
            None, "not_given", None, "No policy number given yet.", None, question_date, history
        )
    try:
        lookup = schedule_lookup(policy_number)
    except ScheduleSourceError as exc:
        # An outage of the policy system is not "no such policy": say so, guess nothing.
        return Facts(policy_number, "unavailable", None, str(exc), None, question_date, history)
    evidence = lookup.evidence if lookup.kind == "found" else None
    return Facts(
        policy_number=policy_number,
        schedule_kind=lookup.kind,
        schedule=evidence,
        schedule_reason=lookup.reason,
        line=evidence.line if evidence is not None else None,
        question_date=question_date,
        history=history,
    )
