"""Turn benchmarks through the claim endpoint: latency by step, queries, memory."""

from __future__ import annotations

import hashlib
import itertools
import resource
import statistics
import time
import tracemalloc
from dataclasses import dataclass, field

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.evaluation.client import EndpointClient
from claims.evaluation.inventory import inventories_load
from claims.models import Turn


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass
class BenchResult:
    turns: int = 0
    server_ms: list[float] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    steps: dict[str, list[float]] = field(default_factory=dict)
    peak_memory_mb: float = 0.0
    max_rss_mb: float = 0.0

    def summary(self) -> dict:
        def pcts(values):
            return {f"p{p}": round(percentile(values, p), 2) for p in (50, 95, 99)}

        return {
            "turns": self.turns,
            "server_ms": pcts(self.server_ms),
            "queries_per_turn": {
                "mean": round(statistics.fmean(self.queries), 2) if self.queries else 0,
                "max": max(self.queries, default=0),
            },
            "steps_ms": {step: pcts(v) for step, v in sorted(self.steps.items())},
            "peak_memory_mb": round(self.peak_memory_mb, 2),
            "max_rss_mb": round(self.max_rss_mb, 1),
        }


_TURN_NUMBERS = itertools.count()


def _questions():
    """Endless (policy, message) pairs, lines interleaved, every message unique.

    Stand-alone inventory questions, round-robin over the lines so the
    warm-up touches every line's index. A turn number is appended so no
    turn reuses a memoised query embedding: each pays a real encode.
    """
    per_line = [
        [(inv.policy_number, q.text) for q in inv.questions if not q.after]
        for inv in inventories_load()
    ]
    rounds = itertools.zip_longest(*per_line)
    ordered = [pair for round_ in rounds for pair in round_ if pair is not None]
    for policy, message in itertools.cycle(ordered):
        yield policy, f"{message} (turn {next(_TURN_NUMBERS)})"


def turns_bench(
    client: EndpointClient, *, turns: int, warmup: int = 6, memory_turns: int = 30
) -> BenchResult:
    """``turns`` messages, each in a fresh conversation, after ``warmup`` unmeasured ones."""
    questions = _questions()
    for _ in range(warmup):  # loads the embedder and each line's index once
        policy, message = next(questions)
        client.message_send(client.conversation_start(policy), message)
    result = BenchResult()
    for _ in range(turns):
        policy, message = next(questions)
        conversation = client.conversation_start(policy)
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            reply = client.message_send(conversation, message)
            elapsed = (time.perf_counter() - started) * 1000
        result.server_ms.append(elapsed)
        result.queries.append(len(queries.captured_queries))
        turn = Turn.objects.get(pk=reply.body["turn_id"])
        for step, ms in (turn.timings_ms or {}).items():
            result.steps.setdefault(step, []).append(float(ms))
        result.turns += 1
    # Memory separately: tracemalloc slows every allocation, so it must not
    # run while the turns are timed.
    tracemalloc.start()
    try:
        for _ in range(min(turns, memory_turns)):
            policy, message = next(questions)
            client.message_send(client.conversation_start(policy), message)
        result.peak_memory_mb = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    result.max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def synthetic_clauses_add(total: int, *, per_version: int = 30) -> int:
    """Add ``total`` clauses in new ingested (never released) versions of every line.

    Bulk rows copied in shape from the ingested 2026.2 clauses (text, title,
    kind, embedding), renumbered per version; valid for the directory and
    the index selectors. Returns the number of clauses added.
    """
    from django.utils import timezone

    from knowledge.models import Clause, WordingDocument, WordingVersion

    templates = {
        doc.pk: list(
            Clause.objects.filter(version__document=doc, version__label="2026.2").order_by(
                "position"
            )
        )
        for doc in WordingDocument.objects.all()
    }
    templates = {k: v for k, v in templates.items() if v}
    documents = list(WordingDocument.objects.filter(pk__in=templates))
    existing = WordingVersion.objects.filter(label__startswith="bench-").count()
    added = 0
    n = existing
    while added < total:
        doc = documents[n % len(documents)]
        n += 1
        version = WordingVersion.objects.create(
            document=doc,
            label=f"bench-{n:05d}",
            effective_from="2001-01-01",
            effective_to="2001-01-02",
            status=WordingVersion.Status.INGESTED,
            ingested_at=timezone.now(),
            embedding_model="synthetic",
        )
        rows = []
        source = templates[doc.pk]
        for position in range(min(per_version, total - added)):
            t = source[position % len(source)]
            suffix = f"{position // len(source)}" if position >= len(source) else ""
            clause_id = t.clause_id if not suffix else f"{t.clause_id[:-2]}{90 + position % 10:02d}"
            text = f"{t.text}\n{suffix}"
            rows.append(
                Clause(
                    version=version,
                    clause_id=clause_id,
                    title=t.title,
                    kind=t.kind,
                    position=position,
                    char_count=len(text),
                    sha256=hashlib.sha256(text.encode()).hexdigest(),
                    storage_key=t.storage_key,
                    schedule_section=t.schedule_section,
                    refers_to=t.refers_to,
                    visibility=t.visibility,
                    text=text,
                    embedding=t.embedding,
                )
            )
        Clause.objects.bulk_create(rows, ignore_conflicts=True)
        added += len(rows)
    return added
