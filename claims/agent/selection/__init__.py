"""Offline clause selectors for the claim agent turn.

They are registered in ``claims.agent.registry`` (``CHOOSERS``);
``selection_model`` is kept as an alias of ``registry.chooser``.
"""

from __future__ import annotations

from claims.agent.registry import CHOOSERS, DEFAULT_CHOOSER
from claims.agent.registry import chooser as selection_model
from claims.agent.selection.baseline import KeywordBaselineModel
from claims.agent.selection.index import selection_cache_clear
from claims.agent.selection.models import Bm25Model, EmbeddingModel, HybridModel, HybridParams

DEFAULT_MODEL = DEFAULT_CHOOSER
SELECTION_MODELS = list(CHOOSERS)

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
