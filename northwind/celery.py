"""The Celery application.

With no ``CELERY_BROKER_URL`` the settings make every task run eagerly in
the calling process (the embedded default); with one, tasks go through the
broker to a worker started with ``celery -A northwind worker``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "northwind.settings")

app = Celery("northwind")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="northwind.ping")
def ping(value: str) -> str:
    """Echo a value back; used by health checks and the broker round-trip test."""
    return f"pong:{value}"
