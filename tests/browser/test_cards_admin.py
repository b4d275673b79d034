"""The answer card admin in a real browser: list, gates on the page, maker-checker."""

from __future__ import annotations

import pytest

from knowledge.models import Card

pytestmark = pytest.mark.browser


def test_an_editor_drafts_a_card_sees_its_gates_and_an_approver_activates_it(
    staff_page, screenshot
):
    editor = staff_page("editor")
    editor.goto("/admin/knowledge/card/")
    screenshot(editor, "card-list")
    assert "QA-GEN-0001" in editor.locator("#result_list").inner_text()
    assert editor.get_by_role("link", name="Import CSV").is_visible()

    # the editor drafts a card
    editor.goto("/admin/knowledge/card/add/")
    editor.select_option("#id_line", "motor")
    editor.fill("#id_topic", "tyres")
    editor.fill("#id_question", "Do you pay for a flat tyre?")
    editor.fill(
        "#id_aliases",
        "is a puncture covered\nmy tyre went flat, can I claim\ndoes insurance cover punctures",
    )
    editor.fill("#id_conclusion", "A puncture alone is wear and tear.")
    editor.fill(
        "#id_detail",
        "Tyre damage from a puncture or a blow-out is not covered on its own; damage to "
        "tyres in an accident is part of the accident claim.",
    )
    editor.select_option("#id_source_version", label="NW-MOTOR 2026.2")
    editor.fill("#id_source_clause_ids", "MTR-EXC-01")
    editor.select_option("#id_owner", label="demo-editor")
    editor.fill("#id_next_review_on", "2027-06-30")
    screenshot(editor, "card-add-form")
    editor.locator("input[name=_continue]").click()
    card = Card.objects.get(question="Do you pay for a flat tyre?")
    gates = editor.locator(".card-gates").inner_text()
    screenshot(editor, "card-draft-with-gates")
    assert card.status == Card.Status.DRAFT
    for gate in ("completeness", "near duplicate", "answerability", "sources"):
        assert gate in gates
    assert "FAIL" not in gates

    # the editor may not activate (no permission); the approver does
    approver = staff_page("approver")
    approver.goto("/admin/knowledge/card/?status__exact=draft")
    approver.locator(f"input[name=_selected_action][value='{card.pk}']").check()
    approver.select_option("select[name=action]", "activate")
    approver.fill("input[name=reason]", "checked against MTR-EXC-01")
    approver.locator("button[name=index]").click()
    screenshot(approver, "card-activated")
    assert (
        f"{card.card_id}: active from the next turn"
        in approver.locator(".messagelist").inner_text()
    )
    card.refresh_from_db()
    assert card.status == Card.Status.ACTIVE


def test_a_near_duplicate_card_shows_why_it_cannot_be_activated(staff_page, screenshot):
    admin = staff_page("admin")
    admin.goto("/admin/knowledge/card/add/")
    admin.fill("#id_topic", "claims line")
    admin.fill("#id_question", "What time is the claims line open?")
    admin.fill("#id_aliases", "claims phone hours\ncan I call claims at night\nclaims line times")
    admin.fill("#id_conclusion", "Any time: the claims line never closes.")
    admin.fill("#id_source_reference", "contact-centre guide")
    admin.select_option("#id_owner", label="demo-editor")
    admin.fill("#id_next_review_on", "2027-06-30")
    admin.locator("input[name=_continue]").click()
    gates = admin.locator(".card-gates").inner_text()
    screenshot(admin, "near-duplicate-gate")
    assert "near-duplicate of QA-GEN-0001" in gates
    card = Card.objects.get(question="What time is the claims line open?")
    # its author cannot activate it, whatever permissions they hold
    admin.goto("/admin/knowledge/card/?status__exact=draft")
    admin.locator(f"input[name=_selected_action][value='{card.pk}']").check()
    admin.select_option("select[name=action]", "activate")
    admin.locator("button[name=index]").click()
    screenshot(admin, "author-cannot-activate")
    message = admin.locator(".messagelist").inner_text()
    assert "drafted a card cannot activate it" in message
    card.refresh_from_db()
    assert card.status == Card.Status.DRAFT
