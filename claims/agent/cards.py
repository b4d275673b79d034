"""Answer-card retrieval for the claim agent turn (seed 001 §4).

A card is found by its question and aliases only, never by its answer:
each is embedded (one row per text) and BM25-indexed. A message's score
for a card is 0.7 x its best cosine with the card's rows plus 0.3 x its
saturated BM25 score (seed 001 §4.2). Required conditions (line, sales
channel, policy status, schedule sections) take a card out; each optional
condition that fails lowers its score. Cards of one topic compete: the best
priority wins and the others are counted as conflicts (§5.1).

The index holds the active cards whose sources have not changed. It is
built whole for one number of ``CardIndexVersion`` and replaced, never
edited, so a turn reads the cards as they were before a change or after it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from claims.agent import text as T

logger = logging.getLogger(__name__)

# Fusion weights of seed 001 §4.2 and the BM25 score at which its share is half.
COSINE_WEIGHT = 0.7
BM25_WEIGHT = 0.3
BM25_HALF = 3.0
ALIAS_WEIGHT = 0.97  # an alias counts a little less than the standard question
QUESTION_BM25_REPEAT = 2
OPTIONAL_PENALTY = 0.92  # per optional condition that fails
# Calibrated on the demo cards' questions and aliases against the clause
# inventories (docs/cards.md): no inventory clause question reaches them.
ACCEPT_SCORE = 0.64
ACCEPT_COSINE = 0.62
SECOND_RELATIVE = 0.92
MAX_CARDS = 2
# A card this sure of itself takes a place from the chooser's clauses; one
# below it only fills a place the clauses left free (calibrated so that no
# inventory clause question loses its clause to a card, docs/cards.md).
STRONG_SCORE = 0.65


@dataclass(frozen=True)
class CardContext:
    """What the turn knows that a card's conditions test."""

    line: str | None
    sales_channel: str = ""
    policy_status: str = ""
    coverage_sections: tuple[str, ...] = ()

    @classmethod
    def from_facts(cls, facts: Any) -> CardContext:
        schedule = getattr(facts, "schedule", None)
        if schedule is None:
            return cls(line=getattr(facts, "line", None))
        return cls(
            line=facts.line,
            sales_channel=schedule.sales_channel,
            policy_status=schedule.status,
            coverage_sections=tuple(schedule.coverage_sections),
        )


@dataclass(frozen=True)
class IndexedCard:
    card_id: str
    line: str
    kind: str
    topic: str
    priority: int
    question: str
    aliases: tuple[str, ...]
    conclusion: str
    detail: str
    confidence: str
    source_clause_ids: tuple[str, ...]
    source_document: str
    source_reference: str
    required_channels: tuple[str, ...] = ()
    required_policy_statuses: tuple[str, ...] = ()
    required_schedule_sections: tuple[str, ...] = ()
    optional_conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        """What retrieval matches: the question, then each alias."""
        return (self.question, *self.aliases)

    @property
    def asks_cover(self) -> bool:
        """Whether the card answers whether something is covered (its question or an alias)."""
        return any(T.asks_about_cover(text) for text in self.texts)

    def required_fails(self, context: CardContext | None) -> str:
        """Why a required condition fails (empty when all hold; None context: ignored)."""
        if context is None:
            return ""
        if self.line and self.line != context.line:
            return f"line {self.line}"
        if self.required_channels and context.sales_channel not in self.required_channels:
            return f"channel {', '.join(self.required_channels)}"
        if (
            self.required_policy_statuses
            and context.policy_status not in self.required_policy_statuses
        ):
            return f"policy status {', '.join(self.required_policy_statuses)}"
        missing = set(self.required_schedule_sections) - set(context.coverage_sections)
        if missing:
            return f"schedule section {', '.join(sorted(missing))}"
        return ""

    def optional_misses(self, context: CardContext | None) -> int:
        if context is None:
            return 0
        have = {
            "channels": {context.sales_channel},
            "policy_statuses": {context.policy_status},
            "schedule_sections": set(context.coverage_sections),
            "lines": {context.line or ""},
        }
        misses = 0
        for name, wanted in self.optional_conditions:
            if wanted and not (set(wanted) & have.get(name, set())):
                misses += 1
        return misses


def indexed_card(card: Any) -> IndexedCard:
    """The retrieval view of a ``knowledge.models.Card`` row."""
    optional = tuple(
        (str(name), tuple(str(v) for v in values))
        for name, values in sorted((card.optional_conditions or {}).items())
        if values
    )
    document = ""
    if card.source_version_id is not None:
        version = card.source_version
        document = f"{version.document.document_id} {version.label}"
    return IndexedCard(
        card_id=card.card_id,
        line=card.line,
        kind=card.kind,
        topic=card.topic,
        priority=card.priority,
        question=card.question,
        aliases=tuple(card.aliases or ()),
        conclusion=card.conclusion,
        detail=card.detail,
        confidence=card.confidence_hint,
        source_clause_ids=tuple(card.source_clause_ids or ()),
        source_document=document,
        source_reference=card.source_reference,
        required_channels=tuple(card.required_channels or ()),
        required_policy_statuses=tuple(card.required_policy_statuses or ()),
        required_schedule_sections=tuple(card.required_schedule_sections or ()),
        optional_conditions=optional,
    )


@dataclass
class CardIndex:
    number: str  # the stamp of the CardIndexVersion it was built for
    cards: tuple[IndexedCard, ...]
    rows: np.ndarray | None  # (texts, dim) float32 unit rows
    owner: np.ndarray  # card position of each row
    row_weight: np.ndarray
    bm25: Any
    vocabulary: frozenset[str]
    embedder_name: str = ""
    # The questions of the cards outside the wording (kind "not_here"): a
    # message closer to one of these than to any clause needs no clause.
    outside_wording: np.ndarray | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return len(self.cards)


def card_index_build(
    cards: list[tuple[IndexedCard, bytes | None]], *, number: str, embedder: Any | None
) -> CardIndex:
    """An index of ``cards`` with their stored rows (computed here where missing)."""
    from claims.agent.selection.index import bm25s_module

    bm25s = bm25s_module()

    rows: list[np.ndarray] = []
    owner: list[int] = []
    weight: list[float] = []
    dim = getattr(embedder, "dimension", 384) if embedder is not None else 384
    for position, (card, stored) in enumerate(cards):
        texts = card.texts
        matrix = None
        if stored:
            flat = np.frombuffer(stored, dtype=np.float32)
            if flat.size == len(texts) * dim:  # else another model's width: recompute
                matrix = flat.reshape(len(texts), dim)
        if matrix is None and embedder is not None:
            matrix = np.asarray(embedder.encode(list(texts)), dtype=np.float32)
        if matrix is None:
            continue
        rows.append(matrix)
        owner.extend([position] * len(texts))
        weight.extend([1.0] + [ALIAS_WEIGHT] * (len(texts) - 1))
    corpus = [
        T.stems(card.question) * QUESTION_BM25_REPEAT
        + [s for alias in card.aliases for s in T.stems(alias)]
        for card, _ in cards
    ]
    bm25 = None
    if cards:
        bm25 = bm25s.BM25()
        bm25.index(corpus, show_progress=False)
    matrix = np.vstack(rows).astype(np.float32) if rows else None
    outside = None
    if matrix is not None:
        owner_array = np.asarray(owner, dtype=np.int32)
        wanted = [i for i, (card, _) in enumerate(cards) if card.kind == "not_here"]
        # The standard questions only, as the selector's old topic list was:
        # aliases are many and loose ("will the warranty pay for this fault"),
        # and pulled clause questions off their clause.
        first_rows = np.asarray(weight, dtype=np.float32) == 1.0
        mask = np.isin(owner_array, wanted) & first_rows
        outside = matrix[mask] if mask.any() else None
    return CardIndex(
        number=number,
        cards=tuple(card for card, _ in cards),
        rows=matrix,
        outside_wording=outside,
        owner=np.asarray(owner, dtype=np.int32),
        row_weight=np.asarray(weight, dtype=np.float32),
        bm25=bm25,
        vocabulary=frozenset(s for doc in corpus for s in doc),
        embedder_name=getattr(embedder, "name", ""),
    )


@dataclass(frozen=True)
class CardScore:
    card: IndexedCard
    score: float
    cosine: float
    bm25: float
    optional_misses: int = 0


@dataclass(frozen=True)
class CardRetrieval:
    """The cards a turn returns, best first, and what competed with them.

    ``requested`` are the cards that scored above the bar and passed their
    required conditions; ``returned`` what survived the topic conflicts and
    the limit; ``conflicts`` the (winner, loser) pairs of one topic.
    """

    requested: tuple[str, ...] = ()
    returned: tuple[IndexedCard, ...] = ()
    # The returned cards sure enough to take a clause's place (see ``cards_fit``).
    leading: tuple[str, ...] = ()
    conflicts: tuple[tuple[str, str], ...] = ()
    filtered: tuple[tuple[str, str], ...] = ()  # (card id, failed required condition)
    scores: tuple[tuple[str, float], ...] = ()


EMPTY = CardRetrieval()


def cards_fit(
    cards: CardRetrieval, chosen_clauses: tuple[str, ...], known: set[str], limit: int
) -> tuple[CardRetrieval, tuple[str, ...]]:
    """At most ``limit`` items in all: which cards stay and which clauses to read.

    A leading card (``CardRetrieval.leading``) keeps its place and brings the
    clauses it rests on (if in the directory); the chooser's clauses come
    next; any other card only takes a place left free.
    """
    strong = [c for c in cards.returned if c.card_id in cards.leading]
    weak = [c for c in cards.returned if c not in strong]
    sources = [cid for c in strong for cid in c.source_clause_ids if cid in known]
    clauses = list(dict.fromkeys([*sources, *chosen_clauses]))[: max(limit - len(strong), 0)]
    free = limit - len(strong) - len(clauses)
    kept = strong + weak[: max(free, 0)]
    for card in kept[len(strong) :]:  # a weak card's own sources, if room is left
        for cid in card.source_clause_ids:
            if cid in known and cid not in clauses and len(kept) + len(clauses) < limit:
                clauses.append(cid)
    if len(kept) == len(cards.returned):
        return cards, tuple(clauses)
    return replace(cards, returned=tuple(kept)), tuple(clauses)


def cards_score(index: CardIndex, message: str, vector: np.ndarray | None) -> list[CardScore]:
    """Every card's score for ``message``, unfiltered, best first."""
    n = len(index)
    if not n:
        return []
    cosines = np.zeros(n, dtype=np.float32)
    if index.rows is not None and vector is not None:
        best = np.full(n, -1.0, dtype=np.float32)
        np.maximum.at(best, index.owner, (index.rows @ vector) * index.row_weight)
        cosines = np.maximum(best, 0.0)
    stems = [s for s in T.stems(message) if s in index.vocabulary]
    bm = np.zeros(n, dtype=np.float32)
    if stems and index.bm25 is not None:
        bm = np.asarray(index.bm25.get_scores(stems), dtype=np.float32)
    fused = COSINE_WEIGHT * cosines + BM25_WEIGHT * (bm / (bm + BM25_HALF))
    order = np.argsort(-fused, kind="stable")
    return [
        CardScore(index.cards[i], float(fused[i]), float(cosines[i]), float(bm[i])) for i in order
    ]


def cards_choose(
    scored: list[CardScore],
    context: CardContext | None,
    *,
    limit: int = MAX_CARDS,
    asks_cover: bool = False,
) -> CardRetrieval:
    """Filter by required conditions, rank with optional ones, resolve topics.

    A returned card leads (takes a clause's place) when it scores at least
    STRONG_SCORE, unless the message asks whether something is covered
    (``asks_cover``) and the card answers another kind of question: "Is my
    car covered if it is stolen?" is answered by the cover clause, not by
    "Do I need a Police report for a stolen car?", however close the words.
    """
    filtered: list[tuple[str, str]] = []
    kept: list[CardScore] = []
    for entry in scored:
        if entry.score < ACCEPT_SCORE or entry.cosine < ACCEPT_COSINE:
            continue
        failed = entry.card.required_fails(context)
        if failed:
            filtered.append((entry.card.card_id, failed))
            continue
        misses = entry.card.optional_misses(context)
        kept.append(
            CardScore(
                entry.card, entry.score * OPTIONAL_PENALTY**misses, entry.cosine, entry.bm25, misses
            )
        )
    confidence_rank = {"high": 0, "medium": 1, "low": 2}
    kept.sort(key=lambda e: (-e.score, confidence_rank.get(e.card.confidence, 3)))
    requested = tuple(e.card.card_id for e in kept)
    winners: dict[str, CardScore] = {}
    conflicts: list[tuple[str, str]] = []
    for entry in kept:
        topic = entry.card.topic
        current = winners.get(topic)
        if current is None:
            winners[topic] = entry
            continue
        if entry.card.priority < current.card.priority:
            conflicts.append((entry.card.card_id, current.card.card_id))
            winners[topic] = entry
        else:
            conflicts.append((current.card.card_id, entry.card.card_id))
    ranked = sorted(winners.values(), key=lambda e: -e.score)
    returned: list[IndexedCard] = []
    for entry in ranked:
        if len(returned) >= limit:
            break
        if returned and entry.score < SECOND_RELATIVE * ranked[0].score:
            break
        returned.append(entry.card)
    scores = {e.card.card_id: e.score for e in kept}
    leading = tuple(
        c.card_id
        for c in returned
        if scores[c.card_id] >= STRONG_SCORE and (c.asks_cover or not asks_cover)
    )
    return CardRetrieval(
        requested=requested,
        returned=tuple(returned),
        leading=leading,
        conflicts=tuple(conflicts),
        filtered=tuple(filtered),
        scores=tuple((e.card.card_id, round(e.score, 4)) for e in kept),
    )


# --- the served index ------------------------------------------------------------

_served: dict[str, CardIndex] = {}
_served_lock = threading.Lock()


def _embedder() -> Any | None:
    try:
        from knowledge.embedding import default_embedder

        return default_embedder()
    except Exception as exc:  # a missing package must not break a turn
        logger.warning("cards: no embedder (%s: %s)", type(exc).__name__, exc)
        return None


def served_index_stamp() -> str:
    """The stamp of the cards served now: one small query per turn."""
    from knowledge.models import CardIndexVersion

    return CardIndexVersion.objects.values_list("stamp", flat=True).first() or ""


def served_index(stamp: str | None = None) -> CardIndex:
    """The index of the cards served now, built once per stamp.

    A new stamp means the served cards changed: the new index is built whole
    and then replaces the old one, which turns already holding it finish with.
    """
    if stamp is None:
        stamp = served_index_stamp()
    with _served_lock:
        index = _served.get(stamp)
    if index is not None:
        return index
    built = card_index_build(cards_servable(), number=stamp, embedder=_embedder())
    with _served_lock:
        _served.clear()  # only the newest is kept
        _served[stamp] = built
    return built


def cards_servable() -> list[tuple[IndexedCard, bytes | None]]:
    """Active cards whose sources have not changed, with their stored rows."""
    from knowledge.models import Card

    rows = (
        Card.objects.filter(status=Card.Status.ACTIVE, source_changed=False)
        .select_related("source_version__document")
        .order_by("card_id")
    )
    return [(indexed_card(c), bytes(c.embedding) if c.embedding else None) for c in rows]


def served_index_forget() -> None:
    with _served_lock:
        _served.clear()


def query_vector_start(message: str) -> None:
    """Start the turn's one model run now, in the background (``Embedder.prefetch``).

    The cards step and the chooser both embed ``T.expand(message)``; started
    at the top of the turn, that run overlaps the facts, route and directory
    steps' database work, and the cards step collects the vector from the
    embedder's memo. An embedder without ``prefetch`` (a test double) or none
    at all changes nothing: the cards step encodes as before.
    """
    embedder = _embedder()
    prefetch = getattr(embedder, "prefetch", None)
    if prefetch is not None:
        prefetch(T.expand(message))


def cards_retrieve(
    message: str,
    context: CardContext | None,
    *,
    index: CardIndex | None = None,
    limit: int = MAX_CARDS,
) -> CardRetrieval:
    """The cards that answer ``message`` under ``context``, best first."""
    index = index if index is not None else served_index()
    if not len(index):
        return EMPTY
    vector = None
    embedder = _embedder()
    if embedder is not None and index.rows is not None:
        # The glossary's words too ("deductible" → excess): the same text the
        # chooser embeds, so one model run serves both steps (embedder memo).
        vector = np.asarray(embedder.encode([T.expand(message)]), dtype=np.float32)[0]
    return cards_choose(
        cards_score(index, message, vector),
        context,
        limit=limit,
        asks_cover=T.asks_about_cover(message),
    )
