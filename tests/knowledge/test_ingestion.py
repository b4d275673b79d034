"""Ingestion through the command and the services: all or nothing, idempotent."""

from __future__ import annotations

import json
import sys
import time
from datetime import date

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command

from knowledge.models import Clause, WordingVersion
from knowledge.selectors import release_approved_for_date
from knowledge.services import ingestion
from knowledge.services.ingestion import (
    clause_embeddings_compute,
    wording_version_create,
    wording_version_ingest,
)
from knowledge.services.releases import release_approve, release_request
from knowledge.storage import objects_list
from tests.knowledge.conftest import (
    BEN_01,
    COV_01,
    EXC_01,
    VALID,
    clause,
    ingest_command,
    ingested_version,
    wording,
)

PREFIX = "wording/NW-MOTOR/2026.2/"


def snapshot() -> tuple:
    rows = list(
        Clause.objects.order_by("pk").values_list(
            "pk", "clause_id", "sha256", "storage_key", "char_count", "text"
        )
    )
    versions = list(
        WordingVersion.objects.order_by("pk").values_list(
            "pk", "status", "manifest_key", "ingested_at", "source_sha256"
        )
    )
    history = (
        WordingVersion.history.count(),
        Clause.history.count(),
    )
    return objects_list("wording/"), rows, versions, history


@pytest.mark.django_db
def test_the_command_ingests_clauses_and_manifest_into_storage_and_rows(source_file, capsys):
    path = source_file(VALID)
    # when
    ingest_command(path, "2026.2", "NW-MOTOR", "--effective-from", "2026-07-01")
    # then the command says how many clauses and where
    out = capsys.readouterr().out
    assert "NW-MOTOR 2026.2 ingested: 4 clauses under wording/NW-MOTOR/2026.2/" in out
    version = WordingVersion.objects.get(document__document_id="NW-MOTOR", label="2026.2")
    assert version.status == "ingested"
    assert version.document.line == "motor"
    assert version.document.title == "Northwind Motor test wording"
    assert version.channels == ["direct", "broker"]
    assert version.effective_from == date(2026, 7, 1)
    assert version.effective_to is None
    clauses = list(version.clauses.order_by("position"))
    assert [c.clause_id for c in clauses] == [
        "MTR-COV-01",
        "MTR-BEN-01",
        "MTR-EXC-01",
        "MTR-GEN-01",
    ]
    ben = clauses[1]
    assert ben.kind == "benefit"
    assert ben.schedule_section == "alternative_transport"
    assert ben.refers_to == ["MTR-EXC-01"]
    assert clauses[0].refers_to == []
    assert clauses[3].visibility == "internal"
    assert ben.title == "Hire car while your car is repaired after a claim"

    # every clause is whole in storage under its content-addressed key
    keys = objects_list(PREFIX)
    for c in clauses:
        assert c.storage_key == f"{PREFIX}clauses/{c.clause_id}-{c.sha256[:16]}.md"
        assert c.storage_key in keys
        with default_storage.open(c.storage_key, "rb") as handle:
            stored = handle.read().decode()
        assert stored == c.text
        assert stored.startswith(f"## {c.clause_id} - {c.title}\n")
        assert c.char_count == len(stored)
    assert ben.text.endswith("Wear and tear is excluded (MTR-EXC-01).")

    # the manifest lists ids, titles, kinds and a sha256 per clause
    assert version.manifest_key.startswith(f"{PREFIX}manifest-")
    assert version.manifest_key in keys
    with default_storage.open(version.manifest_key, "rb") as handle:
        manifest = json.loads(handle.read())
    assert [m["clause_id"] for m in manifest["clauses"]] == [c.clause_id for c in clauses]
    assert [m["sha256"] for m in manifest["clauses"]] == [c.sha256 for c in clauses]
    assert [m["title"] for m in manifest["clauses"]] == [c.title for c in clauses]
    assert [m["kind"] for m in manifest["clauses"]] == [c.kind for c in clauses]
    assert version.source.name == f"{PREFIX}source-{version.source_sha256[:16]}.md"
    assert sorted(keys) == sorted(
        [version.source.name, version.manifest_key, *[c.storage_key for c in clauses]]
    )


@pytest.mark.django_db
def test_running_the_command_again_changes_nothing(source_file, capsys):
    path = source_file(VALID)
    ingest_command(path, "2026.2")
    before = snapshot()
    # when
    ingest_command(path, "2026.2")
    ingest_command(path, "2026.2")
    # then
    assert "already ingested: 4 clauses" in capsys.readouterr().out
    assert snapshot() == before


@pytest.mark.django_db
def test_a_changed_source_under_an_existing_label_is_refused(source_file):
    ingest_command(source_file(VALID), "2026.2")
    changed = source_file(VALID.replace("14 days", "21 days"), "changed.md")
    with pytest.raises(CommandError, match="already exists with a different source"):
        ingest_command(changed, "2026.2")


@pytest.mark.django_db
def test_ingestion_works_next_to_an_older_version_in_storage(source_file):
    ingest_command(source_file(wording(COV_01, EXC_01)), "2026.1")
    ingest_command(source_file(VALID, "new.md"), "2026.2")
    old, new = WordingVersion.objects.order_by("pk")
    assert old.clauses.count() == 2 and new.clauses.count() == 4
    assert any(k.startswith("wording/NW-MOTOR/2026.1/clauses/") for k in objects_list("wording/"))
    assert any(k.startswith(PREFIX + "clauses/") for k in objects_list("wording/"))


LONG_BODY = "We pay for this. " * 100

MALFORMED = {
    "duplicate id": (
        wording(COV_01, EXC_01, clause("MTR-COV-01", body="Again.")),
        "line 15: duplicate clause id MTR-COV-01 (first used at line 5)",
    ),
    "over-long clause": (
        wording(COV_01, clause("MTR-COV-02", body=LONG_BODY)),
        "line 10: MTR-COV-02 is 1",
    ),
    "bare title": (
        wording(COV_01, clause("MTR-COV-02", title="Alternative transport")),
        "line 10: title 'Alternative transport' is a bare label",
    ),
    "bare title, one word": (
        wording(COV_01, clause("MTR-EXC-01", title="Exclusions")),
        "line 10: title 'Exclusions' is a bare label",
    ),
    "schedule phrase without switch": (
        wording(COV_01, clause("MTR-BEN-01", body="We pay only if your schedule lists it.")),
        "line 13: MTR-BEN-01 says 'only if your schedule lists' but has no 'Schedule section:'",
    ),
    "switch without phrase": (
        wording(
            "## MTR-BEN-01 - Hire car while your car is repaired after a claim\n"
            "Kind: benefit\nSchedule section: alternative_transport\n\nWe pay for a hire car.\n"
        ),
        "line 7: MTR-BEN-01 has 'Schedule section: alternative_transport' but its text does not",
    ),
    "unknown schedule section": (
        wording(BEN_01.replace("alternative_transport", "space_travel"), EXC_01),
        "line 7: unknown Schedule section 'space_travel'",
    ),
    "wrong line prefix": (
        wording(clause("HOM-COV-01")),
        "line 5: clause id HOM-COV-01 has prefix HOM; this line's prefix is MTR",
    ),
    "bad id pattern": (
        wording(clause("MTR-COVER-1")),
        "line 5: clause id 'MTR-COVER-1' does not match MTR-<SEG>-<NN>",
    ),
    "unknown kind": (
        wording(COV_01.replace("Kind: cover", "Kind: promise")),
        "line 6: unknown Kind 'promise'",
    ),
    "unknown visibility": (
        wording(EXC_01.replace("Kind: exclusion", "Kind: exclusion\nVisibility: secret")),
        "line 7: unknown Visibility 'secret'",
    ),
    "empty body": (
        wording("## MTR-COV-01 - Accidental damage to your car while you drive it\nKind: cover\n"),
        "line 5: MTR-COV-01 has no text",
    ),
    "reference to a clause not in the version": (
        wording(clause("MTR-COV-01", body="See MTR-EXC-09 for what is excluded.")),
        "line 8: MTR-COV-01 refers to MTR-EXC-09, which is not in this version",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_wording_fails_with_line_numbers_and_publishes_nothing(
    case, source_file, capsys
):
    text, expected = MALFORMED[case]
    path = source_file(text)
    # when
    with pytest.raises(CommandError) as raised:
        ingest_command(path, "2026.2")
    # then the command fails (non-zero exit) naming the source line
    assert "failed ingestion" in str(raised.value)
    assert "nothing was published" in str(raised.value)
    err = capsys.readouterr().err
    assert f"{path}:{expected.removeprefix('line ').split(':')[0]}:" in err
    version = WordingVersion.objects.get(label="2026.2")
    assert version.status == "failed"
    messages = [f"line {e['line']}: {e['message']}" for e in version.validation_errors]
    assert any(m.startswith(expected) for m in messages), messages
    # nothing is published: no clause rows, no clause objects, no manifest
    assert Clause.objects.count() == 0
    assert version.manifest_key == ""
    assert objects_list("wording/") == [version.source.name]


def test_the_command_exits_non_zero_from_the_shell(tmp_path):
    """A real process: line-numbered errors on stderr and exit code 1."""
    from tests.test_foundation import run_manage

    bad = tmp_path / "bad.md"
    bad.write_text(wording(COV_01, clause("MTR-COV-01", body="Again.")))
    env = {"NORTHWIND_VAR_DIR": str(tmp_path / "var")}
    assert run_manage("migrate", "-v", "0", env=env).returncode == 0
    result = run_manage(
        "ingest_wording", str(bad), "--document", "NW-MOTOR", "--version", "2026.2", env=env
    )
    assert result.returncode == 1
    assert f"{bad}:10: duplicate clause id MTR-COV-01 (first used at line 5)" in result.stderr


@pytest.mark.django_db
def test_a_dropped_id_can_never_reappear(source_file, capsys):
    ingest_command(source_file(wording(COV_01, EXC_01, clause("MTR-COV-02"))), "2026.1")
    ingest_command(source_file(wording(COV_01, EXC_01), "v2.md"), "2026.2")
    # when MTR-COV-02, dropped in 2026.2, comes back in 2026.3
    with pytest.raises(CommandError):
        ingest_command(
            source_file(wording(COV_01, EXC_01, clause("MTR-COV-02")), "v3.md"), "2026.3"
        )
    # then
    assert (
        "v3.md:15: MTR-COV-02 was dropped before (it is not in 2026.2)" in capsys.readouterr().err
    )
    assert not WordingVersion.objects.get(label="2026.3").clauses.exists()


@pytest.mark.django_db
def test_new_ids_are_only_appended(source_file, capsys):
    ingest_command(source_file(wording(COV_01, clause("MTR-COV-03"))), "2026.1")
    with pytest.raises(CommandError):
        ingest_command(
            source_file(wording(COV_01, clause("MTR-COV-03"), clause("MTR-COV-02")), "v2.md"),
            "2026.2",
        )
    assert "MTR-COV-02 is a new id but earlier versions already went up to MTR-COV-03" in (
        capsys.readouterr().err
    )
    # appending past the highest is fine
    ingest_command(
        source_file(wording(COV_01, clause("MTR-COV-03"), clause("MTR-COV-04")), "v3.md"), "2026.3"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/file.md", "--document", "NW-MOTOR", "--version", "1"], "No such file"),
        (["{path}", "--document", "NW-TRAVEL", "--version", "1"], "Unknown document 'NW-TRAVEL'"),
        (
            ["{path}", "--document", "NW-MOTOR", "--version", "1", "--effective-from", "1/7/26"],
            "--effective-from must be a date as YYYY-MM-DD, not '1/7/26'",
        ),
        (
            ["{path}", "--document", "NW-MOTOR", "--version", "1", "--channels", "carrier-pigeon"],
            "unknown: carrier-pigeon",
        ),
        (
            [
                "{path}",
                "--document",
                "NW-MOTOR",
                "--version",
                "1",
                "--effective-from",
                "2026-07-01",
                "--effective-to",
                "2026-01-01",
            ],
            "The effective window must end after it starts",
        ),
    ],
)
def test_bad_arguments_are_clear_command_errors(args, message, source_file):
    path = source_file(VALID)
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        call_command("ingest_wording", *[a.format(path=path) for a in args])
    assert not Clause.objects.exists()


@pytest.mark.django_db
def test_a_crash_part_way_leaves_the_serving_release_serving(users, monkeypatch):
    # given an approved 2026.1 serving today
    old = ingested_version(
        wording(COV_01, EXC_01),
        label="2026.1",
        effective_from=date(2025, 7, 1),
        effective_to=date(2026, 7, 1),
    )
    release = release_request(version_id=old.pk, acting_user=users["editor"])
    release_approve(
        release_id=release.pk, acting_user=users["approver"], gate_override_reason="not tested here"
    )
    # when storage fails after the first clause object of 2026.2
    real_write = ingestion.object_write_once
    calls = []

    def failing_write(key: str, data: bytes) -> bool:
        calls.append(key)
        if len(calls) > 1:
            raise ingestion.StorageUnavailable("object storage unavailable: test outage")
        return real_write(key, data)

    monkeypatch.setattr(ingestion, "object_write_once", failing_write)
    new = wording_version_create(
        document_id="NW-MOTOR",
        label="2026.2",
        source_bytes=VALID.encode(),
        filename="v.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
    result = wording_version_ingest(version_id=new.pk)
    # then 2026.2 failed visibly, published no rows and no manifest
    assert result.outcome == "failed"
    new.refresh_from_db()
    assert new.status == "failed"
    assert new.validation_errors == [
        {"line": None, "message": "object storage unavailable: test outage"}
    ]
    assert not new.clauses.exists()
    assert not any("manifest" in k for k in objects_list(PREFIX))
    # and 2026.1 still serves
    lookup = release_approved_for_date(line="motor", on=date(2026, 3, 1))
    assert lookup.kind == "found" and lookup.window.label == "2026.1"
    # when storage is back, ingesting again completes
    monkeypatch.setattr(ingestion, "object_write_once", real_write)
    assert wording_version_ingest(version_id=new.pk).outcome == "ingested"
    assert new.clauses.count() == 4


@pytest.mark.django_db
def test_ingestion_fails_visibly_after_bounded_retries_when_storage_is_down(storage_down):
    # given a version whose source was stored
    version = wording_version_create(
        document_id="NW-MOTOR",
        label="2026.2",
        source_bytes=VALID.encode(),
        filename="v.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
    # when storage goes down
    storage_down()
    started = time.monotonic()
    result = wording_version_ingest(version_id=version.pk)
    elapsed = time.monotonic() - started
    # then it fails within seconds, saying so
    assert elapsed < 20, elapsed
    assert result.outcome == "failed"
    version.refresh_from_db()
    assert version.status == "failed"
    [error] = version.validation_errors
    assert error["line"] is None
    assert error["message"].startswith("object storage unavailable: could not read")
    assert "after 3 attempts" in error["message"]
    assert not version.clauses.exists()


@pytest.mark.django_db
def test_uploading_while_storage_is_down_keeps_a_failed_version(storage_down):
    storage_down()
    version = wording_version_create(
        document_id="NW-MOTOR",
        label="2026.2",
        source_bytes=VALID.encode(),
        filename="v.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
    )
    assert version.status == "failed"
    assert "The source could not be stored" in version.validation_errors[0]["message"]
    assert wording_version_ingest(version_id=version.pk).outcome == "failed"


@pytest.mark.django_db
def test_upload_queues_ingestion_on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        version = wording_version_create(
            document_id="NW-MOTOR",
            label="2026.2",
            source_bytes=VALID.encode(),
            filename="v.md",
            effective_from=date(2026, 7, 1),
            effective_to=None,
            channels=["direct"],
            acting_user=None,
        )
    assert len(callbacks) == 1
    version.refresh_from_db()
    assert version.status == "ingested"
    assert version.clauses.count() == 4


def test_embeddings_are_left_empty_when_no_embedder_can_load(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "knowledge.embedding", None)  # import fails
    assert clause_embeddings_compute(["a", "b"]) == [None, None]
    assert "no clause embeddings" in caplog.text


def test_embeddings_are_float32_bytes_one_per_text(monkeypatch):
    import types

    import numpy as np

    class Fake:
        name = "fake-2d"

        def encode(self, texts):
            return np.array([[0.6, 0.8]] * len(texts), dtype=np.float32)

    module = types.SimpleNamespace(default_embedder=lambda: Fake())
    monkeypatch.setitem(sys.modules, "knowledge.embedding", module)
    [first, second] = clause_embeddings_compute(["a", "b"])
    assert np.frombuffer(first, dtype=np.float32).tolist() == pytest.approx([0.6, 0.8])
    assert first == second


@pytest.mark.django_db
def test_clause_rows_carry_embeddings_when_an_embedder_is_there(monkeypatch):
    import types

    import numpy as np

    class Fake:
        name = "fake-2d"

        def encode(self, texts):
            return np.array([[1.0, 0.0]] * len(texts), dtype=np.float32)

    monkeypatch.setitem(
        sys.modules, "knowledge.embedding", types.SimpleNamespace(default_embedder=lambda: Fake())
    )
    version = ingested_version()
    assert version.embedding_model == "fake-2d"
    embedding = version.clauses.first().embedding
    assert np.frombuffer(bytes(embedding), dtype=np.float32).tolist() == [1.0, 0.0]


@pytest.mark.django_db
def test_a_corrected_source_replaces_a_failed_version_under_the_same_label(source_file, capsys):
    """A failed version published nothing, so the fixed file may take its label."""
    bad = source_file(wording(COV_01, clause("MTR-COV-01", body="Again.")))
    with pytest.raises(CommandError):
        ingest_command(bad, "2026.2")
    failed = WordingVersion.objects.get(label="2026.2")
    assert failed.status == "failed"
    # when the corrected file is ingested under the same label
    ingest_command(source_file(VALID), "2026.2")
    # then the same version is ingested, its errors gone, and history says why
    version = WordingVersion.objects.get(label="2026.2")
    assert version.pk == failed.pk
    assert version.status == "ingested"
    assert version.validation_errors == []
    assert Clause.objects.filter(version=version).count() > 0
    reasons = [h.history_change_reason for h in version.history.all()]
    assert any(r and r.startswith("Replaced the failed source with") for r in reasons)


@pytest.mark.django_db
def test_an_ingested_version_is_never_replaced_by_another_source(source_file):
    ingest_command(source_file(VALID), "2026.2")
    changed = source_file(VALID.replace("sudden", "sudden and unforeseen", 1))
    with pytest.raises(CommandError, match="already exists with a different source"):
        ingest_command(changed, "2026.2")


@pytest.mark.django_db
def test_rerunning_with_another_window_is_refused_not_ignored(source_file):
    path = source_file(VALID)
    ingest_command(path, "2026.2", "NW-MOTOR", "--effective-from", "2026-07-01")
    with pytest.raises(CommandError, match="already ingested with another window or channels"):
        ingest_command(path, "2026.2", "NW-MOTOR", "--effective-from", "2030-01-01")
    with pytest.raises(CommandError, match=r"--channels \['corporate'\]"):
        ingest_command(path, "2026.2", "NW-MOTOR", "--channels", "corporate")
    # the same arguments again are fine, and change nothing
    ingest_command(path, "2026.2", "NW-MOTOR", "--effective-from", "2026-07-01")
    assert WordingVersion.objects.get(label="2026.2").effective_from == date(2026, 7, 1)


@pytest.mark.django_db
def test_a_version_ingested_by_mistake_can_be_discarded_and_its_ids_reused(
    source_file, capsys, users
):
    from knowledge.services.ingestion import wording_version_discard

    ingest_command(source_file(wording(COV_01, EXC_01, clause("MTR-COV-02"))), "2026.1")
    mistake = WordingVersion.objects.get(label="2026.1")
    # given a draft that dropped MTR-COV-02 by mistake
    ingest_command(source_file(wording(COV_01, EXC_01), "v2.md"), "x9")
    draft = WordingVersion.objects.get(label="x9")
    # when it is discarded
    with pytest.raises(ingestion.WordingError, match="Say why"):
        wording_version_discard(version_id=draft.pk, acting_user=users["editor"], reason="")
    wording_version_discard(version_id=draft.pk, acting_user=users["editor"], reason="wrong file")
    draft.refresh_from_db()
    assert draft.status == "discarded"
    assert not draft.clauses.exists()
    assert draft.history.first().history_change_reason == "Discarded by editor: wrong file"
    # then the next version may carry MTR-COV-02 again
    ingest_command(source_file(wording(COV_01, EXC_01, clause("MTR-COV-02")), "v3.md"), "2026.2")
    assert WordingVersion.objects.get(label="2026.2").status == "ingested"
    assert mistake.status == "ingested"


@pytest.mark.django_db
def test_a_version_requested_for_release_is_never_discarded(users):
    from knowledge.services.ingestion import wording_version_discard

    version = ingested_version()
    release_request(version_id=version.pk, acting_user=users["editor"])
    with pytest.raises(ingestion.WordingError, match="may have been served"):
        wording_version_discard(version_id=version.pk, acting_user=users["editor"], reason="x")
    version.refresh_from_db()
    assert version.status == "ingested" and version.clauses.exists()


def test_ingestion_stores_each_clauses_quotable_parts_once(demo):
    """The composer reads the parts parsed at ingestion; it never re-parses them."""
    from knowledge.models import Clause

    clause = Clause.objects.get(clause_id="MTR-BEN-03", version__label="2026.2")
    parts = clause.parts
    assert parts[0]["text"].startswith("When it applies:")
    limit = next(p for p in parts if p["text"].startswith("Limit:"))
    assert limit["amount"] is True and limit["lead_in"] == ""
    fuel = next(p for p in parts if p["text"].startswith("Not included: fuel"))
    assert fuel["negative"] is True
    covered = Clause.objects.get(clause_id="MTR-BEN-06", version__label="2026.2")
    cash = next(p for p in covered.parts if p["text"].startswith("cash, gift cards"))
    assert cash["lead_in"] == "Not covered:" and cash["negative"] is True
    # every part is verbatim from the stored clause
    assert all(p["text"] in covered.text for p in covered.parts)


def test_a_part_is_an_exclusion_when_the_policy_excludes_not_when_another_scheme_does(demo):
    from knowledge.models import Clause

    def part(clause_id: str, start: str) -> dict:
        clause = Clause.objects.get(clause_id=clause_id, version__label="2026.2")
        return next(p for p in clause.parts if p["text"].startswith(start))

    # "This policy does not cover:" is the lead-in of CNT-EXC-02's bullets
    cars = part("CNT-EXC-02", "cars, motorcycles")
    assert cars["lead_in"] == "This policy does not cover:" and cars["negative"] is True
    # what the liability cover pays: injury that ACC does not cover
    injury = part("MTR-COV-03", "injury to other people that is not covered by ACC")
    assert injury["negative"] is False
    # a second home "is not covered by this policy": the policy's own exclusion
    assert part("HOM-GEN-01", "Where: your home at the address")["negative"] is True


def test_stored_parts_are_parsed_again_when_the_parser_changes(demo):
    """Migration 0010 re-derives every clause's parts from its text."""
    import importlib

    from django.apps import apps

    from knowledge.clause_parts import clause_parts
    from knowledge.models import Clause

    refresh = importlib.import_module("knowledge.migrations.0010_clause_parts_refresh")
    clause = Clause.objects.get(clause_id="MTR-COV-03", version__label="2026.2")
    stale = [dict(p, negative=True) for p in clause.parts]
    Clause.objects.filter(pk=clause.pk).update(parts=stale)
    refresh.parts_refresh(apps, None)
    clause.refresh_from_db()
    assert clause.parts == clause_parts(clause.text) != stale
