"""The embedder's prefetch: a vector started early is the vector encode gives."""

import numpy as np
import pytest

from knowledge.embedding import OnnxMiniLMEmbedder


@pytest.fixture(scope="module")
def embedder():
    return OnnxMiniLMEmbedder(threads=1)


def test_a_prefetched_text_is_encoded_once_and_gives_the_same_vector(embedder, model_runs):
    fresh = OnnxMiniLMEmbedder(threads=1).encode(["is my windscreen covered? (prefetch 1)"])[0]
    runs = model_runs(embedder)
    embedder.prefetch("is my windscreen covered? (prefetch 1)")
    embedder.prefetch("is my windscreen covered? (prefetch 1)")  # already under way
    vector = embedder.encode(["is my windscreen covered? (prefetch 1)"])[0]
    assert runs == ["is my windscreen covered? (prefetch 1)"]
    np.testing.assert_array_equal(vector, fresh)
    embedder.prefetch("is my windscreen covered? (prefetch 1)")  # in the memo: nothing to do
    assert runs == ["is my windscreen covered? (prefetch 1)"]


def test_a_failed_prefetch_is_encoded_again_by_the_turn(embedder, monkeypatch):
    real = embedder._encode_one
    calls: list[str] = []

    def fails_once(text: str):
        calls.append(text)
        if len(calls) == 1:
            raise RuntimeError("the model run failed")
        return real(text)

    monkeypatch.setattr(embedder, "_encode_one", fails_once)
    embedder.prefetch("hail dented the bonnet (prefetch 2)")
    vector = embedder.encode(["hail dented the bonnet (prefetch 2)"])[0]
    assert calls == ["hail dented the bonnet (prefetch 2)"] * 2
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert not embedder._pending


def test_a_forked_worker_makes_its_own_prefetch_thread(embedder, monkeypatch):
    """A process forked after the parent started its thread has no such thread running."""
    embedder.prefetch("warm the executor up (prefetch 3)")
    embedder.encode(["warm the executor up (prefetch 3)"])
    parent = embedder._executor
    monkeypatch.setattr(embedder, "_executor_pid", -1)  # as if this were the child
    embedder.prefetch("a fender bender in the carpark (prefetch 4)")
    embedder.encode(["a fender bender in the carpark (prefetch 4)"])
    assert embedder._executor is not parent
