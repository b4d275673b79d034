"""Hardening: login throttling, no debug secrets, no default key, CSP, no-store, healthz."""

import shutil
import subprocess
import sys

import pytest
import yaml
from django.test import RequestFactory

from tests.conftest import REPO_ROOT
from tests.test_foundation import run_manage


@pytest.mark.django_db
def test_the_admin_login_is_throttled_after_five_wrong_passwords(client, demo):
    statuses = [
        client.post(
            "/admin/login/?next=/admin/",
            {"username": "demo-editor", "password": "not-the-password"},
        ).status_code
        for _ in range(5)
    ]
    # the form again four times, with its error; the fifth failure locks the address
    assert statuses == [200, 200, 200, 200, 429]
    # and then even the right password is refused
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "demo-editor", "password": "northwind-editor-demo"},
    )
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_a_right_password_resets_the_count(client, demo):
    for _ in range(4):
        client.post("/admin/login/", {"username": "demo-agent", "password": "wrong"})
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "demo-agent", "password": "northwind-agent-demo"},
    )
    assert response.status_code == 302
    client.logout()
    for _ in range(4):
        assert (
            client.post("/admin/login/", {"username": "demo-agent", "password": "x"}).status_code
            == 200
        )


def test_debug_with_https_refuses_to_start(tmp_path):
    result = run_manage(
        "check",
        env={
            "NORTHWIND_VAR_DIR": str(tmp_path),
            "DEBUG": "true",
            "HTTPS": "true",
            "SECRET_KEY": "k" * 60,
        },
    )
    assert result.returncode != 0
    assert "DEBUG=true with HTTPS=true" in result.stderr


def test_a_deployment_that_requires_a_key_refuses_to_start_without_one(tmp_path):
    env = {"NORTHWIND_VAR_DIR": str(tmp_path), "SECRET_KEY_REQUIRED": "true", "SECRET_KEY": ""}
    result = run_manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "secret_key").exists()
    ok = run_manage("check", env={**env, "SECRET_KEY": "a-long-random-value-" * 3})
    assert ok.returncode == 0, ok.stderr


def test_compose_has_no_default_secret_key_and_still_validates(tmp_path):
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    env = compose["x-northwind-env"]
    assert env["SECRET_KEY"] == "${SECRET_KEY:-}"
    assert env["SECRET_KEY_REQUIRED"] == "true"
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed; the YAML was checked")
    result = subprocess.run(
        ["docker-compose", "-f", str(REPO_ROOT / "docker-compose.yml"), "config", "-q"],
        env={"PATH": "/usr/bin:/bin:/usr/local/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def _password(what: str) -> str:
    # Built at run time: the debug page quotes this file's source lines.
    return f"{what}-pass-{47 * 100 + 11}"


def test_a_debug_page_shows_no_connection_password(settings):
    from django.views.debug import technical_500_response

    settings.DEBUG = True
    settings.DATABASE_URL = "postgres://northwind:" + _password("db") + "@db:5432/northwind"
    settings.CELERY_BROKER_URL = "redis://:" + _password("broker") + "@redis:6379/0"
    request = RequestFactory().get(
        "/boom", DATABASE_URL="postgres://northwind:" + _password("env") + "@db/northwind"
    )
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        response = technical_500_response(request, *sys.exc_info())
    page = response.content.decode()
    assert "RuntimeError" in page and "DATABASE_URL" in page
    for what in ("db", "broker", "env"):
        assert _password(what) not in page


@pytest.mark.django_db
def test_api_answers_are_not_stored_by_caches(api_client, client):
    created = api_client.post(
        "/api/v1/conversations/", {"policy_number": "NW-MTR-204518"}, format="json"
    )
    assert created.status_code == 201
    assert "no-store" in created["Cache-Control"]
    turn = api_client.post(
        f"/api/v1/conversations/{created.json()['id']}/messages/",
        {"message": "Is fuel included in the hire car?"},
        format="json",
    )
    assert "no-store" in turn["Cache-Control"]
    assert "no-store" in client.get("/api/v1/conversations/1/")["Cache-Control"]  # a 401 too


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy(client, demo):
    assert client.login(username="demo-admin", password="northwind-admin-demo") is True
    for url in ("/admin/", "/api/docs/"):
        policy = client.get(url)["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy
    docs = client.get("/api/docs/").content.decode()
    assert "<script>" not in docs  # Swagger UI's init script is a file, not inline


@pytest.mark.django_db
def test_healthz_shows_details_only_to_staff(client, demo):
    public = client.get("/healthz").json()
    assert public["services"]["database"] == {"state": "up"}
    assert client.login(username="demo-agent", password="northwind-agent-demo") is True
    staff = client.get("/healthz").json()
    assert set(staff["services"]["database"]) == {"state", "backend", "detail", "ms"}


@pytest.mark.django_db
def test_healthz_does_not_tell_the_public_why_a_service_is_down(client, settings):
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
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["services"]["storage"] == {"state": "down"}
    assert "127.0.0.1" not in response.content.decode()
