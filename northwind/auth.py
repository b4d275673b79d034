"""Login throttling: django-axes for every login that arrives with a request."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' backend, for web logins only.

    A login with no request (``manage.py shell``, the test client's
    ``login()``) is not a guess over the network: it is passed on to the next
    backend instead of being refused, as axes would.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)
