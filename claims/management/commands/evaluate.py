"""python manage.py evaluate [--selector NAME ...]: clause selection, measured.

Every inventory question goes through the claim message endpoint, in a
conversation on the inventory's demo policy (follow-ups in their parent's
conversation); the figures are read from each turn's run record. Then the
four end-to-end scenarios of seed 000 run five times each. The report goes to
``var/reports/evaluation-<timestamp>.json`` and ``.html``.

The run uses the configured database and storage (the embedded default, or
PostgreSQL + S3 when the environment says so) and loads the demo data first
if it is missing (``load_demo`` is idempotent). It speaks as its own API client
(``measurement-client``) and removes its conversations, run records and queue
entries once the report is written, unless ``--keep-records``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from claims.agent.selection import SELECTION_MODELS
from claims.evaluation import harness, realq, slips
from claims.evaluation.client import (
    DEMO_CLIENT,
    EndpointClient,
    measurement_client_ensure,
    measurement_records_delete,
)
from claims.evaluation.inventory import LINES, inventories_load
from claims.evaluation.report import report_write

MUST_BE_ZERO_KEYS = [
    "citation_not_returned",
    "citation_on_no_clause_question",
    "decision",
    "unbacked_action",
    "time_promise",
    "server_error",
]
REAL_QUESTIONS_RELPATH = Path("..") / "shared" / "data" / "insuranceqa-dev" / "questions.tsv"
REAL_LABELS_RELPATH = Path("knowledge") / "content" / "realq" / "insuranceqa-dev-labels.tsv"


def real_questions_default() -> Path:
    """``<repo>/../shared/data/insuranceqa-dev/questions.tsv``: research data, never copied in."""
    return (Path(settings.BASE_DIR) / REAL_QUESTIONS_RELPATH).resolve()


@dataclass
class OutagePlan:
    outage: Callable[[], contextlib.AbstractContextManager]
    kind: str
    serving: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    check: Callable[[], None] = lambda: None
    recovered: int | None = None


def _selectors(values: list[str] | None) -> list[str]:
    names: list[str] = []
    for value in values or []:
        names.extend(n.strip() for n in value.split(",") if n.strip())
    if not names:
        return [getattr(settings, "CLAIM_AGENT_MODEL", "") or "hybrid"]
    unknown = [n for n in names if n not in SELECTION_MODELS and "." not in n]
    if unknown:
        raise CommandError(
            f"Unknown selector(s) {', '.join(unknown)}; choose from {', '.join(SELECTION_MODELS)}."
        )
    return list(dict.fromkeys(names))


def demo_ensure(stdout) -> bool:
    """Load the demo data if the demo client or the approved wording is missing.

    A database that is not migrated (a fresh clone before ``make demo``) is a
    clear error that names the command to run, not a traceback.
    """
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from knowledge.models import Release

    executor = MigrationExecutor(connection)
    unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if unapplied:
        raise CommandError(
            f"The database is not set up: {len(unapplied)} "
            f"migration{'s' if len(unapplied) != 1 else ''} not applied. "
            "Run `python manage.py migrate` first (`make demo` does it)."
        )
    present = get_user_model().objects.filter(
        username=DEMO_CLIENT
    ).exists() and Release.objects.filter(status=Release.Status.APPROVED).count() >= len(LINES)
    if not present:
        call_command("load_demo", stdout=stdout)
    return not present


class Command(BaseCommand):
    help = "Measure clause selection and the seed-000 scenarios through the claim endpoint."

    def add_arguments(self, parser):
        parser.add_argument(
            "--selector",
            action="append",
            help=f"Selector(s) to compare, repeatable or comma-separated: "
            f"{', '.join(SELECTION_MODELS)}, or all. Default: CLAIM_AGENT_MODEL.",
        )
        parser.add_argument("--line", action="append", choices=LINES, help="Only these lines.")
        parser.add_argument(
            "--inventory-dir",
            help="Read <line>.yaml inventories from this folder instead "
            "(knowledge/content/inventory/heldout holds questions never used for tuning).",
        )
        parser.add_argument(
            "--questions",
            nargs="?",
            const="",
            metavar="PATH",
            help="Ask real customers' questions instead of the inventories: a TSV with the "
            "columns id, line, question (default: <repo>/../shared/data/insuranceqa-dev/"
            "questions.tsv).",
        )
        parser.add_argument(
            "--labels",
            metavar="PATH",
            help="Labels for --questions: a TSV with id, expected[, line, split] (default: "
            f"{REAL_LABELS_RELPATH} when it exists).",
        )
        parser.add_argument(
            "--split",
            choices=realq.SPLITS,
            help="Only the labelled questions of this half of the labels (tune or test).",
        )
        parser.add_argument(
            "--limit", type=int, help="Only the first N questions of each line (plus parents)."
        )
        parser.add_argument(
            "--slips",
            type=float,
            metavar="RATE",
            help="Ask every question with slips of the keyboard: one in RATE (0-1) of its "
            "words of five letters or more, at least one, the same every run "
            "(claims/evaluation/slips.py).",
        )
        parser.add_argument(
            "--scenario-runs", type=int, default=harness.SCENARIO_RUNS, help="Runs per scenario."
        )
        parser.add_argument("--no-scenarios", action="store_true", help="Skip the scenarios.")
        parser.add_argument(
            "--base-url",
            help="Send the requests over HTTP to a running server sharing this database "
            "(the server's CLAIM_AGENT_MODEL decides the selector).",
        )
        parser.add_argument(
            "--s3-control",
            action="store_true",
            help="Outage scenario: start an S3 API server (moto), serve the clauses from it, "
            "really stop it for the turn and restart it (default: a closed port).",
        )
        parser.add_argument(
            "--strict", action="store_true", help="Exit non-zero if a target is missed."
        )
        parser.add_argument(
            "--injection",
            action="store_true",
            help="Run the prompt-injection evaluation instead: adversarial messages and a "
            "poisoned wording version, on the offline selector and an adversarial fake model "
            "(claims/evaluation/injection.py); writes var/reports/injection-<timestamp>.json.",
        )
        parser.add_argument(
            "--keep-records",
            action="store_true",
            help="Keep the run's conversations, turns and queue entries (by default they are "
            "removed once the report is written, so the staff queue holds customers only).",
        )

    def handle(self, *args, **options):
        rate = options["slips"]
        if rate is not None and not 0 < rate <= 1:
            raise CommandError(f"--slips takes a share above 0 and at most 1, not {rate}.")
        values = options["selector"]
        if values and any(v.strip() == "all" for v in values):
            values = [",".join(SELECTION_MODELS)]
        selectors = _selectors(values)
        base_url = options["base_url"]
        if base_url and len(selectors) > 1:
            raise CommandError("--selector compares selectors in-process; drop --base-url.")
        if demo_ensure(self.stdout):
            self.stdout.write("Loaded the demo data (it was missing).")

        client = EndpointClient(base_url=base_url, username=measurement_client_ensure())
        try:
            if options["injection"]:
                if base_url:
                    raise CommandError("--injection runs in-process; drop --base-url.")
                self._injection(client, options)
            else:
                self._run(client, selectors, base_url, options)
        finally:
            if not options["keep_records"]:
                measurement_records_delete()

    def _real_questions(self, options, lines):
        path = Path(options["questions"]) if options["questions"] else real_questions_default()
        labels_path = options["labels"]
        if labels_path is None:
            default = Path(settings.BASE_DIR) / REAL_LABELS_RELPATH
            labels_path = default if default.is_file() else None
        try:
            labels = realq.labels_load(Path(labels_path)) if labels_path else {}
            if options["split"] and not labels:
                raise realq.RealQuestionsError("--split needs labels (--labels PATH).")
            inventories = realq.questions_load(
                path, labels=labels, split=options["split"], lines=lines, limit=options["limit"]
            )
        except realq.RealQuestionsError as exc:
            raise CommandError(str(exc)) from exc
        asked = sum(len(i.questions) for i in inventories)
        self.stdout.write(
            f"Real questions: {asked} from {path}"
            + (f", labels {labels_path} ({len(labels)})" if labels_path else ", no labels")
            + (f", {options['split']} half" if options["split"] else "")
        )
        return inventories, {
            "questions": str(path),
            "labels": str(labels_path or ""),
            "split": options["split"] or "",
            "asked": asked,
        }

    def _run(self, client, selectors, base_url, options):
        lines = tuple(options["line"] or LINES)
        source = {"inventory": options["inventory_dir"] or "knowledge/content/inventory"}
        if options["questions"] is not None:
            if options["inventory_dir"]:
                raise CommandError("--questions and --inventory-dir are alternatives.")
            inventories, source = self._real_questions(options, lines)
            limit = None  # applied per line by questions_load
        elif options["labels"] or options["split"]:
            raise CommandError("--labels and --split go with --questions.")
        elif options["inventory_dir"]:
            directory = Path(options["inventory_dir"])
            if not directory.is_dir():
                raise CommandError(f"No such inventory folder: {directory}")
            inventories = inventories_load(lines=lines, directory=directory)
        else:
            inventories = inventories_load(lines=lines)
        if options["questions"] is None:
            limit = options["limit"]
        rate = options["slips"]
        if rate is not None:
            if not 0 < rate <= 1:
                raise CommandError(
                    f"--slips takes a share of words above 0 and at most 1, not {rate}."
                )
            inventories = slips.inventories_slipped(inventories, rate=rate)
            source["slips"] = rate
            self.stdout.write(f"Slips of the keyboard: {rate:g} of each question's long words.")
        runs = []
        for name in selectors:
            run = harness.inventory_run(
                client,
                inventories,
                selector=None if base_url else name,
                limit=limit,
                progress=self.stdout.write,
            )
            run.name = name
            runs.append(run)

        scenarios = {}
        if not options["no_scenarios"]:
            plan = self._outage(options["s3_control"], client)
            default = None if base_url else ("hybrid" if "hybrid" in selectors else selectors[0])
            with harness.selector_configured(default), plan.serving():
                scenarios = harness.scenarios_run(
                    client,
                    outage=plan.outage,
                    outage_kind=plan.kind,
                    runs=options["scenario_runs"],
                    after_outage=plan.check,
                )
            if plan.recovered is not None:
                scenarios["storage_stopped"]["recovered_after_restart"] = plan.recovered
            for name, s in scenarios.items():
                self.stdout.write(
                    f"scenario {name:<22} {s['passed']}/{s['runs']} {s['failed_checks']}"
                )

        report = self._report(
            runs,
            scenarios,
            transport="HTTP " + base_url if base_url else "in-process",
            real=options["questions"] is not None,
        )
        report["source"] = source
        json_path, html_path = report_write(report)
        for run in report["selectors"]:
            zero = ", ".join(f"{k}={v}" for k, v in run["must_be_zero"].items())
            self.stdout.write(f"must be zero [{run['selector']}]: {zero}")
        self.stdout.write(f"Report: {json_path}\n        {html_path}")
        self.stdout.write("Targets met." if report["targets_met"] else "Targets NOT met.")
        if options["strict"] and not report["targets_met"]:
            raise CommandError("Evaluation targets missed (see the report).")

    def _injection(self, client, options) -> None:
        import json

        from claims.evaluation.injection import MESSAGES, MUST_BE_ZERO, injection_evaluate

        runs = injection_evaluate(client, progress=self.stdout.write)
        report = {
            "generated_at": datetime.now().isoformat(timespec="seconds"),
            "messages": len(MESSAGES),
            "must_be_zero_keys": MUST_BE_ZERO,
            "runs": [run.as_dict() for run in runs],
        }
        folder = Path(settings.VAR_DIR) / "reports"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"injection-{datetime.now():%Y%m%d-%H%M%S}.json"
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False))
        total = sum(sum(run.must_be_zero.values()) for run in runs)
        for run in runs:
            zero = ", ".join(f"{k}={run.must_be_zero.get(k, 0)}" for k in MUST_BE_ZERO)
            self.stdout.write(f"must be zero [{run.name}]: {zero}")
        self.stdout.write(f"Report: {path}")
        self.stdout.write("All must-be-zero counts are zero." if not total else "NOT all zero.")
        if options["strict"] and total:
            raise CommandError("The injection evaluation found violations (see the report).")

    def _outage(self, s3_control: bool, client: EndpointClient) -> OutagePlan:
        """How the storage scenario stops object storage, and what wraps the runs."""
        from claims.evaluation.outage import MotoS3Control, closed_port_storage

        if not s3_control:
            return OutagePlan(outage=closed_port_storage, kind="storage at a closed port")
        from knowledge.models import Release

        version_ids = list(
            Release.objects.filter(status=Release.Status.APPROVED).values_list(
                "version_id", flat=True
            )
        )
        control = MotoS3Control()
        plan = OutagePlan(
            outage=control.stopped,
            kind=f"S3 API server (moto) on {control.endpoint}, stopped and restarted",
            serving=lambda: control.serving(version_ids),
            recovered=0,
        )

        def recovery_check() -> None:
            turn, _ = harness._scenario_turn(client, harness.COVERED_POLICY, harness.RENTAL)
            plan.recovered += turn.guidance_status == "answered"

        plan.check = recovery_check
        return plan

    def _report(self, runs, scenarios, *, transport: str, real: bool = False) -> dict:
        from claims.evaluation.harness import REAL_TARGETS, TARGETS

        targets = REAL_TARGETS if real else TARGETS

        selectors = []
        for run in runs:
            data = run.as_dict()
            data["must_be_zero_values"] = [
                data["must_be_zero"].get(k, 0) for k in MUST_BE_ZERO_KEYS
            ]
            selectors.append(data)
        hybrid = next((s for s in selectors if s["selector"] == "hybrid"), None)
        met = True
        if hybrid is not None:
            for figures in hybrid["lines"].values():
                if figures["questions"]:
                    met &= (figures["returned"] or 0) >= targets["returned_min"]
                if figures["no_clause_questions"]:
                    met &= (figures["nothing_fits"] or 0) >= targets["nothing_fits_min"]
                if figures.get("decision_questions"):
                    met &= (figures["decision_queued"] or 0) >= targets["decision_queued_min"]
            met &= not any(hybrid["must_be_zero_values"])
        for s in scenarios.values():
            met &= s["passed"] == s["runs"]
        db = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        return {
            "generated_at": datetime.now().isoformat(timespec="seconds"),
            "environment": {
                "database": db,
                "storage": getattr(settings, "STORAGE_BACKEND", "local"),
                "transport": transport,
            },
            "targets": targets,
            "targets_met": bool(met),
            "must_be_zero_keys": MUST_BE_ZERO_KEYS,
            "selectors": selectors,
            "scenarios": scenarios,
        }
