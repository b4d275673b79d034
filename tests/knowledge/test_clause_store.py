"""Reading clauses back: whole, verified, never substituted; and the directory."""

from __future__ import annotations

import logging
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from knowledge.clause_store import StorageClauseStore
from knowledge.selectors import clause_directory, clause_index
from tests.knowledge.conftest import VALID, ingested_version


@pytest.mark.django_db
def test_fetch_returns_clauses_whole_from_storage_in_the_order_asked():
    version = ingested_version()
    fetch = StorageClauseStore().fetch(
        version_id=version.pk, clause_ids=["MTR-EXC-01", "MTR-BEN-01", "MTR-EXC-01"]
    )
    assert fetch.status == "ok"
    assert fetch.not_found == ()
    assert [c.clause_id for c in fetch.returned] == ["MTR-EXC-01", "MTR-BEN-01"]
    ben = fetch.returned[1]
    assert ben.text.startswith("## MTR-BEN-01 - Hire car while your car is repaired")
    assert ben.text in VALID
    assert ben.schedule_section == "alternative_transport"
    assert ben.refers_to == ("MTR-EXC-01",)
    assert ben.document_id == "NW-MOTOR"
    assert ben.version_label == "2026.2"


@pytest.mark.django_db
def test_unknown_and_internal_ids_go_to_not_found_and_are_never_substituted():
    version = ingested_version()
    fetch = StorageClauseStore().fetch(
        version_id=version.pk, clause_ids=["MTR-BEN-03", "MTR-GEN-01", "MTR-COV-01"]
    )
    assert fetch.status == "ok"
    assert [c.clause_id for c in fetch.returned] == ["MTR-COV-01"]
    assert fetch.not_found == ("MTR-BEN-03", "MTR-GEN-01")
    staff = StorageClauseStore().fetch(
        version_id=version.pk, clause_ids=["MTR-GEN-01"], visibility="internal"
    )
    assert [c.clause_id for c in staff.returned] == ["MTR-GEN-01"]


@pytest.mark.django_db
def test_a_checksum_mismatch_is_unavailable_logged_and_never_served(caplog):
    version = ingested_version()
    ben = version.clauses.get(clause_id="MTR-BEN-01")
    # given someone changed the stored object behind the index's back
    default_storage.delete(ben.storage_key)
    default_storage.save(ben.storage_key, ContentFile(ben.text.replace("14 days", "90 days")))
    # when
    with caplog.at_level(logging.ERROR, logger="knowledge.clause_store"):
        fetch = StorageClauseStore().fetch(
            version_id=version.pk, clause_ids=["MTR-COV-01", "MTR-BEN-01"]
        )
    # then
    assert fetch.status == "unavailable"
    assert fetch.returned == ()
    assert fetch.detail == "MTR-BEN-01 failed its checksum"
    assert "checksum mismatch for MTR-BEN-01" in caplog.text


@pytest.mark.django_db
def test_with_the_ingestion_time_the_rows_come_from_memory_and_the_text_is_still_checked(
    django_assert_num_queries,
):
    version = ingested_version()
    store = StorageClauseStore()
    ask = {"version_id": version.pk, "ingested_at": version.ingested_at}
    with django_assert_num_queries(1):  # the version's rows, once
        first = store.fetch(clause_ids=["MTR-BEN-01", "MTR-GEN-01"], **ask)
    assert [c.clause_id for c in first.returned] == ["MTR-BEN-01"]
    assert first.not_found == ("MTR-GEN-01",)  # internal: not shown to a customer
    assert first.returned[0].text in VALID
    ben = version.clauses.get(clause_id="MTR-BEN-01")
    default_storage.delete(ben.storage_key)
    default_storage.save(ben.storage_key, ContentFile(ben.text.replace("14 days", "90 days")))
    with django_assert_num_queries(0):
        second = store.fetch(clause_ids=["MTR-COV-01", "MTR-BEN-01"], **ask)
    assert second.status == "unavailable"
    assert second.detail == "MTR-BEN-01 failed its checksum"
    staff = store.fetch(clause_ids=["MTR-GEN-01"], visibility="internal", **ask)
    assert [c.clause_id for c in staff.returned] == ["MTR-GEN-01"]


@pytest.mark.django_db
def test_fetch_is_unavailable_quickly_when_storage_is_down(storage_down):
    version = ingested_version()
    storage_down()
    started = time.monotonic()
    fetch = StorageClauseStore().fetch(version_id=version.pk, clause_ids=["MTR-COV-01"])
    assert time.monotonic() - started < 10
    assert fetch.status == "unavailable"
    assert fetch.returned == ()
    assert fetch.detail.startswith("object storage unavailable")


@pytest.mark.django_db
def test_the_directory_lists_customer_clauses_in_order_and_is_cached(django_assert_num_queries):
    version = ingested_version()
    directory = clause_directory(version_id=version.pk)
    assert directory.document_id == "NW-MOTOR"
    assert directory.label == "2026.2"
    assert [(e.clause_id, e.title) for e in directory.entries] == [
        ("MTR-COV-01", "Accidental damage to your car while you drive it"),
        ("MTR-BEN-01", "Hire car while your car is repaired after a claim"),
        ("MTR-EXC-01", "Wear and tear and breakdowns are not covered"),
    ]
    with django_assert_num_queries(1):  # the version row only
        assert clause_directory(version_id=version.pk) == directory


@pytest.mark.django_db
def test_the_clause_index_carries_text_and_embeddings():
    version = ingested_version()
    index = clause_index(version_id=version.pk)
    assert [c.clause_id for c in index] == ["MTR-COV-01", "MTR-BEN-01", "MTR-EXC-01"]
    assert index[1].kind == "benefit"
    assert index[1].schedule_section == "alternative_transport"
    assert index[1].refers_to == ("MTR-EXC-01",)
    assert "14 days" in index[1].text
    assert clause_index(version_id=version.pk) is index
