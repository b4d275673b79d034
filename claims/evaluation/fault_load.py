"""Turns under load while object storage, then the broker, is stopped and restarted.

``python manage.py load_faults`` starts, on loopback only, everything it
breaks: an S3 API server (moto, in this process, so its objects survive a
restart), a ``redis-server`` as the Celery broker, gunicorn serving the
product, and one Celery worker. It copies the serving clauses into the S3
server, then sends claim turns from a few client threads for a fixed time
per phase:

``baseline`` → ``storage_down`` → ``storage_back`` → ``broker_down`` →
``broker_back``

and reports per phase turns/s, p50/p95 latency, 5xx responses, guidance
statuses, and how many turns were honest: during the storage outage a turn
is honest when it cites nothing and does not claim an answer
(``knowledge_unavailable``, or nothing selected); at any time a turn that
cites a clause it did not return is not. Turns that started before a fault
and ended after it are counted apart, as transitions. While the broker is
down an editor uploads a wording version through the admin (it must not
answer 500, and the version must wait as ``uploaded``); once the broker is
back the sweep dispatches it and the worker ingests it.

Nothing here reaches beyond 127.0.0.1. The figures are in
``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

from django.conf import settings

PHASES = ("baseline", "storage_down", "storage_back", "broker_down", "broker_back")
FAULTS = {"storage_down", "broker_down"}

# (policy, question): what customers of each demo line ask, in our own words.
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("NW-MTR-204518", "Will my policy pay for a rental car while mine is being repaired?"),
    ("NW-MTR-204518", "Is fuel for the hire car included?"),
    ("NW-MTR-204577", "Do I get a courtesy car after an accident?"),
    ("NW-MTR-204518", "My windscreen cracked, is that covered and do I pay the excess?"),
    ("NW-HOM-310042", "A pipe burst under the kitchen floor, what does the policy cover?"),
    ("NW-HOM-310042", "Is a broken window covered without an excess?"),
    ("NW-CNT-410815", "My engagement ring was stolen at the beach, am I covered?"),
    ("NW-CNT-410815", "Does my contents policy cover food spoiled when the freezer failed?"),
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(what: str, check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up within {seconds:.0f} s")


class OwnRedis:
    """A throw-away redis-server on a free loopback port."""

    def __init__(self) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for("redis-server", self._pong, 15)

    def _pong(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


@dataclass
class Turn:
    phase: str
    started: float
    ended: float
    status: int
    guidance_status: str = ""
    cited: tuple[str, ...] = ()
    returned: tuple[str, ...] = ()
    error: str = ""

    @property
    def ms(self) -> float:
        return (self.ended - self.started) * 1000


@dataclass
class PhaseWindow:
    name: str
    started: float
    ended: float = 0.0


@dataclass
class Figures:
    phase: str
    seconds: float
    turns: int
    turns_per_second: float
    p50_ms: float
    p95_ms: float
    server_errors: int
    other_errors: int
    statuses: dict[str, int]
    cited: int
    honest: int
    honest_percent: float
    transition_turns: int


@dataclass
class UploadProbe:
    http_status: int = 0
    seconds: float = 0.0
    status_while_down: str = ""
    page_says_waiting: bool = False
    swept: str = ""
    final_status: str = ""
    clauses: int = 0
    notes: list[str] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1], 1)


def is_honest(turn: Turn, *, storage_down: bool) -> bool:
    """A turn is honest when it cites only what it returned; with storage down, nothing."""
    if turn.status != 201:
        return False
    if not set(turn.cited) <= set(turn.returned):
        return False
    if storage_down:
        return not turn.cited and turn.guidance_status != "answered"
    return True


class LoadRun:
    """One bounded run: services up, turns sent, faults injected, figures out."""

    def __init__(self, *, phase_seconds: float, clients: int, web_workers: int, log_dir: Path):
        self.phase_seconds = phase_seconds
        self.clients = clients
        self.web_workers = web_workers
        self.log_dir = log_dir
        self.turns: list[Turn] = []
        self.windows: list[PhaseWindow] = []
        self.upload = UploadProbe()
        self._lock = threading.Lock()
        self._phase = "baseline"
        self._stop = threading.Event()

    # --- services -----------------------------------------------------------
    @contextlib.contextmanager
    def services(self, version_ids: list[int]) -> Iterator[dict[str, str]]:
        from claims.evaluation.outage import MotoS3Control

        self.s3 = MotoS3Control()
        self.redis = OwnRedis()
        self.redis.start()
        procs: list[subprocess.Popen] = []
        try:
            with self.s3.serving(version_ids):
                self.env = env = self._env()
                self.web_port = free_port()
                procs.append(self._spawn("gunicorn", self._gunicorn_args(), env))
                wait_for(
                    "gunicorn",
                    lambda: (
                        urllib.request.urlopen(
                            f"http://127.0.0.1:{self.web_port}/healthz", timeout=2
                        ).status
                        == 200
                    ),
                    90,
                )
                procs.append(self._spawn("worker", self._worker_args(), env))
                yield env
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            self.redis.stop()

    def _env(self) -> dict[str, str]:
        from django.db import connection

        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "AWS_S3_ENDPOINT_URL": self.s3.endpoint,
            "AWS_STORAGE_BUCKET_NAME": self.s3.bucket,
            "AWS_ACCESS_KEY_ID": "evaluation",
            "AWS_SECRET_ACCESS_KEY": "evaluation-secret",
            "AWS_S3_REGION_NAME": "us-east-1",
            "CELERY_BROKER_URL": self.redis.url,
            "CELERY_RESULT_BACKEND": "",
            "CELERY_TASK_DEFAULT_QUEUE": f"load-{uuid.uuid4().hex[:8]}",
            # One client sends all the load: the per-client rate limit is not
            # what is measured here.
            "API_THROTTLE_RATE": "1000000/minute",
            "NORTHWIND_EMBED_THREADS": "1",
            "LOG_LEVEL": "WARNING",
        }
        if connection.vendor == "sqlite":
            env.pop("DATABASE_URL", None)
            env["NORTHWIND_VAR_DIR"] = str(settings.VAR_DIR)
        return env

    def _gunicorn_args(self) -> list[str]:
        return [
            str(Path(sys.executable).with_name("gunicorn")),
            "northwind.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.web_port}",
            "--workers",
            str(self.web_workers),
            "--timeout",
            "60",
            "--access-logfile",
            "-",
        ]

    def _worker_args(self) -> list[str]:
        return [sys.executable, "-m", "celery", "-A", "northwind", "worker", "-P", "solo"]

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        if name == "worker":
            args = [*args, "-Q", env["CELERY_TASK_DEFAULT_QUEUE"], "--without-gossip"]
            args += ["--without-mingle", "--loglevel", "WARNING"]
        log = open(self.log_dir / f"load-faults-{name}.log", "w")  # noqa: SIM115
        return subprocess.Popen(
            args, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
        )

    # --- load ---------------------------------------------------------------
    def _post(self, path: str, body: dict, token: str) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.web_port}{path}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}")
            except ValueError:
                return exc.code, {}

    def _client(self, index: int, token: str) -> None:
        conversations: dict[str, int] = {}
        sent = 0
        while not self._stop.is_set():
            policy, message = QUESTIONS[(index + sent) % len(QUESTIONS)]
            sent += 1
            if policy not in conversations or sent % 10 == 0:
                status, body = self._post(
                    "/api/v1/conversations/", {"policy_number": policy}, token
                )
                if status != 201:
                    self._record(Turn(self._phase, time.monotonic(), time.monotonic(), status))
                    time.sleep(0.2)
                    continue
                conversations[policy] = int(body["id"])
            phase = self._phase
            started = time.monotonic()
            try:
                status, body = self._post(
                    f"/api/v1/conversations/{conversations[policy]}/messages/",
                    {"message": message},
                    token,
                )
                error = ""
            except (OSError, ValueError) as exc:
                status, body, error = 0, {}, f"{type(exc).__name__}: {exc}"
            turn = Turn(phase, started, time.monotonic(), status, error=error)
            if status == 201:
                turn.guidance_status = body.get("guidance_status", "")
                turn.cited = tuple(
                    c.get("clause_id", "") for c in body.get("citations", []) if c.get("clause_id")
                )
                turn.returned = tuple(body.get("clauses", {}).get("returned", []))
            self._record(turn)

    def _record(self, turn: Turn) -> None:
        with self._lock:
            self.turns.append(turn)

    def _enter(self, name: str) -> None:
        now = time.monotonic()
        if self.windows:
            self.windows[-1].ended = now
        self.windows.append(PhaseWindow(name, now))
        self._phase = name

    def run(self, *, token: str, on_phase: Callable[[str], None]) -> None:
        threads = [
            threading.Thread(target=self._client, args=(i, token), daemon=True)
            for i in range(self.clients)
        ]
        self._enter("warmup")
        for thread in threads:
            thread.start()
        try:
            on_phase("warmup")
            self._warm_up()
            for name in PHASES:
                self._transition(name)
                self._enter(name)
                on_phase(name)
                if name == "broker_down":
                    self._upload_while_broker_down()
                elif name == "broker_back":
                    self._sweep()
                self._sleep_until(self.windows[-1].started + self.phase_seconds)
        finally:
            self._stop.set()
            if self.windows:
                self.windows[-1].ended = time.monotonic()
            for thread in threads:
                thread.join(timeout=70)
        self._wait_for_upload()

    def _warm_up(self, deadline_seconds: float = 180) -> None:
        """Until every web worker has loaded the selector: the last turns all answer fast."""
        needed = max(2 * self.web_workers, self.clients)
        deadline = time.monotonic() + deadline_seconds
        while time.monotonic() < deadline:
            with self._lock:
                recent = [t for t in self.turns if t.phase == "warmup"][-needed:]
            if len(recent) == needed and all(t.status == 201 and t.ms < 2000 for t in recent):
                return
            time.sleep(0.5)
        with self._lock:
            last = [t.status for t in self.turns if t.phase == "warmup"][-needed:]
        raise RuntimeError(
            f"the web workers did not warm up within {deadline_seconds:.0f} s (last HTTP "
            f"statuses {last}; is the database migrated? "
            f"see {self.log_dir / 'load-faults-gunicorn.log'})"
        )

    def _transition(self, name: str) -> None:
        if name == "baseline":
            return
        if name == "storage_down":
            self.s3.stop()
        elif name == "storage_back":
            self.s3.start()
        elif name == "broker_down":
            self.redis.stop()
        elif name == "broker_back":
            self.redis.start()

    @staticmethod
    def _sleep_until(deadline: float) -> None:
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.5))

    # --- the upload probe --------------------------------------------------
    def _upload_while_broker_down(self) -> None:
        from django.contrib.auth import get_user_model

        from northwind.roles import KNOWLEDGE_EDITOR, roles_sync

        password = secrets.token_urlsafe(16)
        user, _ = get_user_model().objects.get_or_create(
            username="fault-load-editor", defaults={"is_staff": True}
        )
        user.set_password(password)
        user.is_staff = True
        user.save()
        user.groups.set([roles_sync()[KNOWLEDGE_EDITOR]])
        self.upload_label = f"load-{int(time.time())}"
        source = (settings.BASE_DIR / "knowledge/content/wording/NW-MOTOR-2026.2.md").read_bytes()
        base = f"http://127.0.0.1:{self.web_port}"
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

        def csrf(path: str) -> str:
            with opener.open(base + path, timeout=30) as response:
                page = response.read().decode()
            found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
            if not found:
                raise RuntimeError(f"no CSRF token on {path}")
            return found[1]

        login = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": csrf("/admin/login/"),
                "username": user.username,
                "password": password,
                "next": "/admin/",
            }
        ).encode()
        opener.open(
            urllib.request.Request(
                base + "/admin/login/", data=login, headers={"Referer": base + "/admin/login/"}
            ),
            timeout=30,
        ).read()
        fields = {
            "csrfmiddlewaretoken": csrf("/admin/knowledge/wordingversion/add/"),
            "document_id": "NW-MOTOR",
            "label": self.upload_label,
            "effective_from": date(2030, 1, 1).isoformat(),
            "effective_to": "",
            "channels": "direct",
        }
        boundary = uuid.uuid4().hex
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
            for k, v in fields.items()
        ]
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="source_file"; '
            f'filename="NW-MOTOR-{self.upload_label}.md"\r\n'
            "Content-Type: text/markdown\r\n\r\n"
        )
        parts.append(head.encode() + source + b"\r\n")
        parts.append(f"--{boundary}--\r\n".encode())
        request = urllib.request.Request(
            base + "/admin/knowledge/wordingversion/add/",
            data=b"".join(parts),
            headers={
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Referer": base + "/admin/knowledge/wordingversion/add/",
            },
        )
        started = time.monotonic()
        try:
            with opener.open(request, timeout=60) as response:  # follows the redirect
                page = response.read().decode()
                self.upload.http_status = response.status
        except urllib.error.HTTPError as exc:
            self.upload.http_status = exc.code
            page = ""
        self.upload.seconds = round(time.monotonic() - started, 2)
        self.upload.page_says_waiting = "could not be handed to the task queue yet" in page
        from knowledge.models import WordingVersion

        version = WordingVersion.objects.filter(label=self.upload_label).first()
        self.upload.status_while_down = version.status if version else "missing"

    def _sweep(self) -> None:
        """What beat would do a minute later: the sweep, run as soon as the broker is back."""
        if not getattr(self, "upload_label", ""):
            return
        swept = subprocess.run(
            [sys.executable, "manage.py", "sweep_ingestion", "--requeue-after", "0"],
            cwd=settings.BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.upload.swept = " / ".join((swept.stdout + swept.stderr).strip().splitlines()[:2])

    def _wait_for_upload(self) -> None:
        from knowledge.models import WordingVersion

        if not getattr(self, "upload_label", ""):
            return
        with contextlib.suppress(RuntimeError):
            wait_for(
                "the upload ingested",
                lambda: (
                    WordingVersion.objects.get(label=self.upload_label).status
                    in ("ingested", "failed")
                ),
                180,
            )
        version = WordingVersion.objects.get(label=self.upload_label)
        self.upload.final_status = version.status
        self.upload.clauses = version.clauses.count()

    # --- figures ------------------------------------------------------------
    def figures(self) -> list[Figures]:
        out = []
        for window in self.windows:
            if window.name not in PHASES:
                continue
            inside = [
                t for t in self.turns if t.started >= window.started and t.ended <= window.ended
            ]
            straddling = [
                t
                for t in self.turns
                if t.phase == window.name
                and not (t.started >= window.started and t.ended <= window.ended)
            ]
            seconds = max(window.ended - window.started, 1e-9)
            latencies = [t.ms for t in inside if t.status]
            statuses: dict[str, int] = {}
            for t in inside:
                key = t.guidance_status or f"HTTP {t.status}"
                statuses[key] = statuses.get(key, 0) + 1
            honest = sum(is_honest(t, storage_down=window.name == "storage_down") for t in inside)
            out.append(
                Figures(
                    phase=window.name,
                    seconds=round(seconds, 1),
                    turns=len(inside),
                    turns_per_second=round(len(inside) / seconds, 1),
                    p50_ms=percentile(latencies, 50),
                    p95_ms=percentile(latencies, 95),
                    server_errors=sum(1 for t in inside if t.status >= 500 or t.status == 0),
                    other_errors=sum(1 for t in inside if 400 <= t.status < 500),
                    statuses=dict(sorted(statuses.items())),
                    cited=sum(1 for t in inside if t.cited),
                    honest=honest,
                    honest_percent=round(100 * honest / len(inside), 1) if inside else 0.0,
                    transition_turns=len(straddling),
                )
            )
        return out

    def report(self) -> dict:
        return {
            "phase_seconds": self.phase_seconds,
            "clients": self.clients,
            "web_workers": self.web_workers,
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "phases": [asdict(f) for f in self.figures()],
            "server_errors_total": sum(1 for t in self.turns if t.status >= 500 or t.status == 0),
            "upload_while_broker_down": asdict(self.upload),
        }
