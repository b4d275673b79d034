"""Turn benchmarks through the claim endpoint: latency by step, queries, memory."""

from __future__ import annotations

import hashlib
import itertools
import os
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
    # CPU time of the process (every thread, ONNX Runtime's too) per turn: on a
    # machine shared with other jobs, the wall time measures the contention.
    cpu_ms: list[float] = field(default_factory=list)
    # Server time minus the time the request's thread sat runnable waiting for a
    # core (Linux schedstat): the turn's time on a core, all of it when ONNX
    # Runtime runs in that thread (NORTHWIND_EMBED_THREADS=1). A busy machine
    # still slows the core itself (shared caches). Empty off Linux.
    uncontended_ms: list[float] = field(default_factory=list)
    load_average: tuple[float, float] = (0.0, 0.0)  # 1-minute, before and after
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
            "cpu_ms": pcts(self.cpu_ms),
            "uncontended_ms": pcts(self.uncontended_ms) if self.uncontended_ms else None,
            "load_average": [round(x, 2) for x in self.load_average],
            "queries_per_turn": {
                "mean": round(statistics.fmean(self.queries), 2) if self.queries else 0,
                "max": max(self.queries, default=0),
            },
            "steps_ms": {step: pcts(v) for step, v in sorted(self.steps.items())},
            "peak_memory_mb": round(self.peak_memory_mb, 2),
            "max_rss_mb": round(self.max_rss_mb, 1),
        }


_TURN_NUMBERS = itertools.count()


def _runqueue_wait_ms() -> float | None:
    """This thread's time spent runnable but not running, in ms (None off Linux)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


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
    """``turns`` messages, each in a fresh conversation, after ``warmup`` unmeasured ones.

    First the process is warmed up as a served worker is at start
    (``agent_warm_up``: model, indexes, then the heap frozen, see
    northwind/gunicorn_conf.py), so the figures are those of a served turn.
    """
    from claims.agent.warmup import agent_warm_up

    agent_warm_up()
    questions = _questions()
    for _ in range(warmup):  # loads the embedder and each line's index once
        policy, message = next(questions)
        client.message_send(client.conversation_start(policy), message)
    result = BenchResult()
    load_before = _load_average()
    for _ in range(turns):
        policy, message = next(questions)
        conversation = client.conversation_start(policy)
        with CaptureQueriesContext(connection) as queries:
            waited = _runqueue_wait_ms()
            started = time.perf_counter()
            cpu_started = time.process_time()
            reply = client.message_send(conversation, message)
            cpu = (time.process_time() - cpu_started) * 1000
            elapsed = (time.perf_counter() - started) * 1000
            waited_after = _runqueue_wait_ms()
        result.server_ms.append(elapsed)
        result.cpu_ms.append(cpu)
        if waited is not None and waited_after is not None:
            result.uncontended_ms.append(elapsed - (waited_after - waited))
        result.queries.append(len(queries.captured_queries))
        turn = Turn.objects.get(pk=reply.body["turn_id"])
        for step, ms in (turn.timings_ms or {}).items():
            result.steps.setdefault(step, []).append(float(ms))
        result.turns += 1
    result.load_average = (load_before, _load_average())
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


# --- throughput under gunicorn (bench_turns --concurrent) ---------------------


@dataclass
class ThroughputResult:
    selector: str
    turns: int
    seconds: float
    errors: int
    latency_ms: list[float] = field(default_factory=list)
    worker_peak_rss_mb: list[float] = field(default_factory=list)

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _peak_rss_mb(pid: int) -> float:
    """VmHWM (the peak resident set) of a process, from /proc; 0 where unavailable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def throughput_bench(
    *,
    selector: str,
    token: str,
    turns: int,
    clients: int = 4,
    workers: int = 2,
    warmup: int = 12,
    log_path: str | None = None,
) -> ThroughputResult:
    """Serve the app with gunicorn (``workers`` processes, loopback) and measure turns/s.

    The server runs with ``CLAIM_AGENT_MODEL=selector`` and one ONNX thread per
    worker (two workers share the machine's cores, as docker-compose.yml
    sets it); ``clients`` threads send ``turns`` messages, each in its own
    conversation, after a warm-up that loads every worker's model and indexes.
    Measured from the client: wall time of the measured messages, and each
    worker's peak RSS read from /proc at the end.
    """
    import json
    import subprocess
    import sys
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    port = _free_port()
    env = {
        **os.environ,
        "CLAIM_AGENT_MODEL": selector,
        "NORTHWIND_EMBED_THREADS": "1",
        "API_THROTTLE_RATE": "1000000/minute",
        "DEBUG": "false",
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    log = open(log_path or os.devnull, "ab")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [
            str(gunicorn),
            "northwind.wsgi",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--timeout",
            "120",
            "--log-level",
            "warning",
            # The served workers' start hook (post_worker_init: warm-up, frozen
            # heap); the flags above and below keep sync, single-thread workers.
            "--config",
            "python:northwind.gunicorn_conf",
            "--worker-class",
            "sync",
            "--threads",
            "1",
        ],
        env=env,
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"

    def post(path: str, body: dict) -> dict:
        request = urllib.request.Request(
            base + path,
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def one(pair: tuple[str, str]) -> float | None:
        policy, message = pair
        try:
            conversation = post("/api/v1/conversations/", {"policy_number": policy})["id"]
            started = time.perf_counter()
            post(f"/api/v1/conversations/{conversation}/messages/", {"message": message})
            return (time.perf_counter() - started) * 1000
        except Exception:
            return None

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=5).read()
                break
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"gunicorn did not start for {selector}") from None
                time.sleep(0.3)
        questions = _questions()
        with ThreadPoolExecutor(max_workers=clients) as pool:
            list(pool.map(one, [next(questions) for _ in range(warmup)]))
            batch = [next(questions) for _ in range(turns)]
            started = time.perf_counter()
            results = list(pool.map(one, batch))
            seconds = time.perf_counter() - started
        ok = [r for r in results if r is not None]
        rss = [_peak_rss_mb(pid) for pid in _children(server.pid)]
        return ThroughputResult(
            selector=selector,
            turns=len(ok),
            seconds=seconds,
            errors=len(results) - len(ok),
            latency_ms=ok,
            worker_peak_rss_mb=rss,
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
