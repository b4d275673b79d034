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

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.utils import timezone

from claims.agent.cards import EMPTY as NO_CARDS
from claims.agent.cards import (
    CardContext,
    CardIndex,
    CardRetrieval,
    IndexedCard,
    cards_fit,
    cards_retrieve,
    served_index,
)
from claims.agent.compose import asks_for_decision, fallback_reply, has_content, turn_assess
from claims.agent.facts import turn_facts_load
from claims.agent.guard import clause_ids_in, draft_guard
from claims.agent.intents import customer_intent
from claims.agent.selection_schema import selection_validate
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
    Selection,
    SelectionContext,
    StepEvent,
    TurnOutcome,
    TurnRequest,
    TurnResult,
    WordingChoice,
)
from claims.agent.wording import turn_wording_choose
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
    "compose": "Writing the reply",
    "guard": "Checking the reply",
    "record": "Saving the record",
}

OnStep = Callable[[StepEvent], None]


class Steps:
    """Runs the hook around each step and keeps the step timings (ms)."""

    def __init__(self, on_step: OnStep | None) -> None:
        self.on_step = on_step
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time the block as step ``name``; what it puts in the dict is the end payload."""
        label = STEP_LABELS[name]
        if self.on_step is not None:
            self.on_step(StepEvent(step=name, label=label, phase="start"))
        payload: dict[str, Any] = {}
        started = time.perf_counter()
        yield payload
        duration = round((time.perf_counter() - started) * 1000, 3)
        self.timings[name] = duration
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
) -> TurnResult:
    steps = Steps(on_step)
    started = time.perf_counter()

    with steps.step("facts") as payload:
        facts = turn_facts_load(request, question_date=timezone.localdate(request.received_at))
        payload["schedule"] = facts.schedule_kind
    with steps.step("route") as payload:
        wording = turn_wording_choose(facts, pinned_version_id=request.pinned_version_id)
        payload["wording"] = f"{wording.document_id} {wording.label}".strip() or wording.kind

    directory = selection = fetch = None
    cards = NO_CARDS
    content = has_content(request.message) or bool(clause_ids_in(request.message))
    # "hi", "ok thanks": nothing to look up, no directory shown, nothing for the queue.
    if wording.kind == "routed" and content:
        from knowledge.selectors import clause_directory

        with steps.step("directory") as payload:
            directory = clause_directory(version_id=wording.version_id)
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
                fetch = store.fetch(version_id=wording.version_id, clause_ids=clause_ids)
                payload["clause_ids"] = [c.clause_id for c in fetch.returned]
        elif selection.not_in_directory:
            fetch = ClauseFetch(status="ok", returned=(), not_found=(), detail="")

    with steps.step("assess") as payload:
        assessment = turn_assess(
            facts=facts,
            wording=wording,
            fetch=fetch,
            has_content=content,
            asks_for_decision=asks_for_decision(request.message),
            intent=customer_intent(request.message),
            cards_returned=bool(cards.returned),
        )
        payload["guidance_status"] = assessment.status.value
    with steps.step("compose") as payload:
        inputs = compose_inputs(
            request, facts, wording, selection, fetch, assessment, content, cards
        )
        draft = writer.write(inputs=inputs)
        payload["writer"] = draft.writer
    with steps.step("guard") as payload:
        checked = guard_step(draft, fetch, inputs.pending_reference, inputs.cards)
        payload["findings"] = len(checked.findings)

    outcome = TurnOutcome(
        request=request,
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
    )
    with steps.step("record") as payload:
        turn = turn_record(outcome)
        payload["turn_id"] = turn.pk
    return TurnResult(outcome=outcome, turn=turn)


def select_step(
    request: TurnRequest,
    facts: Facts,
    wording: WordingChoice,
    directory,
    chooser: ClauseChooser,
    card_index: CardIndex | None = None,
) -> Selection:
    """The chooser's ids, through the tool schema (≤3, each from the directory)."""
    context = SelectionContext(facts.line, wording.version_id, facts.history, card_index=card_index)
    try:
        raw = chooser.choose(message=request.message, directory=directory, context=context)
        return selection_validate(raw, directory)
    except ClauseModelError as exc:
        return Selection(
            raw=(), requested=(), not_in_directory=(), rejected=f"the model failed: {exc}"
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
) -> ComposeInputs:
    return ComposeInputs(
        message=request.message,
        facts=facts,
        wording=wording,
        selection=selection,
        fetch=fetch,
        asks_for_decision=asks_for_decision(request.message),
        assessment=assessment,
        has_content=content,
        pending_reference=PENDING_REFERENCE if assessment.pending_reason is not None else None,
        cards=cards.returned,
    )


def guard_step(
    draft: Draft,
    fetch: ClauseFetch | None,
    pending_reference: str | None,
    cards: tuple[IndexedCard, ...] = (),
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
    )


def turn_record(outcome: TurnOutcome) -> Turn:
    """The pending question (if any) and the run record, in one transaction."""
    return turn_record_save(outcome=outcome)
