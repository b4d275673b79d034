"""Evaluation pages for staff in the admin.

``evaluation_overview`` works before anything has been measured: it says
how to measure, or shows the latest gate run (which versions it compared)
and the latest ``manage.py evaluate`` report (which versions it measured,
a chart per selector), each drawn as server-side SVG.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from claims.evaluation.report import (
    METRIC_COLOURS,
    bar_chart,
    report_latest,
    report_latest_data,
    selector_charts,
)


@staff_member_required
def evaluation_report_latest(request: HttpRequest) -> HttpResponse:
    """Serve the newest ``var/reports/evaluation-*.html``, else the overview page."""
    path = report_latest()
    if path is None:
        return HttpResponseRedirect(reverse("evaluation-overview"))
    return FileResponse(path.open("rb"), content_type="text/html; charset=utf-8")


def _gate_chart(evaluation) -> dict | None:
    groups = []
    for key in ("serving", "candidate"):
        figures = (evaluation.figures or {}).get(key)
        if figures:
            groups.append((f"{key}: {figures.get('version', '')}", figures))
    if not groups:
        return None
    return bar_chart(f"gate ({evaluation.selector or 'configured selector'})", groups)


@staff_member_required
def evaluation_overview(request: HttpRequest) -> HttpResponse:
    from knowledge.models import ReleaseEvaluation

    gate = (
        ReleaseEvaluation.objects.select_related(
            "release", "candidate_version__document", "serving_version__document"
        )
        .order_by("-pk")
        .first()
    )
    latest = report_latest_data()
    report, report_path = latest if latest else (None, None)
    context = {
        **admin.site.each_context(request),
        "title": "Evaluation",
        "gate": gate,
        "gate_chart": _gate_chart(gate) if gate else None,
        "report": report,
        "report_name": report_path.name if report_path else "",
        "report_url": reverse("evaluation-report-latest"),
        "charts": selector_charts(report) if report else [],
        "colours": METRIC_COLOURS,
    }
    return TemplateResponse(request, "admin/claims/evaluation_overview.html", context)
