"""Fixtures for the knowledge tests: staff users and small wording sources."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from knowledge.models import WordingVersion
from knowledge.services.ingestion import wording_version_create, wording_version_ingest
from northwind.roles import APPROVER, KNOWLEDGE_EDITOR, roles_sync

HEADER = "# Northwind Motor test wording\n\n> Synthetic test wording, not a contract.\n\n"

COV_01 = """## MTR-COV-01 - Accidental damage to your car while you drive it
Kind: cover

We cover sudden accidental damage to your car, whoever was at fault.
"""

BEN_01 = """## MTR-BEN-01 - Hire car while your car is repaired after a claim
Kind: benefit
Schedule section: alternative_transport

We pay for a hire car for up to 14 days, only if your schedule lists
alternative transport. Wear and tear is excluded (MTR-EXC-01).
"""

EXC_01 = """## MTR-EXC-01 - Wear and tear and breakdowns are not covered
Kind: exclusion

We do not pay for wear and tear, rust or mechanical breakdown.
"""

INTERNAL_01 = """## MTR-GEN-01 - How claims staff check the driver licence records
Kind: general
Visibility: internal

Staff check the licence with the transport agency before paying.
"""


def wording(*clauses: str) -> str:
    return HEADER + "\n".join(clauses)


VALID = wording(COV_01, BEN_01, EXC_01, INTERNAL_01)


def clause(clause_id: str, title: str = "", body: str = "Plain text of this test clause.") -> str:
    title = title or f"Test clause {clause_id} about something a customer asks"
    return f"## {clause_id} - {title}\nKind: cover\n\n{body}\n"


@pytest.fixture
def users(db):
    groups = roles_sync()
    User = get_user_model()
    made = {}
    for name, role in [
        ("editor", KNOWLEDGE_EDITOR),
        ("editor2", KNOWLEDGE_EDITOR),
        ("approver", APPROVER),
        ("approver2", APPROVER),
    ]:
        user = User.objects.create_user(username=name, password="pw-" + name, is_staff=True)
        user.groups.set([groups[role]])
        made[name] = User.objects.get(pk=user.pk)  # fresh permission cache
    made["admin"] = User.objects.create_superuser(username="admin", password="pw-admin")
    return made


@pytest.fixture
def source_file(tmp_path):
    def write(text: str, name: str = "wording.md") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


def ingest_command(path: Path, label: str, document: str = "NW-MOTOR", *extra: str) -> None:
    call_command("ingest_wording", str(path), "--document", document, "--version", label, *extra)


def ingested_version(
    text: str = VALID,
    *,
    label: str = "2026.2",
    document_id: str = "NW-MOTOR",
    effective_from: date = date(2026, 7, 1),
    effective_to: date | None = None,
    channels: tuple[str, ...] = ("direct", "broker"),
) -> WordingVersion:
    version = wording_version_create(
        document_id=document_id,
        label=label,
        source_bytes=text.encode(),
        filename=f"{label}.md",
        effective_from=effective_from,
        effective_to=effective_to,
        channels=list(channels),
        acting_user=None,
        queue_ingestion=False,
    )
    result = wording_version_ingest(version_id=version.pk)
    version.refresh_from_db()
    assert result.outcome == "ingested", result.errors
    return version


DOWN_STORAGE_OPTIONS = {
    "bucket_name": "northwind",
    "endpoint_url": "http://127.0.0.1:9",
    "access_key": "x",
    "secret_key": "x",
    "region_name": "us-east-1",
}


@pytest.fixture
def storage_down(settings):
    """Point the default storage at an S3 endpoint nothing listens on."""
    from botocore.config import Config

    import knowledge.storage

    previous = knowledge.storage.STORAGE_BACKOFF_SECONDS
    knowledge.storage.STORAGE_BACKOFF_SECONDS = 0.1

    def down() -> None:
        settings.STORAGES = {
            **settings.STORAGES,
            "default": {
                "BACKEND": "storages.backends.s3.S3Storage",
                "OPTIONS": {
                    **DOWN_STORAGE_OPTIONS,
                    "client_config": Config(
                        connect_timeout=1, read_timeout=1, retries={"max_attempts": 1}
                    ),
                },
            },
        }

    yield down
    knowledge.storage.STORAGE_BACKOFF_SECONDS = previous
