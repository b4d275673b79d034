"""Webhooks: an API client's endpoints, the events sent to them, every attempt.

An event is created once per change a client may care about (a staff answer
to a pending question) and per endpoint, with an idempotency key the receiver
can use to drop a repeat. Each delivery attempt is its own row, so staff can
see in the admin what was sent, when, and what the receiver answered.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords


class EventType(models.TextChoices):
    PENDING_QUESTION_ANSWERED = "pending_question.answered", "A staff answer was given"
    PENDING_QUESTION_DISMISSED = "pending_question.dismissed", "A pending question was dismissed"


class WebhookEndpoint(models.Model):
    """A URL of one API client that receives signed events."""

    client = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.URLField(max_length=500)
    # Used to sign every payload (HMAC-SHA256); shown to the client once, at registration.
    secret = models.CharField(max_length=100)
    events = models.JSONField(default=list, help_text="Event types sent; empty for all.")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords(excluded_fields=["secret"])

    class Meta:
        ordering = ["client", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["client", "url"], name="webhook_endpoint_client_url"),
        ]

    def __str__(self) -> str:
        return f"{self.client} → {self.url}"

    def wants(self, event_type: str) -> bool:
        return self.is_active and (not self.events or event_type in self.events)


class WebhookEvent(models.Model):
    """One event for one endpoint, delivered (at least once) by a Celery task."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed (no attempts left)"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="events_sent"
    )
    event_type = models.CharField(max_length=40, choices=EventType.choices)
    idempotency_key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed"]),
                name="webhook_event_status_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="delivered") | Q(delivered_at__isnull=False),
                name="webhook_event_delivered_has_time",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.idempotency_key} ({self.status})"


class WebhookAttempt(models.Model):
    """One POST of an event to its endpoint, and what came back."""

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    attempted_at = models.DateTimeField()
    succeeded = models.BooleanField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.FloatField()

    class Meta:
        ordering = ["event", "number"]
        constraints = [
            models.UniqueConstraint(fields=["event", "number"], name="webhook_attempt_number"),
        ]

    def __str__(self) -> str:
        outcome = "ok" if self.succeeded else (self.error or f"HTTP {self.status_code}")
        return f"attempt {self.number}: {outcome}"
