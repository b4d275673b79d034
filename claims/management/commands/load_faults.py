"""python manage.py load_faults: claim turns under load while storage, then the broker, stops."""

from __future__ import annotations

import json
from datetime import datetime

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from claims.evaluation.client import measurement_client_ensure, measurement_records_delete
from claims.evaluation.fault_load import FAULTS, LoadRun
from claims.management.commands.evaluate import demo_ensure


class Command(BaseCommand):
    help = (
        "Run claim turns through gunicorn for a fixed time per phase while object storage, then "
        "the broker, is stopped and restarted (all on loopback, started by this command); print "
        "turns/s, p50/p95, 5xx and honest turns per phase. Exit 1 if any 5xx or dishonest turn."
    )

    def add_arguments(self, parser):
        parser.add_argument("--phase-seconds", type=float, default=10.0)
        parser.add_argument("--clients", type=int, default=4, help="client threads")
        parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON too.")

    def handle(self, *args, **options):
        from knowledge.models import Clause, WordingVersion
        from knowledge.services.ingestion import wording_version_discard

        if not 1 <= options["phase_seconds"] <= 120:
            raise CommandError("--phase-seconds must be between 1 and 120")
        if not 1 <= options["clients"] <= 32 or not 1 <= options["web_workers"] <= 8:
            raise CommandError("--clients must be 1-32 and --web-workers 1-8")
        if demo_ensure(self.stdout):
            self.stdout.write("Loaded the demo data (it was missing).")
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token

        user = get_user_model().objects.get(username=measurement_client_ensure())
        token = Token.objects.get_or_create(user=user)[0].key
        serving = list(
            Clause.objects.filter(version__releases__status="approved")
            .values_list("version_id", flat=True)
            .distinct()
        )
        log_dir = settings.VAR_DIR / "reports"
        log_dir.mkdir(parents=True, exist_ok=True)
        run = LoadRun(
            phase_seconds=options["phase_seconds"],
            clients=options["clients"],
            web_workers=options["web_workers"],
            log_dir=log_dir,
        )
        self.stdout.write(
            f"load_faults: {options['clients']} clients, {options['web_workers']} gunicorn "
            f"workers, {options['phase_seconds']:.0f} s per phase; "
            f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
        )
        try:
            with run.services(serving):
                run.run(token=token, on_phase=lambda name: self.stdout.write(f"  phase {name}"))
        finally:
            measurement_records_delete()
            label = getattr(run, "upload_label", "")
            version = WordingVersion.objects.filter(label=label).first() if label else None
            if version is not None and version.status != WordingVersion.Status.DISCARDED:
                editor = get_user_model().objects.get(username="fault-load-editor")
                wording_version_discard(
                    version_id=version.pk, acting_user=editor, reason="load_faults probe"
                )
        report = run.report()
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = log_dir / f"load-faults-{stamp}.json"
        path.write_text(json.dumps(report, indent=2))
        self._print(report)
        self.stdout.write(f"\nreport: {path}")
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        dishonest = [p for p in report["phases"] if p["honest"] < p["turns"]]
        if (
            report["server_errors_total"]
            or dishonest
            or report["upload_while_broker_down"]["http_status"] != 200
        ):
            raise CommandError("5xx responses, dishonest turns or a failed upload: see above")

    def _print(self, report: dict) -> None:
        self.stdout.write(
            f"\n{'phase':<13} {'s':>5} {'turns':>6} {'turns/s':>8} {'p50 ms':>7} {'p95 ms':>7} "
            f"{'5xx':>4} {'cited':>6} {'honest':>7}  guidance statuses"
        )
        for p in report["phases"]:
            fault = " (fault)" if p["phase"] in FAULTS else ""
            statuses = ", ".join(f"{k} {v}" for k, v in p["statuses"].items())
            self.stdout.write(
                f"{p['phase']:<13} {p['seconds']:>5} {p['turns']:>6} {p['turns_per_second']:>8} "
                f"{p['p50_ms']:>7} {p['p95_ms']:>7} {p['server_errors']:>4} {p['cited']:>6} "
                f"{p['honest_percent']:>6}%  {statuses}{fault}; "
                f"{p['transition_turns']} turns straddled the change"
            )
        u = report["upload_while_broker_down"]
        self.stdout.write(
            f"\nupload while the broker was down: HTTP {u['http_status']} in {u['seconds']} s, "
            f"version {u['status_while_down']}, page says it waits: {u['page_says_waiting']}; "
            f"after the broker came back: {u['swept'] or 'no sweep output'}; "
            f"final status {u['final_status']} ({u['clauses']} clauses)"
        )
