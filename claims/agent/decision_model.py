"""A second opinion on "does the customer ask us to decide?": a small classifier.

The rules in ``claims.agent.intents`` are written from how people ask, and on
questions written after them they miss a decision request about as often as
they catch one: "you lot declined my claim for the hail dents, reckon that's a
bit rough?" meets no rule. This classifier reads the message's embedding (the
same vector the cards step and the chooser use, ``T.expand(message)``, so the
turn runs the model no more often) and says how likely the message asks for a
decision on the customer's own claim.

It only adds hits, and only where the rules' own preconditions hold: the
message names a decision ("declined", "offer", "excess", "fault", ...) or tells
a specific past event of the customer's. A general question with neither
("how do you decide whether damage is gradual or sudden?") is never flagged by
the model, whatever its probability.

Trained by ``python manage.py train_decisions`` (deterministic, no hand edits)
into ``claims/agent/decisions.json``: our own labelled examples' ``dev`` rows
(``knowledge/content/decisions/decision-examples.tsv``) and the tune half of
the real-question labels, read at run time. Measured by
``python manage.py evaluate_decisions``; docs/evaluation.md has the figures.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from claims.agent import text as T
from claims.agent.selection.learned import Logistic, trained_file_load

logger = logging.getLogger(__name__)

MODEL_PATH = Path(__file__).with_name("decisions.json")
FEATURES = "embedding(T.expand(message))"


@dataclass(frozen=True)
class DecisionModel:
    embedder: str
    logistic: Logistic
    threshold: float
    meta: dict[str, Any]

    def probability(self, vector: np.ndarray) -> float:
        row = np.asarray(vector, dtype=np.float64).reshape(1, -1)
        return float(self.logistic.probability(row)[0])


@functools.cache
def decision_model(path: Path | None = None) -> DecisionModel | None:
    """The trained classifier, loaded once; None (and a warning) if absent or unreadable."""

    def build(data: dict[str, Any]) -> DecisionModel:
        if data.get("features") != FEATURES:
            raise ValueError("its features are not this code's; run train_decisions again")
        return DecisionModel(
            embedder=data["embedder"],
            logistic=Logistic.from_dict(data["model"]),
            threshold=float(data["threshold"]),
            meta=data.get("meta", {}),
        )

    return trained_file_load(
        path or MODEL_PATH, build, what="decisions", without="decision requests by rules only"
    )


def message_vector(message: str) -> np.ndarray | None:
    """The turn's one embedding of the message (the embedder's memo), or None without a model."""
    from claims.agent.cards import _embedder

    embedder = _embedder()
    if embedder is None:
        return None
    try:
        rows = np.asarray(embedder.encode([T.expand(message)]), dtype=np.float32)
        return np.asarray(rows[0], dtype=np.float32)
    except Exception as exc:  # the model failing must not break a turn: the rules still run
        logger.warning("decisions: no embedding (%s: %s)", type(exc).__name__, exc)
        return None


def model_probability(message: str, vector: np.ndarray | None) -> float | None:
    """P(asks for a decision) where the model may speak on this message, else None.

    None when there is no vector or model, when the vector is another
    embedder's, or when the message has neither a decision word nor a past
    event of the customer's (the model never flags a general question).
    """
    from claims.agent.intents import decision_preconditions

    if vector is None or not decision_preconditions(message):
        return None
    model = decision_model()
    if model is None or len(vector) != len(model.logistic.mean):
        return None
    return model.probability(vector)


def model_says_decision(message: str, vector: np.ndarray | None) -> bool:
    model = decision_model()
    p = model_probability(message, vector)
    return model is not None and p is not None and p >= model.threshold
