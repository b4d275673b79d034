"""Per-version search indexes for the selectors, built once and kept in-process.

A turn gives the selector the version's directory; the index of that version
is looked up in a small in-process cache keyed by the version id and a stamp
of the directory (its ids and titles), so a re-ingested version gets a fresh
index and a turn never rebuilds one. Building reads the version's clauses
once through ``knowledge.selectors.clause_index`` (one query on a miss, none
on a hit) and never looks at any other version.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from claims.agent import text as T
from knowledge.embedding import passage_texts

if TYPE_CHECKING:
    from knowledge.selectors import ClauseDirectory, IndexedClause

logger = logging.getLogger(__name__)

# The title says what a clause is about (the wording format requires a
# plain-language title), so BM25 sees it this many times besides the body.
TITLE_WEIGHT = 3
MAX_CACHED_VERSIONS = 256


class Embedder(Protocol):
    name: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


IndexSource = Callable[[int], Sequence["IndexedClause"]]


def default_index_source(version_id: int) -> Sequence[IndexedClause]:
    from knowledge.selectors import clause_index

    return clause_index(version_id=version_id)


def default_embedder() -> Embedder:
    from knowledge.embedding import default_embedder as load

    return load()


def embedding_text(title: str, body: str) -> str:
    """The text a clause is embedded from; the same as ingestion uses."""
    return f"{title}\n\n{body}"


def bm25s_module() -> Any:
    """bm25s, imported lazily; it sets its own logger to DEBUG on import (an index build
    per line of log), so its level is handed back to the project's logging settings."""
    import logging

    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


@dataclass
class VersionIndex:
    """Everything the selectors need about one version's directory clauses."""

    version_id: int
    ids: tuple[str, ...]
    titles: tuple[str, ...]
    bodies: tuple[str, ...]
    refers_to: dict[str, tuple[str, ...]]
    embeddings: np.ndarray | None = None  # (n, dim) float32 unit rows
    embedder_name: str = ""
    stamp: str = ""
    # Passage vectors (title + one paragraph or bullet each) and the clause
    # row each belongs to; see ``passage_embeddings``.
    passages: np.ndarray | None = None
    passage_owner: np.ndarray | None = None
    # The passage rows stored at ingestion, per clause (None where missing).
    stored_passages: tuple[bytes | None, ...] = ()
    # For the learned reranker: each clause's kind and its title's stems.
    kinds: tuple[str, ...] = ()
    title_stems: tuple[frozenset[str], ...] = ()
    # Similar questions per clause (the wording's "Questions:"), the rows
    # ingestion stored for them, and -- built on first use -- their vectors
    # with the clause row each belongs to (see ``alias_embeddings``).
    questions: tuple[tuple[str, ...], ...] = ()
    stored_questions: tuple[bytes | None, ...] = ()
    aliases: np.ndarray | None = None
    alias_owner: np.ndarray | None = None
    alias_embedder: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Built on first use by the selector that needs them (see _keywords and
    # _baseline): a baseline-only process never builds BM25, and the
    # embedding selector neither.
    _keyword_index: tuple[Any, frozenset[str]] | None = field(default=None, repr=False)
    _baseline_index: tuple[tuple[Counter[str], ...], tuple[Counter[str], ...]] | None = field(
        default=None, repr=False
    )
    _alias_keyword_index: tuple[Any, np.ndarray, frozenset[str]] | None = field(
        default=None, repr=False
    )

    def __len__(self) -> int:
        return len(self.ids)

    def _keywords(self) -> tuple[Any, frozenset[str]]:
        """BM25 (bm25s) over title (x TITLE_WEIGHT) and body stems, and its vocabulary."""
        with self._lock:
            if self._keyword_index is None:
                bm25s = bm25s_module()

                corpus = [
                    T.stems(title) * TITLE_WEIGHT + T.stems(body)
                    for title, body in zip(self.titles, self.bodies, strict=True)
                ]
                bm25 = None
                if self.ids:
                    bm25 = bm25s.BM25()
                    bm25.index(corpus, show_progress=False)
                self._keyword_index = (bm25, frozenset(s for doc in corpus for s in doc))
            return self._keyword_index

    @property
    def bm25(self) -> Any:
        """bm25s.BM25, or None for an empty directory."""
        return self._keywords()[0]

    @property
    def vocabulary(self) -> frozenset[str]:
        return self._keywords()[1]

    def _baseline(self) -> tuple[tuple[Counter[str], ...], tuple[Counter[str], ...]]:
        with self._lock:
            if self._baseline_index is None:
                from claims.agent.selection.baseline import baseline_terms

                self._baseline_index = (
                    tuple(Counter(baseline_terms(t, for_query=False)) for t in self.titles),
                    tuple(Counter(baseline_terms(b, for_query=False)) for b in self.bodies),
                )
            return self._baseline_index

    @property
    def baseline_titles(self) -> tuple[Counter[str], ...]:
        return self._baseline()[0]

    @property
    def baseline_bodies(self) -> tuple[Counter[str], ...]:
        return self._baseline()[1]

    @property
    def has_questions(self) -> np.ndarray:
        """Per clause, whether it has similar questions."""
        if not self.questions:
            return np.zeros(len(self.ids), dtype=bool)
        return np.array([bool(q) for q in self.questions], dtype=bool)

    def _alias_keywords(self) -> tuple[Any, np.ndarray, frozenset[str]]:
        """BM25 with one document per similar question (glossary-expanded stems)."""
        with self._lock:
            if self._alias_keyword_index is None:
                bm25s = bm25s_module()

                corpus: list[list[str]] = []
                owners: list[int] = []
                for row, questions in enumerate(self.questions):
                    for question in questions:
                        corpus.append(T.stems(T.expand(question)))
                        owners.append(row)
                bm25 = None
                if corpus:
                    bm25 = bm25s.BM25()
                    bm25.index(corpus, show_progress=False)
                self._alias_keyword_index = (
                    bm25,
                    np.asarray(owners, dtype=np.int32),
                    frozenset(s for doc in corpus for s in doc),
                )
            return self._alias_keyword_index

    def alias_bm25_scores(self, query_stems: list[str]) -> np.ndarray:
        """Per clause, the best BM25 of the query against one of its similar questions."""
        bm25, owner, vocabulary = self._alias_keywords()
        best = np.zeros(len(self.ids), dtype=np.float32)
        known = [s for s in query_stems if s in vocabulary]
        if bm25 is None or not known:
            return best
        scores = np.asarray(bm25.get_scores(known), dtype=np.float32)
        np.maximum.at(best, owner, scores)
        return best

    def bm25_scores(self, query_stems: list[str]) -> np.ndarray:
        known = [s for s in query_stems if s in self.vocabulary]
        if not known or self.bm25 is None:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(known), dtype=np.float32)


def _directory_stamp(directory: ClauseDirectory) -> str:
    digest = hashlib.blake2b(digest_size=12)
    for entry in directory.entries:
        digest.update(f"{entry.clause_id}\x1f{entry.title}\x1e".encode())
    return digest.hexdigest()


def _build(directory: ClauseDirectory, clauses: Sequence[IndexedClause]) -> VersionIndex:
    by_id = {c.clause_id: c for c in clauses}
    ids: list[str] = []
    titles: list[str] = []
    kinds: list[str] = []
    bodies: list[str] = []
    vectors: list[np.ndarray | None] = []
    stored: list[bytes | None] = []
    questions: list[tuple[str, ...]] = []
    stored_questions: list[bytes | None] = []
    refers: dict[str, tuple[str, ...]] = {}
    for entry in directory.entries:
        clause = by_id.get(entry.clause_id)
        ids.append(entry.clause_id)
        titles.append(entry.title)
        kinds.append(getattr(clause, "kind", "") if clause is not None else "")
        body = T.clause_body(clause.text) if clause is not None else ""
        bodies.append(body)
        refers[entry.clause_id] = tuple(clause.refers_to) if clause is not None else ()
        raw = getattr(clause, "embedding", None) if clause is not None else None
        vectors.append(np.frombuffer(raw, dtype=np.float32) if raw else None)
        stored.append(getattr(clause, "passage_embeddings", None) if clause is not None else None)
        questions.append(tuple(getattr(clause, "questions", ()) or ()) if clause else ())
        stored_questions.append(getattr(clause, "question_embeddings", None) if clause else None)

    embeddings = None
    present = [v for v in vectors if v is not None]
    if ids and len(present) == len(vectors) and len({v.shape for v in present}) == 1:
        embeddings = np.vstack(present).astype(np.float32)
    return VersionIndex(
        version_id=directory.version_id,
        stamp=_directory_stamp(directory),
        ids=tuple(ids),
        titles=tuple(titles),
        bodies=tuple(bodies),
        refers_to=refers,
        embeddings=embeddings,
        stored_passages=tuple(stored),
        kinds=tuple(kinds),
        title_stems=tuple(frozenset(T.stems(t)) for t in titles),
        questions=tuple(questions),
        stored_questions=tuple(stored_questions),
    )


class IndexCache:
    """In-process indexes, one per (version id, directory stamp), LRU-bounded."""

    def __init__(self, max_versions: int = MAX_CACHED_VERSIONS) -> None:
        self._max = max_versions
        self._items: OrderedDict[tuple[int, str], VersionIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0

    def get(self, directory: ClauseDirectory, source: IndexSource) -> VersionIndex:
        key = (directory.version_id, _directory_stamp(directory))
        with self._lock:
            index = self._items.get(key)
            if index is not None:
                self._items.move_to_end(key)
                return index
        index = _build(directory, source(directory.version_id))
        with self._lock:
            self.builds += 1
            self._items[key] = index
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)
        return index

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


INDEXES = IndexCache()


def clause_embeddings(index: VersionIndex, embedder: Embedder) -> np.ndarray | None:
    """The version's clause matrix, from ingestion or (once) from ``embedder``.

    Clauses ingested without an embedder have no stored vector; they are
    embedded here once per version and kept with the index. A stored matrix
    whose width differs from the embedder's is recomputed the same way.
    """
    if not len(index):
        return None
    with index._lock:
        probe_dim = getattr(embedder, "dimension", None)
        stored = index.embeddings
        if stored is not None and (probe_dim is None or stored.shape[1] == probe_dim):
            return stored
        if index.embedder_name == embedder.name and stored is not None:
            return stored
        logger.info(
            "selection: embedding %d clauses of version %s at first use (none stored)",
            len(index),
            index.version_id,
        )
        texts = [embedding_text(t, b) for t, b in zip(index.titles, index.bodies, strict=True)]
        index.embeddings = np.asarray(embedder.encode(texts), dtype=np.float32)
        index.embedder_name = embedder.name
        return index.embeddings


PASSAGE_CACHE_SECONDS = 30 * 24 * 3600


def passage_embeddings(
    index: VersionIndex, embedder: Embedder
) -> tuple[np.ndarray, np.ndarray] | None:
    """Passage vectors for the version, with the clause row each belongs to.

    The clause vectors stored at ingestion are rows too (owner = their
    clause). Passage vectors are computed once per version and embedder and
    kept in the Django cache (shared between processes when the cache is
    Redis) and on the index, so no turn embeds a clause.
    """
    clauses = clause_embeddings(index, embedder)
    if clauses is None:
        return None
    with index._lock:
        if (
            index.passages is not None
            and index.passage_owner is not None
            and index.embedder_name == embedder.name
        ):
            return index.passages, index.passage_owner
        from django.core.cache import cache

        dim = clauses.shape[1]
        key = f"selection:passages:{index.version_id}:{index.stamp}:{embedder.name}"
        cached = _stored_passages(index, dim) or cache.get(key)
        if cached is not None:
            dim, owner_bytes, matrix_bytes = cached
            owner = np.frombuffer(owner_bytes, dtype=np.int32)
            matrix = np.frombuffer(matrix_bytes, dtype=np.float32).reshape(-1, dim)
        else:
            texts: list[str] = []
            owners: list[int] = []
            for row, (title, body) in enumerate(zip(index.titles, index.bodies, strict=True)):
                for passage in passage_texts(title, body):
                    texts.append(passage)
                    owners.append(row)
            if texts:
                matrix = np.asarray(embedder.encode(texts), dtype=np.float32).reshape(-1, dim)
            else:
                matrix = np.zeros((0, dim), dtype=np.float32)
            owner = np.asarray(owners, dtype=np.int32)
            cache.set(key, (dim, owner.tobytes(), matrix.tobytes()), PASSAGE_CACHE_SECONDS)
        index.passages = np.vstack([clauses, matrix])
        index.passage_owner = np.concatenate([np.arange(len(index), dtype=np.int32), owner])
        index.embedder_name = embedder.name
        return index.passages, index.passage_owner


def alias_embeddings(
    index: VersionIndex, embedder: Embedder
) -> tuple[np.ndarray, np.ndarray] | None:
    """The similar questions' vectors with the clause row each belongs to; None if none.

    Read from the rows ingestion stored; a version ingested without them (or
    with another embedder's width) is embedded once here, kept on the index
    and in the Django cache -- never per turn.
    """
    if not any(index.questions):
        return None
    with index._lock:
        if (
            index.aliases is not None
            and index.alias_owner is not None
            and index.alias_embedder == embedder.name
        ):
            return index.aliases, index.alias_owner
        dim = int(getattr(embedder, "dimension", 0) or 0)
        owners = [np.full(len(qs), row, dtype=np.int32) for row, qs in enumerate(index.questions)]
        owner = np.concatenate(owners)
        stored = [
            raw for raw, qs in zip(index.stored_questions, index.questions, strict=False) if qs
        ]
        matrix = None
        if (
            dim
            and len(stored) == sum(1 for qs in index.questions if qs)
            and all(raw for raw in stored)
        ):
            joined = b"".join(stored)  # type: ignore[arg-type]
            if len(joined) == 4 * dim * len(owner):
                matrix = np.frombuffer(joined, dtype=np.float32).reshape(-1, dim)
        if matrix is None:
            from django.core.cache import cache

            key = f"selection:aliases:{index.version_id}:{index.stamp}:{embedder.name}"
            cached = cache.get(key)
            if cached is not None:
                matrix = np.frombuffer(cached[1], dtype=np.float32).reshape(-1, cached[0])
            else:
                logger.info(
                    "selection: embedding %d similar questions of version %s at first use",
                    len(owner),
                    index.version_id,
                )
                texts = [q for qs in index.questions for q in qs]
                matrix = np.asarray(embedder.encode(texts), dtype=np.float32)
                cache.set(key, (matrix.shape[1], matrix.tobytes()), PASSAGE_CACHE_SECONDS)
        index.aliases = matrix
        index.alias_owner = owner
        index.alias_embedder = embedder.name
        return index.aliases, index.alias_owner


def _stored_passages(index: VersionIndex, dim: int) -> tuple[int, bytes, bytes] | None:
    """The passage rows ingestion stored, in the cache's shape, if every clause has them."""
    present = [p for p in index.stored_passages if p is not None]
    if not present or len(present) != len(index.stored_passages):
        return None
    owners: list[np.ndarray] = []
    for row, raw in enumerate(present):
        if len(raw) % (4 * dim):
            return None  # another embedder's width: recompute
        owners.append(np.full(len(raw) // (4 * dim), row, dtype=np.int32))
    owner = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int32)
    return dim, owner.tobytes(), b"".join(present)


def selection_cache_clear() -> None:
    """Forget every cached version index (tests, or after bulk re-ingestion)."""
    INDEXES.clear()
