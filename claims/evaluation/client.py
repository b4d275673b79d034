"""The claim endpoint as a client sees it: in-process, or over HTTP.

In-process requests go through Django's URL resolver, middleware, DRF
authentication and the same view as any client (``rest_framework.test.
APIClient``); over HTTP they go to a running server (``--base-url``).
Either way the harness then reads the turn's run record by ``turn_id``.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from django.contrib.auth import get_user_model

DEMO_CLIENT = "demo-client"
# Measurement traffic has an API client of its own, so that its conversations,
# run records and queue entries never mix with customers' and can be removed.
MEASUREMENT_CLIENT = "measurement-client"


def measurement_client_ensure() -> str:
    """The measurement API client's username, creating the user if needed."""
    user, created = get_user_model().objects.get_or_create(
        username=MEASUREMENT_CLIENT, defaults={"is_staff": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    from claims.client_scope import api_client_ensure
    from claims.models import ClientScope

    # It plays a contact-centre tool: it names any demo policy directly.
    api_client_ensure(
        user=user, scope=ClientScope.INTERNAL, description="Measurement (evaluate, bench_turns)"
    )
    return user.username


def measurement_records_delete() -> int:
    """Remove what measurement left: its conversations, turns and queue entries."""
    from claims.models import Conversation

    deleted, _ = Conversation.objects.filter(client__username=MEASUREMENT_CLIENT).delete()
    return deleted


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict
    server_ms: float


class EndpointClient:
    """POSTs conversations and messages with the demo client's token."""

    def __init__(self, *, base_url: str | None = None, username: str = DEMO_CLIENT) -> None:
        from rest_framework.authtoken.models import Token

        self.user = get_user_model().objects.get(username=username)
        self.token = Token.objects.get_or_create(user=self.user)[0].key
        self.base_url = base_url.rstrip("/") if base_url else None
        if self.base_url is None:
            from rest_framework.test import APIClient

            # A server error is a figure (must be zero), not a crash of the harness.
            self._api = APIClient(raise_request_exception=False)
            self._api.credentials(HTTP_AUTHORIZATION=f"Token {self.token}")

    def conversation_start(self, policy_number: str | None) -> int:
        body: dict = {}
        if policy_number:
            body["policy_number"] = policy_number
        reply = self._post("/api/v1/conversations/", body)
        if reply.status != 201:
            raise RuntimeError(f"conversation create: HTTP {reply.status} {reply.body}")
        return int(reply.body["id"])

    def message_send(
        self, conversation_id: int, message: str, *, raise_error: bool = True
    ) -> Reply:
        """POST one message; a non-201 answer raises unless ``raise_error`` is False."""
        reply = self._post(
            f"/api/v1/conversations/{conversation_id}/messages/", {"message": message}
        )
        if raise_error and reply.status != 201:
            raise RuntimeError(f"message: HTTP {reply.status} {reply.body}")
        return reply

    def _throttle_reset(self) -> None:
        # A measurement run is one client sending hundreds of messages; the
        # per-client rate limit protects the service, not the harness.
        from django.core.cache import cache
        from rest_framework.throttling import UserRateThrottle

        throttle = UserRateThrottle()
        cache.delete(throttle.cache_format % {"scope": throttle.scope, "ident": self.user.pk})

    def _post(self, path: str, body: dict) -> Reply:
        if self.base_url is None:
            self._throttle_reset()
            started = time.perf_counter()
            response = self._api.post(path, body, format="json")
            elapsed = (time.perf_counter() - started) * 1000
            try:
                data = response.json()
            except ValueError:
                data = {}
            return Reply(response.status_code, data, elapsed)
        return self._http_post(path, body)

    def _http_post(self, path: str, body: dict, attempts: int = 5) -> Reply:
        request = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        for _ in range(attempts):
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    data = json.loads(response.read() or b"{}")
                    status = response.status
            except urllib.error.HTTPError as exc:
                if exc.code == 429:
                    time.sleep(float(exc.headers.get("Retry-After") or 1))
                    continue
                data, status = json.loads(exc.read() or b"{}"), exc.code
            return Reply(status, data, (time.perf_counter() - started) * 1000)
        raise RuntimeError(f"{path}: still throttled (429) after {attempts} attempts")
