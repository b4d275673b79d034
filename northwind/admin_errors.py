"""The admin's one translation of service errors into messages on the page.

Every admin action and view that calls a service wraps the call::

    with service_call(request, subject=str(version)) as call:
        release_request(version_id=version.pk, acting_user=request.user)
    if call.ok:
        self.message_user(request, f"{version}: release requested.")

A ``ServiceError`` or a ``PermissionDenied`` raised inside becomes an error
message ("NW-MOTOR 2026.2: You do not have permission to ...") and is not
raised further; anything else is a bug and propagates.
"""

from __future__ import annotations

from types import TracebackType

from django.contrib import messages
from django.http import HttpRequest

from northwind.errors import PermissionDenied, ServiceError


class service_call:
    """Run a service call; show a refusal as an admin error message."""

    def __init__(self, request: HttpRequest, *, subject: str = "") -> None:
        self.request = request
        self.subject = subject
        self.ok = False
        self.error: ServiceError | PermissionDenied | None = None

    def __enter__(self) -> service_call:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if exc is None:
            self.ok = True
            return False
        if not isinstance(exc, ServiceError | PermissionDenied):
            return False
        self.error = exc
        text = str(exc) or "You do not have permission to do this."
        messages.error(self.request, f"{self.subject}: {text}" if self.subject else text)
        return True
