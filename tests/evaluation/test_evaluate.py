"""``manage.py evaluate`` on a small subset: the report's shape, and its sources."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from claims.models import Turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def reports(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path / "reports"


def test_evaluate_writes_json_and_html_from_run_records(demo, reports):
    out = StringIO()
    call_command(
        "evaluate",
        "--selector",
        "baseline,hybrid",
        "--line",
        "motor",
        "--limit",
        "4",
        "--scenario-runs",
        "1",
        "--keep-records",
        stdout=out,
    )
    [json_path] = reports.glob("evaluation-*.json")
    [html_path] = reports.glob("evaluation-*.html")
    report = json.loads(json_path.read_text())

    assert [s["selector"] for s in report["selectors"]] == ["baseline", "hybrid"]
    hybrid = report["selectors"][1]
    assert hybrid["model_names"] == ["hybrid"]
    motor = hybrid["lines"]["motor"]
    assert set(motor) >= {"questions", "requested", "returned", "cited", "nothing_fits"}
    # the subset: 4 questions (with their parents) plus 2 no-clause questions
    assert motor["questions"] == 4 and motor["no_clause_questions"] == 2
    assert motor["nothing_fits"] == 1.0
    assert set(hybrid["must_be_zero"].values()) == {0}
    assert {s: v["passed"] for s, v in report["scenarios"].items()} == {
        "covered_rental": 1,
        "not_covered_rental": 1,
        "unanswerable_to_queue": 1,
        "storage_stopped": 1,
    }
    assert "<svg" in html_path.read_text() and "Misses" in html_path.read_text()

    # every figure comes from the turns' run records, per selector
    turns = Turn.objects.filter(model_name="hybrid", line="motor")
    answerable = [t for t in turns if t.message and t.requested_ids]
    assert len(turns) >= motor["questions"] + motor["no_clause_questions"]
    assert answerable


def test_figures_are_computed_from_the_run_record(demo, reports):
    from claims.evaluation.client import EndpointClient
    from claims.evaluation.harness import inventory_run
    from claims.evaluation.inventory import inventories_load

    client = EndpointClient()
    [motor] = inventories_load(lines=("motor",))
    run = inventory_run(client, [motor], selector="hybrid", limit=1)

    # tamper with the record: the harness must read it, not the reply
    figures = run.lines["motor"]
    assert figures["returned"] == 1.0
    turn = Turn.objects.filter(model_name="hybrid").order_by("pk").first()
    Turn.objects.filter(pk=turn.pk).update(returned_ids=[])
    from claims.evaluation.harness import TurnResult, _line_figures

    question = next(q for q in motor.questions if q.id == "mtr-q001")
    turn.refresh_from_db()
    assert _line_figures([TurnResult(question, turn, reply=None)])["returned"] == 0.0


def test_unknown_selector_is_refused(demo, reports):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Unknown selector"):
        call_command("evaluate", "--selector", "nope", stdout=StringIO())


def test_evaluate_leaves_nothing_in_the_staff_queue(demo, reports):
    from claims.models import Conversation, PendingQuestion

    before = PendingQuestion.objects.count()
    call_command("evaluate", "--line", "motor", "--limit", "3", "--no-scenarios", stdout=StringIO())
    assert PendingQuestion.objects.count() == before
    assert not Conversation.objects.filter(client__username="measurement-client").exists()
    assert list(reports.glob("evaluation-*.json"))


def test_an_unmigrated_database_is_a_clear_error(reports, monkeypatch):
    """A fresh clone that runs the command before ``make demo`` is told what to run."""
    from django.core.management.base import CommandError
    from django.db.migrations.executor import MigrationExecutor

    real_plan = MigrationExecutor.migration_plan

    def plan_with_one_left(self, targets, clean_start=False):
        plan = real_plan(self, targets, clean_start=True)  # every migration, as if none ran
        return plan[-1:]

    monkeypatch.setattr(MigrationExecutor, "migration_plan", plan_with_one_left)
    with pytest.raises(
        CommandError, match=r"1 migration not applied\. Run `python manage.py migrate`"
    ):
        call_command("evaluate", "--line", "motor", "--limit", "1", stdout=StringIO())
    assert not Turn.objects.exists()
