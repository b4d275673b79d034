"""The hybrid's two learned stages: a clause reranker and a "something fits" classifier.

Both are logistic regressions over a handful of features the hybrid computes
anyway (cosines, BM25, ranks, the clause's kind), plus, for "fits", the
message's own embedding. They are trained by ``python manage.py
train_selector`` from labelled questions only -- the tuning inventories and
the *tune* half of the real-question labels -- and stored as plain numbers in
``trained.json`` beside this module (no question text). Without that file the
hybrid falls back to its hand-set RRF thresholds.

Why logistic regression: a few hundred labelled questions cannot fit more
without learning the tuning set's quirks; a linear model over general
signals (how close, how many wording words, which kind of clause) is what
transfers to questions nobody has seen (``docs/evaluation.md`` has tune vs
test figures).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from claims.agent.text import OUTSIDE_SIGNS

logger = logging.getLogger(__name__)

MODEL_PATH = Path(__file__).with_name("trained.json")
KINDS = ("cover", "benefit", "exclusion", "condition", "excess", "claims", "definition", "general")
_FIRST_OF_SEGMENT = re.compile(r"-(?:COV|XS)-01$")

PAIR_FEATURES = (
    "cosine",
    "cosine_gap",  # cosine - best cosine of the message
    "cosine_rank_inv",
    "bm25_log",
    "bm25_share",  # bm25 / best bm25
    "bm25_rank_inv",
    "title_overlap",  # message stems found in the title
    "main_clause",  # the line's first cover or excess clause
    *(f"kind_{k}" for k in KINDS),
    # The clause's similar questions (the wording's "Questions:"); a clause
    # without them stands in with its own cosine and BM25.
    "alias_cosine",
    "alias_cosine_gap",  # alias cosine - best alias cosine of the message
    "alias_cosine_rank_inv",
    "alias_bm25_log",
    "alias_bm25_share",
)
_ALIAS = 8 + len(KINDS)
FIT_SCALARS = (
    "best_pair",
    "best_cosine",
    "best_bm25_log",
    "out_of_scope_gap",
    "wording_words",
    # signs of a question outside the wording (claims.agent.text.OUTSIDE_SIGNS)
    *(f"sign_{name}" for name in OUTSIDE_SIGNS),
)


def _inverse_ranks(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    inv = np.empty(len(scores), dtype=np.float64)
    inv[order] = 1.0 / np.arange(1, len(scores) + 1)
    return inv


def pair_features(
    *,
    ids: tuple[str, ...],
    kinds: tuple[str, ...],
    title_stems: tuple[frozenset[str], ...],
    query_stems: frozenset[str],
    cosines: np.ndarray,
    bm25: np.ndarray,
    alias_cosines: np.ndarray | None = None,
    alias_bm25: np.ndarray | None = None,
) -> np.ndarray:
    """One row of PAIR_FEATURES per clause of the directory.

    ``alias_cosines`` / ``alias_bm25``: per clause, the message's best cosine
    and BM25 against one of the clause's similar questions (already falling
    back to ``cosines`` / ``bm25`` where a clause has none); None: no clause
    has any.
    """
    n = len(ids)
    x = np.zeros((n, len(PAIR_FEATURES)), dtype=np.float64)
    if not n:
        return x
    cos = cosines.astype(np.float64)
    bm = bm25.astype(np.float64)
    best_bm = float(bm.max())
    x[:, 0] = cos
    x[:, 1] = cos - float(cos.max())
    x[:, 2] = _inverse_ranks(cos)
    x[:, 3] = np.log1p(np.maximum(bm, 0.0))
    x[:, 4] = bm / best_bm if best_bm > 0 else 0.0
    x[:, 5] = _inverse_ranks(bm) * (bm > 0)
    x[:, 6] = [len(query_stems & t) for t in title_stems]
    x[:, 7] = [bool(_FIRST_OF_SEGMENT.search(c)) for c in ids]
    for j, kind in enumerate(KINDS):
        x[:, 8 + j] = [k == kind for k in kinds]
    acos = cos if alias_cosines is None else alias_cosines.astype(np.float64)
    abm = bm if alias_bm25 is None else alias_bm25.astype(np.float64)
    best_abm = float(abm.max())
    x[:, _ALIAS] = acos
    x[:, _ALIAS + 1] = acos - float(acos.max())
    x[:, _ALIAS + 2] = _inverse_ranks(acos)
    x[:, _ALIAS + 3] = np.log1p(np.maximum(abm, 0.0))
    x[:, _ALIAS + 4] = abm / best_abm if best_abm > 0 else 0.0
    return x


def fit_features(
    *,
    vector: np.ndarray | None,
    dimension: int,
    best_pair: float,
    best_cosine: float,
    best_bm25: float,
    out_of_scope_gap: float,
    wording_words: float,
    signs: tuple[float, ...],
) -> np.ndarray:
    """The message's embedding followed by FIT_SCALARS."""
    emb = np.zeros(dimension) if vector is None else np.asarray(vector, dtype=np.float64)
    scalars = [best_pair, best_cosine, float(np.log1p(max(best_bm25, 0.0))), out_of_scope_gap]
    return np.concatenate([emb, [*scalars, wording_words, *signs]])


# --- training -------------------------------------------------------------------


def logistic_fit(
    x: np.ndarray,
    y: np.ndarray,
    *,
    l2: float | np.ndarray,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Standardise, then fit an L2-regularised logistic regression by Newton steps.

    ``l2`` is one penalty for every feature, or one per feature (the "fits"
    classifier penalises the 384 embedding numbers harder than its few
    general signals). Deterministic (no random start, no sampling). Returns
    the feature means, scales, coefficients and intercept.
    """
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0  # a constant feature (one embedding dimension is)
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    sample = np.ones(len(y)) if weights is None else weights
    w = np.zeros(z.shape[1])
    penalty = np.zeros(z.shape[1])
    penalty[:-1] = l2  # no penalty on the intercept
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        grad = z.T @ (sample * (p - y)) + penalty * w
        hess = (z.T * (sample * p * (1 - p))) @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


@dataclass(frozen=True)
class Logistic:
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def score(self, x: np.ndarray) -> np.ndarray:
        """The linear score (log-odds) of each row."""
        return np.asarray(((x - self.mean) / self.scale) @ self.coef + self.intercept)

    def probability(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(self.score(x), -30, 30))))

    def as_dict(self) -> dict[str, Any]:
        return {
            "mean": [float(f"{v:.9g}") for v in self.mean],
            "scale": [float(f"{v:.9g}") for v in self.scale],
            "coef": [float(f"{v:.9g}") for v in self.coef],
            "intercept": float(f"{self.intercept:.9g}"),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Logistic:
        return cls(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=float(data["intercept"]),
        )


@dataclass(frozen=True)
class TrainedSelector:
    """What ``train_selector`` wrote: both models and the cut-offs chosen on the tune half."""

    embedder: str
    reranker: Logistic
    fits: Logistic
    fits_threshold: float  # P(something fits) below this: nothing fits
    keep_probability: float  # a further clause is kept at this reranker probability
    meta: dict[str, Any]


# A trained file served instead of MODEL_PATH for a while (``model_served``).
_SERVED: list[Path] = []


@contextlib.contextmanager
def model_served(path: Path) -> Iterator[None]:
    """Serve the hybrid from another trained file for the duration, in this process.

    ``validate_selector`` trains on part of the tune half and scores the rest
    through the claim endpoint without touching the shipped ``trained.json``.
    """
    _SERVED.append(Path(path))
    trained_selector.cache_clear()
    try:
        yield
    finally:
        _SERVED.pop()
        trained_selector.cache_clear()


@functools.cache
def trained_selector(path: Path | None = None) -> TrainedSelector | None:
    """The trained stages, loaded once; None (and a warning) if absent or unreadable.

    ``path`` None: the file ``model_served`` set, else MODEL_PATH.
    """
    if path is None:
        path = _SERVED[-1] if _SERVED else MODEL_PATH

    def build(data: dict[str, Any]) -> TrainedSelector:
        if data.get("pair_features") != list(PAIR_FEATURES) or data.get("fit_scalars") != list(
            FIT_SCALARS
        ):
            raise ValueError("its features are not this code's; run train_selector again")
        return TrainedSelector(
            embedder=data["embedder"],
            reranker=Logistic.from_dict(data["reranker"]),
            fits=Logistic.from_dict(data["fits"]),
            fits_threshold=float(data["fits_threshold"]),
            keep_probability=float(data["keep_probability"]),
            meta=data.get("meta", {}),
        )

    return trained_file_load(
        path, build, what="selection", without="the hybrid uses its RRF thresholds"
    )


_Model = TypeVar("_Model")


def trained_file_load(
    path: Path, build: Callable[[dict[str, Any]], _Model], *, what: str, without: str
) -> _Model | None:
    """A trained model's JSON file, built by ``build``; None (and a warning saying
    what happens ``without`` it) if the file is absent or unreadable."""
    try:
        return build(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        logger.warning("%s: %s is missing; %s", what, path, without)
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("%s: cannot use %s (%s); %s", what, path, exc, without)
    return None
