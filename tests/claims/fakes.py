"""Test doubles that speak the same protocols as the real ones: a chooser and
writer, and a claims system over HTTP on loopback."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from claims.agent.compose import model_draft


class FakeClaimsSystem:
    """A claims system on loopback: ``answers`` maps a path to (status, JSON body).

    Any other path gets ``default``; every answer waits ``delay`` seconds.
    ``requests`` counts what it was asked. Call ``stop()`` when done.
    """

    def __init__(
        self,
        answers: dict[str, tuple[int, Any]] | None = None,
        *,
        default: tuple[int, Any] = (404, {}),
        delay: float = 0.0,
    ):
        self.requests = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.requests += 1
                time.sleep(delay)
                status, payload = (answers or {}).get(self.path, default)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ScriptedModel:
    """Names whatever ids (and writes whatever draft) the test sets on the class.

    Like an LLM adapter it is both a ``ClauseChooser`` and a ``DraftWriter``;
    with no draft set, the grounded composer's draft stands.
    """

    name = "scripted-test-model"
    ids: list[str] = []
    draft: str | None = None

    def choose(self, *, message, directory, context) -> list[str]:
        return list(type(self).ids)

    def write(self, *, inputs):
        return model_draft(inputs, type(self).draft, writer=self.name)


SCRIPTED = "tests.claims.fakes.ScriptedModel"
