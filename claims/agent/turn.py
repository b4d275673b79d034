"""One claim agent turn, from the customer's message to the recorded reply.

Read ``turn_run`` top to bottom. Only the facts step and the record steps
touch the database; only the selection step calls the model; only the
resolve step reads object storage. No transaction is open across a model
call or a storage read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from django.utils import timezone

from claims.agent.compose import (
    asks_for_decision,
    fallback_reply,
    has_content,
    queue_sentence,
    reply_compose,
    turn_assess,
)
from claims.agent.facts import turn_facts_load
from claims.agent.guard import clause_ids_in, draft_guard
from claims.agent.selection_schema import selection_validate
from claims.agent.types import (
    ClauseModel,
    ClauseModelError,
    ComposeInputs,
    GuidanceStatus,
    Selection,
    SelectionContext,
    TurnOutcome,
    TurnRequest,
)
from claims.agent.wording import turn_wording_choose
from claims.masking import personal_data_mask
from claims.models import Turn
from claims.services import pending_question_open, turn_record_save
from knowledge.clause_store import ClauseFetch, ClauseStore


@dataclass
class StepTimer:
    timings: dict[str, float]

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round((time.perf_counter() - started) * 1000, 3)


def turn_run(
    request: TurnRequest,
    *,
    model: ClauseModel,
    store: ClauseStore,
) -> tuple[TurnOutcome, Turn]:
    timer = StepTimer({})
    started = time.perf_counter()

    with timer.step("facts"):
        facts = turn_facts_load(request, question_date=timezone.localdate(request.received_at))
    with timer.step("route"):
        wording = turn_wording_choose(facts)

    directory = selection = fetch = None
    content = has_content(request.message) or bool(clause_ids_in(request.message))
    # "hi", "ok thanks": nothing to look up, no directory shown, nothing for the queue.
    if wording.kind == "routed" and content:
        from knowledge.selectors import clause_directory

        with timer.step("directory"):
            directory = clause_directory(version_id=wording.version_id)
        with timer.step("select"):
            context = SelectionContext(facts.line, wording.version_id, facts.history)
            try:
                raw = model.select(message=request.message, directory=directory, context=context)
                selection = selection_validate(raw, directory)
            except ClauseModelError as exc:
                selection = Selection(
                    raw=(), requested=(), not_in_directory=(), rejected=f"the model failed: {exc}"
                )
        if selection.requested:
            with timer.step("resolve"):
                fetch = store.fetch(version_id=wording.version_id, clause_ids=selection.requested)
        elif selection.not_in_directory:
            fetch = ClauseFetch(status="ok", returned=(), not_found=(), detail="")

    names = (facts.schedule.holder_name,) if facts.schedule else ()
    masked_message = personal_data_mask(request.message, names=names)
    inputs = ComposeInputs(
        message=request.message,
        facts=facts,
        wording=wording,
        selection=selection,
        fetch=fetch,
        asks_for_decision=asks_for_decision(request.message),
        has_content=content,
    )
    status, pending_reason = turn_assess(inputs)
    returned = fetch.returned if fetch is not None else ()
    not_found = (selection.not_in_directory if selection else ()) + (
        fetch.not_found if fetch is not None else ()
    )

    pending = None
    if pending_reason is not None:
        with timer.step("queue"):
            pending = pending_question_open(
                conversation_id=request.conversation_id,
                question=masked_message,
                reason=pending_reason.value,
                line=facts.line or "",
                policy_number=facts.policy_number or "",
                evidence={
                    "guidance_status": status.value,
                    "wording": f"{wording.document_id} {wording.label}".strip(),
                    "wording_reason": wording.reason,
                    "returned_ids": [c.clause_id for c in returned],
                    "fetch_detail": fetch.detail if fetch is not None else "",
                    "trace_id": request.trace_id,
                },
            )
    reference = pending.reference if pending is not None else None

    with timer.step("compose"):
        draft = reply_compose(inputs, pending_reference=reference)
        written = model.compose(inputs=inputs) if status is GuidanceStatus.ANSWERED else None
        if written is not None:
            # A model's draft cites what it names; the guard keeps only what was returned.
            named = tuple(clause_ids_in(written))
            if reference:
                written = f"{written}\n{queue_sentence(reference)}"
            draft = replace(draft, text=written, cited_ids=named, writer=model.name)
    with timer.step("guard"):
        checked = draft_guard(
            text=draft.text,
            cited_ids=draft.cited_ids,
            returned={c.clause_id: c.text for c in returned},
            answers_question=status is GuidanceStatus.ANSWERED,
            pending_reference=reference,
            fallback=fallback_reply(reference),
        )

    outcome = TurnOutcome(
        request=request,
        facts=facts,
        wording=wording,
        directory_entries=tuple((e.clause_id, e.title) for e in directory.entries)
        if directory
        else (),
        selection=selection,
        returned=returned,
        not_found=not_found,
        draft=draft,
        checked=checked,
        timings_ms=timer.timings,
        model_name=model.name,
    )
    # "total" is the time up to the record step, which cannot time itself.
    timer.timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    turn = turn_record(outcome, masked_message=masked_message, pending_id=pending and pending.pk)
    if pending is not None:
        turn.pending_question = pending  # the response reads it; no second query
    return outcome, turn


def turn_record(outcome: TurnOutcome, *, masked_message: str, pending_id: int | None) -> Turn:
    facts, wording, selection = outcome.facts, outcome.wording, outcome.selection
    summary = facts.schedule.masked_summary() if facts.schedule else None
    fields = {
        "conversation_id": outcome.request.conversation_id,
        "trace_id": outcome.request.trace_id,
        "message": masked_message,
        "reply": outcome.checked.text,
        "guidance_status": outcome.draft.status.value,
        "line": facts.line or "",
        "policy_number": facts.policy_number or "",
        "wording_version_id": wording.version_id,
        "wording_document": wording.document_id,
        "wording_label": wording.label,
        "wording_reason": wording.reason,
        "directory": [list(entry) for entry in outcome.directory_entries],
        "selection_raw": list(selection.raw) if selection else [],
        "selection_rejected": selection.rejected if selection else "",
        "requested_ids": list(selection.requested) if selection else [],
        "returned_ids": [c.clause_id for c in outcome.returned],
        "not_found_ids": list(outcome.not_found),
        "cited_ids": list(outcome.checked.cited_ids),
        "guard_findings": [
            {"rule": f.rule, "action": f.action, "excerpt": f.excerpt}
            for f in outcome.checked.findings
        ],
        "limitations": list(outcome.draft.limitations),
        "facts": facts.public(),
        "schedule_summary": summary,
        "timings_ms": outcome.timings_ms,
        "model_name": outcome.model_name,
        "draft_writer": outcome.draft.writer,
    }
    request = outcome.request
    updates = {}
    if facts.schedule is not None and (
        facts.policy_number != request.conversation_policy_number
        or facts.line != request.conversation_line
    ):
        updates = {"policy_number": facts.policy_number, "line": facts.line}
    return turn_record_save(fields=fields, conversation_updates=updates, pending_id=pending_id)
