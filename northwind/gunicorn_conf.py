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
