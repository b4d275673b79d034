"""Settle wording versions stuck in ``uploaded`` or ``ingesting``."""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.models import WordingVersion
from knowledge.services.ingestion import wording_versions_sweep


def _seconds(value: str) -> int:
    try:
        seconds = int(value)
    except ValueError:
        raise CommandError(f"expected a whole number of seconds, not {value!r}") from None
    if seconds < 0:
        raise CommandError(f"expected zero or more seconds, not {seconds}")
    return seconds


class Command(BaseCommand):
    help = (
        "Dispatch again the wording versions whose ingestion was never handed to the broker "
        "or has stalled, and fail visibly those that stalled too often. Celery beat runs the "
        "same sweep every minute; run this from cron where no beat process runs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--requeue-after",
            type=_seconds,
            default=None,
            help="seconds an undispatched upload waits (default WORDING_INGEST_REQUEUE_AFTER, "
            f"{settings.WORDING_INGEST_REQUEUE_AFTER})",
        )
        parser.add_argument(
            "--stalled-after",
            type=_seconds,
            default=None,
            help="seconds after which an ingestion has stalled (default "
            f"WORDING_INGEST_STALLED_AFTER, {settings.WORDING_INGEST_STALLED_AFTER})",
        )
        parser.add_argument(
            "--max-stalls",
            type=int,
            default=None,
            help="stalls in a row before a version fails (default WORDING_INGEST_MAX_STALLS, "
            f"{settings.WORDING_INGEST_MAX_STALLS})",
        )

    def handle(self, *args, **options) -> None:
        if options["max_stalls"] is not None and options["max_stalls"] < 1:
            raise CommandError("--max-stalls must be 1 or more")
        result = wording_versions_sweep(
            requeue_after=(
                None
                if options["requeue_after"] is None
                else timedelta(seconds=options["requeue_after"])
            ),
            stalled_after=(
                None
                if options["stalled_after"] is None
                else timedelta(seconds=options["stalled_after"])
            ),
            max_stalls=options["max_stalls"],
        )
        names = {
            v.pk: str(v)
            for v in WordingVersion.objects.select_related("document").filter(
                pk__in=[*result.dispatched, *result.failed, *result.undispatched]
            )
        }

        def listed(ids: tuple[int, ...]) -> str:
            return ", ".join(names.get(pk, str(pk)) for pk in ids) or "none"

        self.stdout.write(f"dispatched again: {listed(result.dispatched)}")
        self.stdout.write(f"failed (stalled too often): {listed(result.failed)}")
        if result.undispatched:
            raise CommandError(
                f"the broker is unreachable; still uploaded: {listed(result.undispatched)} "
                "(the next sweep dispatches them)"
            )
