"""One error shape for the REST API: JSON, with a status a client can act on.

Service errors (``northwind.errors``) are translated here and nowhere else in
the API: a ``ServiceError`` is 400, a ``ServiceUnavailable`` 503, a
``ServiceThrottled`` 429 (with Retry-After), Django's ``PermissionDenied``
403, each with ``{"detail", "code"}``.
"""

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import JsonResponse
from django.views import defaults
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from northwind.errors import ServiceError, ServiceThrottled, ServiceUnavailable, error_body


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, with deeply nested input refused as a parse error.

    ``json.loads`` raises RecursionError on a body of a thousand nested
    brackets; left alone that is a 500 for something any client can send.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None


def exception_handler(exc, context):
    """DRF's handler, plus service errors, refusals and a too-large body."""
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"detail": "The request body is too large."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, ServiceUnavailable):
        return Response(error_body(exc), status=status.HTTP_503_SERVICE_UNAVAILABLE)
    if isinstance(exc, ServiceThrottled):
        return Response(
            error_body(exc),
            status=status.HTTP_429_TOO_MANY_REQUESTS,
            headers={"Retry-After": str(exc.retry_after)},
        )
    if isinstance(exc, ServiceError):
        return Response(error_body(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PermissionDenied):
        # DRF's own handler answers 403 too, but drops the message.
        return Response(error_body(exc), status=status.HTTP_403_FORBIDDEN)
    return drf_exception_handler(exc, context)


def page_not_found(request, exception):
    """JSON for the API (an id that is not a number), Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request, exception):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)
