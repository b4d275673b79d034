"""What a turn costs: database queries through the endpoint, warm-up, a frozen heap."""

import gc

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.agent import wording
from claims.agent.cards import served_index_forget
from claims.agent.selection.index import INDEXES
from tests.claims.test_turn_api import RENTAL, say, start

pytestmark = pytest.mark.django_db

# The token, facts (conversation, history, schedule), route (releases), cards
# (index stamp), record (savepoint, turn, tool call, conversation's names,
# release) and the schedule-read audit row: bench_turns counts the same.
TURN_QUERIES_MAX = 12


def test_a_routed_turn_runs_at_most_twelve_queries_through_the_endpoint(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    say(api_client, conversation, "Is my windscreen covered?")  # builds indexes, caches
    with CaptureQueriesContext(connection) as queries:
        body = say(api_client, conversation, RENTAL)
    assert body["citations"][0]["clause_id"] == "MTR-BEN-03"
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) <= TURN_QUERIES_MAX, "\n".join(s[:120] for s in sql)
    # The directory and the clause rows come from memory without re-reading
    # the version, and the names the conversation has learnt come with the
    # conversation.
    assert not any('FROM "knowledge_wordingversion"' in s for s in sql)
    assert not any('FROM "knowledge_clause"' in s for s in sql)
    assert sum('FROM "claims_conversation"' in s for s in sql) == 1


def test_a_conversations_first_turn_writes_the_conversation_once(api_client):
    """The first turn learns the policy, line and names: written with the change number."""
    warm = start(api_client, "NW-MTR-204518")
    say(api_client, warm, "Is my windscreen covered?")  # builds indexes, caches
    conversation = start(api_client, "NW-MTR-204518")
    with CaptureQueriesContext(connection) as queries:
        body = say(api_client, conversation, RENTAL)
    assert body["citations"][0]["clause_id"] == "MTR-BEN-03"
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) <= TURN_QUERIES_MAX, "\n".join(s[:120] for s in sql)
    updates = [s for s in sql if s.startswith('UPDATE "claims_conversation"')]
    assert len(updates) == 1, updates
    assert '"name_digests"' in updates[0] and "change_seq" in updates[0]


def test_a_turn_runs_the_embedding_model_once_even_when_the_glossary_adds_words(
    api_client, model_runs
):
    """The cards step and the chooser embed the same text: one model run a turn.

    "deductible" and "totaled" make the glossary add the wording's words; the
    message with them is embedded once, not the message and then its expansion.
    """
    from claims.agent.text import expand
    from knowledge.embedding import default_embedder

    conversation = start(api_client, "NW-MTR-204518")
    say(api_client, conversation, "Is my windscreen covered?")  # builds indexes, caches
    runs = model_runs(default_embedder())
    message = "what is my deductible if my car gets totaled in a hailstorm next winter?"
    assert expand(message) != message
    body = say(api_client, conversation, message)
    assert body["clauses"]["returned"], body
    assert runs == [expand(message)]


def test_a_turn_starts_its_model_run_before_the_facts_and_collects_it_once(api_client, monkeypatch):
    """The query vector is started at the top of the turn and used by cards and chooser."""
    from claims.agent.text import expand
    from knowledge.embedding import default_embedder

    conversation = start(api_client, "NW-MTR-204518")
    say(api_client, conversation, "Is my windscreen covered?")  # builds indexes, caches
    embedder = default_embedder()
    events: list[tuple[str, str]] = []
    real_prefetch, real_encode = embedder.prefetch, embedder._encode_one

    def prefetch(text: str) -> None:
        events.append(("prefetch", text))
        real_prefetch(text)

    def encode_one(text: str):
        events.append(("run", text))
        return real_encode(text)

    monkeypatch.setattr(embedder, "prefetch", prefetch)
    monkeypatch.setattr(embedder, "_encode_one", encode_one)
    message = "will the policy pay for a rental while my car is at the panel beater?"
    body = say(api_client, conversation, message)
    assert body["clauses"]["returned"], body
    assert events == [("prefetch", expand(message)), ("run", expand(message))]

    events.clear()
    say(api_client, conversation, "ok thanks")  # nothing to look up: no model run at all
    assert events == []


def test_warm_up_loads_what_the_first_turn_needs_and_freezes_the_heap(api_client):
    from claims.agent.warmup import agent_warm_up

    INDEXES.clear()
    served_index_forget()
    try:
        timings = agent_warm_up()
        assert gc.get_freeze_count() > 10_000
        assert set(timings) == {"embedder", "chooser", "cards", "spelling", "gc_freeze"}
        built = INDEXES.builds
        spellers = dict(wording._SPELLERS)
        conversation = start(api_client, "NW-HOM-310042")
        say(api_client, conversation, "Is storm damage to my roof covered?")
        conversation = start(api_client, "NW-MTR-204518")
        say(api_client, conversation, RENTAL)
        assert INDEXES.builds == built, "a turn after the warm-up built a selector index"
        assert spellers == wording._SPELLERS, "a turn after the warm-up built a speller"
    finally:
        gc.unfreeze()


def test_gunicorn_workers_warm_up_before_their_first_request(monkeypatch):
    from northwind import gunicorn_conf

    called = []
    monkeypatch.setattr("claims.agent.warmup.agent_warm_up", lambda: called.append(True))
    monkeypatch.setattr("django.db.connections.close_all", lambda: None)  # the test's own
    gunicorn_conf.post_worker_init(worker=None)
    assert called == [True]
    monkeypatch.setenv("NORTHWIND_WARM_UP", "0")
    gunicorn_conf.post_worker_init(worker=None)
    assert called == [True]


def test_the_embedder_threads_sleep_between_runs():
    """Spinning intra-op threads doubled a query's CPU time and slowed the turn on a busy
    machine (docs/evaluation.md)."""
    from knowledge.embedding import OnnxMiniLMEmbedder

    session = OnnxMiniLMEmbedder(threads=2)._session
    entry = session.get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning"
    )
    assert entry == "0"


def test_bench_turns_states_the_time_target_and_the_query_budget_apart(demo):
    """The p95 target and our own query budget each get their own verdict."""
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("bench_turns", "--turns", "3", stdout=out)
    text = out.getvalue()
    assert "server time per turn ms:" in text
    assert "[p95 within the 30 ms target]" in text or "[p95 over the 30 ms target]" in text
    assert "our budget of 12]" in text
