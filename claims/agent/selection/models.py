"""The offline clause selectors: BM25, embeddings, and their hybrid (the default).

Each model reads the version's index from the in-process cache (built once per
version, see ``index.py``), scores the directory's clauses against the
message, and names at most three ids. Each is a ``ClauseChooser`` only: the
draft is written by a ``DraftWriter`` (the grounded composer by default).

Thresholds were calibrated on the customer-question inventories
(``knowledge/content/inventory/*.yaml``) through the claim endpoint; the
figures and how to re-run the calibration are in ``docs/evaluation.md``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from claims.agent import text as T
from claims.agent.selection.index import (
    INDEXES,
    Embedder,
    IndexSource,
    VersionIndex,
    alias_embeddings,
    default_embedder,
    default_index_source,
    passage_embeddings,
)
from claims.agent.selection.learned import (
    Logistic,
    TrainedSelector,
    fit_features,
    pair_features,
    trained_selector,
)
from claims.agent.types import MAX_CLAUSES, PriorTurn, SelectionContext

if TYPE_CHECKING:
    from knowledge.selectors import ClauseDirectory

logger = logging.getLogger(__name__)

RRF_K = 60

# A message that leans on the previous turn: it opens with a connective or a
# pronoun, or it is too short to stand alone ("and the petrol?", "what about
# tolls", "how long for?", "does that include meals?").
_FOLLOW_UP_OPENERS = re.compile(
    r"^\s*(and|also|plus|but|so|or|then|what about|how about|what if|same|"
    r"it|its|it's|that|that's|this|those|these|they|them|does that|is that|"
    r"would that|will that|and if)\b",
    re.IGNORECASE,
)
_ANAPHORA = frozenset({"it", "that", "this", "those", "these", "them", "they", "its", "it's"})
SHORT_FOLLOW_UP_STEMS = 3
# A short message whose best clause is at least this close stands on its own
# (calibrated on the inventories: genuine short follow-ups such as "how long
# for?" stay under 0.33, short standalone questions such as "is my
# engagement ring covered?" reach 0.38 and more).
STANDALONE_COSINE = 0.35
ANAPHORIC_FOLLOW_UP_STEMS = 8


def is_follow_up(message: str, *, standalone_cosine: float = 0.0) -> bool:
    """Whether ``message`` reads as a follow-up that needs the previous turn.

    An opener ("and the petrol?", "what about tolls") or a pronoun in a short
    message ("how much is the excess for that?") always leans on the previous
    turn. A message that is merely short leans on it only when it does not
    stand on its own: "how long for?" does, "how much is my deductible" asked
    after a windscreen question does not (its best clause cosine alone is
    ``standalone_cosine``).
    """
    if _FOLLOW_UP_OPENERS.match(message):
        return True
    content = T.stems(message)
    if len(content) <= ANAPHORIC_FOLLOW_UP_STEMS and bool(_ANAPHORA & set(T.words(message))):
        return True
    return len(content) <= SHORT_FOLLOW_UP_STEMS and standalone_cosine < STANDALONE_COSINE


def _ranks(scores: np.ndarray, *, floor: float) -> dict[int, int]:
    """1-based ranks of the clauses scoring above ``floor``, best first."""
    order = np.argsort(-scores, kind="stable")
    return {int(i): r for r, i in enumerate((i for i in order if scores[i] > floor), start=1)}


def _threshold_top(
    index: VersionIndex, scores: np.ndarray, *, minimum: float, relative: float
) -> list[str]:
    """Up to three ids scoring at least ``minimum`` and ``relative`` x the best."""
    if not len(index) or float(scores.max()) < minimum:
        return []
    cut = max(minimum, float(scores.max()) * relative)
    order = np.argsort(-scores, kind="stable")
    return [index.ids[i] for i in order[:MAX_CLAUSES] if scores[i] >= cut]


class _IndexedModel:
    name = ""

    def __init__(
        self, *, index_source: IndexSource | None = None, embedder: Embedder | None = None
    ) -> None:
        self._source = index_source or default_index_source
        self._embedder = embedder

    def _index(self, directory: ClauseDirectory) -> VersionIndex:
        return INDEXES.get(directory, self._source)

    def _get_embedder(self) -> Embedder | None:
        if self._embedder is None:
            try:
                self._embedder = default_embedder()
            except Exception as exc:  # a missing package must not break a turn
                logger.warning("selection: no embedder (%s: %s)", type(exc).__name__, exc)
                return None
        return self._embedder

    def _embed(self, text: str) -> np.ndarray | None:
        embedder = self._get_embedder()
        if embedder is None:
            return None
        vector: np.ndarray = np.asarray(embedder.encode([text]), dtype=np.float32)[0]
        return vector

    def _cosines(self, index: VersionIndex, vector: np.ndarray | None) -> np.ndarray | None:
        """Per clause, the best cosine of ``vector`` with the clause or one of its passages."""
        embedder = self._get_embedder()
        if embedder is None or vector is None:
            return None
        found = passage_embeddings(index, embedder)
        if found is None:
            return None
        matrix, owner = found
        best = np.full(len(index), -1.0, dtype=np.float32)
        np.maximum.at(best, owner, matrix @ vector)
        return best

    def alias_signals(
        self, index: VersionIndex, vector: np.ndarray | None, stems: list[str]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Per clause, the best cosine and BM25 against one of its similar questions.

        Clauses without questions get -1 / 0 here (the callers decide how to
        fall back); None when the version has no similar questions at all.
        Both come from matrices built once per version (no turn embeds one).
        """
        if not any(index.questions):
            return None
        n = len(index)
        alias_cos = np.full(n, -1.0, dtype=np.float32)
        embedder = self._get_embedder()
        if embedder is not None and vector is not None:
            found = alias_embeddings(index, embedder)
            if found is not None and found[0].shape[1] == vector.shape[0]:
                matrix, owner = found
                np.maximum.at(alias_cos, owner, matrix @ vector)
        return alias_cos, index.alias_bm25_scores(stems)


class Bm25Model(_IndexedModel):
    """BM25 (bm25s) over title (weighted) and body, Snowball stems, a threshold."""

    name = "bm25"
    minimum = 2.0
    relative = 0.5

    def choose(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> list[str]:
        index = self._index(directory)
        scores = index.bm25_scores(T.stems(message))
        return _threshold_top(index, scores, minimum=self.minimum, relative=self.relative)


class EmbeddingModel(_IndexedModel):
    """Cosine similarity between the message and the clauses embedded at ingestion."""

    name = "embedding"
    minimum = 0.30
    relative = 0.85

    def choose(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> list[str]:
        index = self._index(directory)
        cosines = self._cosines(index, self._embed(message))
        if cosines is None:
            return []
        return _threshold_top(index, cosines, minimum=self.minimum, relative=self.relative)


# Questions customers ask that no wording answers ("what are your opening
# hours?", seed 002's "how long is the warranty?") are answer cards now, which
# staff edit: a message closer to one of them than to any clause selects no
# clause. They come with the turn (``SelectionContext.card_index``) or, for a
# chooser used on its own, from ``outside_wording`` (default: the served cards).
OutsideWording = Callable[[], "np.ndarray | None"]


def served_outside_wording() -> np.ndarray | None:
    from claims.agent.cards import served_index

    return served_index().outside_wording


@dataclass(frozen=True)
class HybridParams:
    """The hybrid's calibrated constants (see docs/evaluation.md)."""

    # "Nothing fits": below both floors, or closer to an out-of-scope topic
    # than to the best clause by ``out_of_scope_margin``, nothing is selected.
    fit_cosine: float = 0.20
    fit_bm25: float = 1.0
    out_of_scope_margin: float = 0.0
    # A candidate after the first is kept only with this much evidence.
    keep_cosine: float = 0.30
    keep_bm25: float = 2.5
    keep_relative_rrf: float = 0.75
    # A clause the best one refers to is added with this much evidence.
    reference_cosine: float = 0.25
    follow_references: bool = True
    # Use the learned reranker and "fits" classifier (trained.json) when
    # trained for this embedder; the RRF rules above otherwise, and always
    # for follow-ups.
    learned: bool = True
    # With the learned stages: this close to a clause always fits.
    sure_cosine: float = 0.65
    # ...and this close to one of a clause's own similar questions (the
    # wording's "Questions:"). Above any tune-side question that nothing
    # answers (0.83 at most, without an outside sign); the classifier had
    # refused "Who is covered under my car insurance?", an exact similar
    # question (docs/evaluation.md, "A paraphrase of a similar question").
    sure_alias: float = 0.85


@dataclass(frozen=True)
class LearnedSignals:
    pairs: np.ndarray  # (clauses, PAIR_FEATURES)
    fit: np.ndarray  # (dimension + FIT_SCALARS,)


@dataclass(frozen=True)
class HybridExplanation:
    """What the hybrid saw for one message (calibration and the miss list)."""

    query: str
    follow_up: bool
    named: tuple[str, ...]
    fits: bool
    best_cosine: float
    best_bm25: float
    out_of_scope: float
    ranked: tuple[tuple[str, float, float, float], ...]  # id, rrf or P(fits), cosine, bm25
    selected: tuple[str, ...]
    fit_probability: float | None = None  # the learned classifier's, when it ran


class HybridModel(_IndexedModel):
    """BM25 + embeddings fused by Reciprocal Rank Fusion, with the routes around it.

    1. Clause ids written in the message come first ("MTR-BEN-03", "mtr ben 3",
       "clause BEN-03").
    2. A follow-up ("and the petrol?") is read together with the previous
       message, and the previous turn's clauses join the fusion as a third
       ranked list.
    3. If neither BM25 nor the embedding finds a clause above its calibrated
       floor, nothing fits and nothing is named (beyond ids the customer wrote).
    4. Otherwise the RRF (k = 60) order is cut to the clauses with their own
       evidence, and a clause the best one refers to may fill a free slot.
    """

    name = "hybrid"

    def __init__(
        self,
        *,
        index_source: IndexSource | None = None,
        embedder: Embedder | None = None,
        params: HybridParams | None = None,
        outside_wording: OutsideWording | None = None,
    ) -> None:
        super().__init__(index_source=index_source, embedder=embedder)
        self.params = params or HybridParams()
        self._outside_wording = outside_wording or served_outside_wording

    def choose(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> list[str]:
        return list(self.explain(message=message, directory=directory, context=context).selected)

    def explain(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> HybridExplanation:
        p = self.params
        index = self._index(directory)
        named = T.ids_in_message(message, index.ids)
        known = set(index.ids)
        # An id the wording does not have is passed on as named, so the turn
        # reports it not found; it is never replaced by a nearby clause.
        unknown = [c for c in T.ids_written(message) if c not in known]
        if unknown:
            selected = (named + unknown)[:MAX_CLAUSES]
            return HybridExplanation(
                query=message,
                follow_up=False,
                named=tuple(selected),
                fits=False,
                best_cosine=0.0,
                best_bm25=0.0,
                out_of_scope=0.0,
                ranked=(),
                selected=tuple(selected),
            )
        prior: PriorTurn | None = context.history[-1] if context.history else None

        query = T.expand(message)
        n = len(index)
        # One vector per message, of the message with the glossary's words (the
        # cards step embeds the same text: one model run per turn, shared
        # through the embedder's memo). Until 2026-12-01 the cards and the
        # out-of-scope rule read the customer's words alone, which cost a second
        # run on about half the real questions (docs/evaluation.md).
        vector = self._embed(query)
        cosines = self._cosines(index, vector)
        if cosines is None:
            cosines = np.zeros(n, dtype=np.float32)
        standalone = float(cosines.max()) if n else 0.0
        follow_up = prior is not None and is_follow_up(message, standalone_cosine=standalone)

        stems = T.stems(query)
        previous = ""
        if follow_up and prior is not None:
            # The new message counts twice: it says what is asked now.
            previous = T.expand(prior.message)
            stems = stems * 2 + T.stems(previous)
        bm25 = index.bm25_scores(stems)
        lists = [_ranks(bm25, floor=0.0), _ranks(cosines, floor=-1.0)]
        # The clauses' similar questions: two more ranked lists (the
        # message's own words; clauses without questions are not ranked).
        aliases = self.alias_signals(index, vector, T.stems(query))
        if aliases is not None:
            lists.append(_ranks(aliases[0], floor=-1.0))
            lists.append(_ranks(aliases[1], floor=0.0))
        best_cos = float(cosines.max()) if n else 0.0
        prior_ids: tuple[str, ...] = ()
        if follow_up and prior is not None:
            # Mean pooling of the two texts together is close to the mean of
            # their vectors, and the previous message's vector is already in
            # the embedder's memo: one model run saved on every follow-up.
            prior_vector = self._embed(previous)
            fused_vector = None
            if vector is not None and prior_vector is not None:
                fused_vector = vector + prior_vector
                fused_vector = fused_vector / max(float(np.linalg.norm(fused_vector)), 1e-12)
            fused_cosines = self._cosines(index, fused_vector)
            if fused_cosines is not None:
                lists.append(_ranks(fused_cosines, floor=-1.0))
                best_cos = max(best_cos, float(fused_cosines.max()))
                cosines = np.maximum(cosines, fused_cosines)
            # What the previous turn cited (else the first clause it got).
            known = set(index.ids)
            prior_ids = tuple(c for c in prior.cited_ids if c in known) or tuple(
                c for c in prior.returned_ids[:1] if c in known
            )
            lists.append({index.ids.index(c): r for r, c in enumerate(prior_ids, start=1)})
        best_bm = float(bm25.max()) if n else 0.0
        # Out-of-scope topics (the answer cards' questions) are judged on the
        # same vector the cards step used.
        out_of_scope = self._out_of_scope(vector, context)
        off_topic = out_of_scope - best_cos >= p.out_of_scope_margin
        fits = (best_cos >= p.fit_cosine or best_bm >= p.fit_bm25) and not off_topic

        learned = self._learned() if not follow_up else None
        if learned is not None and n:
            signals = self.learned_signals(
                index=index,
                query=query,
                vector=vector,
                cosines=cosines,
                bm25=bm25,
                out_of_scope=out_of_scope,
                reranker=learned.reranker,
                message=message,
                aliases=aliases,
            )
            probability = learned.reranker.probability(signals.pairs)
            fit = float(learned.fits.probability(signals.fit[None, :])[0])
            # A message this close to a clause is a paraphrase of it, whatever
            # the classifier says ("how do I cancel my home insurance").
            # ...unless it also shows a sign of being outside the wording ("what is a
            # voluntary deductible", "how to dispute a claim": close to the excess
            # and claims clauses, and answered by neither).
            # The same holds for a message this close to one of a clause's own
            # similar questions ("who is covered under my car insurance?").
            best_alias = float(aliases[0].max()) if aliases is not None else -1.0
            # A topic no clause answers (a vet's bill, a declined claim's next steps)
            # fits nowhere, whatever the classifier or a close paraphrase says.
            clearly_outside = T.clearly_outside(message)
            outside = clearly_outside or any(T.outside_signs(message))
            sure = (best_cos >= p.sure_cosine or best_alias >= p.sure_alias) and not outside
            # A card is matched on its question; a clause is matched on its own
            # similar questions too ("does my car insurance cover a break-in?" is
            # nearer the dealer-warranty card's "does ... cover it?" than to any
            # clause text, but nearer still to the cover clause's questions).
            off_topic = out_of_scope - max(best_cos, best_alias) >= p.out_of_scope_margin
            order = np.argsort(-probability, kind="stable")
            # In a conversation, the clause the previous turn cited is evidence
            # too: a message whose best clause is that one carries on the same
            # topic ("how many days do I get the hire car for?" after a hire-car
            # answer), even when the message alone looks like nothing fits.
            carried = prior is not None and n > 0 and index.ids[int(order[0])] in prior.cited_ids
            # How to claim on this policy is answered by the line's claims clause.
            how_to_claim = not outside and T.asks_how_to_claim(message)
            fits = (
                (fit >= learned.fits_threshold or sure or carried or how_to_claim)
                and not off_topic
                and not clearly_outside
            )
            ranked = [
                (index.ids[i], float(probability[i]), float(cosines[i]), float(bm25[i]))
                for i in order
            ]
            selected = list(named)
            # A question about the policy as a whole ("what does my car insurance
            # cover?", "what does it not cover?") is answered by the line's principal
            # covers (or exclusions): the first of that kind in the wording, then the
            # others as the reranker orders them. Left to the reranker, such a
            # question shares only filler words with any clause and drew definitions
            # and exclusions (issue 10, item 3). "How do I make a claim?" likewise gets
            # the line's claims clause.
            whole = None if outside else T.whole_policy_question(message, context.line)
            of_kind = [i for i in order if index.kinds[i] == whole] if whole and index.kinds else []
            if of_kind:
                fits = True
                principal = min(of_kind)
                # How to claim: the line's claims clause, and another claims clause
                # only when the reranker would keep it anyway (reporting to the
                # Police is not part of every claim).
                further = [
                    i
                    for i in of_kind
                    if whole != "claims" or probability[i] >= learned.keep_probability
                ]
                for i in [principal, *further]:
                    cid = index.ids[int(i)]
                    if len(selected) < MAX_CLAUSES and cid not in selected:
                        selected.append(cid)
            elif fits:
                # The reranker's best, then the plain RRF fusion's best (a
                # second opinion that needs no training), then further
                # clauses the reranker still finds likely.
                fused = np.zeros(n, dtype=np.float64)
                for ranks in lists:
                    for i, r in ranks.items():
                        fused[i] += 1.0 / (RRF_K + r)
                rrf_best = index.ids[int(np.argmax(fused))]
                candidates = [ranked[0][0], rrf_best] + [
                    cid for cid, prob, _, _ in ranked[1:] if prob >= learned.keep_probability
                ]
                if how_to_claim and index.kinds:
                    # the line's first claims clause, as the whole-policy route takes it
                    first = next((i for i, k in enumerate(index.kinds) if k == "claims"), None)
                    if first is not None:
                        candidates.insert(1, index.ids[first])
                for cid in candidates:
                    if len(selected) < MAX_CLAUSES and cid not in selected:
                        selected.append(cid)
            return HybridExplanation(
                query=query,
                follow_up=False,
                named=tuple(named),
                fits=fits,
                best_cosine=best_cos,
                best_bm25=best_bm,
                out_of_scope=out_of_scope,
                ranked=tuple(ranked[:8]),
                selected=tuple(selected[:MAX_CLAUSES]),
                fit_probability=fit,
            )

        ranked = []
        if n:
            fused = np.zeros(n, dtype=np.float64)
            for ranks in lists:
                for i, r in ranks.items():
                    fused[i] += 1.0 / (RRF_K + r)
            order = np.argsort(-fused, kind="stable")
            ranked = [
                (index.ids[i], float(fused[i]), float(cosines[i]), float(bm25[i])) for i in order
            ]

        selected = list(named)
        if fits:
            top_rrf = ranked[0][1]
            for position, (cid, rrf, cos, bm) in enumerate(ranked):
                if len(selected) >= MAX_CLAUSES:
                    break
                if cid in selected:
                    continue
                if position == 0:
                    selected.append(cid)
                    continue
                evidence = cos >= p.keep_cosine or bm >= p.keep_bm25 or cid in prior_ids
                if evidence and rrf >= p.keep_relative_rrf * top_rrf:
                    selected.append(cid)
            if p.follow_references:
                self._add_reference(index, ranked, selected, cosines)
        elif follow_up and prior_ids and not off_topic:
            selected.extend(c for c in prior_ids if c not in selected)

        return HybridExplanation(
            query=f"{query} {previous}".strip(),
            follow_up=follow_up,
            named=tuple(named),
            fits=fits,
            best_cosine=best_cos,
            best_bm25=best_bm,
            out_of_scope=out_of_scope,
            ranked=tuple(ranked[:8]),
            selected=tuple(selected[:MAX_CLAUSES]),
        )

    def training_signals(
        self, *, message: str, directory: ClauseDirectory, reranker: Logistic | None
    ) -> tuple[VersionIndex, LearnedSignals]:
        """The learned stages' features for one standalone message (train_selector)."""
        index = self._index(directory)
        query = T.expand(message)
        vector = self._embed(query)
        cosines = self._cosines(index, vector)
        if cosines is None:
            cosines = np.zeros(len(index), dtype=np.float32)
        bm25 = index.bm25_scores(T.stems(query))
        out_of_scope = self._out_of_scope(
            vector, SelectionContext(line="", version_id=directory.version_id)
        )
        signals = self.learned_signals(
            index=index,
            query=query,
            vector=vector,
            cosines=cosines,
            bm25=bm25,
            out_of_scope=out_of_scope,
            reranker=reranker,
            message=message,
        )
        return index, signals

    def _learned(self) -> TrainedSelector | None:
        if not self.params.learned:
            return None
        trained = trained_selector()
        embedder = self._get_embedder()
        if trained is None or embedder is None or trained.embedder != embedder.name:
            return None
        return trained

    def learned_signals(
        self,
        *,
        index: VersionIndex,
        query: str,
        vector: np.ndarray | None,
        cosines: np.ndarray,
        bm25: np.ndarray,
        out_of_scope: float,
        reranker: Logistic | None,
        message: str,
        aliases: tuple[np.ndarray, np.ndarray] | bool | None = False,
    ) -> LearnedSignals:
        """The features of both learned stages (the same at training and at run time).

        ``aliases``: the message's ``alias_signals`` if the caller has them
        (False: compute them here).
        """
        query_stems = frozenset(T.stems(query))
        if aliases is False:
            aliases = self.alias_signals(index, vector, T.stems(query))
        alias_cos = alias_bm = None
        if isinstance(aliases, tuple):
            has = index.has_questions
            alias_cos = np.where(has, aliases[0], cosines)
            alias_bm = np.where(has, aliases[1], bm25)
        pairs = pair_features(
            ids=index.ids,
            kinds=index.kinds or ("",) * len(index),
            title_stems=index.title_stems or (frozenset(),) * len(index),
            query_stems=query_stems,
            cosines=cosines,
            bm25=bm25,
            alias_cosines=alias_cos,
            alias_bm25=alias_bm,
        )
        best_pair = float(reranker.score(pairs).max()) if reranker is not None else 0.0
        known = sum(s in index.vocabulary for s in query_stems)
        best_cos = float(cosines.max()) if len(cosines) else 0.0
        fit = fit_features(
            vector=vector,
            dimension=self._dimension(),
            best_pair=best_pair,
            best_cosine=best_cos,
            best_bm25=float(bm25.max()) if len(bm25) else 0.0,
            out_of_scope_gap=out_of_scope - best_cos,
            wording_words=known / max(len(query_stems), 1),
            signs=T.outside_signs(message),
        )
        return LearnedSignals(pairs=pairs, fit=fit)

    def _dimension(self) -> int:
        embedder = self._get_embedder()
        return int(getattr(embedder, "dimension", 384) or 384)

    def _out_of_scope(self, vector: np.ndarray | None, context: SelectionContext) -> float:
        """The query's best cosine with a question cards answer outside the wording."""
        if vector is None:
            return 0.0
        card_index = getattr(context, "card_index", None)
        rows = card_index.outside_wording if card_index is not None else self._outside_wording()
        if rows is None or not len(rows) or rows.shape[1] != vector.shape[0]:
            return 0.0
        return float((rows @ vector).max())

    def _add_reference(
        self,
        index: VersionIndex,
        ranked: list[tuple[str, float, float, float]],
        selected: list[str],
        cosines: np.ndarray,
    ) -> None:
        if not selected or len(selected) >= MAX_CLAUSES:
            return
        for target in index.refers_to.get(selected[0], ()):
            if len(selected) >= MAX_CLAUSES:
                return
            if target in selected or target not in index.ids:
                continue
            if float(cosines[index.ids.index(target)]) >= self.params.reference_cosine:
                selected.append(target)
