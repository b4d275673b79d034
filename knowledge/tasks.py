"""Celery tasks of the knowledge app: interfaces that call one service.

Ingestion is acknowledged late: the broker keeps the message until the task
returns, and gives it to another worker if this one dies mid-task
(``reject_on_worker_lost``; on Redis after the visibility timeout, see
``CELERY_BROKER_TRANSPORT_OPTIONS``). The service is idempotent and numbers
its attempts, so running a message twice is safe.
"""

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from knowledge.services.ingestion import wording_version_ingest, wording_versions_sweep

logger = logging.getLogger(__name__)


@shared_task(
    name="knowledge.wording_version_ingest",
    acks_late=True,
    reject_on_worker_lost=True,
    # The outcome is recorded on the version; storing results would also
    # make every dispatch subscribe to the result backend (the broker's
    # Redis), which fails the upload when that Redis is down.
    ignore_result=True,
    # A lost database connection is the one error the service lets through:
    # retry it a few times; what is still ``ingesting`` after that is the
    # sweeper's.
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=3,
)
def wording_version_ingest_task(version_id: int) -> dict:
    """Ingest one wording version; the service records the outcome on the version."""
    result = wording_version_ingest(version_id=version_id)
    logger.info(
        "wording version %s: %s (%s clauses, %s errors)",
        version_id,
        result.outcome,
        result.clause_count,
        len(result.errors),
    )
    return {
        "version_id": result.version_id,
        "outcome": result.outcome,
        "clause_count": result.clause_count,
        "errors": list(result.errors),
    }


@shared_task(name="knowledge.wording_versions_sweep", acks_late=True, ignore_result=True)
def wording_versions_sweep_task() -> dict:
    """Dispatch again, or fail visibly, versions stuck in ``uploaded`` or ``ingesting``."""
    result = wording_versions_sweep()
    return {
        "dispatched": list(result.dispatched),
        "failed": list(result.failed),
        "undispatched": list(result.undispatched),
    }


@shared_task(name="knowledge.release_evaluate")
def release_evaluate_task(evaluation_id: int) -> dict:
    """Run the release evaluation gate for one requested release."""
    from claims.evaluation.gate import release_evaluation_run

    evaluation = release_evaluation_run(evaluation_id=evaluation_id)
    return {"evaluation_id": evaluation.pk, "status": evaluation.status}
