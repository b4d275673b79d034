"""Shared fixtures.

Integration tests carry a marker naming the service they need
(``postgres``, ``redis``, ``s3``); without that service's variables they are
skipped with a reason that names the missing variable. ``.ci/run`` runs the
suite twice: on the embedded default, then with every service set.
"""

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

REPO_ROOT = Path(__file__).resolve().parent.parent


def _service_missing(marker: str) -> str | None:
    if marker == "postgres":
        engine = django_settings.DATABASES["default"]["ENGINE"]
        if not engine.endswith("postgresql"):
            return "DATABASE_URL is not set to a PostgreSQL URL"
    if marker == "redis" and not django_settings.CELERY_BROKER_URL.startswith("redis"):
        return "CELERY_BROKER_URL is not set to a Redis URL"
    if marker == "s3" and django_settings.STORAGE_BACKEND != "s3":
        return "AWS_STORAGE_BUCKET_NAME / AWS_S3_ENDPOINT_URL are not set"
    return None


def chromium_path() -> Path:
    """Debian's Chromium, which the browser tests drive (never a downloaded build)."""
    return Path(os.environ.get("NORTHWIND_CHROMIUM", "/usr/bin/chromium"))


def _browser_missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not chromium_path().is_file():
        return f"Chromium is not at {chromium_path()} (apt-get install chromium)"
    return None


def pytest_collection_modifyitems(config, items):
    browser_missing = None
    if any(item.get_closest_marker("browser") for item in items):
        browser_missing = _browser_missing()
    for item in items:
        if item.get_closest_marker("browser") and browser_missing:
            item.add_marker(pytest.mark.skip(reason=f"browser: {browser_missing}"))
        for marker in ("postgres", "redis", "s3"):
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.integration)
                reason = _service_missing(marker)
                if reason:
                    item.add_marker(pytest.mark.skip(reason=f"integration ({marker}): {reason}"))


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: throttle counts and cached directories
    are keyed by ids that the next test's rolled-back database reuses."""
    from django.core.cache import cache

    from claims.agent.cards import served_index_forget
    from claims.agent.wording import spellers_forget
    from knowledge.clause_store import clause_rows_forget
    from knowledge.selectors import clause_index_forget

    def forget() -> None:
        cache.clear()
        clause_rows_forget()
        # Keyed by ingestion time and card index stamp, which a replayed demo
        # (see ``demo``) repeats from test to test.
        clause_index_forget()
        served_index_forget()
        spellers_forget()

    forget()
    yield
    forget()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, noted as migrations left it (for ``demo``)."""
    from tests.demo_snapshot import fresh_database_note

    with django_db_blocker.unblock():
        fresh_database_note()


@pytest.fixture(scope="session")
def _demo_recordings(tmp_path_factory) -> Path:
    """Where the demo's storage objects are kept between tests (see ``demo``)."""
    return tmp_path_factory.mktemp("demo-recordings")


@pytest.fixture
def demo(db, _demo_recordings):
    """The demo data, as ``python manage.py load_demo`` leaves it; returns what it printed.

    The real command runs the first time a test starts from a given database
    state; later tests from the same state get its rows and storage objects
    replayed (``tests/demo_snapshot.py``: it says when the command still runs).
    """
    from tests.demo_snapshot import demo_load

    return demo_load(keep_dir=_demo_recordings)


@pytest.fixture
def api_client(demo):
    """A REST client authenticated as the demo API client, by its token."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    token = Token.objects.get(user__username="demo-client")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def model_runs(monkeypatch):
    """``runs = model_runs(embedder)``: the texts the embedder runs its model on, in order."""

    def watch(embedder) -> list[str]:
        runs: list[str] = []
        real = embedder._encode_one

        def counted(text: str):
            runs.append(text)
            return real(text)

        monkeypatch.setattr(embedder, "_encode_one", counted)
        return runs

    return watch


@pytest.fixture(autouse=True)
def _isolated_storage(request, settings, tmp_path):
    """Give every test its own storage area: a temp folder, or a fresh S3 prefix.

    On the services pass only the tests about object storage or the broker
    (markers ``s3`` and ``redis``: a real worker reads what the test wrote)
    use the S3 server. Writing the demo's clause objects to a fresh S3 prefix
    in every other test made that pass several times slower than the
    embedded one while testing nothing more; the evaluation step of
    ``.ci/run`` still runs every turn end to end on S3.
    """
    storages = {**settings.STORAGES}
    default = {**storages["default"], "OPTIONS": {**storages["default"]["OPTIONS"]}}
    on_s3 = settings.STORAGE_BACKEND == "s3" and any(
        request.node.get_closest_marker(marker) for marker in ("s3", "redis")
    )
    if on_s3:
        default["OPTIONS"]["location"] = f"test-{uuid.uuid4().hex[:12]}"
    else:
        default = {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "storage"},
        }
    storages["default"] = default
    settings.STORAGES = storages
    yield


@pytest.fixture(autouse=True)
def _celery_mode(request):
    """Run tasks eagerly unless the test is about the broker.

    Tests marked ``redis`` send tasks through Redis to a real worker
    (``celery_worker`` fixture); every other test keeps the embedded default.
    """
    from northwind.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = request.node.get_closest_marker("redis") is None or previous
    yield
    app.conf.task_always_eager = previous


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real Celery worker process, consuming from Redis, on the test database."""
    from django.db import connection

    from northwind.celery import app

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if connection.vendor == "postgresql":
        test_db = connection.settings_dict["NAME"]
        base, _, _ = os.environ["DATABASE_URL"].rpartition("/")
        env["DATABASE_URL"] = f"{base}/{test_db}"
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env["CELERY_TASK_DEFAULT_QUEUE"] = queue
    # Webhook retries back off from half a second, so a retry test takes seconds.
    env.setdefault("WEBHOOK_RETRY_BASE_SECONDS", "0.5")
    app.conf.task_default_queue = queue
    log = open(REPO_ROOT / "var" / f"celery-worker-{queue}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "northwind",
            "worker",
            "-P",
            "solo",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
            "-n",
            f"{queue}@%h",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"Celery worker exited early; see {log.name}")
            replies = app.control.ping(timeout=1)
            if any(name.startswith(f"{queue}@") for reply in replies for name in reply):
                break
        else:
            raise RuntimeError(f"Celery worker did not answer within 60 s; see {log.name}")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def private_s3_server():
    """A real S3 API server of this test's own (moto's server mode), to stop at will."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield server, f"http://127.0.0.1:{port}"
    with contextlib.suppress(Exception):  # already stopped by the test
        server.stop()


def s3_storages(settings, endpoint_url: str, bucket: str = "northwind-test") -> dict:
    """A STORAGES value pointing the default storage at ``endpoint_url``."""
    import boto3

    boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    ).create_bucket(Bucket=bucket)
    from botocore.config import Config

    return {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": endpoint_url,
                "region_name": "us-east-1",
                "access_key": "test",
                "secret_key": "test",
                "client_config": Config(
                    connect_timeout=1,
                    read_timeout=2,
                    retries={"max_attempts": 2, "mode": "standard"},
                ),
            },
        },
    }
