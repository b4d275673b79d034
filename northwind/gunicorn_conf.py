"""gunicorn settings for the web service (Dockerfile, docker-compose.yml, the SSE test).

Threaded workers (``gthread``): a streamed turn (``Accept: text/event-stream``)
holds its connection for the whole turn and its heartbeats, so a worker
serves other requests on its other threads meanwhile; a sync worker would be
blocked by each open stream. ``timeout`` is the worker's heartbeat to the
arbiter, which threaded workers keep sending while a stream is open.
"""

import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
timeout = 60
graceful_timeout = 20
keepalive = 5


def post_worker_init(worker):
    """Load the claim agent's model and indexes before the worker's first request.

    Otherwise the first customer of each worker waits for them (a second or
    more); the heap is frozen afterwards so the collector's full passes stay
    short (``claims/agent/warmup.py``). Set ``NORTHWIND_WARM_UP=0`` to skip.
    """
    if os.environ.get("NORTHWIND_WARM_UP", "1") == "0":
        return
    from django.db import connections

    from claims.agent.warmup import agent_warm_up

    try:
        agent_warm_up()
    finally:
        connections.close_all()  # request threads open their own
