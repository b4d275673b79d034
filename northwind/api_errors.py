"""One error shape for the REST API."""

from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    """Answer a too-large body with 413 instead of a server error."""
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"detail": "The request body is too large."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    return drf_exception_handler(exc, context)
