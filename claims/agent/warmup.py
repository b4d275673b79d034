"""Warm a web process up before its first customer turn, then freeze its heap.

``agent_warm_up()`` loads what the first turn would otherwise load on the
customer's time: the embedding model, the configured chooser, the learned
stages, the served answer cards' index, and each approved wording version's
directory, selector index (BM25 and passage vectors) and words (the English
word list with them: slips of the keyboard, ``claims.agent.spelling``). Then it runs a full
garbage collection and ``gc.freeze()``: everything alive at that point (Django,
numpy, the model, the indexes: some 140,000 objects) moves to the permanent
generation, so the collector's periodic full pass no longer walks it. Before,
that pass took 60-200 ms (on a loaded 2-core machine) in whichever turn
triggered it: the long tail of the turn time (docs/evaluation.md).

Nothing happens at import. gunicorn's ``post_worker_init`` hook calls it in
each worker (``northwind/gunicorn_conf.py``), after the app is loaded and
before the worker accepts a request; ``bench_turns`` calls it before it
measures, as a served worker would have. A failure is logged and the worker
serves anyway (the first turn then loads what it needs, as before).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


def agent_warm_up(*, freeze: bool = True) -> dict[str, float]:
    """Load the turn's models and indexes; then collect and freeze the heap.

    Returns the seconds each part took (for the log and the benchmark).
    """
    timings: dict[str, float] = {}

    def timed(name: str, fn: Callable[[], None]) -> None:
        started = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # never stop a worker from serving
            logger.warning("warm-up: %s failed (%s: %s)", name, type(exc).__name__, exc)
        timings[name] = round(time.perf_counter() - started, 3)

    timed("embedder", _embedder)
    timed("chooser", _chooser_and_versions)
    timed("cards", _cards)
    timed("spelling", _spellers)
    if freeze:
        started = time.perf_counter()
        gc.collect()
        gc.freeze()
        timings["gc_freeze"] = round(time.perf_counter() - started, 3)
    logger.info("warm-up: %s", ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    return timings


def _embedder() -> None:
    from knowledge.embedding import default_embedder

    default_embedder().encode(["warm-up"])  # the first run allocates ONNX Runtime's arenas


def _chooser_and_versions() -> None:
    """Each approved version's directory, and the offline chooser's features for it.

    The chooser is asked once per version, as a turn would ask it, so it
    builds exactly what it uses (the hybrid: BM25, passage vectors, the learned
    stages; the baseline: its term counts). A model chooser is never called
    here: its offline fallback is warmed instead.
    """
    from claims.agent import registry
    from claims.agent.types import SelectionContext
    from knowledge.models import Release, WordingVersion
    from knowledge.selectors import clause_directory

    configured = registry.chooser()
    offline = registry.fallback_chooser(configured) or configured
    releases = (
        Release.objects.filter(
            status=Release.Status.APPROVED, version__status=WordingVersion.Status.INGESTED
        )
        .values_list("line", "version_id")
        .distinct()
    )
    for line, version_id in releases:
        directory = clause_directory(version_id=version_id)
        context = SelectionContext(line=line, version_id=version_id)
        offline.choose(message="warm-up", directory=directory, context=context)


def _spellers() -> None:
    """The English word list and each approved version's words (slips of the keyboard)."""
    from claims.agent.wording import version_speller
    from knowledge.models import Release, WordingVersion

    releases = Release.objects.filter(
        status=Release.Status.APPROVED, version__status=WordingVersion.Status.INGESTED
    ).select_related("version")
    for release in releases:
        ingested_at = release.version.ingested_at
        if ingested_at is not None:  # an ingested version has its time
            version_speller(version_id=release.version_id, ingested_at=ingested_at).read("warm-up")


def _cards() -> None:
    from claims.agent.cards import served_index

    served_index()
