"""The release review flow in a real browser, as each staff role does it.

Editor uploads a changed motor wording → ingested; requests a release; the
approver sees the changed words, the routing impact and the gate's result;
self-approval is refused; approve; withdraw gives the predecessor its
window back and the demo policies still answer.
"""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.contrib.auth import get_user_model

from knowledge.demo import CONTENT_DIR
from knowledge.models import EvaluationStatus, Release, WordingVersion
from knowledge.services.ingestion import wording_version_create, wording_version_ingest

pytestmark = pytest.mark.browser

MOTOR = (CONTENT_DIR / "NW-MOTOR-2026.2.md").read_text(encoding="utf-8")
CHANGED = MOTOR.replace(
    "up to NZD 60 a day, for up to 21 days", "up to NZD 75 a day, for up to 21 days"
)
SLOW = 240_000  # ms: the gate replays every motor question twice on this request


def motor(label: str) -> WordingVersion:
    return WordingVersion.objects.get(document__document_id="NW-MOTOR", label=label)


def test_release_review_from_upload_to_withdrawal(staff_page, screenshot, live_server, tmp_path):
    assert CHANGED != MOTOR
    editor, approver, admin = staff_page("editor"), staff_page("approver"), staff_page("admin")

    # 1. the editor uploads a changed version; it is ingested
    source = tmp_path / "NW-MOTOR-2026.3.md"
    source.write_text(CHANGED, encoding="utf-8")
    editor.goto("/admin/knowledge/wordingversion/add/")
    editor.select_option("#id_document_id", "NW-MOTOR")
    editor.fill("#id_label", "2026.3")
    editor.set_input_files("#id_source_file", str(source))
    editor.fill("#id_effective_from", "2026-08-20")
    editor.click("input[name=_save]")
    editor.wait_for_url(re.compile(r"/wordingversion/\d+/change/"))
    editor.reload()
    screenshot(editor, "editor-uploaded")
    assert motor("2026.3").status == "ingested"
    assert "Ingested" in editor.locator("#content-main").inner_text()

    # 2. the editor requests a release: a confirmation page with the impact first
    editor.click("text=Request a release…")
    impact = editor.locator("#routing-impact").inner_text()
    assert "Routing impact if approved" in impact
    assert "Backdated: NW-MOTOR 2026.3 starts on 2026-08-20" in impact
    screenshot(editor, "editor-request-confirmation")
    editor.fill("#id_reason", "Alternative transport limit raised to NZD 75 a day")
    editor.click("#id_confirm", timeout=SLOW)
    editor.wait_for_url(re.compile(r"/release/\d+/change/"), timeout=SLOW)
    release = Release.objects.get(version=motor("2026.3"))
    assert release.status == "pending_approval"
    assert release.evaluations.get().status == EvaluationStatus.PASSED
    screenshot(editor, "editor-release-requested")

    # 3. the approver sees the gate's result, the changed words and the impact
    release_url = f"/admin/knowledge/release/{release.pk}/change/"
    approver.goto(release_url)
    gate = approver.locator("#evaluation-gate").inner_text()
    assert "Passed" in gate
    assert "serving NW-MOTOR 2026.2 against candidate NW-MOTOR 2026.3" in gate
    screenshot(approver, "approver-release-page-gate")
    approver.click("text=Clause differences")
    assert (
        approver.locator(".nw-diff-counts")
        .inner_text()
        .startswith("0 added · 0 removed · 1 changed")
    )
    assert approver.locator("#clause-MTR-BEN-03 del").first.inner_text() == "60"
    assert approver.locator("#clause-MTR-BEN-03 ins").first.inner_text() == "75"
    screenshot(approver, "approver-diff-changed-words")
    approver.goto(f"/admin/knowledge/release/{release.pk}/act/approve/")
    counts = approver.locator(".nw-policy-counts").inner_text()
    assert "routed version changes: 1" in counts  # NW-MTR-204577 starts on 2026-09-01
    assert "left with no wording by this change: 0" in counts
    screenshot(approver, "approver-approve-confirmation")

    # 4. self-approval is refused: the administrator requests, then tries to approve
    own = wording_version_create(
        document_id="NW-HOME",
        label="2027.1",
        source_bytes=(CONTENT_DIR / "NW-HOME-2026.2.md").read_bytes(),
        filename="NW-HOME-2027.1.md",
        effective_from=date(2027, 1, 1),
        effective_to=None,
        channels=["direct", "broker"],
        acting_user=get_user_model().objects.get(username="demo-admin"),
        queue_ingestion=False,
    )
    wording_version_ingest(version_id=own.pk)
    admin.goto(f"/admin/knowledge/wordingversion/{own.pk}/request-release/")
    admin.fill("#id_reason", "my own change")
    admin.click("#id_confirm", timeout=SLOW)
    admin.wait_for_url(re.compile(r"/release/\d+/change/"), timeout=SLOW)
    own_release = Release.objects.get(version=own)
    assert admin.locator(".nw-action-approve").count() == 0  # not offered to the requester
    admin.goto(f"/admin/knowledge/release/{own_release.pk}/act/approve/")
    admin.fill("#id_reason", "looks fine to me")
    admin.click("#id_confirm")
    assert (
        "The person who requested a release cannot approve it."
        in admin.locator(".messagelist").inner_text()
    )
    screenshot(admin, "self-approval-refused")
    own_release.refresh_from_db()
    assert own_release.status == "pending_approval"

    # 5. the approver approves: 2026.2's open window now ends where 2026.3 starts
    approver.fill("#id_reason", "Limit checked against the product sheet")
    approver.click("#id_confirm")
    approver.wait_for_url(f"**{release_url}")
    assert "was approved" in approver.locator(".messagelist").inner_text()
    screenshot(approver, "approver-approved")
    assert motor("2026.2").effective_to == date(2026, 8, 20)

    # 6. withdrawing gives the window back, and the demo policies still answer
    approver.goto(f"/admin/knowledge/release/{release.pk}/act/withdraw/")
    changes = approver.locator(".nw-window-changes").inner_text()
    assert "NW-MOTOR 2026.2: [2026-07-01, 2026-08-20) → [2026-07-01, open-ended)" in changes
    assert approver.locator("#id_confirm_unrouted").count() == 0  # nobody is left unrouted
    screenshot(approver, "approver-withdraw-confirmation")
    approver.fill("#id_reason", "Limit change postponed")
    approver.click("#id_confirm")
    approver.wait_for_url(f"**{release_url}")
    screenshot(approver, "approver-withdrawn")
    assert motor("2026.2").effective_to is None
    history = motor("2026.2").history.order_by("-history_id").first().history_change_reason
    assert history.startswith("Window given back (now ends open-ended)")

    from rest_framework.authtoken.models import Token

    token = Token.objects.get(user__username="demo-client").key
    api = approver.request
    headers = {"Authorization": f"Token {token}"}
    for policy in ("NW-MTR-204518", "NW-MTR-204577"):
        conversation = api.post(
            f"{live_server.url}/api/v1/conversations/",
            data={"policy_number": policy},
            headers=headers,
        ).json()
        reply = api.post(
            f"{live_server.url}/api/v1/conversations/{conversation['id']}/messages/",
            data={"message": "Will my policy pay for a rental car while mine is repaired?"},
            headers=headers,
        ).json()
        assert reply["guidance_status"] == "answered", reply
        assert [c["version"] for c in reply["citations"]] == ["2026.2"] * len(reply["citations"])
        assert "MTR-BEN-03" in [c["clause_id"] for c in reply["citations"]]
