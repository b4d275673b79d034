"""Ingestion through Redis and a real Celery worker process."""

from __future__ import annotations

import time
from datetime import date

import pytest
from django.core.files.storage import default_storage

from knowledge.models import WordingVersion
from knowledge.services.ingestion import wording_version_create
from knowledge.storage import objects_list
from tests.knowledge.conftest import VALID


@pytest.fixture
def worker_storage(settings):
    """Use the storage the worker uses: the environment's, not a per-test prefix.

    The worker process reads its settings from the environment; the test
    process goes back to the same settings and uses a document label of its
    own, then deletes what it wrote.
    """
    import northwind.settings as environment_settings

    settings.STORAGES = environment_settings.STORAGES
    written: list[str] = []
    yield written
    for prefix in written:
        for key in objects_list(prefix):
            default_storage.delete(key)


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_upload_is_ingested_by_the_worker(celery_worker, worker_storage):
    from northwind.celery import app

    assert app.conf.task_always_eager is False
    label = f"worker-{int(time.time() * 1000)}"
    worker_storage.append(f"wording/NW-MOTOR/{label}/")
    # when (autocommit: the on_commit hook sends the task at once)
    version = wording_version_create(
        document_id="NW-MOTOR",
        label=label,
        source_bytes=VALID.encode(),
        filename="motor.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
    )
    # then the worker ingests it
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        version.refresh_from_db()
        if version.status in {"ingested", "failed"}:
            break
        time.sleep(0.2)
    assert version.status == WordingVersion.Status.INGESTED, version.validation_errors
    assert version.clauses.count() == 4
    keys = objects_list(f"wording/NW-MOTOR/{label}/")
    assert version.manifest_key in keys
    assert all(c.storage_key in keys for c in version.clauses.all())
