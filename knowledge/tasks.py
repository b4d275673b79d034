"""Celery tasks of the knowledge app: interfaces that call one service."""

import logging

from celery import shared_task

from knowledge.services.ingestion import wording_version_ingest

logger = logging.getLogger(__name__)


@shared_task(name="knowledge.wording_version_ingest")
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
