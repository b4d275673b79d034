"""Writes of the webhooks app: register endpoints, emit events, attempt deliveries."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from northwind.errors import ServiceError
from webhooks.models import EventType, WebhookAttempt, WebhookEndpoint, WebhookEvent

SIGNATURE_HEADER = "X-Northwind-Signature"
EVENT_HEADER = "X-Northwind-Event"
IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_ENDPOINTS_PER_CLIENT = 5


class WebhookError(ServiceError):
    """A registration that cannot be accepted, with a message for the client."""

    code = "webhook_refused"


def webhook_signature(*, secret: str, timestamp: int, body: bytes) -> str:
    """``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">``.

    The timestamp is inside the signed text, so a receiver that refuses old
    timestamps (five minutes is usual) also refuses a replayed delivery.
    """
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def webhook_signature_verify(
    *, secret: str, header: str, body: bytes, tolerance_seconds: int = 300, now: float | None = None
) -> bool:
    """What a receiver does: recompute the signature and compare in constant time."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((now if now is not None else time.time()) - timestamp) > tolerance_seconds:
        return False
    expected = webhook_signature(secret=secret, timestamp=timestamp, body=body)
    return hmac.compare_digest(expected, header)


def _url_check(url: str) -> str:
    url = (url or "").strip()
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise WebhookError(
            "Give a full URL, such as https://example.com/northwind-events."
        ) from None
    parts = urlsplit(url)
    if settings.DEBUG:
        return url  # a developer's machine may use http:// and a receiver on loopback
    if parts.scheme != "https":
        raise WebhookError("Webhook URLs must use https://.")
    host = (parts.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        raise WebhookError("Webhook URLs must name a public host, not this machine.")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return url
    if not address.is_global:
        raise WebhookError("Webhook URLs must name a public address, not a private one.")
    return url


def webhook_endpoint_register(
    *, client, url: str, events: list[str] | None = None
) -> WebhookEndpoint:
    """Register a URL for the client's events; the secret is returned once, here."""
    url = _url_check(url)
    events = list(dict.fromkeys(events or []))
    unknown = sorted(set(events) - set(EventType.values))
    if unknown:
        raise WebhookError(f"Unknown event types: {', '.join(unknown)}.")
    endpoints = WebhookEndpoint.objects.filter(client=client)
    if endpoints.filter(url=url).exists():
        raise WebhookError("That URL is already registered.")
    if endpoints.count() >= MAX_ENDPOINTS_PER_CLIENT:
        raise WebhookError(f"A client may register at most {MAX_ENDPOINTS_PER_CLIENT} webhooks.")
    endpoint = WebhookEndpoint(
        client=client, url=url, events=events, secret=f"whsec_{secrets.token_urlsafe(32)}"
    )
    endpoint._change_reason = f"Registered by {client}"
    endpoint.save()
    return endpoint


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


def webhook_events_emit(*, client_id: int, event_type: str, data: dict) -> list[WebhookEvent]:
    """Create one event per endpoint of the client that wants it; deliver after commit."""
    from webhooks.tasks import webhook_event_deliver_task

    created = []
    for endpoint in WebhookEndpoint.objects.filter(client_id=client_id, is_active=True):
        if not endpoint.wants(event_type):
            continue
        event = WebhookEvent(endpoint=endpoint, event_type=event_type, payload={})
        event.payload = {
            "id": str(event.idempotency_key),
            "type": event_type,
            "created_at": timezone.now().isoformat(),
            "data": data,
        }
        event.save()
        created.append(event)
        pk = event.pk
        transaction.on_commit(lambda pk=pk: webhook_event_deliver_task.delay(pk))
    return created


@dataclass(frozen=True)
class AttemptOutcome:
    kind: Literal["delivered", "retry", "failed", "not_pending"]
    retry_in: float | None = None


def _backoff(attempt_number: int) -> float:
    """Seconds before attempt ``attempt_number + 1``: base, 2 * base, 4 * base and so on"""
    base = float(settings.WEBHOOK_RETRY_BASE_SECONDS)
    return min(base * 2 ** (attempt_number - 1), float(settings.WEBHOOK_RETRY_MAX_SECONDS))


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=settings.WEBHOOK_TIMEOUT_SECONDS) as reply:
            return reply.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, f"{type(exc).__name__}: {reason}"[:500]


def webhook_event_attempt(*, event_id: int) -> AttemptOutcome:
    """POST the event once, record the attempt, and say whether to try again.

    No transaction is open during the POST: the event row is locked only to
    number and record the attempt, so a slow receiver holds no lock.
    """
    event = WebhookEvent.objects.select_related("endpoint").filter(pk=event_id).first()
    if event is None or event.status != WebhookEvent.Status.PENDING:
        return AttemptOutcome("not_pending")
    body = json.dumps(event.payload, separators=(",", ":"), sort_keys=True).encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Northwind-Webhooks/1",
        EVENT_HEADER: event.event_type,
        IDEMPOTENCY_HEADER: str(event.idempotency_key),
        SIGNATURE_HEADER: webhook_signature(
            secret=event.endpoint.secret, timestamp=timestamp, body=body
        ),
    }
    started = time.perf_counter()
    status_code, error = _post(event.endpoint.url, body, headers)
    duration_ms = round((time.perf_counter() - started) * 1000, 3)
    succeeded = status_code is not None and 200 <= status_code < 300

    with transaction.atomic():
        event = WebhookEvent.objects.select_for_update().get(pk=event_id)
        if event.status != WebhookEvent.Status.PENDING:
            return AttemptOutcome("not_pending")  # another worker delivered it meanwhile
        event.attempt_count += 1
        now = timezone.now()
        WebhookAttempt.objects.create(
            event=event,
            number=event.attempt_count,
            attempted_at=now,
            succeeded=succeeded,
            status_code=status_code,
            error="" if succeeded else (error or f"HTTP {status_code}"),
            duration_ms=duration_ms,
        )
        if succeeded:
            event.status = WebhookEvent.Status.DELIVERED
            event.delivered_at = now
            event.next_attempt_at = None
            outcome = AttemptOutcome("delivered")
        elif event.attempt_count >= settings.WEBHOOK_MAX_ATTEMPTS:
            event.status = WebhookEvent.Status.FAILED
            event.next_attempt_at = None
            outcome = AttemptOutcome("failed")
        else:
            wait = _backoff(event.attempt_count)
            event.next_attempt_at = now + timedelta(seconds=wait)
            outcome = AttemptOutcome("retry", retry_in=wait)
        event.save(update_fields=["attempt_count", "status", "delivered_at", "next_attempt_at"])
    return outcome


def webhook_event_redeliver(*, event_id: int) -> WebhookEvent:
    """Staff: one more attempt at a failed event, with the same idempotency key."""
    from webhooks.tasks import webhook_event_deliver_task

    with transaction.atomic():
        event = WebhookEvent.objects.select_for_update().get(pk=event_id)
        if event.status != WebhookEvent.Status.FAILED:
            raise WebhookError(f"Only failed events are sent again; this one is {event.status}.")
        event.status = WebhookEvent.Status.PENDING
        event.save(update_fields=["status"])
        transaction.on_commit(lambda: webhook_event_deliver_task.delay(event_id))
    return event
