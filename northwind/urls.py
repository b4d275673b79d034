"""Top-level URLs: admin, REST API v1, schema and docs, health."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from claims.evaluation.views import evaluation_overview, evaluation_report_latest
from northwind.health import favicon, healthz

admin.site.site_header = "Northwind claims back-office"
admin.site.site_title = "Northwind"
admin.site.index_title = "Wording, schedules and the pending-answers queue"
# There is no public site behind the back-office: "View site" opens the API docs.
admin.site.site_url = "/api/docs/"

api_v1 = [
    path("", include("claims.urls")),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("", RedirectView.as_view(url="/admin/", permanent=False), name="home"),
    path("admin/reports/evaluation/", evaluation_overview, name="evaluation-overview"),
    path(
        "admin/reports/evaluation/latest/",
        evaluation_report_latest,
        name="evaluation-report-latest",
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"), namespace="v1")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's init script as a file, not inline: the
    # Content-Security-Policy allows scripts from 'self' only.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
]

handler404 = "northwind.api_errors.page_not_found"
handler400 = "northwind.api_errors.bad_request"
