"""What a debug page or an error report may show: no secrets."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class SecretHidingFilter(SafeExceptionReporterFilter):
    """Django's filter, also hiding connection URLs and anything like a credential.

    Django hides settings and request variables whose names contain API,
    TOKEN, KEY, SECRET, PASS or SIGNATURE. ``DATABASE_URL``,
    ``CELERY_BROKER_URL`` and ``CACHE_URL`` carry passwords too; so may any
    ``*_URL``, ``*_DSN`` or ``*CREDENTIAL*`` (the environment a development
    server puts in ``request.META`` included).
    """

    hidden_settings = re.compile(
        r"API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|CREDENTIAL|AUTH|DATABASES",
        flags=re.IGNORECASE,
    )
