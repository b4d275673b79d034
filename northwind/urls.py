"""Top-level URLs: admin, REST API v1, schema and docs, health."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from claims.evaluation.views import evaluation_report_latest
from northwind.health import healthz

admin.site.site_header = "Northwind claims back-office"
admin.site.site_title = "Northwind"
admin.site.index_title = "Wording, schedules and the pending-answers queue"

api_v1 = [
    path("", include("claims.urls")),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path(
        "admin/reports/evaluation/latest/",
        evaluation_report_latest,
        name="evaluation-report-latest",
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"), namespace="v1")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]

handler404 = "northwind.api_errors.page_not_found"
handler400 = "northwind.api_errors.bad_request"
