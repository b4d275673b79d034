"""Each staff role opens the admin in a real browser; the API docs render offline."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("role", "sees", "does_not_see"),
    [
        ("editor", "Wording versions", "Policy schedules"),
        ("approver", "Releases", "Pending questions"),
        ("agent", "Pending questions", "Releases"),
    ],
)
def test_each_staff_role_sees_its_own_part_of_the_admin(
    staff_page, screenshot, role, sees, does_not_see
):
    page = staff_page(role)
    page.goto("/admin/")
    screenshot(page, f"admin-index-{role}")
    assert page.title() == "Wording, schedules and the pending-answers queue | Northwind"
    content = page.locator("#content-main").inner_text()
    assert sees in content
    assert does_not_see not in content


def test_the_api_docs_render_from_our_own_static_files(admin_page, screenshot, live_server):
    # given a browser that may reach nothing but the live server
    outside = []

    def only_local(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    admin_page.route("**/*", only_local)
    # when
    admin_page.goto("/api/docs/")
    admin_page.get_by_text("Northwind claim agent API").first.wait_for()
    screenshot(admin_page, "api-docs")
    # then Swagger UI drew the operations, with nothing fetched from outside
    assert admin_page.locator(".opblock").count() >= 3
    assert outside == []
