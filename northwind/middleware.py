"""Small middleware of our own."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control


def api_no_store(get_response: Callable[[HttpRequest], HttpResponse]):
    """``Cache-Control: no-store`` on every API answer and on /healthz.

    API answers carry schedules and customers' messages: no browser, proxy or
    shared cache may keep them.
    """

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if request.path.startswith("/api/v1/") or request.path == "/healthz":
            patch_cache_control(response, no_store=True, private=True)
        return response

    return middleware
