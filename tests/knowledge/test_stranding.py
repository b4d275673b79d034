"""Ingestion never strands a version: bad characters, lost attempts, the sweeper, discard.

These run on the embedded default and, in the services pass, on PostgreSQL
(where a NUL byte used to fail inside the worker and strand the version).
The broker and worker faults are in ``test_faults.py``.
"""

from __future__ import annotations

from datetime import date, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from knowledge.models import WordingVersion
from knowledge.services import ingestion
from knowledge.services.ingestion import (
    wording_version_create,
    wording_version_discard,
    wording_version_ingest,
    wording_version_requeue,
    wording_versions_sweep,
)
from knowledge.storage import objects_list
from tests.knowledge.conftest import BEN_01, COV_01, EXC_01, VALID, clause, wording


def create(text: str | bytes, label: str = "2026.2") -> WordingVersion:
    return wording_version_create(
        document_id="NW-MOTOR",
        label=label,
        source_bytes=text if isinstance(text, bytes) else text.encode(),
        filename=f"{label}.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )


def only_source_stored(label: str = "2026.2") -> bool:
    keys = objects_list(f"wording/NW-MOTOR/{label}/")
    return len(keys) == 1 and keys[0].startswith(f"wording/NW-MOTOR/{label}/source-")


@pytest.mark.django_db
def test_a_nul_byte_fails_with_its_line_before_any_object_is_written():
    # given a source with a NUL in the body of its second clause
    text = wording(COV_01, BEN_01.replace("We pay", "We\x00 pay"), EXC_01)
    nul_line = next(n for n, line in enumerate(text.split("\n"), 1) if "\x00" in line)
    assert nul_line == 14
    version = create(text)
    # when
    result = wording_version_ingest(version_id=version.pk)
    # then the version failed visibly, with the line and column, and wrote no object
    version.refresh_from_db()
    assert result.outcome == "failed"
    assert version.status == "failed"
    assert version.validation_errors == [
        {
            "line": 14,
            "message": "column 3: the character U+0000 (NUL) is not allowed in a wording "
            "source; save the file as plain UTF-8 text (a NUL often means the file was "
            "saved as UTF-16)",
        }
    ]
    assert only_source_stored()
    assert not version.clauses.exists()
    # and the corrected file takes its label
    fixed = create(wording(COV_01, BEN_01, EXC_01))
    assert fixed.pk == version.pk
    assert wording_version_ingest(version_id=fixed.pk).outcome == "ingested"


@pytest.mark.django_db
def test_other_control_characters_are_named_line_by_line():
    text = wording(
        COV_01.replace("whoever", "who\x1bever"),
        BEN_01.replace("Wear", "\x0cWear").replace("only", "\x07only\x07"),
        EXC_01,
    )
    version = create(text)
    result = wording_version_ingest(version_id=version.pk)
    assert result.outcome == "failed"
    lines = text.split("\n")
    expected = []
    for number, line in enumerate(lines, 1):
        for char in "\x1b\x07\x0c":
            if char in line:
                expected.append((number, line.index(char) + 1, line.count(char)))
    assert expected == [(8, 51, 1), (14, 42, 2), (15, 24, 1)]
    found = [(e["line"], e["message"].split(";")[0]) for e in result.errors]
    assert found == [
        (8, "column 51: the character U+001B (ESC) is not allowed in a wording source"),
        (
            14,
            "column 42: the character U+0007 (a control character) is not allowed in a "
            "wording source and 1 more on this line",
        ),
        (15, "column 24: the character U+000C (form feed) is not allowed in a wording source"),
    ]
    assert only_source_stored()


@pytest.mark.django_db
def test_tabs_carriage_returns_and_a_byte_order_mark_are_plain_text():
    text = "\ufeff" + wording(COV_01, BEN_01.replace("We pay", "We\tpay"), EXC_01)
    version = create(text.replace("\n", "\r\n"))
    assert wording_version_ingest(version_id=version.pk).outcome == "ingested"
    version.refresh_from_db()
    assert version.document.title == "Northwind Motor test wording"


@pytest.mark.django_db
def test_a_title_longer_than_the_column_fails_with_its_line():
    long_title = "Accidental damage to your car " + "while you drive it " * 16
    version = create(wording(clause("MTR-COV-01", title=long_title.strip())))
    result = wording_version_ingest(version_id=version.pk)
    assert result.outcome == "failed"
    assert result.errors == (
        {
            "line": 5,
            "message": f"MTR-COV-01: the title is {len(long_title.strip())} characters long; "
            "the most is 300",
        },
    )
    assert only_source_stored()


@pytest.mark.django_db
def test_a_long_file_name_or_discard_reason_never_breaks_the_history():
    version = wording_version_create(
        document_id="NW-MOTOR",
        label="2026.2",
        source_bytes=VALID.encode(),
        filename="a-very-long-file-name-" * 10 + ".md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
    reason = version.history.first().history_change_reason
    assert reason.startswith("Uploaded a-very-long-file-name-")
    assert reason.endswith("on the command line")
    assert len(reason) <= 100


class WorkerDied(BaseException):
    """Stands for SIGKILL inside the service: nothing after it runs, not even ``except``."""


def die_on_first_read(monkeypatch) -> None:
    real_read = ingestion.object_read
    calls = []

    def read(key: str) -> bytes:
        calls.append(key)
        if len(calls) == 1:
            raise WorkerDied
        return real_read(key)

    monkeypatch.setattr(ingestion, "object_read", read)


@pytest.mark.django_db
def test_a_redelivered_task_takes_over_an_attempt_that_never_finished(monkeypatch):
    # given an attempt that died mid-task: the version is left ingesting
    version = create(VALID)
    die_on_first_read(monkeypatch)
    with pytest.raises(WorkerDied):
        wording_version_ingest(version_id=version.pk)
    version.refresh_from_db()
    assert (version.status, version.ingest_attempt) == ("ingesting", 1)
    # when the broker delivers the task again
    result = wording_version_ingest(version_id=version.pk)
    # then the second attempt ingests it, and the history says what happened
    version.refresh_from_db()
    assert result.outcome == "ingested"
    assert (version.status, version.ingest_attempt, version.ingest_stalls) == ("ingested", 2, 0)
    reasons = list(version.history.values_list("history_change_reason", flat=True))
    assert "Ingestion attempt 2 started (the previous one never finished)" in reasons
    # and a third delivery changes nothing
    assert wording_version_ingest(version_id=version.pk).outcome == "unchanged"


@pytest.mark.django_db
def test_a_task_that_keeps_dying_fails_visibly_instead_of_looping(monkeypatch, settings):
    settings.WORDING_INGEST_MAX_STALLS = 3
    version = create(VALID)

    def read(key: str) -> bytes:
        raise WorkerDied

    monkeypatch.setattr(ingestion, "object_read", read)
    for _ in range(3):
        with pytest.raises(WorkerDied):
            wording_version_ingest(version_id=version.pk)
    result = wording_version_ingest(version_id=version.pk)
    version.refresh_from_db()
    assert result.outcome == "failed"
    assert version.status == "failed"
    assert version.validation_errors[0]["message"].startswith(
        "Ingestion started 3 times without finishing"
    )


@pytest.mark.django_db
def test_a_stale_attempt_never_indexes_a_discarded_version(monkeypatch, users):
    # given an ingestion whose version is discarded while it writes objects
    version = create(VALID)
    real_write = ingestion.object_write_once
    discarded = []

    def write(key: str, data: bytes) -> bool:
        if not discarded:
            discarded.append(
                wording_version_discard(
                    version_id=version.pk, acting_user=users["editor"], reason="wrong file"
                )
            )
        return real_write(key, data)

    monkeypatch.setattr(ingestion, "object_write_once", write)
    # when that attempt reaches its final step
    result = wording_version_ingest(version_id=version.pk)
    # then it changes nothing: the version stays discarded with no clauses
    version.refresh_from_db()
    assert result.outcome == "superseded"
    assert version.status == "discarded"
    assert not version.clauses.exists()


@pytest.mark.django_db
def test_an_unexpected_error_fails_the_version_instead_of_stranding_it(monkeypatch):
    version = create(VALID)

    def broken(*args, **kwargs):
        raise ValueError("something nobody planned for")

    monkeypatch.setattr(ingestion, "wording_parse", broken)
    result = wording_version_ingest(version_id=version.pk)
    version.refresh_from_db()
    assert result.outcome == "failed"
    assert version.status == "failed"
    assert version.validation_errors == [
        {
            "line": None,
            "message": "Ingestion stopped on an unexpected error (ValueError); nothing was "
            "published. The server log has the details; ingest it again or upload a "
            "corrected file.",
        }
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("state", ["uploaded", "ingesting", "failed"])
def test_a_stranded_version_can_always_be_discarded(state, monkeypatch, users):
    version = create(VALID)
    if state == "ingesting":
        die_on_first_read(monkeypatch)
        with pytest.raises(WorkerDied):
            wording_version_ingest(version_id=version.pk)
    elif state == "failed":
        monkeypatch.setattr(
            ingestion,
            "object_write_once",
            lambda key, data: (_ for _ in ()).throw(ingestion.StorageUnavailable("down")),
        )
        wording_version_ingest(version_id=version.pk)
    version.refresh_from_db()
    assert version.status == state
    wording_version_discard(version_id=version.pk, acting_user=users["editor"], reason="stuck")
    version.refresh_from_db()
    assert version.status == "discarded"
    # and its label takes a corrected file
    monkeypatch.undo()
    again = create(VALID)
    assert again.pk == version.pk
    assert wording_version_ingest(version_id=again.pk).outcome == "ingested"


@pytest.mark.django_db
def test_discarding_removes_the_clause_objects_and_keeps_the_source(users):
    version = create(VALID)
    wording_version_ingest(version_id=version.pk)
    assert len(objects_list("wording/NW-MOTOR/2026.2/")) == 6  # source, 4 clauses, manifest
    wording_version_discard(version_id=version.pk, acting_user=users["editor"], reason="mistake")
    assert only_source_stored()


@pytest.mark.django_db
def test_a_failed_attempts_objects_are_reused_by_the_next(monkeypatch):
    # given an attempt that wrote two clause objects, then lost storage
    version = create(VALID)
    real_write = ingestion.object_write_once
    written: list[tuple[str, bool]] = []

    def write(key: str, data: bytes) -> bool:
        if len(written) == 2 and not monkeypatch_done:
            raise ingestion.StorageUnavailable("object storage unavailable: test outage")
        done = real_write(key, data)
        written.append((key, done))
        return done

    monkeypatch_done = False
    monkeypatch.setattr(ingestion, "object_write_once", write)
    assert wording_version_ingest(version_id=version.pk).outcome == "failed"
    first = list(written)
    # when the next attempt runs with storage back
    monkeypatch_done = True
    written.clear()
    assert wording_version_requeue(version_id=version.pk, acting_user=_editor()) is True
    # then it wrote only what was missing: the two objects are reused, not copied
    version.refresh_from_db()
    assert version.status == "ingested"
    assert [key for key, done in written if not done] == [key for key, _ in first]
    assert len(objects_list("wording/NW-MOTOR/2026.2/")) == 6


def _editor():
    from django.contrib.auth import get_user_model

    from northwind.roles import KNOWLEDGE_EDITOR, roles_sync

    user = get_user_model().objects.create_user(username="requeuer", is_staff=True)
    user.groups.set([roles_sync()[KNOWLEDGE_EDITOR]])
    return get_user_model().objects.get(pk=user.pk)


@pytest.mark.django_db
def test_requeue_refuses_an_ingested_version(users):
    version = create(VALID)
    wording_version_ingest(version_id=version.pk)
    with pytest.raises(ingestion.WordingError, match="is ingested; only a failed"):
        wording_version_requeue(version_id=version.pk, acting_user=users["editor"])


@pytest.mark.django_db
def test_the_sweeper_dispatches_an_upload_the_broker_never_took(monkeypatch):
    # given an upload whose dispatch found the broker down three minutes ago
    version = create(VALID)
    WordingVersion.objects.filter(pk=version.pk).update(
        status_changed_at=timezone.now() - timedelta(minutes=3)
    )
    young = create(VALID, label="2026.3")  # uploaded just now: left alone
    # when the sweep runs (Celery is eager here: dispatch ingests at once)
    result = wording_versions_sweep(requeue_after=timedelta(minutes=2))
    # then
    assert result.dispatched == (version.pk,)
    version.refresh_from_db()
    young.refresh_from_db()
    assert version.status == "ingested"
    assert young.status == "uploaded"


@pytest.mark.django_db
def test_the_sweeper_requeues_a_stalled_ingestion_then_fails_it_at_the_limit(monkeypatch):
    version = create(VALID)
    die_on_first_read(monkeypatch)
    with pytest.raises(WorkerDied):
        wording_version_ingest(version_id=version.pk)
    long_ago = timezone.now() - timedelta(hours=1)
    WordingVersion.objects.filter(pk=version.pk).update(status_changed_at=long_ago)
    # a stall below the limit: queued again, and ingested (eager)
    result = wording_versions_sweep(stalled_after=timedelta(minutes=15), max_stalls=3)
    version.refresh_from_db()
    assert result.dispatched == (version.pk,)
    assert version.status == "ingested"
    reasons = list(version.history.values_list("history_change_reason", flat=True))
    assert any(r.startswith("Queued again by the sweeper: ingesting since") for r in reasons)

    # at the limit: failed visibly, with what to do
    other = create(VALID, label="2026.3")

    def read(key: str) -> bytes:
        raise WorkerDied

    monkeypatch.setattr(ingestion, "object_read", read)
    with pytest.raises(WorkerDied):
        wording_version_ingest(version_id=other.pk)
    WordingVersion.objects.filter(pk=other.pk).update(status_changed_at=long_ago)
    result = wording_versions_sweep(stalled_after=timedelta(minutes=15), max_stalls=1)
    other.refresh_from_db()
    assert result.failed == (other.pk,)
    assert other.status == "failed"
    assert (
        "Ingest it again, upload a corrected file, or discard it."
        in (other.validation_errors[0]["message"])
    )


@pytest.mark.django_db
def test_the_sweep_command_reports_what_it_did():
    version = create(VALID)
    WordingVersion.objects.filter(pk=version.pk).update(
        status_changed_at=timezone.now() - timedelta(minutes=5)
    )
    out = StringIO()
    call_command("sweep_ingestion", "--requeue-after", "60", stdout=out)
    assert out.getvalue().splitlines() == [
        "dispatched again: NW-MOTOR 2026.2",
        "failed (stalled too often): none",
    ]
    with pytest.raises(CommandError, match="expected zero or more seconds"):
        call_command("sweep_ingestion", "--stalled-after", "-1")
    with pytest.raises(CommandError, match="--max-stalls must be 1 or more"):
        call_command("sweep_ingestion", "--max-stalls", "0")


def test_the_beat_schedule_runs_the_sweep_every_minute(settings):
    from northwind.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["wording-ingestion-sweep"]
    assert entry["task"] == "knowledge.wording_versions_sweep"
    assert entry["task"] in app.tasks
    assert entry["schedule"] == 60.0
    task = app.tasks["knowledge.wording_version_ingest"]
    assert task.acks_late is True
    assert task.reject_on_worker_lost is True
    assert settings.WORDING_INGEST_STALLED_AFTER > settings.CELERY_VISIBILITY_TIMEOUT
