"""Ingest one wording version from a Markdown file, synchronously."""

import hashlib
from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.models import WordingVersion
from knowledge.services.ingestion import (
    WordingError,
    document_line,
    wording_version_create,
    wording_version_ingest,
)


def _date(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{option} must be a date as YYYY-MM-DD, not {value!r}.") from None


class Command(BaseCommand):
    help = (
        "Ingest a wording version: store the source, validate it, write each clause and the "
        "manifest to object storage and index the clauses. Running it again changes nothing."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        # --version names the wording version here, not Django's version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the Markdown source file")
        parser.add_argument("--document", required=True, help="e.g. NW-MOTOR")
        parser.add_argument("--version", required=True, dest="version", help="e.g. 2026.2")
        parser.add_argument(
            "--effective-from", help="YYYY-MM-DD, first day covered (default: today)"
        )
        parser.add_argument("--effective-to", help="YYYY-MM-DD, first day not covered")
        parser.add_argument(
            "--channels", default=None, help="comma-separated (default direct,broker)"
        )

    def handle(self, *args, **options) -> None:
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        document_id = options["document"]
        label = options["version"]
        try:
            document_line(document_id)
        except WordingError as exc:
            raise CommandError(str(exc)) from exc
        effective_from = _date(options["effective_from"], "--effective-from")
        effective_to = _date(options["effective_to"], "--effective-to")
        options["channels_given"] = options["channels"] is not None
        raw_channels = options["channels"] if options["channels_given"] else "direct,broker"
        channels = [c.strip() for c in raw_channels.split(",") if c.strip()]
        source = path.read_bytes()

        version = (
            WordingVersion.objects.select_related("document")
            .filter(document__document_id=document_id, label=label)
            .first()
        )
        if version is not None and version.status == WordingVersion.Status.FAILED:
            version = None  # it published nothing: the corrected source replaces it
        if version is not None:
            if version.source_sha256 != hashlib.sha256(source).hexdigest():
                raise CommandError(
                    f"{document_id} {label} already exists with a different source; "
                    "a changed wording is a new version with a new label."
                )
            asked = {
                "--effective-from": (effective_from, version.effective_from),
                "--effective-to": (effective_to, version.effective_to),
                "--channels": (
                    sorted(channels) if options["channels_given"] else None,
                    sorted(version.channels),
                ),
            }
            differ = [
                f"{flag} {given} (stored: {stored})"
                for flag, (given, stored) in asked.items()
                if given is not None and given != stored
            ]
            if differ:
                raise CommandError(
                    f"{document_id} {label} is already ingested with another window or "
                    f"channels: {'; '.join(differ)}. A version's window is set when it is "
                    "uploaded; a different window is a new version with a new label."
                )
            self.stdout.write(f"{document_id} {label} exists with this source; reusing it.")
        else:
            try:
                version = wording_version_create(
                    document_id=document_id,
                    label=label,
                    source_bytes=source,
                    filename=path.name,
                    effective_from=effective_from or date.today(),
                    effective_to=effective_to,
                    channels=channels,
                    acting_user=None,
                    queue_ingestion=False,
                )
            except WordingError as exc:
                raise CommandError(str(exc)) from exc

        result = wording_version_ingest(version_id=version.pk)
        if result.outcome == "failed":
            for error in result.errors:
                where = f"{path}:{error['line']}: " if error["line"] else f"{path}: "
                self.stderr.write(f"{where}{error['message']}")
            raise CommandError(
                f"{document_id} {label} failed ingestion with {len(result.errors)} error(s); "
                "nothing was published."
            )
        if result.outcome == "superseded":
            raise CommandError(
                f"{document_id} {label} was discarded or taken over by another ingestion while "
                "this one ran; this run changed nothing."
            )
        verb = "already ingested" if result.outcome == "unchanged" else "ingested"
        self.stdout.write(
            self.style.SUCCESS(
                f"{document_id} {label} {verb}: {result.clause_count} clauses under "
                f"{result.storage_prefix} (manifest {result.manifest_key})"
            )
        )
