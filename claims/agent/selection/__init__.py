"""Offline clause selectors for the claim agent turn, and their registry.

``selection_model()`` returns the configured selector (setting
``CLAIM_AGENT_MODEL``, default ``"hybrid"``); ``selection_model("baseline")``
and the other names in ``SELECTION_MODELS`` return the ones the evaluation
compares it with.
"""

from __future__ import annotations

from claims.agent.selection.baseline import KeywordBaselineModel
from claims.agent.selection.index import selection_cache_clear
from claims.agent.selection.models import Bm25Model, EmbeddingModel, HybridModel, HybridParams
from claims.agent.types import ClauseModel

DEFAULT_MODEL = "hybrid"
SELECTION_MODELS = ["baseline", "bm25", "embedding", "hybrid"]

_CLASSES = {
    "baseline": KeywordBaselineModel,
    "bm25": Bm25Model,
    "embedding": EmbeddingModel,
    "hybrid": HybridModel,
}
_instances: dict[str, ClauseModel] = {}


def selection_model(name: str | None = None) -> ClauseModel:
    """The selector called ``name``; None means the ``CLAIM_AGENT_MODEL`` setting.

    Instances are shared: they hold no per-turn state, and the per-version
    indexes live in one in-process cache.
    """
    if name is None:
        from django.conf import settings

        name = getattr(settings, "CLAIM_AGENT_MODEL", DEFAULT_MODEL) or DEFAULT_MODEL
    if name not in _CLASSES:
        raise ValueError(
            f"Unknown clause selector {name!r}; choose one of {', '.join(SELECTION_MODELS)}."
        )
    model = _instances.get(name)
    if model is None:
        model = _instances.setdefault(name, _CLASSES[name]())
    return model


__all__ = [
    "DEFAULT_MODEL",
    "SELECTION_MODELS",
    "Bm25Model",
    "EmbeddingModel",
    "HybridModel",
    "HybridParams",
    "KeywordBaselineModel",
    "selection_cache_clear",
    "selection_model",
]
