"""python manage.py masking_check [--rules-only] [--keep-records]: masking, measured.

Prints how many of the corpus's personal tokens survive masking (target 0),
how many clean messages masking alters (target at most 2%), and how many raw
tokens the claim endpoint stored (target 0). Exits non-zero when a target is
missed. The endpoint pass runs as the measurement client on the configured
database and removes its conversations afterwards.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

CLEAN_ALTERED_MAX_PCT = 2.0


class Command(BaseCommand):
    help = "Measure personal-data masking on the corpus, and what the endpoint stores."

    def add_arguments(self, parser):
        parser.add_argument(
            "--rules-only", action="store_true", help="Skip the pass through the endpoint."
        )
        parser.add_argument(
            "--keep-records", action="store_true", help="Keep the measurement's conversations."
        )

    def handle(self, *args, **options):
        from claims.evaluation.client import measurement_records_delete
        from claims.evaluation.masking import masking_measure
        from claims.management.commands.evaluate import demo_ensure

        through = not options["rules_only"]
        if through and demo_ensure(self.stdout):
            self.stdout.write("Loaded the demo data (it was missing).")
        try:
            figures = masking_measure(through_endpoint=through)
        finally:
            if through and not options["keep_records"]:
                measurement_records_delete()
        for line in figures.lines():
            self.stdout.write(line)
        missed = []
        if figures.raw_after_rules or figures.raw_stored:
            missed.append("raw personal tokens left")
        if figures.clean_altered_pct > CLEAN_ALTERED_MAX_PCT:
            missed.append(f"more than {CLEAN_ALTERED_MAX_PCT}% of clean messages altered")
        if missed:
            raise CommandError("masking targets missed: " + "; ".join(missed))
        self.stdout.write(self.style.SUCCESS("masking targets met"))
