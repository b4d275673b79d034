"""The one registry of clause choosers and draft writers.

``chooser()`` is the configured ``ClauseChooser`` (setting
``CLAIM_AGENT_MODEL``: a name in ``CHOOSERS``, default ``"hybrid"``, or the
dotted path of a class, such as an LLM adapter or a test fake);
``chooser("baseline")`` is the one the evaluation compares it with.
``writer()`` is the configured ``DraftWriter``: the configured chooser when it
also writes (an LLM adapter implements both protocols), else the grounded
composer.

Named instances are built on first use and shared: they hold no per-turn
state, and each builds its own features (indexes, embeddings) lazily, on
the first turn that uses it. A dotted path is built per call, since such a
class may read its settings when it is made.
"""

from __future__ import annotations

from collections.abc import Callable

from claims.agent.types import ClauseChooser, DraftWriter, ToolPlanner

DEFAULT_CHOOSER = "hybrid"
DEFAULT_WRITER = "grounded"


def _baseline() -> ClauseChooser:
    from claims.agent.selection.baseline import KeywordBaselineModel

    return KeywordBaselineModel()


def _bm25() -> ClauseChooser:
    from claims.agent.selection.models import Bm25Model

    return Bm25Model()


def _embedding() -> ClauseChooser:
    from claims.agent.selection.models import EmbeddingModel

    return EmbeddingModel()


def _hybrid() -> ClauseChooser:
    from claims.agent.selection.models import HybridModel

    return HybridModel()


def _rrf() -> ClauseChooser:
    from claims.agent.selection.models import HybridModel, HybridParams

    model = HybridModel(params=HybridParams(learned=False))
    model.name = "rrf"
    return model


def _grounded() -> DraftWriter:
    from claims.agent.compose import GroundedComposer

    return GroundedComposer()


# The offline selectors, in the order the evaluation reports them.
CHOOSERS: dict[str, Callable[[], ClauseChooser]] = {
    "baseline": _baseline,
    "bm25": _bm25,
    "embedding": _embedding,
    "rrf": _rrf,  # the hybrid without its learned stages (RRF and hand-set thresholds)
    "hybrid": _hybrid,
}
WRITERS: dict[str, Callable[[], DraftWriter]] = {"grounded": _grounded}

_choosers: dict[str, ClauseChooser] = {}
_writers: dict[str, DraftWriter] = {}


def _configured() -> str:
    from django.conf import settings

    return getattr(settings, "CLAIM_AGENT_MODEL", "") or DEFAULT_CHOOSER


def _from_path(path: str) -> object:
    from django.utils.module_loading import import_string

    return import_string(path)()


def chooser(name: str | None = None) -> ClauseChooser:
    """The chooser called ``name``; None means the ``CLAIM_AGENT_MODEL`` setting."""
    name = name or _configured()
    if "." in name:
        built = _from_path(name)
        if not isinstance(built, ClauseChooser):
            raise ValueError(
                f"{name} is not a clause selector (a class with a name and a choose method)."
            )
        return built
    if name not in CHOOSERS:
        raise ValueError(f"Unknown clause selector {name!r}; choose one of {', '.join(CHOOSERS)}.")
    found = _choosers.get(name)
    if found is None:
        found = _choosers.setdefault(name, CHOOSERS[name]())
    return found


def writer(name: str | None = None, *, chooser_in_use: ClauseChooser | None = None) -> DraftWriter:
    """The writer called ``name``; None means the configured chooser if it writes.

    Pass the chooser the turn uses as ``chooser_in_use`` so that an adapter
    built from a dotted path is not built twice.
    """
    if name is None:
        configured = chooser_in_use if chooser_in_use is not None else chooser()
        if isinstance(configured, DraftWriter):
            return configured
        name = DEFAULT_WRITER
    if "." in name:
        built = _from_path(name)
        if not isinstance(built, DraftWriter):
            raise ValueError(
                f"{name} is not a draft writer (a class with a name and a write method)."
            )
        return built
    if name not in WRITERS:
        raise ValueError(f"Unknown draft writer {name!r}; choose one of {', '.join(WRITERS)}.")
    found = _writers.get(name)
    if found is None:
        found = _writers.setdefault(name, WRITERS[name]())
    return found


def planner(chooser_in_use: ClauseChooser | None = None) -> ToolPlanner | None:
    """The model that may ask for tools besides the offline rules: the chooser, if it plans."""
    configured = chooser_in_use if chooser_in_use is not None else chooser()
    return configured if isinstance(configured, ToolPlanner) else None


def fallback_chooser(failed: ClauseChooser) -> ClauseChooser | None:
    """The offline chooser that stands in when ``failed`` (a model) cannot answer.

    None when ``failed`` is itself an offline selector: nothing else to ask.
    """
    if any(failed is found for found in _choosers.values()):
        return None
    from django.conf import settings

    name = getattr(settings, "CLAIM_AGENT_FALLBACK", "") or DEFAULT_CHOOSER
    return chooser(name)
