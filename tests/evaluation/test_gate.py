"""The release evaluation gate: the agent replayed on the serving and candidate versions."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.contrib.auth import get_user_model

from knowledge.demo import CONTENT_DIR
from knowledge.models import EvaluationStatus, Release, ReleaseEvaluation
from knowledge.services.ingestion import wording_version_create, wording_version_ingest
from knowledge.services.releases import ReleaseError, release_approve, release_request

MOTOR = (CONTENT_DIR / "NW-MOTOR-2026.2.md").read_text(encoding="utf-8")


def staff(name: str):
    return get_user_model().objects.get(username=name)


def without_hire_car(text: str) -> str:
    """MTR-BEN-03 with its "hire car" words gone (title, body and similar questions).

    What it provides and its daily limit go too: the clause keeps its id and its
    conditions but no longer says what the customer gets.
    """
    start = text.index("## MTR-BEN-03")
    end = text.index("\n## ", start + 1)
    clause = text[start:end]
    # its similar questions ask for a rental car: they go with the words
    clause = re.sub(r"\nQuestions:\n(?:- .*\n)+", "\n", clause)
    clause = clause.replace(
        "Hire car, rental car and alternative transport", "Alternative transport"
    )
    clause = clause.replace("a hire car of the same or a smaller class than your car, or ", "")
    clause = re.sub(r"(?i)\b(hire|rental) cars?\b", "transport", clause)
    clause = clause.replace("Agree the hire with us first", "Agree it with us first")
    clause = re.sub(r"\nWhat we provide:.*\n", "\n", clause)
    clause = re.sub(r"\n- Limit:.*\n", "\n", clause)
    clause = re.sub(
        r" Costs you pay yourself are reimbursed up to the same daily limit\.", "", clause
    )
    assert "What we provide" not in clause and "a day" not in clause
    assert "hire car" not in clause.lower()
    return text[:start] + clause + text[end:]


def candidate(label: str, text: str):
    version = wording_version_create(
        document_id="NW-MOTOR",
        label=label,
        source_bytes=text.encode(),
        filename=f"{label}.md",
        effective_from=date(2027, 1, 1),
        effective_to=None,
        channels=["direct", "broker"],
        acting_user=staff("demo-editor"),
        queue_ingestion=False,
    )
    assert wording_version_ingest(version_id=version.pk).outcome == "ingested"
    return version


def requested(version, django_capture_on_commit_callbacks) -> tuple[Release, ReleaseEvaluation]:
    with django_capture_on_commit_callbacks(execute=True):
        release = release_request(
            version_id=version.pk, acting_user=staff("demo-editor"), reason="gate test"
        )
    return release, release.evaluations.get()


@pytest.mark.django_db
def test_the_gate_blocks_a_candidate_whose_hire_car_benefit_loses_its_words(
    demo, django_capture_on_commit_callbacks, client
):
    # given a customer asked about a rental car before (a recent real question)
    from claims.evaluation.client import EndpointClient

    customer = EndpointClient()
    conversation = customer.conversation_start("NW-MTR-204518")
    customer.message_send(conversation, "can I get a rental car while my car is at the panel shop")
    version = candidate("2026.3", without_hire_car(MOTOR))
    # when the release is requested, the gate runs (Celery, eager here)
    release, evaluation = requested(version, django_capture_on_commit_callbacks)
    # then it measured the serving version against the candidate, and failed
    assert evaluation.status == EvaluationStatus.FAILED
    assert evaluation.serving_version.label == "2026.2"
    assert evaluation.candidate_version_id == version.pk
    cand = evaluation.figures["candidate"]
    assert cand["recent_questions"] == 1
    # the selector still finds the clause by its other words, but the reply can no
    # longer quote a hire car: the questions that cited it lose their citation
    assert cand["lost_citations"]
    assert evaluation.findings == [
        f"{len(cand['lost_citations'])} inventory question(s) no longer cite their expected "
        f"clause, which the serving version cited: {', '.join(cand['lost_citations'])}."
    ]
    changed = {c["id"]: c for c in evaluation.changes}
    assert any("MTR-BEN-03" in c["serving"]["returned"] for c in changed.values())
    recent = [c for c in evaluation.changes if c["source"] == "recent"]
    assert recent and "rental car" in recent[0]["question"]
    # the gate's conversations are gone again; the customer's is kept
    from claims.models import Conversation

    assert list(Conversation.objects.values_list("pk", flat=True)) == [conversation]
    # and approval is refused, unless overridden with a reason
    with pytest.raises(ReleaseError) as refused:
        release_approve(release_id=release.pk, acting_user=staff("demo-approver"))
    assert refused.value.code == "gate"
    assert "The evaluation found regressions: " in str(refused.value)
    assert "no longer cite their expected clause" in str(refused.value)
    # the approver sees it on the release page, replies side by side, changed words marked
    client.force_login(staff("demo-approver"))
    page = client.get(f"/admin/knowledge/release/{release.pk}/change/").content.decode()
    assert "Failed: the candidate regresses" in page
    assert "no longer cite their expected clause" in page
    assert re.search(r"<del>[^<]*\b[Hh]ire\b", page), "the lost 'hire' words are struck through"


@pytest.mark.django_db
def test_the_gate_passes_an_unchanged_candidate_and_approval_goes_ahead(
    demo, django_capture_on_commit_callbacks
):
    version = candidate("2026.3", MOTOR)
    release, evaluation = requested(version, django_capture_on_commit_callbacks)
    assert evaluation.status == EvaluationStatus.PASSED, evaluation.findings
    assert evaluation.findings == []
    assert evaluation.changes == []
    assert evaluation.figures["candidate"]["returned"] == evaluation.figures["serving"]["returned"]
    assert set(evaluation.figures["candidate"]["must_be_zero"].values()) == {0}
    release = release_approve(
        release_id=release.pk, acting_user=staff("demo-approver"), reason="same text"
    )
    assert release.status == Release.Status.APPROVED
    assert release.gate_override_reason == ""


@pytest.mark.django_db
def test_approval_waits_for_a_pending_gate(demo):
    version = candidate("2026.3", MOTOR)
    # the on-commit task never ran: the evaluation is still pending
    release = release_request(version_id=version.pk, acting_user=staff("demo-editor"))
    assert release.evaluations.get().status == EvaluationStatus.PENDING
    with pytest.raises(ReleaseError, match="The evaluation of this release is still running"):
        release_approve(release_id=release.pk, acting_user=staff("demo-approver"))


def test_a_drop_of_more_than_two_points_in_expected_clause_returned_fails_the_gate():
    from claims.evaluation.gate import gate_findings

    zero = {"decision": 0}
    assert gate_findings({"returned": 0.96}, {"returned": 0.94, "must_be_zero": zero}) == []
    assert gate_findings({"returned": 0.96}, {"returned": 0.93, "must_be_zero": zero}) == [
        "Expected clause returned fell from 96.0% to 93.0% (-3.0 points; the gate allows 2)."
    ]
    assert gate_findings(None, {"returned": 0.5, "must_be_zero": {"decision": 2}}) == [
        "decision: 2 (must be zero)."
    ]


@pytest.mark.django_db
def test_the_evaluation_page_shows_the_gate_and_a_chart_per_selector(
    demo, client, settings, tmp_path, django_capture_on_commit_callbacks
):
    import json

    settings.VAR_DIR = tmp_path
    reports = tmp_path / "reports"
    reports.mkdir()
    figures = {"requested": 0.9, "returned": 0.96, "cited": 0.9, "nothing_fits": 1.0}
    (reports / "evaluation-20261201-000000.json").write_text(
        json.dumps(
            {
                "generated_at": "2026-12-01T00:00:00",
                "environment": {"database": "sqlite3", "storage": "local"},
                "targets_met": True,
                "selectors": [
                    {
                        "selector": s,
                        "versions": ["NW-MOTOR 2026.2"],
                        "turns": 3,
                        "lines": {"motor": figures},
                    }
                    for s in ("baseline", "hybrid")
                ],
            }
        )
    )
    version = candidate("2026.3", MOTOR)
    requested(version, django_capture_on_commit_callbacks)
    client.force_login(staff("demo-approver"))
    page = client.get("/admin/reports/evaluation/").content.decode()
    assert "Versions measured: serving <strong>NW-MOTOR 2026.2</strong>" in page
    assert "candidate <strong>NW-MOTOR 2026.3</strong>" in page
    assert page.count('<figure class="nw-chart">') == 3  # the gate, then one per selector
    assert "<figcaption>baseline</figcaption>" in page
    assert "<figcaption>hybrid</figcaption>" in page
    assert "cdn" not in page.lower()


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.s3
@pytest.mark.django_db(transaction=True)
def test_the_gate_runs_on_a_real_worker_through_redis(celery_worker, settings):
    """Requesting a release sends the gate to the worker; approval waits for its verdict."""
    import time

    import northwind.settings as environment_settings
    from northwind.celery import app

    # the worker reads the environment's storage: the demo wording goes there too
    settings.STORAGES = environment_settings.STORAGES
    from io import StringIO

    from django.core.management import call_command

    call_command("load_demo", stdout=StringIO())
    assert app.conf.task_always_eager is False
    version = candidate("2026.3", MOTOR)
    release = release_request(version_id=version.pk, acting_user=staff("demo-editor"))
    evaluation = release.evaluations.get()
    with pytest.raises(ReleaseError, match="still running"):
        release_approve(release_id=release.pk, acting_user=staff("demo-approver"))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        evaluation.refresh_from_db()
        if evaluation.status in {"passed", "failed", "error"}:
            break
        time.sleep(0.5)
    assert evaluation.status == EvaluationStatus.PASSED, (evaluation.detail, evaluation.findings)
    assert evaluation.serving_version.label == "2026.2"
    release = release_approve(release_id=release.pk, acting_user=staff("demo-approver"))
    assert release.status == Release.Status.APPROVED
