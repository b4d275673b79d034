"""The OpenAI-compatible model, against a fake server that speaks the real protocol.

Nothing here may leave the machine: a guard fails any connection to an address
outside loopback.
"""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from claims.agent.guard import text_violations
from claims.models import Turn
from tests.claims.test_turn_api import RENTAL, cited, say, start

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Fail any network call that is not to this machine."""
    real_connect = socket.socket.connect

    def connect(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"unplanned network call to {address!r}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


class FakeChatServer:
    """Answers /v1/chat/completions like an OpenAI-compatible server."""

    def __init__(self):
        self.requests: list[dict] = []
        self.clause_ids: list[str] = []
        self.draft = ""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if body.get("tools"):
                    message = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "select_clauses",
                                    "arguments": json.dumps({"clause_ids": fake.clause_ids}),
                                },
                            }
                        ],
                    }
                else:
                    message = {"role": "assistant", "content": fake.draft}
                payload = json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def llm(settings):
    server = FakeChatServer()
    settings.CLAIM_AGENT_MODEL = "claims.agent.llm.OpenAICompatibleModel"
    settings.CLAIM_AGENT_LLM_BASE_URL = server.url
    settings.CLAIM_AGENT_LLM_API_KEY = "test-key"
    settings.CLAIM_AGENT_LLM_MODEL = "fake-model"
    yield server
    server.stop()


def test_the_model_sees_the_directory_and_a_schema_of_at_most_three_ids(api_client, llm):
    llm.clause_ids = ["MTR-BEN-03"]
    llm.draft = "MTR-BEN-03 provides up to NZD 60 a day for up to 21 days."
    body = say(api_client, start(api_client, "NW-MTR-204518"), RENTAL)
    select = llm.requests[0]
    assert select["path"] == "/v1/chat/completions"
    assert select["auth"] == "Bearer test-key"
    schema = select["body"]["tools"][0]["function"]["parameters"]["properties"]["clause_ids"]
    assert schema["maxItems"] == 3
    assert "MTR-BEN-03" in schema["items"]["enum"]
    assert "MTR-CLM-04" not in schema["items"]["enum"]  # internal clauses are never offered
    compose = llm.requests[1]["body"]["messages"][0]["content"]
    assert "[MTR-BEN-03]" in compose and "NZD 60 a day" in compose
    assert body["reply"] == "MTR-BEN-03 provides up to NZD 60 a day for up to 21 days."
    assert cited(body) == ["MTR-BEN-03"]
    assert Turn.objects.get(pk=body["turn_id"]).model_name == "openai-compatible:fake-model"


def test_a_model_that_decides_promises_and_invents_is_held_to_the_guard(api_client, llm):
    llm.clause_ids = ["MTR-BEN-03"]
    llm.draft = (
        "Good news: your claim is approved and we will pay for the rental.\n"
        "MTR-BEN-03 gives up to NZD 60 a day.\n"
        "I have escalated this to a claims handler.\n"
        "Our team will call you within 24 hours.\n"
        "MTR-BEN-42 also covers your fuel."
    )
    body = say(api_client, start(api_client, "NW-MTR-204518"), RENTAL)
    assert body["reply"] == "MTR-BEN-03 gives up to NZD 60 a day."
    assert cited(body) == ["MTR-BEN-03"]
    assert text_violations(body["reply"]) == {
        "decision": 0,
        "unbacked_action": 0,
        "time_promise": 0,
    }
    rules = {f["rule"] for f in Turn.objects.get(pk=body["turn_id"]).guard_findings}
    assert {"decision", "unbacked_action", "time_promise", "citation"} <= rules


def test_more_than_three_ids_from_the_model_are_refused_by_the_schema(api_client, llm):
    llm.clause_ids = ["MTR-BEN-03", "MTR-COV-01", "MTR-COV-02", "MTR-XS-01"]
    body = say(api_client, start(api_client, "NW-MTR-204518"), RENTAL)
    assert body["guidance_status"] == "no_clause_selected"
    assert body["clauses"]["requested"] == []
    assert len(llm.requests) == 1  # nothing fetched, nothing drafted by the model
    assert "at most 3" in Turn.objects.get(pk=body["turn_id"]).selection_rejected


def test_an_id_the_directory_does_not_have_is_not_found_not_replaced(api_client, llm):
    llm.clause_ids = ["MTR-BEN-99"]
    body = say(api_client, start(api_client, "NW-MTR-204518"), RENTAL)
    assert body["clauses"] == {"requested": [], "returned": [], "not_found": ["MTR-BEN-99"]}
    assert body["citations"] == []
    assert body["pending_question"]["reason"] == "no_clause"


def test_the_model_server_down_is_a_stated_limitation_not_a_500(api_client, llm):
    llm.stop()
    body = say(api_client, start(api_client, "NW-MTR-204518"), RENTAL)
    assert body["guidance_status"] == "no_clause_selected"
    assert body["citations"] == []
    assert body["pending_question"]["reason"] == "no_clause"
    assert any("model failed" in limitation for limitation in body["limitations"])


def test_nothing_personal_is_sent_to_the_model(api_client, llm):
    llm.clause_ids = ["MTR-BEN-03"]
    llm.draft = "MTR-BEN-03 provides up to NZD 60 a day for up to 21 days."
    message = (
        "Kia ora, Hemi Parata here, 021 555 0142, licence cd234567. "
        "Will my policy pay for a rental car while mine is repaired?"
    )
    say(api_client, start(api_client, "NW-MTR-204518"), message)
    sent = json.dumps([request["body"] for request in llm.requests], ensure_ascii=False)
    for token in ("Hemi", "Parata", "021 555 0142", "cd234567", "Aroha", "DEM518"):
        assert token not in sent
    assert "rental car" in sent
