"""A turn as Server-Sent Events (``Accept: text/event-stream`` on the messages endpoint).

Events, in order: ``trace``; ``status`` as each step starts (in plain
words); ``tool_call``/``tool_result`` around each tool call; ``citation``
for each clause as the store returns it; ``delta`` with the reply text, only
after the guard has passed it (never raw model tokens); ``done`` with the
same JSON body as the non-streamed response; or ``error``. A comment line
(``: heartbeat``) is sent whenever nothing else was for
``SSE_HEARTBEAT_SECONDS``, so proxies keep the connection open.

The turn runs in a worker thread and reports through ``turn_run``'s
``on_step`` hook. When the client goes away the server closes this
generator: the turn is cancelled at its next step (and a streamed model
reply at its next chunk), so no further model work is done and nothing is
recorded.
"""

from __future__ import annotations

import contextvars
import json
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections
from rest_framework.renderers import BaseRenderer

from claims.agent.types import StepEvent

logger = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"

# The cancel flag of the turn running in this thread (read by the model client).
turn_cancel: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "turn_cancel", default=None
)


class TurnCancelled(Exception):
    """The client went away: the turn stops at its next step."""


def cancelled() -> bool:
    flag = turn_cancel.get()
    return flag is not None and flag.is_set()


def sse(event: str, data: Any) -> str:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {event}\ndata: {body}\n\n"


class EventStreamRenderer(BaseRenderer):
    """Lets DRF accept ``Accept: text/event-stream``; renders an error before the stream."""

    media_type = EVENT_STREAM
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        code = getattr(response, "status_code", 500)
        return sse("error", {"status": code, "detail": data}).encode()


def wants_stream(request) -> bool:
    accepted = request.META.get("HTTP_ACCEPT", "")
    return any(part.split(";")[0].strip() == EVENT_STREAM for part in accepted.split(","))


def _step_events(event: StepEvent) -> list[str]:
    from claims.agent.tools import tool_get

    if event.step == "tool":
        if event.phase == "start":
            name = event.payload.get("name", "")
            tool = tool_get(name)
            return [
                sse("status", {"step": "tool", "message": event.label}),
                sse(
                    "tool_call",
                    {"name": name, "risk": tool.risk.value if tool else None, "status": "running"},
                ),
            ]
        return [sse("tool_result", event.payload)]
    if event.phase == "start":
        return [sse("status", {"step": event.step, "message": event.label})]
    if event.step == "resolve":
        out = []
        call = event.payload.get("tool_call")
        if call:
            out.append(sse("tool_call", {**call, "status": "running"}))
            out.append(sse("tool_result", call))
        for citation in event.payload.get("citations", []):
            out.append(sse("citation", citation))
        return out
    return []


def turn_stream(run_turn, *, trace_id: str, conversation_id: int, body_of) -> Iterator[str]:
    """Run ``run_turn(on_step)`` in a thread and yield its events as SSE text.

    ``body_of(result)`` is the JSON body of the non-streamed response.
    """
    events: queue.Queue = queue.Queue()
    cancel = threading.Event()
    heartbeat = float(getattr(settings, "SSE_HEARTBEAT_SECONDS", 10))

    def on_step(event: StepEvent) -> None:
        if cancel.is_set():
            raise TurnCancelled()
        events.put(("step", event))

    def work() -> None:
        turn_cancel.set(cancel)
        close_old_connections()
        try:
            result = run_turn(on_step)
            events.put(("done", body_of(result)))
        except TurnCancelled:
            logger.info("claim agent: turn %s cancelled, the client went away", trace_id)
            events.put(("cancelled", None))
        except Exception:
            logger.exception("claim agent: streamed turn %s failed", trace_id)
            events.put(("error", None))
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name=f"turn-{trace_id[:8]}", daemon=True)
    try:
        yield sse("trace", {"trace_id": trace_id, "conversation_id": conversation_id})
        thread.start()
        while True:
            try:
                kind, item = events.get(timeout=heartbeat)
            except queue.Empty:
                yield ": heartbeat\n\n"
                continue
            if kind == "step":
                yield from _step_events(item)
            elif kind == "done":
                for line in item["reply"].splitlines(keepends=True):
                    yield sse("delta", {"text": line})
                yield sse("done", item)
                return
            else:
                yield sse(
                    "error",
                    {
                        "status": 500,
                        "detail": "The turn could not be completed. "
                        f"Quote trace id {trace_id} to support.",
                    },
                )
                return
    finally:
        cancel.set()  # the client went away, or the stream ended: stop what is left
