"""Streamed turns (SSE), read over HTTP from a real gunicorn process with gthread workers.

The server runs the shipped configuration (``northwind/gunicorn_conf.py``) on
its own embedded-default copy of the demo data, on loopback.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import httpx
import pytest

from tests.claims.fakes import FakeClaimsSystem
from tests.conftest import REPO_ROOT, free_port

SERVICE_VARIABLES = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "CACHE_URL",
    "AWS_STORAGE_BUCKET_NAME",
    "AWS_S3_ENDPOINT_URL",
)
RENTAL = "Will my policy pay for a rental car while mine is repaired?"


def _env(var_dir, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env.update(NORTHWIND_VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1", **extra)
    return env


@pytest.fixture(scope="module")
def demo_var(tmp_path_factory):
    """A migrated embedded-default var directory with the demo data (made once)."""
    var = tmp_path_factory.mktemp("sse-template")
    env = _env(var)
    for command in (["migrate", "--noinput", "-v0"], ["load_demo"]):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=REPO_ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
    token = subprocess.run(
        [sys.executable, "manage.py", "drf_create_token", "demo-client"],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[2]
    return var, token


class Server:
    def __init__(self, var, token, **env):
        self.var = var
        self.token = token
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(var / "gunicorn.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "northwind.wsgi:application",
                "--config",
                "python:northwind.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
            ],
            cwd=REPO_ROOT,
            env=_env(var, **env),
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {(var / 'gunicorn.log').read_text()}")
            try:
                httpx.get(f"{self.url}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        self.headers = {"Authorization": f"Token {token}"}

    def conversation(self, policy_number: str) -> int:
        response = httpx.post(
            f"{self.url}/api/v1/conversations/",
            json={"policy_number": policy_number},
            headers=self.headers,
            timeout=30,
        )
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def stream(self, conversation: int, message: str):
        return httpx.stream(
            "POST",
            f"{self.url}/api/v1/conversations/{conversation}/messages/",
            json={"message": message},
            headers={**self.headers, "Accept": "text/event-stream"},
            timeout=30,
        )

    def turns_with_trace(self, trace_id: str) -> int:
        with sqlite3.connect(self.var / "northwind.sqlite3") as db:
            return db.execute(
                "select count(*) from claims_turn where trace_id = ?", (trace_id,)
            ).fetchone()[0]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def server_factory(demo_var, tmp_path):
    template, token = demo_var
    started = []

    def start(**env):
        var = tmp_path / f"var{len(started)}"
        shutil.copytree(template, var)
        server = Server(var, token, **env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def read_events(lines, *, stop_after=None):
    """Parse an SSE stream into (event, data) pairs; heartbeats as ("heartbeat", None)."""
    events, name = [], None
    for line in lines:
        if line.startswith(": heartbeat"):
            events.append(("heartbeat", None))
        elif line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
            if stop_after and stop_after(events[-1]):
                break
    return events


def test_a_streamed_turn_sends_its_events_in_order_and_the_same_body(server_factory):
    server = server_factory()
    conversation = server.conversation("NW-MTR-204518")
    with server.stream(conversation, RENTAL) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = read_events(response.iter_lines())
    names = [name for name, _ in events if name != "heartbeat"]
    assert names[0] == "trace" and names[-1] == "done"
    statuses = [data["message"] for name, data in events if name == "status"]
    assert statuses[:2] == [
        "Looking up your schedule",
        "Finding the wording that applies to your policy",
    ]
    assert "Reading your policy wording" in statuses
    # the clause fetch is a tool call, its clauses are cited as they come back
    assert ("tool_call", "clause.fetch") in [(n, d.get("name")) for n, d in events if d]
    citations = [data["clause_id"] for name, data in events if name == "citation"]
    assert citations[0] == "MTR-BEN-03"
    assert names.index("citation") < names.index("delta") < names.index("done")
    done = events[-1][1]
    deltas = "".join(data["text"] for name, data in events if name == "delta")
    assert deltas == done["reply"]  # only the guard-passed reply, nothing else
    assert done["trace_id"] == events[0][1]["trace_id"]
    assert set(done) >= {"turn_id", "reply", "guidance_status", "citations", "tool_calls"}
    assert done["guidance_status"] == "answered"
    assert done["citations"][0]["clause_id"] == "MTR-BEN-03"
    assert server.turns_with_trace(done["trace_id"]) == 1
    # the same question without the header gets the same body as JSON
    plain = httpx.post(
        f"{server.url}/api/v1/conversations/{conversation}/messages/",
        json={"message": RENTAL},
        headers=server.headers,
        timeout=30,
    )
    assert plain.status_code == 201
    assert plain.json()["reply"] == done["reply"]
    assert set(plain.json()) == set(done)


def test_a_streamed_claim_status_shows_its_tool_call(server_factory):
    server = server_factory()
    with server.stream(server.conversation("NW-MTR-204518"), "where is my claim up to?") as r:
        events = read_events(r.iter_lines())
    tool_events = [(n, d) for n, d in events if n in ("tool_call", "tool_result")]
    assert tool_events[0] == (
        "tool_call",
        {"name": "claim.status", "risk": "L1", "status": "running"},
    )
    assert tool_events[1][1]["status"] == "ok" and tool_events[1][1]["risk"] == "L1"
    assert "Looking up your claim" in [d["message"] for n, d in events if n == "status"]
    assert "CL-260417" in events[-1][1]["reply"]


@pytest.fixture
def slow_claims():
    fake = FakeClaimsSystem(default=(200, {"claims": []}), delay=1.5)
    yield fake
    fake.stop()


def test_heartbeats_keep_a_slow_turn_open_and_a_disconnect_stops_it(server_factory, slow_claims):
    server = server_factory(
        SSE_HEARTBEAT_SECONDS="0.2",
        CLAIMS_SOURCE="claims.claims_system.HttpClaimsSource",
        CLAIMS_SOURCE_URL=slow_claims.url,
    )
    conversation = server.conversation("NW-MTR-204518")
    with server.stream(conversation, "where is my claim up to?") as response:
        events = read_events(response.iter_lines())
    names = [n for n, _ in events]
    assert "heartbeat" in names[names.index("tool_call") : names.index("tool_result")]
    assert names[-1] == "done"

    # The client goes away while the claims system is being asked: the turn
    # stops there; nothing after it runs and nothing is recorded.
    with server.stream(conversation, "where is my claim up to?") as response:
        events = read_events(
            response.iter_lines(), stop_after=lambda event: event[0] == "tool_call"
        )
    trace_id = events[0][1]["trace_id"]
    time.sleep(2.5)
    assert slow_claims.requests == 2
    assert server.turns_with_trace(trace_id) == 0
    assert "cancelled, the client went away" in (server.var / "gunicorn.log").read_text()


@pytest.mark.django_db
def test_a_stream_request_is_authenticated_validated_and_throttled_like_json(api_client, settings):
    from rest_framework.test import APIClient

    from tests.claims.test_turn_api import start

    conversation = start(api_client, "NW-MTR-204518")
    url = f"/api/v1/conversations/{conversation}/messages/"
    anonymous = APIClient().post(
        url, {"message": RENTAL}, format="json", HTTP_ACCEPT="text/event-stream"
    )
    assert anonymous.status_code == 401
    assert anonymous.content.startswith(b"event: error\ndata: ")
    bad = api_client.post(url, {"message": 7}, format="json", HTTP_ACCEPT="text/event-stream")
    assert bad.status_code == 400
    assert b"Send the message as a JSON string." in bad.content
    other = api_client.post(
        "/api/v1/conversations/999999/messages/",
        {"message": RENTAL},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert other.status_code == 404

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "1/minute"},
    }
    from django.core.cache import cache
    from rest_framework.settings import api_settings
    from rest_framework.throttling import UserRateThrottle

    cache.clear()
    original = UserRateThrottle.THROTTLE_RATES  # read at import time by DRF
    UserRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        first = api_client.post(url, {"message": "hi"}, format="json")
        throttled = api_client.post(
            url, {"message": "hi"}, format="json", HTTP_ACCEPT="text/event-stream"
        )
    finally:
        UserRateThrottle.THROTTLE_RATES = original
        cache.clear()
    assert first.status_code == 201
    assert throttled.status_code == 429
    assert throttled.content.startswith(b"event: error")


def test_a_disconnect_stops_the_models_streamed_draft(server_factory):
    from claims.evaluation.fake_llm import FakeChatServer

    fake = FakeChatServer()
    fake.clause_ids = ["MTR-BEN-03"]
    fake.draft = "MTR-BEN-03 provides a hire car. " * 40  # 240 chunks
    fake.chunk_delay = 0.1
    try:
        server = server_factory(
            SSE_HEARTBEAT_SECONDS="0.2",
            CLAIM_AGENT_MODEL="claims.agent.llm.OpenAICompatibleModel",
            CLAIM_AGENT_LLM_BASE_URL=fake.url,
            CLAIM_AGENT_LLM_TIMEOUT="15",
        )
        conversation = server.conversation("NW-MTR-204518")
        with server.stream(conversation, RENTAL) as response:
            events = read_events(
                response.iter_lines(),
                stop_after=lambda e: e[0] == "status" and e[1]["step"] == "compose",
            )
        trace_id = events[0][1]["trace_id"]
        # the server stops reading the model's stream: the model sees its client go
        assert fake.disconnected.wait(10) is True
        time.sleep(1)
        assert server.turns_with_trace(trace_id) == 0
        assert [fake.kind(r["body"]) for r in fake.requests] == ["plan", "select", "write"]
    finally:
        fake.stop()
