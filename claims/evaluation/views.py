"""The latest evaluation report, for staff in the admin."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import FileResponse, Http404, HttpRequest

from claims.evaluation.report import report_latest


@staff_member_required
def evaluation_report_latest(request: HttpRequest) -> FileResponse:
    """Serve the newest ``var/reports/evaluation-*.html`` (404 before the first run)."""
    path = report_latest()
    if path is None:
        raise Http404("No evaluation report yet: run `python manage.py evaluate`.")
    return FileResponse(path.open("rb"), content_type="text/html; charset=utf-8")
