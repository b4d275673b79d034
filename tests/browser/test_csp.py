"""The Content-Security-Policy breaks nothing: admin, API docs and report draw."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def _violations(page) -> list[str]:
    found: list[str] = []
    page.on(
        "console",
        lambda message: (
            found.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return found


def test_no_page_breaks_the_content_security_policy(admin_page, screenshot):
    violations = _violations(admin_page)
    for url, ready in (
        ("/admin/", "#content-main"),
        ("/admin/claims/pendingquestion/", "#changelist"),
        ("/admin/schedules/policyschedule/", "#changelist"),
        ("/admin/knowledge/wordingversion/add/", "form"),
        ("/api/docs/", ".opblock"),
    ):
        response = admin_page.goto(url)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        admin_page.locator(ready).first.wait_for()
        screenshot(admin_page, url.strip("/").replace("/", "-") or "index")
    assert violations == []
    # Swagger UI ran its (file) init script: the operations are drawn
    assert admin_page.locator(".opblock").count() >= 3
