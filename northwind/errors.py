"""One error taxonomy for every service.

A service that refuses or cannot do what it was asked raises a
``ServiceError`` (or a subclass) carrying a plain-words ``message`` for the
person who asked and a stable ``code`` for programs. A refusal because the
actor lacks a permission is always Django's ``PermissionDenied``, whatever
the service, so that every interface answers it the same way (403 in the
API, an error message in the admin).

The interfaces translate these in one place each:

- the REST API: ``northwind.api_errors.exception_handler`` answers
  ``{"detail": message, "code": code}`` with 400, 503 for a
  ``ServiceUnavailable``, 429 for a ``ServiceThrottled``, and 403 for
  ``PermissionDenied``;
- the admin: ``northwind.admin_errors.service_call`` turns either into an
  error message on the page.

This module imports nothing but Django's exception class, so pure modules
(``schedules.routing``) can raise these errors without loading settings.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

__all__ = [
    "PermissionDenied",
    "ServiceError",
    "ServiceThrottled",
    "ServiceUnavailable",
    "error_body",
]


class ServiceError(Exception):
    """A request a service refuses: bad input or a state that does not allow it.

    Subclasses name the area (``ReleaseError``, ``WordingError``, ...) and
    set a default ``code``; a raise may give a more precise one.
    """

    code: str = "refused"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class ServiceUnavailable(ServiceError):
    """Something the service depends on did not answer (storage, a model, a source).

    Not the caller's fault: the API answers 503 and the caller may retry.
    """

    code = "unavailable"


class ServiceThrottled(ServiceError):
    """Refused for now: too many attempts. The API answers 429 with Retry-After."""

    code = "throttled"

    def __init__(self, message: str, *, code: str | None = None, retry_after: int = 60) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


def error_body(exc: ServiceError | PermissionDenied) -> dict[str, str]:
    """The JSON body every interface uses for a service error."""
    if isinstance(exc, PermissionDenied):
        message = str(exc) or "You do not have permission to do this."
        return {"detail": message, "code": getattr(exc, "code", "permission_denied")}
    return {"detail": exc.message, "code": exc.code}
