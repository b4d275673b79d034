"""Demo wording: MVP-2026.1 released then withdrawn, 2026.2 released.

Called by ``python manage.py load_demo`` after it created the demo staff.
Idempotent: a version already there is reused and a release already made is
left as it is.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from django.contrib.auth import get_user_model

from knowledge.card_demo import demo_cards_load
from knowledge.models import Release, WordingVersion
from knowledge.services.ingestion import wording_version_create, wording_version_ingest
from knowledge.services.releases import release_approve, release_request, release_withdraw

CONTENT_DIR = Path(__file__).resolve().parent / "content" / "wording"
DOCUMENTS = ["NW-MOTOR", "NW-HOME", "NW-CONTENTS"]
CHANNELS = ["direct", "broker"]

# label, file suffix, window, withdraw reason (None: stays approved)
DEMO_VERSIONS = [
    ("MVP-2026.1", "MVP-2026.1", date(2025, 7, 1), date(2026, 7, 1), "superseded by 2026.2"),
    ("2026.2", "2026.2", date(2026, 7, 1), None, None),
]


def demo_load(*, stdout) -> None:
    User = get_user_model()
    editor = User.objects.get(username="demo-editor")
    approver = User.objects.get(username="demo-approver")
    for document_id in DOCUMENTS:
        for label, suffix, starts, ends, withdraw_reason in DEMO_VERSIONS:
            path = CONTENT_DIR / f"{document_id}-{suffix}.md"
            if not path.is_file():
                stdout.write(f"  wording: {path.name} is not there yet; skipped")
                continue
            version = WordingVersion.objects.filter(
                document__document_id=document_id, label=label
            ).first()
            if version is None:
                version = wording_version_create(
                    document_id=document_id,
                    label=label,
                    source_bytes=path.read_bytes(),
                    filename=path.name,
                    effective_from=starts,
                    effective_to=ends,
                    channels=CHANNELS,
                    acting_user=editor,
                    queue_ingestion=False,
                )
            result = wording_version_ingest(version_id=version.pk)
            if result.outcome == "failed":
                stdout.write(f"  wording: {document_id} {label} FAILED ingestion:")
                for error in result.errors:
                    where = f"line {error['line']}: " if error["line"] else ""
                    stdout.write(f"    {where}{error['message']}")
                continue
            state = _release(version, editor, approver, withdraw_reason)
            stdout.write(
                f"  wording: {document_id} {label}: {result.clause_count} clauses, {state}"
            )
    # Answer cards cite clauses of the approved 2026.2 wording.
    demo_cards_load(stdout=stdout)


def _release(version: WordingVersion, editor, approver, withdraw_reason: str | None) -> str:
    if version.releases.filter(status__in=[Release.Status.APPROVED, Release.Status.WITHDRAWN]):
        return version.releases.order_by("-pk").first().get_status_display().lower()
    release = version.releases.filter(status=Release.Status.PENDING_APPROVAL).first()
    if release is None:
        release = release_request(
            version_id=version.pk, acting_user=editor, reason="demo data", evaluate=False
        )
    release = release_approve(
        release_id=release.pk,
        acting_user=approver,
        reason="demo data",
        gate_override_reason="demo data, loaded by load_demo without an evaluation run",
    )
    if withdraw_reason:
        # The demo keeps a policy whose term started in the withdrawn window
        # (NW-MTR-170301): that it is left with no wording is intended.
        release = release_withdraw(
            release_id=release.pk,
            acting_user=approver,
            reason=withdraw_reason,
            confirm_unrouted=True,
        )
    return release.get_status_display().lower()
