"""The skeleton: settings from the environment, health, and the real services."""

import os
import subprocess
import sys
import threading
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from tests.conftest import REPO_ROOT, s3_storages


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "AWS_", "CELERY_"))
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_embedded_default_needs_no_environment(tmp_path):
    """With no service variables the product uses SQLite, local files and eager Celery."""
    code = (
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.STORAGE_BACKEND,"
        " s.CELERY_TASK_ALWAYS_EAGER, s.CELERY_TASK_EAGER_PROPAGATES,"
        " s.CACHES['default']['BACKEND'].rsplit('.', 1)[-1], s.DEBUG)"
    )
    result = run_manage(
        "shell", "--no-imports", "-c", code, env={"NORTHWIND_VAR_DIR": str(tmp_path)}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "local",
        "True",
        "True",
        "LocMemCache",
        "False",
    ]


def test_service_variables_switch_each_part(tmp_path):
    code = (
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.STORAGES['default']['BACKEND'],"
        " s.CELERY_TASK_ALWAYS_EAGER, s.CELERY_BROKER_URL)"
    )
    result = run_manage(
        "shell",
        "--no-imports",
        "-c",
        code,
        env={
            "NORTHWIND_VAR_DIR": str(tmp_path),
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/northwind",
            "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
            "AWS_STORAGE_BUCKET_NAME": "northwind",
            "AWS_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.postgresql",
        "storages.backends.s3.S3Storage",
        "False",
        "redis://127.0.0.1:6379/0",
    ]


def test_check_deploy_is_clean_with_production_variables(tmp_path):
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env={
            "NORTHWIND_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "x7" * 30 + "-production-secret-key-for-the-check",
            "ALLOWED_HOSTS": "claims.northwind.example",
            "HTTPS": "true",
            "DEBUG": "false",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_a_malformed_boolean_variable_is_a_clear_error(tmp_path):
    result = run_manage("check", env={"NORTHWIND_VAR_DIR": str(tmp_path), "DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DEBUG must be true or false, not 'maybe'" in result.stderr


@pytest.mark.django_db
def test_healthz_reports_every_service_up(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["services"]) == {"database", "storage", "broker"}
    assert all(s["state"] == "up" for s in body["services"].values())


@pytest.mark.django_db
def test_healthz_names_storage_when_it_cannot_be_reached(client, settings):
    # given a storage endpoint nothing listens on
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "northwind",
                "endpoint_url": "http://127.0.0.1:9",
                "access_key": "x",
                "secret_key": "x",
                "region_name": "us-east-1",
                "client_config": settings.STORAGES["default"]["OPTIONS"].get("client_config"),
            },
        },
    }
    started = time.monotonic()
    response = client.get("/healthz")
    # then it answers 503 quickly and names storage, not the others
    assert time.monotonic() - started < 10
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["storage"]
    assert body["services"]["storage"]["state"] == "down"


@pytest.mark.s3
@pytest.mark.django_db
def test_healthz_answers_503_within_seconds_when_the_s3_server_stops(
    client, settings, private_s3_server
):
    server, endpoint = private_s3_server
    settings.STORAGES = s3_storages(settings, endpoint)
    assert client.get("/healthz").status_code == 200
    # when the S3 server stops
    server.stop()
    started = time.monotonic()
    response = client.get("/healthz")
    elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert response.json()["down"] == ["storage"]
    assert elapsed < 5, f"healthz took {elapsed:.1f}s"


@pytest.mark.s3
def test_object_round_trip_through_the_s3_server():
    from storages.backends.s3 import S3Storage

    name = default_storage.save("roundtrip/hello.txt", ContentFile(b"kia ora"))
    assert isinstance(default_storage._wrapped, S3Storage)
    with default_storage.open(name) as handle:
        assert handle.read() == b"kia ora"
    assert default_storage.exists(name) is True
    default_storage.delete(name)
    assert default_storage.exists(name) is False


@pytest.mark.redis
def test_celery_task_round_trip_through_redis_and_a_worker(celery_worker):
    from northwind.celery import app, ping

    assert app.conf.task_always_eager is False
    result = ping.delay("haere mai")
    assert result.get(timeout=30) == "pong:haere mai"
    assert result.successful() is True


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_select_for_update_blocks_a_second_transaction_on_postgres(django_user_model):
    """A row lock taken in one thread makes a NOWAIT lock in another fail."""
    from django.db import DatabaseError, connection, transaction

    user = django_user_model.objects.create(username="locked")
    locked = threading.Event()
    release = threading.Event()
    outcome: dict[str, str] = {}

    def holder():
        with transaction.atomic():
            django_user_model.objects.select_for_update().get(pk=user.pk)
            locked.set()
            release.wait(10)
        connection.close()

    def contender():
        locked.wait(10)
        try:
            with transaction.atomic():
                django_user_model.objects.select_for_update(nowait=True).get(pk=user.pk)
            outcome["second"] = "acquired"
        except DatabaseError as exc:
            outcome["second"] = f"refused: {exc}"
        finally:
            release.set()
            connection.close()

    threads = [threading.Thread(target=holder), threading.Thread(target=contender)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert outcome["second"].startswith("refused"), outcome
    assert "could not obtain lock" in outcome["second"]
