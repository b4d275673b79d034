"""Reads about policy schedules."""

from datetime import date

from schedules.lookup import ScheduleEvidence
from schedules.routing import WordingRoute, wording_route


def schedule_wording_route(evidence: ScheduleEvidence, *, question_date: date) -> WordingRoute:
    """Route a found schedule to its wording version with today's approved releases."""
    # Imported here: the knowledge app depends on nothing of ours, and the
    # router stays free of the database.
    from knowledge.selectors import approved_release_windows

    return wording_route(
        line=evidence.line,
        term_start=evidence.term_start,
        sales_channel=evidence.sales_channel,
        question_date=question_date,
        releases=approved_release_windows(line=evidence.line),
    )
