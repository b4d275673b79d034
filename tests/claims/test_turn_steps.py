"""The turn as steps: the one hook, the pinned version, and the record's one transaction."""

import uuid

import pytest
from django.utils import timezone

from claims.agent import registry
from claims.agent.turn import STEP_LABELS, turn_run
from claims.agent.types import TurnRequest
from claims.models import Conversation, PendingQuestion, Turn
from knowledge.clause_store import StorageClauseStore
from knowledge.models import WordingVersion
from tests.claims.test_turn_api import RENTAL, start

pytestmark = pytest.mark.django_db

STEPS = [
    "facts",
    "route",
    "plan",
    "directory",
    "cards",
    "select",
    "resolve",
    "assess",
    "compose",
    "guard",
]


def run(conversation_id: int, message: str = RENTAL, *, on_step=None, pinned=None):
    conversation = Conversation.objects.get(pk=conversation_id)
    request = TurnRequest(
        conversation_id=conversation_id,
        message=message,
        policy_number=None,
        received_at=timezone.now(),
        trace_id=uuid.uuid4().hex,
        conversation_policy_number=conversation.policy_number,
        conversation_line=conversation.line,
        pinned_version_id=pinned,
    )
    return turn_run(
        request,
        chooser=registry.chooser("hybrid"),
        writer=registry.writer("grounded"),
        store=StorageClauseStore(),
        on_step=on_step,
    )


def version(document: str, label: str) -> WordingVersion:
    return WordingVersion.objects.get(document__document_id=document, label=label)


def test_each_step_reports_its_start_and_end_and_the_record_keeps_their_timings(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    events = []
    result = run(conversation, on_step=events.append)
    names = [e.step for e in events if e.phase == "start"]
    assert names == [*STEPS, "record"]
    assert [(e.step, e.phase) for e in events[:2]] == [("facts", "start"), ("facts", "end")]
    ends = {e.step: e for e in events if e.phase == "end"}
    assert ends["resolve"].label == "Reading your policy wording"
    assert ends["facts"].label == "Looking up your schedule"
    assert all(e.label == STEP_LABELS[e.step] for e in events)
    assert "MTR-BEN-03" in ends["select"].payload["clause_ids"]
    assert ends["assess"].payload["guidance_status"] == "answered"
    assert ends["assess"].payload["decision"] == ""  # a question, not a request to judge
    assert ends["record"].payload["turn_id"] == result.turn.pk
    timings = Turn.objects.get(pk=result.turn.pk).timings_ms
    assert {step: timings[step] for step in STEPS} == {s: ends[s].duration_ms for s in STEPS}
    assert timings["total"] >= sum(timings[s] for s in STEPS)


def test_a_greeting_runs_no_lookup_steps(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    events = []
    run(conversation, "hi", on_step=events.append)
    started = [e.step for e in events if e.phase == "start"]
    assert started == ["facts", "route", "assess", "compose", "guard", "record"]


def test_a_pinned_version_of_the_same_line_replaces_the_routers_choice(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    result = run(conversation, pinned=version("NW-MOTOR", "MVP-2026.1").pk)
    turn = Turn.objects.get(pk=result.turn.pk)
    assert (turn.wording_document, turn.wording_label) == ("NW-MOTOR", "MVP-2026.1")
    assert turn.wording_reason == "Pinned by the caller."
    assert turn.guidance_status == "answered"
    unpinned = Turn.objects.get(pk=run(conversation).turn.pk)
    assert unpinned.wording_label == "2026.2"


def test_a_pinned_version_of_another_line_is_refused_not_used(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    result = run(conversation, pinned=version("NW-HOME", "2026.2").pk)
    turn = Turn.objects.get(pk=result.turn.pk)
    assert turn.guidance_status == "wording_not_routable"
    assert turn.wording_version_id is None
    assert "is for the home line, not motor" in turn.wording_reason
    assert turn.returned_ids == []


def test_the_pending_question_and_the_run_record_are_written_together(api_client, monkeypatch):
    conversation = start(api_client, "NW-MTR-550001")  # not routable: always queued
    before = PendingQuestion.objects.count()

    def broken_create(**fields):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(Turn.objects, "create", broken_create)
    with pytest.raises(RuntimeError, match="went away"):
        run(conversation)
    assert PendingQuestion.objects.count() == before  # no entry without its record
    monkeypatch.undo()

    result = run(conversation)
    entry = PendingQuestion.objects.get(turn=result.turn.pk)
    assert f"(reference {entry.reference})" in result.turn.reply
    assert "PQ-NEW" not in result.turn.reply
