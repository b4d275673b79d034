"""An OpenAI-compatible chat-completions client on httpx: timeouts, retries, streaming.

- Timeouts: connect within ``min(3 s, timeout)``, each read within ``timeout``.
- Retries: a refused connection, a time-out, 429 and 5xx are retried up to
  ``retries`` times with exponential backoff (0.25 s, 0.5 s, ... capped at
  2 s, or the server's ``Retry-After`` if shorter than 2 s); any other 4xx
  is final. A streamed reply is retried only before its first chunk.
- Streaming: ``stream`` yields the text of each ``delta`` as the server sends
  it (``data: {...}`` lines up to ``data: [DONE]``), and stops, closing the
  connection, as soon as the turn is cancelled (the client of a streamed
  turn went away).

Every failure raises ``ClauseModelError`` with the reason; the turn then
falls back (the offline selector, the grounded composer) and records why.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from claims.agent.types import ClauseModelError

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
BACKOFF_BASE = 0.25
BACKOFF_CAP = 2.0


class ChatClient:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float,
        retries: int = 2,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.retries = max(0, retries)
        self.cancelled = cancelled
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(3.0, timeout)),
            follow_redirects=False,
            trust_env=False,  # no proxy from the environment: the URL is the only peer
        )

    def _body(self, payload: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        return {"model": self.model, "temperature": 0, **payload, "stream": stream}

    def _wait(self, attempt: int, response: httpx.Response | None) -> None:
        delay = min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt)
        if response is not None:
            with contextlib.suppress(ValueError):
                delay = min(delay, float(response.headers.get("Retry-After", delay)))
        time.sleep(delay)

    def complete(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One chat completion, retried on transient failures."""
        last = ""
        for attempt in range(self.retries + 1):
            response = None
            try:
                response = self.http.post(self.url, json=self._body(payload, stream=False))
            except httpx.TimeoutException as exc:
                last = f"no answer in time ({type(exc).__name__})"
            except httpx.HTTPError as exc:
                last = f"the model server did not answer ({exc})"
            else:
                if response.status_code == 200:
                    try:
                        body = response.json()
                    except ValueError as exc:
                        raise ClauseModelError(f"the model server sent no JSON ({exc})") from exc
                    if not isinstance(body, dict):
                        raise ClauseModelError("the model server's answer is not a JSON object")
                    return body
                last = f"the model server answered {response.status_code}"
                if response.status_code not in RETRY_STATUSES:
                    break
            if attempt < self.retries:
                logger.warning("model call failed (%s); retry %d", last, attempt + 1)
                self._wait(attempt, response)
        raise ClauseModelError(last)

    def stream(self, payload: dict[str, Any]) -> Iterator[str]:
        """The reply's text as it streams; retried only before the first chunk."""
        last = ""
        for attempt in range(self.retries + 1):
            started = False
            response = None
            try:
                with self.http.stream(
                    "POST", self.url, json=self._body(payload, stream=True)
                ) as response:
                    if response.status_code != 200:
                        last = f"the model server answered {response.status_code}"
                        if response.status_code not in RETRY_STATUSES:
                            break
                    else:
                        for line in response.iter_lines():
                            if self.cancelled():
                                from claims.streaming import TurnCancelled

                                raise TurnCancelled()
                            text = _delta_text(line)
                            if text is None:
                                return
                            if text:
                                started = True
                                yield text
                        return
            except httpx.TimeoutException as exc:
                last = f"no answer in time ({type(exc).__name__})"
            except httpx.HTTPError as exc:
                last = f"the model server did not answer ({exc})"
            except ValueError as exc:
                raise ClauseModelError(f"the model server sent a malformed chunk ({exc})") from exc
            if started:
                raise ClauseModelError(f"the model's stream broke off ({last})")
            if attempt < self.retries:
                self._wait(attempt, response)
        raise ClauseModelError(last)

    def close(self) -> None:
        self.http.close()


def _delta_text(line: str) -> str | None:
    """The text of one ``data:`` line; None at ``[DONE]``; "" for anything else."""
    if not line.startswith("data:"):
        return ""
    data = line[len("data:") :].strip()
    if data == "[DONE]":
        return None
    chunk = json.loads(data)
    choices = chunk.get("choices") or [{}]
    content = (choices[0].get("delta") or {}).get("content")
    return content if isinstance(content, str) else ""
