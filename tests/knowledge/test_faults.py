"""Fault tests on the real services: the broker stopped, a worker killed, a NUL byte.

Each test starts what it breaks: its own ``redis-server`` on a free port
(never the shared one), its own Celery worker processes, and a TCP proxy in
front of the S3 server that can hold requests unanswered, so a worker is
reliably mid-task when it is killed. They run in the services pass
(PostgreSQL, S3) and are skipped on the embedded default; each is bounded
by deadlines of at most a minute.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.utils import timezone

from knowledge.models import WordingVersion
from knowledge.services.ingestion import wording_version_create
from knowledge.storage import objects_list
from northwind.roles import KNOWLEDGE_EDITOR, roles_sync
from tests.conftest import REPO_ROOT, free_port
from tests.knowledge.conftest import BEN_01, COV_01, EXC_01, VALID, wording

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        shutil.which("redis-server") is None, reason="redis-server is not installed"
    ),
]

DEADLINE = 60.0


def wait_until(what: str, check: Callable[[], bool], seconds: float = DEADLINE) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


class OwnRedis:
    """A redis-server of this test's own, on a free loopback port, to stop at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until("redis-server up", self.answers, 15)

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: redis shuts down (nothing saved)
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    redis = OwnRedis()
    redis.start()
    yield redis
    redis.stop()


class HoldingProxy:
    """A TCP proxy to the S3 server that can hold new connections unanswered.

    While ``hold`` is set, a connection is accepted and then left waiting:
    a worker reading its source through it is stuck mid-task, as on a hung
    network, until it is killed. Cleared, connections pass through.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.hold = threading.Event()
        self.held: list[socket.socket] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.hold.is_set():
                self.held.append(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stopping = True
        self.server.close()
        for sock in self.held:
            sock.close()


def service_env(broker_url: str, queue: str, **extra: str) -> dict[str, str]:
    """The environment of a subprocess on the test database and this test's broker."""
    from django.db import connection

    base, _, _ = os.environ["DATABASE_URL"].rpartition("/")
    return {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "DATABASE_URL": f"{base}/{connection.settings_dict['NAME']}",
        "CELERY_BROKER_URL": broker_url,
        "CELERY_RESULT_BACKEND": "",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "LOG_LEVEL": "INFO",
        **extra,
    }


def start_worker(env: dict[str, str], queue: str, *, pool: str, name: str) -> subprocess.Popen:
    log = open(REPO_ROOT / "var" / f"fault-worker-{name}-{queue}.log", "w")  # noqa: SIM115
    args = [sys.executable, "-m", "celery", "-A", "northwind", "worker", "-P", pool]
    if pool == "prefork":
        args += ["-c", "1"]
    args += ["-Q", queue, "--without-gossip", "--without-mingle", "--without-heartbeat"]
    args += ["-n", f"{name}-{queue}@%h", "--loglevel", "INFO"]
    # Its own session: the test kills the worker with its pool children.
    return subprocess.Popen(
        args, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a worker the ordinary way (warm shutdown), so its database session closes."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        kill_group(proc)


def pool_children(proc: subprocess.Popen) -> list[int]:
    path = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


@pytest.fixture
def worker_storage(settings):
    """The storage the subprocesses use (the environment's); what the test wrote is removed."""
    import northwind.settings as environment_settings

    settings.STORAGES = environment_settings.STORAGES
    written: list[str] = []
    yield written
    for prefix in written:
        for key in objects_list(prefix):
            default_storage.delete(key)


def fresh_label(written: list[str]) -> str:
    label = f"fault-{uuid.uuid4().hex[:8]}"
    written.append(f"wording/NW-MOTOR/{label}/")
    return label


def editor():
    user = get_user_model().objects.create_user(
        username=f"editor-{uuid.uuid4().hex[:6]}", is_staff=True
    )
    user.groups.set([roles_sync()[KNOWLEDGE_EDITOR]])
    return user


UPLOAD_SCRIPT = r"""
import json, sys, time
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

username, label, path = sys.argv[1:4]
client = Client(raise_request_exception=False)
client.force_login(get_user_model().objects.get(username=username))
started = time.monotonic()
response = client.post("/admin/knowledge/wordingversion/add/", {
    "document_id": "NW-MOTOR", "label": label,
    "source_file": SimpleUploadedFile("motor.md", open(path, "rb").read(), "text/markdown"),
    "effective_from": "2026-07-01", "effective_to": "", "channels": ["direct"],
})
seconds = time.monotonic() - started
page = client.get(response["Location"]) if response.status_code == 302 else None
print(json.dumps({
    "status": response.status_code, "seconds": seconds,
    "page_status": page.status_code if page else None,
    "page": page.content.decode() if page else response.content.decode()[:2000],
}))
"""


@pytest.mark.s3
@pytest.mark.django_db(transaction=True)
def test_an_upload_while_the_broker_is_stopped_is_kept_and_dispatched_when_it_returns(
    own_redis, worker_storage, tmp_path
):
    # given the broker stopped
    queue = f"fault-{uuid.uuid4().hex[:8]}"
    env = service_env(own_redis.url, queue)
    own_redis.stop()
    user = editor()
    label = fresh_label(worker_storage)
    source = tmp_path / "motor.md"
    source.write_text(VALID)
    # when an editor uploads through the admin
    run = subprocess.run(
        [sys.executable, "-c", UPLOAD_SCRIPT, user.username, label, str(source)],
        cwd=REPO_ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "northwind.settings"},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    # then no 500: the upload is answered at once and its page says it waits
    assert result["status"] == 302, run.stderr[-4000:]
    print(f"upload with the broker stopped answered in {result['seconds']:.2f} s")
    assert result["seconds"] < 5, result["seconds"]
    assert result["page_status"] == 200
    assert (
        "could not be handed to the task queue yet (the broker is unreachable)" in (result["page"])
    )
    version = WordingVersion.objects.get(label=label)
    assert version.status == "uploaded"
    assert version.dispatched_at is None
    # and a sweep while the broker is still down says so and loses nothing
    WordingVersion.objects.filter(pk=version.pk).update(
        status_changed_at=timezone.now() - timedelta(minutes=5)
    )
    swept = manage(env, "sweep_ingestion")
    assert swept.returncode == 1
    assert f"the broker is unreachable; still uploaded: NW-MOTOR {label}" in swept.stderr
    # when the broker is back, the next sweep dispatches it and a worker ingests it
    own_redis.start()
    swept = manage(env, "sweep_ingestion")
    assert swept.returncode == 0, swept.stderr[-3000:]
    assert f"dispatched again: NW-MOTOR {label}" in swept.stdout
    worker = start_worker(env, queue, pool="solo", name="back")
    try:
        wait_until(
            "ingested after the broker came back",
            lambda: WordingVersion.objects.get(pk=version.pk).status == "ingested",
        )
    finally:
        stop_group(worker)
    version.refresh_from_db()
    assert version.clauses.count() == 4
    assert version.ingest_attempt == 1


@pytest.mark.s3
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_ingestion_is_taken_over_and_the_version_ingested(
    own_redis, worker_storage, settings
):
    # given storage that holds every request unanswered, and a prefork worker
    from urllib.parse import urlsplit

    endpoint = urlsplit(settings.STORAGES["default"]["OPTIONS"]["endpoint_url"])
    proxy = HoldingProxy((endpoint.hostname, endpoint.port))
    proxy.hold.set()
    queue = f"fault-{uuid.uuid4().hex[:8]}"
    env = service_env(
        own_redis.url,
        queue,
        AWS_S3_ENDPOINT_URL=proxy.url,
        AWS_S3_READ_TIMEOUT="120",
        CELERY_VISIBILITY_TIMEOUT="3",
        WORDING_INGEST_MAX_STALLS="5",
    )
    label = fresh_label(worker_storage)
    version = wording_version_create(
        document_id="NW-MOTOR",
        label=label,
        source_bytes=VALID.encode(),
        filename="motor.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
    first = start_worker(env, queue, pool="prefork", name="first")
    second = None
    try:
        # when the sweep dispatches it and the worker is stuck reading the source
        assert manage(env, "sweep_ingestion", "--requeue-after", "0").returncode == 0

        def attempt() -> tuple[str, int]:
            row = WordingVersion.objects.get(pk=version.pk)
            return row.status, row.ingest_attempt

        wait_until("attempt 1 mid-task", lambda: attempt() == ("ingesting", 1))
        # and its pool process is killed with SIGKILL
        children = pool_children(first)
        assert len(children) == 1
        os.kill(children[0], signal.SIGKILL)
        # then the worker rejects the task back to the queue (reject_on_worker_lost)
        # and a new pool process takes it over at once
        wait_until("attempt 2 after the pool process died", lambda: attempt()[1] == 2)
        # when the whole worker is killed mid-task (no chance to give the task back)
        kill_group(first)
        assert attempt() == ("ingesting", 2)
        proxy.hold.clear()
        time.sleep(3.5)  # past the visibility timeout
        # then a worker that starts later gets the task again from Redis and ingests it
        second = start_worker(env, queue, pool="solo", name="second")
        wait_until("ingested by the next worker", lambda: attempt()[0] == "ingested")
    finally:
        kill_group(first)
        if second is not None:
            stop_group(second)
        proxy.close()
    version.refresh_from_db()
    assert version.ingest_attempt == 3
    assert version.clauses.count() == 4
    reasons = list(version.history.values_list("history_change_reason", flat=True))
    assert reasons.count("Ingestion attempt 3 started (the previous one never finished)") == 1
    keys = set(objects_list(f"wording/NW-MOTOR/{label}/"))
    assert {c.storage_key for c in version.clauses.all()} | {version.manifest_key} <= keys


@pytest.mark.redis
@pytest.mark.s3
@pytest.mark.django_db(transaction=True)
def test_a_nul_byte_on_postgresql_fails_visibly_in_the_worker(celery_worker, worker_storage):
    # given a source with a NUL byte, uploaded on PostgreSQL and ingested by a real worker
    label = fresh_label(worker_storage)
    text = wording(COV_01, BEN_01, EXC_01.replace("rust", "ru\x00st"))
    nul_line = next(n for n, line in enumerate(text.split("\n"), 1) if "\x00" in line)
    version = wording_version_create(
        document_id="NW-MOTOR",
        label=label,
        source_bytes=text.encode(),
        filename="motor.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
    )
    # then it ends failed with its line, not stranded ingesting, and no clause object
    wait_until(
        "a final state",
        lambda: WordingVersion.objects.get(pk=version.pk).status in {"ingested", "failed"},
    )
    version.refresh_from_db()
    assert version.status == "failed"
    assert [e["line"] for e in version.validation_errors] == [nul_line]
    assert "U+0000 (NUL)" in version.validation_errors[0]["message"]
    keys = objects_list(f"wording/NW-MOTOR/{label}/")
    assert len(keys) == 1 and "/source-" in keys[0]
