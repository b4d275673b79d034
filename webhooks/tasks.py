"""Celery tasks of the webhooks app: interfaces that call one service."""

import logging

from celery import shared_task

from webhooks.services import webhook_event_attempt

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="webhooks.event_deliver", max_retries=None, acks_late=True)
def webhook_event_deliver_task(self, event_id: int) -> str:
    """Deliver one event; on failure, retry with exponential backoff.

    The service counts attempts and decides when to stop
    (``WEBHOOK_MAX_ATTEMPTS``), so the task's own retry limit is off.
    """
    outcome = webhook_event_attempt(event_id=event_id)
    # Embedded default (no broker, eager tasks): the attempts follow each other
    # at once in this process, since nothing could run them later.
    while outcome.kind == "retry" and self.request.is_eager:
        outcome = webhook_event_attempt(event_id=event_id)
    logger.info("webhook event %s: %s", event_id, outcome.kind)
    if outcome.kind == "retry":
        raise self.retry(countdown=outcome.retry_in)
    return outcome.kind
