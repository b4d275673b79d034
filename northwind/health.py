"""The /healthz probe: is each service this process depends on reachable."""

import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET


@dataclass(frozen=True)
class Probe:
    name: str
    backend: str
    ok: bool
    detail: str
    ms: float


def _timed(name: str, backend: str, check) -> Probe:
    started = time.perf_counter()
    try:
        detail = check()
        ok = True
    except Exception as exc:  # a probe reports every failure, it never raises
        detail = f"{type(exc).__name__}: {exc}"[:300]
        ok = False
    return Probe(name, backend, ok, detail, round((time.perf_counter() - started) * 1000, 1))


def database_probe() -> Probe:
    def check() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return "reachable"

    return _timed("database", connection.vendor, check)


def storage_probe() -> Probe:
    def check() -> str:
        # exists() is a HEAD request on S3: cheap, and it fails fast when the
        # server is down thanks to the short botocore timeouts in settings.
        default_storage.exists("healthz/probe")
        return "reachable"

    return _timed("storage", settings.STORAGE_BACKEND, check)


def broker_probe() -> Probe:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return Probe("broker", "eager", True, "tasks run in-process (no broker configured)", 0.0)

    def check() -> str:
        from northwind.celery import app

        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
        return "reachable"

    return _timed("broker", settings.CELERY_BROKER_URL.split("://", 1)[0], check)


@require_GET
def healthz(request):
    """``ok`` or ``unavailable``, and up/down per service; details for staff only.

    Anyone may ask (a load balancer does). The backend, the error text and
    the timings name internal hosts and ports, so only a signed-in staff user
    sees them.
    """
    probes = [database_probe(), storage_probe(), broker_probe()]
    down = [p.name for p in probes if not p.ok]
    staff = bool(
        getattr(request, "user", None) and request.user.is_active and request.user.is_staff
    )
    services: dict[str, dict] = {}
    for p in probes:
        services[p.name] = {"state": "up" if p.ok else "down"}
        if staff:
            services[p.name].update(backend=p.backend, detail=p.detail, ms=p.ms)
    body = {"status": "ok" if not down else "unavailable", "down": down, "services": services}
    return JsonResponse(body, status=503 if down else 200)


FAVICON = Path(__file__).resolve().parent / "static" / "northwind" / "favicon.svg"


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on every page: the Northwind mark."""
    return HttpResponse(
        FAVICON.read_bytes(),
        content_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )
