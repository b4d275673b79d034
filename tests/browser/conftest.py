"""Browser tests: Playwright for Python driving Debian's Chromium.

Every test in this folder carries ``pytest.mark.browser`` (set it with
``pytestmark = pytest.mark.browser``); it is skipped with a reason when
Chromium (``/usr/bin/chromium``, or ``NORTHWIND_CHROMIUM``) or the
``playwright`` package is absent. Chromium is launched with
``executable_path``: ``playwright install`` is never needed nor run.

Fixtures for the whole team:

- ``browser``: a headless Chromium for the test.
- ``staff_page(role)``: a new page, logged in as the demo user of ``role``
  (``editor``, ``editor2``, ``approver``, ``agent``, ``lead`` or ``admin``), with the
  demo data loaded (``load_demo``) and a live server running; ``editor_page``,
  ``approver_page``, ``agent_page`` and ``admin_page`` are shortcuts.
- ``screenshot(page, name)``: saves ``var/screenshots/<test>/<nn>-<name>.png``
  and returns its path. Look at the pictures.

The live server runs in a thread of the test process, on the test database
(so a test is ``transactional``: its data is flushed afterwards), with Celery
eager as everywhere in the embedded default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, chromium_path

SCREENSHOT_DIR = REPO_ROOT / "var" / "screenshots"

# role -> demo username (``python manage.py load_demo``)
DEMO_STAFF_BY_ROLE = {
    "admin": "demo-admin",
    "editor": "demo-editor",
    "editor2": "demo-editor-2",
    "approver": "demo-approver",
    "agent": "demo-agent",
    "lead": "demo-lead",
}


@pytest.fixture
def browser(monkeypatch) -> Iterator:
    """A headless Chromium for one test.

    Per test, not per session: while Playwright's sync API is started, an
    event loop runs in this thread, and Django refuses ORM calls under a
    running loop unless ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set. The variable is
    set only for the test that drives the browser (its ORM calls between page
    actions are ordinary synchronous ones), and the launch costs under a
    second.
    """
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=str(chromium_path()), headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture
def staff_page(browser, live_server, demo) -> Iterator[Callable]:
    """``staff_page("editor")`` → a Playwright page logged in as that role."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    contexts = []

    def open_page(role: str):
        username = DEMO_STAFF_BY_ROLE[role]
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1280, "height": 900}
        )
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": live_server.url,
                }
            ]
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def editor_page(staff_page):
    return staff_page("editor")


@pytest.fixture
def approver_page(staff_page):
    return staff_page("approver")


@pytest.fixture
def agent_page(staff_page):
    return staff_page("agent")


@pytest.fixture
def admin_page(staff_page):
    return staff_page("admin")


def _safe_name(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name)


@pytest.fixture
def screenshot(request) -> Callable:
    """``screenshot(page, "approve")`` → var/screenshots/<test>/<nn>-approve.png."""
    folder = SCREENSHOT_DIR / _safe_name(request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    taken = []

    def take(page, name: str) -> Path:
        path = folder / f"{len(taken) + 1:02d}-{_safe_name(name)}.png"
        page.screenshot(path=str(path), full_page=True)
        taken.append(path)
        return path

    return take
