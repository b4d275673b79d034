"""An editor uploads a wording version in a real browser: one honest state, a corrected file."""

from __future__ import annotations

import pytest

from knowledge.models import WordingVersion
from tests.conftest import REPO_ROOT

MOTOR = (REPO_ROOT / "knowledge/content/wording/NW-MOTOR-2026.2.md").read_text()
BARE = "## MTR-COV-02 - Write-off or total loss: how we settle when your car is not worth repairing"

pytestmark = pytest.mark.browser


def messages_on(page) -> list[tuple[str, str]]:
    """(level, text) of each message the admin shows."""
    return [
        (item.get_attribute("class") or "", item.inner_text().strip())
        for item in page.locator("ul.messagelist li").all()
    ]


def test_a_failed_upload_shows_one_state_and_takes_a_corrected_file(
    editor_page, screenshot, tmp_path
):
    page = editor_page
    assert BARE in MOTOR
    bad = tmp_path / "motor-bad.md"
    bad.write_text(MOTOR.replace(BARE, "## MTR-COV-02 - Total loss"))
    good = tmp_path / "motor.md"
    good.write_text(MOTOR)
    clauses = MOTOR.count("\n## ")

    # the editor uploads a malformed file under a new label
    page.goto("/admin/knowledge/wordingversion/add/")
    page.select_option("select[name=document_id]", "NW-MOTOR")
    page.fill("input[name=label]", "2026.4")
    page.set_input_files("input[name=source_file]", str(bad))
    page.fill("input[name=effective_from]", "2027-07-01")
    page.fill("input[name=effective_to]", "2028-07-01")
    page.uncheck("input[name=channels][value=direct]")
    screenshot(page, "upload-form")
    page.click("input[name=_save]")

    # the version's page says one thing: it failed (no green "queued" beside it)
    page.wait_for_selector("ul.messagelist")
    screenshot(page, "failed-version")
    shown = messages_on(page)
    assert shown == [
        (
            "error",
            "NW-MOTOR 2026.4 failed ingestion with 1 error(s); nothing was published. Fix the "
            "source and upload a corrected file under the same label.",
        )
    ]
    assert "is a bare label" in page.locator("#content-main").inner_text()

    # "Upload a corrected file" opens the form filled in for this version
    page.get_by_role("link", name="Upload a corrected file").click()
    page.wait_for_selector("input[name=source_file]")
    screenshot(page, "corrected-upload-form")
    assert page.input_value("input[name=label]") == "2026.4"
    assert page.input_value("select[name=document_id]") == "NW-MOTOR"
    assert page.input_value("input[name=effective_from]") == "2027-07-01"
    assert page.input_value("input[name=effective_to]") == "2028-07-01"
    assert page.is_checked("input[name=channels][value=broker]") is True
    assert page.is_checked("input[name=channels][value=direct]") is False

    # the corrected file replaces the failed version under the same label
    page.set_input_files("input[name=source_file]", str(good))
    page.click("input[name=_save]")
    page.wait_for_selector("ul.messagelist")
    screenshot(page, "ingested-version")
    assert messages_on(page) == [
        (
            "success",
            f"NW-MOTOR 2026.4 uploaded and ingested: {clauses} clauses. Check them below, then "
            "request a release.",
        )
    ]
    assert page.get_by_role("link", name="Upload a corrected file").count() == 0
    versions = WordingVersion.objects.filter(label="2026.4")
    assert versions.count() == 1
    assert versions.get().status == "ingested"
    assert versions.get().channels == ["broker"]
