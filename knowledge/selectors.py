"""Reads of the knowledge base for the claim agent and the wording router."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from django.core.cache import cache

from knowledge.models import Clause, Release, WordingVersion


@dataclass(frozen=True)
class ReleaseWindow:
    version_id: int
    document_id: str
    label: str
    line: str
    effective_from: date
    effective_to: date | None
    channels: tuple[str, ...]
    # When the version was ingested: the directory's cache key (see clause_directory).
    ingested_at: datetime | None = None

    def covers(self, on: date) -> bool:
        return self.effective_from <= on and (self.effective_to is None or on < self.effective_to)


def approved_release_windows(*, line: str) -> list[ReleaseWindow]:
    """Approved releases of ``line`` whose versions are ingested, by effective_from."""
    releases = (
        Release.objects.filter(
            line=line,
            status=Release.Status.APPROVED,
            version__status=WordingVersion.Status.INGESTED,
        )
        .select_related("version__document")
        .order_by("version__effective_from", "pk")
    )
    return [
        ReleaseWindow(
            version_id=r.version_id,
            document_id=r.version.document.document_id,
            label=r.version.label,
            line=r.line,
            effective_from=r.version.effective_from,
            effective_to=r.version.effective_to,
            channels=tuple(r.version.channels),
            ingested_at=r.version.ingested_at,
        )
        for r in releases
    ]


@dataclass(frozen=True)
class ApprovedVersionLookup:
    kind: Literal["found", "none"]
    window: ReleaseWindow | None
    reason: str


def release_approved_for_date(*, line: str, on: date) -> ApprovedVersionLookup:
    """The approved version of ``line`` in force on ``on``, or why there is none.

    There is no fallback: without an approved, ingested release whose window
    holds the date, the answer is ``none`` with a reason.
    """
    windows = approved_release_windows(line=line)
    for window in windows:
        if window.covers(on):
            return ApprovedVersionLookup(
                kind="found",
                window=window,
                reason=f"{window.document_id} {window.label} is approved for {on.isoformat()}",
            )
    if not windows:
        reason = f"no approved wording release for the {line} line"
    else:
        spans = ", ".join(
            f"{w.label} [{w.effective_from}, {w.effective_to or 'open'})" for w in windows
        )
        reason = f"no approved {line} wording covers {on.isoformat()} (approved: {spans})"
    return ApprovedVersionLookup(kind="none", window=None, reason=reason)


@dataclass(frozen=True)
class DirectoryEntry:
    clause_id: str
    title: str


@dataclass(frozen=True)
class ClauseDirectory:
    version_id: int
    document_id: str
    label: str
    entries: tuple[DirectoryEntry, ...]


def _ingested_version(version_id: int) -> WordingVersion:
    version = WordingVersion.objects.select_related("document").get(pk=version_id)
    if version.status != WordingVersion.Status.INGESTED:
        raise LookupError(f"{version} is {version.status}, not ingested; it has no clauses.")
    return version


def _directory_key(version_id: int, ingested_at: datetime) -> str:
    return f"knowledge:clause-directory:{version_id}:{ingested_at.timestamp()}"


def clause_directory(*, version_id: int, ingested_at: datetime | None = None) -> ClauseDirectory:
    """Ids and titles of the customer-visible clauses of an ingested version.

    Cached in the Django cache under a key that includes the version's
    ingestion time. Raises ``WordingVersion.DoesNotExist`` for an unknown id
    and ``LookupError`` for a version that is not ingested.

    ``ingested_at``: the version's ingestion time as the caller has just read
    it from an ingested version (the route step has, from the approved
    releases); with it a cached directory is served without a query.
    """
    if ingested_at is not None:
        directory = cache.get(_directory_key(version_id, ingested_at))
        if directory is not None:
            return directory
    version = _ingested_version(version_id)
    key = _directory_key(version.pk, version.ingested_at)
    directory = cache.get(key)
    if directory is None:
        rows = version.clauses.filter(visibility=Clause.Visibility.CUSTOMER).order_by("position")
        directory = ClauseDirectory(
            version_id=version.pk,
            document_id=version.document.document_id,
            label=version.label,
            entries=tuple(
                DirectoryEntry(clause_id=c, title=t)
                for c, t in rows.values_list("clause_id", "title")
            ),
        )
        cache.set(key, directory, timeout=24 * 3600)
    return directory


@dataclass(frozen=True)
class IndexedClause:
    clause_id: str
    title: str
    kind: str
    text: str
    schedule_section: str
    refers_to: tuple[str, ...]
    embedding: bytes | None
    passage_embeddings: bytes | None = None  # float32 rows, one per passage
    questions: tuple[str, ...] = ()  # similar questions (the wording's "Questions:")
    question_embeddings: bytes | None = None  # float32 rows, one per question


_index_cache: dict[tuple[int, float], tuple[IndexedClause, ...]] = {}
_index_lock = threading.Lock()


def clause_index_forget() -> None:
    """Forget the cached clause indexes (tests)."""
    with _index_lock:
        _index_cache.clear()


def clause_index(*, version_id: int) -> tuple[IndexedClause, ...]:
    """Customer-visible clauses of an ingested version with text and embedding.

    For the offline clause selector; cached in-process per version and
    ingestion time. Errors as for ``clause_directory``.
    """
    version = _ingested_version(version_id)
    key = (version.pk, version.ingested_at.timestamp())
    with _index_lock:
        cached = _index_cache.get(key)
    if cached is not None:
        return cached
    rows = version.clauses.filter(visibility=Clause.Visibility.CUSTOMER).order_by("position")
    index = tuple(
        IndexedClause(
            clause_id=c.clause_id,
            title=c.title,
            kind=c.kind,
            text=c.text,
            schedule_section=c.schedule_section,
            refers_to=tuple(c.refers_to),
            embedding=bytes(c.embedding) if c.embedding is not None else None,
            passage_embeddings=(
                bytes(c.passage_embeddings) if c.passage_embeddings is not None else None
            ),
            questions=tuple(c.questions or ()),
            question_embeddings=(
                bytes(c.question_embeddings) if c.question_embeddings is not None else None
            ),
        )
        for c in rows
    )
    with _index_lock:
        _index_cache[key] = index
    return index
