"""Read clauses whole from object storage, verified against their sha256.

The claim agent gets clause text only from here: never from the database copy,
never a clause whose stored bytes fail their checksum, never a substitute for
an id the version does not have.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from knowledge.models import Clause, WordingVersion
from knowledge.storage import object_read_once, object_reads_are_remote

logger = logging.getLogger(__name__)


# The clauses of one turn (at most three) are read at the same time: on S3 each
# read is a round trip, and in sequence they were most of a turn's time
# (bench_turns on PostgreSQL + S3: resolve p50 55 ms for three clauses). The
# threads are kept, so each keeps its storage connection (django-storages'
# S3Storage holds one per thread). The pool starts on the first fetch, not at
# import: a Celery worker forking after import would inherit dead threads.
@functools.cache
def _readers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=3, thread_name_prefix="clause-store")


def _rows(version_id: int, visibility: str, clause_ids: Sequence[str] | None):
    rows = Clause.objects.filter(
        version_id=version_id, version__status=WordingVersion.Status.INGESTED
    ).select_related("version__document")
    if clause_ids is not None:
        rows = rows.filter(clause_id__in=clause_ids)
    if visibility == Clause.Visibility.CUSTOMER:
        rows = rows.filter(visibility=Clause.Visibility.CUSTOMER)
    return rows


MAX_CACHED_VERSIONS = 256
_version_cache: OrderedDict[tuple[int, float, str], dict[str, Clause]] = OrderedDict()
_version_lock = threading.Lock()


def _version_rows(version_id: int, ingested_at: datetime, visibility: str) -> dict[str, Clause]:
    """The version's clause rows by id (the text, vectors left out: never read here)."""
    key = (version_id, ingested_at.timestamp(), visibility)
    with _version_lock:
        found = _version_cache.get(key)
        if found is not None:
            _version_cache.move_to_end(key)
            return found
    rows = _rows(version_id, visibility, None).defer("text", "embedding", "passage_embeddings")
    found = {row.clause_id: row for row in rows}
    with _version_lock:
        _version_cache[key] = found
        while len(_version_cache) > MAX_CACHED_VERSIONS:
            _version_cache.popitem(last=False)
    return found


def clause_rows_forget() -> None:
    """Forget the cached clause rows (tests)."""
    with _version_lock:
        _version_cache.clear()


class _Done:
    """A read already made, shaped like the pool's future (local files)."""

    def __init__(self, key: str) -> None:
        try:
            self._data, self._error = object_read_once(key), None
        except Exception as exc:
            self._data, self._error = b"", exc

    def result(self) -> bytes:
        if self._error is not None:
            raise self._error
        return self._data


def _reads_start(keys: list[str]) -> list:
    """The reads of ``keys``: on S3 in parallel; local files in this thread.

    A local read takes microseconds; handing it to a pool thread and back
    cost more than the read, and on a busy machine each hand-over waits for
    a time slice (resolve wall p95 30 ms for 3 ms of CPU).
    """
    if object_reads_are_remote():
        return [_readers().submit(object_read_once, key) for key in keys]
    return [_Done(key) for key in keys]


@dataclass(frozen=True)
class FetchedClause:
    clause_id: str
    title: str
    kind: str
    text: str
    schedule_section: str
    refers_to: tuple[str, ...]
    document_id: str
    version_label: str
    sha256: str
    # The quotable parts parsed at ingestion (knowledge.clause_parts), from the row.
    parts: tuple[dict, ...] = ()
    # The clause's similar questions (the wording's "Questions:"), from the row.
    questions: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClauseFetch:
    status: Literal["ok", "unavailable"]
    returned: tuple[FetchedClause, ...]
    not_found: tuple[str, ...]
    detail: str


class ClauseStore(Protocol):
    def fetch(
        self,
        *,
        version_id: int,
        clause_ids: Sequence[str],
        visibility: str = "customer",
        ingested_at: datetime | None = None,
    ) -> ClauseFetch: ...


class StorageClauseStore:
    """Clauses from the default storage.

    ``visibility="customer"`` returns customer-visible clauses only; any other
    value (``"internal"``, for staff) returns every clause. Ids the version
    does not have (or does not show) go to ``not_found``. A storage error or a
    checksum mismatch makes the whole fetch ``unavailable`` with nothing
    returned: an answer must not rest on part of what was asked for.
    """

    def fetch(
        self,
        *,
        version_id: int,
        clause_ids: Sequence[str],
        visibility: str = "customer",
        ingested_at: datetime | None = None,
    ) -> ClauseFetch:
        """``ingested_at``: the version's ingestion time as the caller has just read
        it from an ingested version (the turn's route step has). The clause rows
        of an ingested version never change, so with it they come from an
        in-process copy per (version, ingestion time, visibility), read in one
        query on first use; without it they are queried each time. The text is
        read from storage and checked against the row's sha256 either way."""
        wanted = list(dict.fromkeys(clause_ids))
        if ingested_at is not None:
            every = _version_rows(version_id, ingested_at, visibility)
            by_id = {c: every[c] for c in wanted if c in every}
        else:
            by_id = {row.clause_id: row for row in _rows(version_id, visibility, wanted)}
        not_found = tuple(c for c in wanted if c not in by_id)

        rows = [by_id[c] for c in wanted if c in by_id]
        reads = _reads_start([row.storage_key for row in rows])
        returned = []
        for row, read in zip(rows, reads, strict=True):
            clause_id = row.clause_id
            try:
                data = read.result()
            except Exception as exc:
                logger.error(
                    "clause store: cannot read %s (%s): %s", clause_id, row.storage_key, exc
                )
                return ClauseFetch(
                    status="unavailable",
                    returned=(),
                    not_found=not_found,
                    detail=f"object storage unavailable ({type(exc).__name__})",
                )
            if hashlib.sha256(data).hexdigest() != row.sha256:
                logger.error(
                    "clause store: checksum mismatch for %s at %s; not served",
                    clause_id,
                    row.storage_key,
                )
                return ClauseFetch(
                    status="unavailable",
                    returned=(),
                    not_found=not_found,
                    detail=f"{clause_id} failed its checksum",
                )
            returned.append(
                FetchedClause(
                    clause_id=row.clause_id,
                    title=row.title,
                    kind=row.kind,
                    text=data.decode("utf-8"),
                    schedule_section=row.schedule_section,
                    refers_to=tuple(row.refers_to),
                    document_id=row.version.document.document_id,
                    version_label=row.version.label,
                    sha256=row.sha256,
                    parts=tuple(row.parts or ()),
                    questions=tuple(row.questions or ()),
                )
            )
        return ClauseFetch(status="ok", returned=tuple(returned), not_found=not_found, detail="")
