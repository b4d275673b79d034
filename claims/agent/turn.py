"""One claim agent turn, from the customer's message to the recorded reply.

Read ``turn_run`` top to bottom: facts → route → directory → select →
resolve → assess → compose → guard → record. Each step is a small function
taking and returning frozen dataclasses (``claims.agent.types``). Only the
facts, route and record steps touch the database; only the select and
compose steps may call a model; only the resolve step reads object storage.
No transaction is open across a model call or a storage read: the record
step writes the pending question and the run record in one transaction.

``on_step`` is the one hook: it is called when each step starts and ends
(``StepEvent``), and the per-step timings come from the same mechanism.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from claims.agent import registry
from claims.agent.cards import EMPTY as NO_CARDS
from claims.agent.cards import (
    CardContext,
    CardIndex,
    CardRetrieval,
    IndexedCard,
    cards_fit,
    cards_retrieve,
    query_vector_start,
    served_index,
)
from claims.agent.compose import fallback_reply, has_content, turn_assess
from claims.agent.decision_model import message_vector
from claims.agent.facts import turn_facts_load
from claims.agent.guard import clause_ids_in, draft_guard
from claims.agent.intents import customer_intent, decision_reason
from claims.agent.selection_schema import selection_validate
from claims.agent.spelling import Reading
from claims.agent.tool_replies import status_backings, tool_answered
from claims.agent.tool_rules import RULES, rules_plan
from claims.agent.tools import ToolContext, tool_execute
from claims.agent.types import (
    MAX_CLAUSES,
    PENDING_REFERENCE,
    Assessment,
    CheckedDraft,
    ClauseChooser,
    ClauseModelError,
    ComposeInputs,
    Draft,
    DraftWriter,
    Facts,
    GuidanceStatus,
    Risk,
    Selection,
    SelectionContext,
    StepEvent,
    ToolPlanner,
    ToolRequest,
    ToolResult,
    TurnOutcome,
    TurnRequest,
    TurnResult,
    WordingChoice,
)
from claims.agent.wording import turn_wording_choose, wording_speller
from claims.models import Turn
from claims.services import turn_record_save
from knowledge.clause_store import ClauseFetch, ClauseStore

# What each step is doing, in the customer's words (a streaming client shows them).
STEP_LABELS = {
    "facts": "Looking up your schedule",
    "route": "Finding the wording that applies to your policy",
    "directory": "Listing the clauses of your wording",
    "select": "Choosing the clauses that answer your question",
    "cards": "Looking for a staff answer to your question",
    "resolve": "Reading your policy wording",
    "assess": "Checking what can be answered",
    "plan": "Working out what you are asking for",
    "tool": "Running a tool",
    "compose": "Writing the reply",
    "guard": "Checking the reply",
    "record": "Saving the record",
}

TOOL_LABELS = {
    "claim.status": "Looking up your claim",
    "schedule.summary": "Looking up your schedule",
    "card.search": "Looking for an answer card",
    "queue.open": "Asking our staff",
    "contact.update_request": "Preparing your change request",
}
MAX_TOOL_CALLS = 4

OnStep = Callable[[StepEvent], None]

if TYPE_CHECKING:
    from knowledge.selectors import ClauseDirectory

logger = logging.getLogger(__name__)


class Steps:
    """Runs the hook around each step and keeps the step timings (ms)."""

    def __init__(self, on_step: OnStep | None) -> None:
        self.on_step = on_step
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(
        self, name: str, *, label: str | None = None, start: dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Time the block as step ``name``; what it puts in the dict is the end payload."""
        label = label or STEP_LABELS[name]
        if self.on_step is not None:
            self.on_step(StepEvent(step=name, label=label, phase="start", payload=start or {}))
        payload: dict[str, Any] = {}
        started = time.perf_counter()
        yield payload
        duration = round((time.perf_counter() - started) * 1000, 3)
        self.timings[name] = round(self.timings.get(name, 0.0) + duration, 3)
        if self.on_step is not None:
            self.on_step(
                StepEvent(
                    step=name, label=label, phase="end", duration_ms=duration, payload=payload
                )
            )


def turn_run(
    request: TurnRequest,
    *,
    chooser: ClauseChooser,
    writer: DraftWriter,
    store: ClauseStore,
    on_step: OnStep | None = None,
    planner: ToolPlanner | None = None,
) -> TurnResult:
    """Run one turn. ``planner`` is a model that may ask for tools (≤ L2, the L3
    draft) besides the offline rules, which always run."""
    steps = Steps(on_step)
    started = time.perf_counter()
    written = request  # what the customer wrote: the record keeps it (see "route")
    content = has_content(request.message) or bool(clause_ids_in(request.message))
    if content:
        query_vector_start(request.message)

    with steps.step("facts") as payload:
        facts = turn_facts_load(request, question_date=timezone.localdate(request.received_at))
        payload["schedule"] = facts.schedule_kind
    with steps.step("route") as payload:
        wording = turn_wording_choose(facts, pinned_version_id=request.pinned_version_id)
        payload["wording"] = f"{wording.document_id} {wording.label}".strip() or wording.kind
        # From here on the turn reads the message with its slips of the keyboard
        # read as the wording's words ("windsreen": windscreen); the record keeps
        # what the customer wrote.
        reading = message_read(request, wording) if content else None
        if reading is not None and reading.corrections:
            payload["read_as"] = [list(pair) for pair in reading.corrections]
            request = replace(request, message=reading.text)
            query_vector_start(request.message)

    directory = selection = fetch = None
    cards = NO_CARDS
    # "hi", "ok thanks" (no content): nothing to look up, no directory shown,
    # nothing for the queue.
    context = tool_context(request, facts, wording, store)
    tool_results: tuple[ToolResult, ...] = ()
    if content:
        with steps.step("plan") as payload:
            planned = plan_step(request, facts, planner)
            payload["tools"] = [r.name for r in planned]
        for planned_request in planned:
            tool_results += (tool_step(steps, planned_request, context),)

    if wording.kind == "routed" and content and not tool_answered(tool_results):
        from knowledge.selectors import clause_directory

        # A routed wording names its version (wording_route sets both together).
        assert wording.version_id is not None
        with steps.step("directory") as payload:
            directory = clause_directory(
                version_id=wording.version_id, ingested_at=wording.ingested_at
            )
            payload["clauses"] = len(directory.entries)
        with steps.step("cards") as payload:
            card_index = served_index()
            cards = cards_step(request, facts, card_index)
            payload["card_ids"] = [c.card_id for c in cards.returned]
        with steps.step("select") as payload:
            selection = select_step(request, facts, wording, directory, chooser, card_index)
            payload["clause_ids"] = list(selection.requested)
        cards, clause_ids = cards_fit(
            cards, selection.requested, {e.clause_id for e in directory.entries}, MAX_CLAUSES
        )
        if clause_ids:
            with steps.step("resolve") as payload:
                fetch, fetched = resolve_step(clause_ids, context)
                tool_results += (fetched,)
                payload["clause_ids"] = [c.clause_id for c in fetch.returned]
                payload["tool_call"] = tool_event(fetched)
                payload["citations"] = [
                    {
                        "clause_id": c.clause_id,
                        "title": c.title,
                        "document": c.document_id,
                        "version": c.version_label,
                    }
                    for c in fetch.returned
                ]
        elif selection.not_in_directory:
            fetch = ClauseFetch(status="ok", returned=(), not_found=(), detail="")

    with steps.step("assess") as payload:
        # The rules, then the classifier on the turn's one embedding (memo: no
        # further model run); "ok thanks" has no content and asks nothing.
        decision = decision_reason(
            request.message, vector=message_vector(request.message) if content else None
        )
        payload["decision"] = decision or ""
        assessment = turn_assess(
            facts=facts,
            wording=wording,
            fetch=fetch,
            has_content=content,
            asks_for_decision=decision is not None,
            intent=customer_intent(request.message),
            cards_returned=bool(cards.returned),
            tool_results=tool_results,
        )
        payload["guidance_status"] = assessment.status.value
    with steps.step("compose") as payload:
        inputs = compose_inputs(
            request,
            facts,
            wording,
            selection,
            fetch,
            assessment,
            content,
            cards,
            tool_results,
            asks_decision=decision is not None,
        )
        draft = writer.write(inputs=inputs)
        payload["writer"] = draft.writer
    with steps.step("guard") as payload:
        checked = guard_step(
            draft, facts, fetch, inputs.pending_reference, inputs.cards, tool_results
        )
        payload["findings"] = len(checked.findings)

    outcome = TurnOutcome(
        request=written,
        facts=facts,
        wording=wording,
        directory_entries=tuple((e.clause_id, e.title) for e in directory.entries)
        if directory
        else (),
        selection=selection,
        returned=fetch.returned if fetch is not None else (),
        not_found=(selection.not_in_directory if selection else ())
        + (fetch.not_found if fetch is not None else ()),
        draft=draft,
        checked=checked,
        # "total" is the time up to the record step, which cannot time itself.
        timings_ms={**steps.timings, "total": round((time.perf_counter() - started) * 1000, 3)},
        model_name=chooser.name,
        fetch_detail=fetch.detail if fetch is not None else "",
        cards=cards,
        tool_results=tool_results,
        model_fallback=selection.fallback if selection else "",
    )
    with steps.step("record") as payload:
        turn = turn_record(outcome)
        payload["turn_id"] = turn.pk
    return TurnResult(outcome=outcome, turn=turn)


def message_read(request: TurnRequest, wording: WordingChoice) -> Reading | None:
    """The message with its slips of the keyboard read as the routed wording's words."""
    speller = wording_speller(wording)
    return speller.read(request.message) if speller is not None else None


def select_step(
    request: TurnRequest,
    facts: Facts,
    wording: WordingChoice,
    directory: ClauseDirectory,
    chooser: ClauseChooser,
    card_index: CardIndex | None = None,
) -> Selection:
    """The chooser's ids, through the tool schema (≤3, each from the directory)."""
    names = (facts.schedule.holder_name,) if facts.schedule else ()
    # Only a confirmed line is routed, and a routed wording names its version.
    assert facts.line is not None and wording.version_id is not None
    # Earlier messages read as their own turns read them (the chooser reads a
    # follow-up with the one before it).
    speller = wording_speller(wording)
    history = facts.history
    if speller is not None:
        history = tuple(replace(p, message=speller.read(p.message).text) for p in history)
    context = SelectionContext(
        facts.line, wording.version_id, history, card_index=card_index, masked_names=names
    )
    try:
        raw = chooser.choose(message=request.message, directory=directory, context=context)
        return selection_validate(raw, directory)
    except ClauseModelError as exc:
        offline = registry.fallback_chooser(chooser)
        if offline is None:
            return Selection(
                raw=(), requested=(), not_in_directory=(), rejected=f"the model failed: {exc}"
            )
        # The model is down or answered nonsense: the offline selector answers,
        # and the run record says why.
        raw = offline.choose(message=request.message, directory=directory, context=context)
        return replace(
            selection_validate(raw, directory),
            fallback=f"{chooser.name} failed ({exc}); {offline.name} chose instead.",
        )


def cards_step(request: TurnRequest, facts: Facts, index: CardIndex) -> CardRetrieval:
    """The answer cards for the message whose required conditions hold (seed 001)."""
    return cards_retrieve(request.message, CardContext.from_facts(facts), index=index)


def compose_inputs(
    request: TurnRequest,
    facts: Facts,
    wording: WordingChoice,
    selection: Selection | None,
    fetch: ClauseFetch | None,
    assessment: Assessment,
    content: bool,
    cards: CardRetrieval = NO_CARDS,
    tool_results: tuple[ToolResult, ...] = (),
    *,
    asks_decision: bool,
) -> ComposeInputs:
    """``asks_decision``: what the assess step found (rules, then the classifier)."""
    return ComposeInputs(
        message=request.message,
        facts=facts,
        wording=wording,
        selection=selection,
        fetch=fetch,
        asks_for_decision=asks_decision,
        assessment=assessment,
        has_content=content,
        pending_reference=PENDING_REFERENCE if assessment.pending_reason is not None else None,
        cards=cards.returned,
        tool_results=tool_results,
    )


def guard_step(
    draft: Draft,
    facts: Facts,
    fetch: ClauseFetch | None,
    pending_reference: str | None,
    cards: tuple[IndexedCard, ...] = (),
    tool_results: tuple[ToolResult, ...] = (),
) -> CheckedDraft:
    returned = fetch.returned if fetch is not None else ()
    return draft_guard(
        text=draft.text,
        cited_ids=draft.cited_ids,
        returned={c.clause_id: c.text for c in returned},
        answers_question=draft.status is GuidanceStatus.ANSWERED,
        pending_reference=pending_reference,
        fallback=fallback_reply(pending_reference),
        returned_cards={c.card_id: f"{c.conclusion}\n{c.detail}" for c in cards},
        cited_cards=draft.cited_cards,
        backings=status_backings(tool_results),
        policy_number=facts.policy_number or "",
    )


def tool_context(
    request: TurnRequest, facts: Facts, wording: WordingChoice, store: ClauseStore
) -> ToolContext:
    confirmed = facts.schedule is not None and facts.schedule_kind == "found"
    return ToolContext(
        trace_id=request.trace_id,
        conversation_id=request.conversation_id,
        policy_number=facts.policy_number if confirmed else None,
        line=facts.line,
        version_id=wording.version_id if wording.kind == "routed" else None,
        question_date=facts.question_date,
        max_risk=Risk.L4,
        store=store,
        version_ingested_at=wording.ingested_at if wording.kind == "routed" else None,
    )


def plan_step(request: TurnRequest, facts: Facts, planner: ToolPlanner | None) -> list[ToolRequest]:
    """The offline rules' calls, then a model planner's (if any) for other tools."""
    planned = rules_plan(request.message)
    if planner is not None:
        named = {r.name for r in planned}
        try:
            for asked in planner.plan(message=request.message, facts=facts):
                if asked.name not in named:
                    planned.append(asked)
                    named.add(asked.name)
        except ClauseModelError as exc:
            logger.warning("claim agent: the model planned no tools (%s)", exc)
    return planned[:MAX_TOOL_CALLS]


def tool_event(result: ToolResult) -> dict[str, Any]:
    return {
        "id": result.call_id,
        "name": result.name,
        "risk": result.risk.value,
        "status": result.status,
    }


def tool_step(steps: Steps, request: ToolRequest, context: ToolContext) -> ToolResult:
    """One planned call through the executor, reported through the hook."""
    # A model's request runs under the model's ceiling: L3 (its draft only).
    ceiling = Risk.L4 if request.requested_by == RULES else Risk.L3
    label = TOOL_LABELS.get(str(request.name), "Running a tool")
    with steps.step("tool", label=label, start={"name": str(request.name)[:64]}) as payload:
        result, _ = tool_execute(request, replace(context, max_risk=ceiling))
        payload.update(tool_event(result))
    return result


def resolve_step(
    clause_ids: tuple[str, ...] | list[str], context: ToolContext
) -> tuple[ClauseFetch, ToolResult]:
    """The chosen clauses, read whole through ``clause.fetch`` (an audited L0 call)."""
    asked = ToolRequest("clause.fetch", {"clause_ids": list(clause_ids)}, RULES)
    result, fetch = tool_execute(asked, context)
    if fetch is None:  # the call failed (timeout, error): nothing is quoted
        fetch = ClauseFetch(status="unavailable", returned=(), not_found=(), detail=result.detail)
    return fetch, result


def turn_record(outcome: TurnOutcome) -> Turn:
    """The pending question (if any) and the run record, in one transaction."""
    return turn_record_save(outcome=outcome)
