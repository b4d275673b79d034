"""Answer cards (seed 001): ids, gates, maker-checker, index switching, sources, CSV."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from claims.agent.cards import CardContext, cards_retrieve
from knowledge.models import Card, CardIndexVersion, WordingVersion
from knowledge.services.cards import (
    CardContent,
    CardError,
    card_activate,
    card_create,
    card_deprecate,
    card_draft_from_pending,
    card_gates_check,
    card_health_flags,
    card_sources_review,
    card_update,
    cards_csv_export,
    cards_csv_import,
)
from knowledge.services.ingestion import (
    wording_version_create,
    wording_version_discard,
    wording_version_ingest,
)
from knowledge.services.releases import (
    release_approve,
    release_reject,
    release_request,
    release_withdraw,
)

MOTOR = CardContext(
    line="motor",
    sales_channel="direct",
    policy_status="active",
    coverage_sections=("alternative_transport",),
)
WORDING = Path(__file__).resolve().parents[2] / "knowledge" / "content" / "wording"


def _user(name: str):
    return get_user_model().objects.get(username=name)


def _content(**overrides) -> CardContent:
    editor = _user("demo-editor")
    fields = dict(
        line="motor",
        topic="tyres",
        question="Do you pay for a flat tyre?",
        aliases=[
            "is a puncture covered",
            "my tyre went flat, can I claim",
            "does insurance cover tyre punctures",
        ],
        conclusion="A puncture alone is wear and tear.",
        detail="Tyre damage from a puncture or a blow-out is not covered on its own; damage "
        "to tyres in an accident is part of the accident claim.",
        source_version_id=WordingVersion.objects.get(
            document__document_id="NW-MOTOR", label="2026.2"
        ).pk,
        source_clause_ids=["MTR-EXC-01"],
        owner_id=editor.pk,
        next_review_on=date(2027, 6, 30),
    )
    fields.update(overrides)
    return CardContent(**fields)


def test_the_demo_ships_active_cards_for_every_line_with_append_only_ids(demo):
    active = Card.objects.filter(status=Card.Status.ACTIVE)
    assert 30 <= active.count() <= 60
    assert {c.line for c in active} == {"", "motor", "home", "contents"}
    assert active.get(card_id="QA-GEN-0001").question == "What hours is the claims line open?"
    # the drafter and the activator are two people
    assert all(c.activated_by_id != c.drafted_by_id for c in active)


def test_card_ids_are_per_line_and_never_reused(demo):
    editor = _user("demo-editor")
    first = card_create(acting_user=editor, content=_content())
    second = card_create(acting_user=editor, content=_content(question="Is a blow-out covered?"))
    assert (first.card_id, second.card_id) == ("QA-MTR-0006", "QA-MTR-0007")
    Card.objects.filter(pk=second.pk).delete()  # even a row removed by hand
    third = card_create(acting_user=editor, content=_content(question="Tyre burst?"))
    assert third.card_id == "QA-MTR-0008"
    general = card_create(acting_user=editor, content=_content(line="", source_clause_ids=[]))
    assert general.card_id.startswith("QA-GEN-")


def test_the_person_who_drafted_a_card_cannot_activate_it(demo):
    admin = _user("demo-admin")  # may do everything, still not both halves
    card = card_create(acting_user=admin, content=_content())
    with pytest.raises(CardError, match="drafted a card cannot activate it"):
        card_activate(card_id=card.card_id, acting_user=admin)
    card.refresh_from_db()
    assert card.status == Card.Status.DRAFT
    # and the database refuses it whatever the path
    card.status, card.activated_by = Card.Status.ACTIVE, admin
    with pytest.raises(IntegrityError), transaction.atomic():
        card.save()


def test_an_editor_without_the_activate_permission_is_refused(demo):
    card = card_create(acting_user=_user("demo-editor"), content=_content())
    with pytest.raises(PermissionDenied, match="permission to activate"):
        card_activate(card_id=card.card_id, acting_user=_user("demo-editor-2"))


def test_a_complete_card_passes_its_gates_and_serves_from_the_next_turn(demo):
    card = card_create(acting_user=_user("demo-editor"), content=_content())
    assert cards_retrieve("my tyre went flat, can I claim", MOTOR).returned == ()
    results = {r.gate: r for r in card_gates_check(card=card)}
    assert all(r.passed for r in results.values()), results
    card_activate(card_id=card.card_id, acting_user=_user("demo-approver"))
    found = cards_retrieve("my tyre went flat, can I claim", MOTOR)
    assert [c.card_id for c in found.returned] == [card.card_id]
    card.refresh_from_db()
    assert card.source_clause_hashes.keys() == {"MTR-EXC-01"}


def test_a_near_duplicate_card_cannot_be_activated_unless_justified(demo):
    editor, approver = _user("demo-editor"), _user("demo-approver")
    card = card_create(
        acting_user=editor,
        content=_content(
            line="",
            topic="claims line",
            question="What time is the claims line open?",
            aliases=["claims phone hours", "can I call claims at night", "claims line times"],
            conclusion="Any time: the claims line never closes.",
            source_version_id=None,
            source_clause_ids=[],
            source_reference="contact-centre guide",
        ),
    )
    with pytest.raises(CardError, match="near-duplicate of QA-GEN-0001") as refused:
        card_activate(card_id=card.card_id, acting_user=approver)
    assert "merge the cards or say why" in str(refused.value)
    card.refresh_from_db()
    assert card.status == Card.Status.DRAFT
    assert {r["gate"]: r["passed"] for r in card.gate_results}["near_duplicate"] is False


def test_completeness_and_sources_gates_name_what_is_wrong(demo):
    card = card_create(
        acting_user=_user("demo-editor"),
        content=_content(
            question="Do you pay for a flat tyre or a blow-out on the motorway at night?",
            aliases=["puncture"],
            conclusion="See above.",
            source_clause_ids=["MTR-EXC-99"],
        ),
    )
    results = {r.gate: r for r in card_gates_check(card=card)}
    detail = results["completeness"].detail
    assert results["completeness"].passed is False
    assert "question is 66 characters (at most 50)" in detail
    assert "1 aliases (3 to 8)" in detail
    assert "not self-contained" in detail
    assert results["sources"].passed is False
    assert "has no clause MTR-EXC-99" in results["sources"].detail


def test_a_card_that_decides_a_claim_fails_completeness(demo):
    card = card_create(
        acting_user=_user("demo-editor"),
        content=_content(conclusion="Yes, we will pay for your tyre."),
    )
    result = card_gates_check(card=card)[0]
    assert result.passed is False
    assert "decides a claim" in result.detail


def test_deprecating_a_card_takes_it_out_of_the_next_turns_candidates(demo):
    question = "what hours is the claims line open?"
    assert cards_retrieve(question, MOTOR).returned[0].card_id == "QA-GEN-0001"
    card_deprecate(card_id="QA-GEN-0001", acting_user=_user("demo-approver"), reason="moved")
    after = cards_retrieve(question, MOTOR)
    assert "QA-GEN-0001" not in after.requested
    card = Card.objects.get(card_id="QA-GEN-0001")
    assert card.status == Card.Status.DEPRECATED  # kept, out of the index
    with pytest.raises(CardError, match="deprecated and kept"):
        card_update(card_id="QA-GEN-0001", acting_user=_user("demo-editor"), content=_content())


def test_editing_an_active_card_makes_it_a_draft_for_someone_else_to_activate(demo):
    content = CardContent.of(Card.objects.get(card_id="QA-MTR-0002"))
    content.detail += " Ask us if you are unsure."
    question = "Can I cancel my car policy for a full refund?"
    assert cards_retrieve(question, MOTOR).returned[0].card_id == "QA-MTR-0002"
    card = card_update(card_id="QA-MTR-0002", acting_user=_user("demo-editor-2"), content=content)
    assert (card.status, card.drafted_by.username) == (Card.Status.DRAFT, "demo-editor-2")
    assert "QA-MTR-0002" not in cards_retrieve(question, MOTOR).requested
    card_activate(card_id="QA-MTR-0002", acting_user=_user("demo-approver"))
    assert cards_retrieve(question, MOTOR).returned[0].card_id == "QA-MTR-0002"


def test_a_required_condition_filters_and_an_optional_one_lowers_the_rank(demo):
    hire = "how do I book the hire car"
    listed = cards_retrieve(hire, MOTOR)
    assert listed.returned[0].card_id == "QA-MTR-0003"
    not_listed = cards_retrieve(hire, CardContext(line="motor", coverage_sections=()))
    assert "QA-MTR-0003" not in [c.card_id for c in not_listed.returned]
    assert ("QA-MTR-0003", "schedule section alternative_transport") in not_listed.filtered
    home = cards_retrieve(hire, CardContext(line="home"))
    assert "QA-MTR-0003" not in [c.card_id for c in home.returned]


def _motor_2026_3(
    label: str = "2026.3", effective_from: date = date(2027, 1, 1), change_clm: bool = True
) -> WordingVersion:
    """An ingested, unreleased motor version without MTR-GEN-02 (cited by
    QA-MTR-0002) and with MTR-CLM-02 (cited by QA-MTR-0005) changed."""
    source = (WORDING / "NW-MOTOR-2026.2.md").read_text(encoding="utf-8")
    source = source[: source.index("## MTR-GEN-02")]
    if change_clm:
        source = source.replace("within 48 hours of finding out", "within 72 hours of finding out")
    version = wording_version_create(
        document_id="NW-MOTOR",
        label=label,
        source_bytes=source.encode(),
        filename=f"{label}.md",
        effective_from=effective_from,
        effective_to=None,
        channels=["direct", "broker"],
        acting_user=_user("demo-editor"),
        queue_ingestion=False,
    )
    assert wording_version_ingest(version_id=version.pk).outcome == "ingested"
    return version


def _approve(version: WordingVersion):
    """Request and approve `version`'s release (the gate is not under test here)."""
    release = release_request(version_id=version.pk, acting_user=_user("demo-editor"))
    release_approve(
        release_id=release.pk,
        acting_user=_user("demo-approver"),
        gate_override_reason="the release gate is not under test here",
    )
    return release


def test_an_ingested_version_only_warns_until_its_release_is_approved(demo):
    question = "Can I cancel my car policy for a full refund?"
    # given an ingested version that drops and changes cited clauses
    version = _motor_2026_3()
    # then the cards carry a warning and still serve
    dropped = Card.objects.get(card_id="QA-MTR-0002")
    assert dropped.source_changed is False
    assert card_health_flags(dropped) == [
        "Source changes pending: MTR-GEN-02 not in NW-MOTOR 2026.3 (not yet released)."
    ]
    changed = Card.objects.get(card_id="QA-MTR-0005")
    assert changed.source_pending == {
        str(version.pk): "MTR-CLM-02 changes in NW-MOTOR 2026.3 (not yet released)."
    }
    assert Card.objects.get(card_id="QA-MTR-0001").source_pending == {}
    assert cards_retrieve(question, MOTOR).returned[0].card_id == "QA-MTR-0002"
    # when its release is rejected, the warning goes
    release = release_request(version_id=version.pk, acting_user=_user("demo-editor"))
    release_reject(release_id=release.pk, acting_user=_user("demo-approver"), reason="not yet")
    assert Card.objects.get(card_id="QA-MTR-0002").source_pending == {}
    # and comes back when it is requested again
    release = release_request(version_id=version.pk, acting_user=_user("demo-editor"))
    assert str(version.pk) in Card.objects.get(card_id="QA-MTR-0002").source_pending
    # when it is approved, the card is flagged and leaves the index
    stamp = CardIndexVersion.objects.get(pk=1).stamp
    release_approve(
        release_id=release.pk,
        acting_user=_user("demo-approver"),
        gate_override_reason="the release gate is not under test here",
    )
    dropped = Card.objects.get(card_id="QA-MTR-0002")
    assert (dropped.source_changed, dropped.source_pending) == (True, {})
    assert CardIndexVersion.objects.get(pk=1).stamp != stamp
    assert "QA-MTR-0002" not in cards_retrieve(question, MOTOR).requested


def test_discarding_an_unreleased_version_clears_its_warning(demo):
    version = _motor_2026_3()
    assert Card.objects.get(card_id="QA-MTR-0002").source_pending != {}
    wording_version_discard(
        version_id=version.pk, acting_user=_user("demo-editor"), reason="uploaded by mistake"
    )
    card = Card.objects.get(card_id="QA-MTR-0002")
    assert (card.source_changed, card.source_pending, card_health_flags(card)) == (False, {}, [])


def test_withdrawing_the_release_that_flagged_a_card_puts_it_back_in_the_index(demo):
    question = "Can I cancel my car policy for a full refund?"
    release = _approve(_motor_2026_3())
    assert Card.objects.get(card_id="QA-MTR-0002").source_changed is True
    stamp = CardIndexVersion.objects.get(pk=1).stamp
    # when the approver withdraws it, the wording the card rests on serves again
    release_withdraw(
        release_id=release.pk,
        acting_user=_user("demo-approver"),
        reason="approved by mistake",
        confirm_unrouted=True,
    )
    for card_id in ("QA-MTR-0002", "QA-MTR-0005"):
        card = Card.objects.get(card_id=card_id)
        assert (card.source_changed, card.source_change_note) == (False, "")
        assert card.history.first().history_change_reason == (
            "Source flag lifted: NW-MOTOR 2026.3 withdrawn"
        )
    assert CardIndexVersion.objects.get(pk=1).stamp != stamp
    assert cards_retrieve(question, MOTOR).returned[0].card_id == "QA-MTR-0002"


def test_a_card_stays_flagged_while_another_approved_version_still_drops_its_clause(demo):
    first = _approve(_motor_2026_3())
    _approve(_motor_2026_3("2026.4", date(2027, 6, 1), change_clm=False))
    release_withdraw(
        release_id=first.pk,
        acting_user=_user("demo-approver"),
        reason="approved by mistake",
        confirm_unrouted=True,
    )
    # 2026.4 drops MTR-GEN-02 too, but keeps MTR-CLM-02 as 2026.2 has it
    dropped = Card.objects.get(card_id="QA-MTR-0002")
    assert dropped.source_changed is True
    assert dropped.source_change_note == "MTR-GEN-02 no longer in NW-MOTOR 2026.4."
    assert Card.objects.get(card_id="QA-MTR-0005").source_changed is False


def test_a_released_version_that_drops_or_changes_a_cited_clause_flags_the_card(demo):
    # given a version that drops MTR-GEN-02 and changes MTR-CLM-02
    version = _motor_2026_3()
    # when its release is approved
    _approve(version)
    # then the cards citing them are flagged and out of the index; the others are not
    dropped = Card.objects.get(card_id="QA-MTR-0002")
    assert dropped.source_changed is True
    assert dropped.source_change_note == "MTR-GEN-02 no longer in NW-MOTOR 2026.3."
    changed = Card.objects.get(card_id="QA-MTR-0005")
    assert changed.source_change_note == "MTR-CLM-02 changed in NW-MOTOR 2026.3."
    assert Card.objects.get(card_id="QA-MTR-0001").source_changed is False
    question = "Can I cancel my car policy for a full refund?"
    assert "QA-MTR-0002" not in cards_retrieve(question, MOTOR).requested
    # a review against a version that lacks the clause is refused; against
    # one that has it (changed), the card serves again
    with pytest.raises(CardError, match="has no clause MTR-GEN-02"):
        card_sources_review(
            card_id="QA-MTR-0002",
            acting_user=_user("demo-approver"),
            version_id=version.pk,
            reason="checked",
        )
    card_sources_review(
        card_id="QA-MTR-0005",
        acting_user=_user("demo-approver"),
        version_id=version.pk,
        reason="the card does not quote the hours",
    )
    found = cards_retrieve("Do I need a Police report for a stolen car?", MOTOR)
    assert found.returned[0].card_id == "QA-MTR-0005"


def test_csv_export_then_import_changes_nothing(demo):
    editor = _user("demo-editor")
    exported = cards_csv_export(Card.objects.all())
    result = cards_csv_import(data=exported.encode(), acting_user=editor)
    assert result.errors == []
    assert result.created == [] and result.updated == []
    assert len(result.unchanged) == Card.objects.count()
    assert Card.objects.filter(status=Card.Status.ACTIVE).count() == len(result.unchanged)


def test_a_csv_with_a_bad_row_imports_nothing_and_names_the_row(demo):
    editor = _user("demo-editor")
    header = "question,conclusion,line,aliases,source_document,source_version,next_review_on\n"
    rows = (
        'How do I claim for a windscreen?,Call us or claim online.,motor,"a|b|c",,,\n'
        "Another card,Some answer.,boat,,,,\n"
        "Third,Answer here.,motor,,NW-MOTOR,2031.9,tomorrow\n"
    )
    before = Card.objects.count()
    result = cards_csv_import(data=(header + rows).encode(), acting_user=editor)
    assert Card.objects.count() == before
    assert any(e.startswith("Row 3: Line 'boat'") for e in result.errors), result.errors
    assert any("Row 4: there is no wording version NW-MOTOR 2031.9" in e for e in result.errors)
    assert cards_csv_import(data=b"\xff\xfe", acting_user=editor).errors == [
        "The file is not UTF-8 text (save the spreadsheet as CSV UTF-8)."
    ]


@pytest.mark.parametrize(
    "data, error",
    [
        (b"", "The header lacks conclusion, question"),
        (b"question,conclusion\nWhen is the office open\x00?,Nine to five.\n", "U+0000 (NUL)"),
        (b"question,conclusion\nOpen?,Nine\x1bto five.\n", "U+001B (ESC)"),
        ("question,conclusion\nOpen?,Nine\u2028to five.\n".encode(), "U+2028"),
        ("question,conclusion\nCaf\xe9?,Yes.\n".encode("latin-1"), "not UTF-8"),
        (b"question,conclusion\n" + b"a,b\n" * 300_000, "at most 1024 KB"),
    ],
    ids=["empty", "nul", "escape", "line-separator", "latin-1", "huge"],
)
def test_a_csv_no_card_can_hold_is_refused_with_a_clear_error(demo, data, error):
    """PostgreSQL cannot store a NUL: it is refused before anything is written."""
    before = Card.objects.count()
    result = cards_csv_import(data=data, acting_user=_user("demo-editor"))
    assert any(error in e for e in result.errors), result.errors
    assert result.created == [] and Card.objects.count() == before


def test_a_staff_answer_in_the_queue_becomes_a_draft_card(demo):
    from claims.models import Conversation, PendingQuestion

    conversation = Conversation.objects.create(client=_user("demo-client"))
    entry = PendingQuestion.objects.create(
        conversation=conversation,
        question="can i get my excess back if the other driver pays",
        reason="no_clause",
        line="motor",
        status="answered",
        staff_answer="Yes, once we recover the cost from the other driver's insurer. We refund "
        "your excess when the recovery succeeds.",
    )
    card = card_draft_from_pending(entry_id=entry.pk, acting_user=_user("demo-editor"))
    assert card.status == Card.Status.DRAFT
    assert card.card_id.startswith("QA-MTR-")
    assert card.from_pending_reference == entry.reference
    assert card.confidence_hint == Card.Confidence.LOW
    assert "can i get my excess back" in card.aliases[0]
    assert card.detail.startswith("Yes, once we recover")


def test_the_admin_imports_a_csv_and_shows_row_errors_without_importing(demo, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(_user("demo-editor"))
    before = Card.objects.count()
    bad = SimpleUploadedFile(
        "cards.csv", b"question,conclusion,line\nA question?,An answer.,boat\n"
    )
    page = client.post("/admin/knowledge/card/import/", {"file": bad})
    assert page.status_code == 200
    assert "Row 2: Line &#x27;boat&#x27;" in page.content.decode()
    assert Card.objects.count() == before
    good = SimpleUploadedFile(
        "cards.csv",
        b"question,conclusion,line,aliases\nIs a puncture covered?,Not on its own.,motor,a|b|c\n",
    )
    done = client.post("/admin/knowledge/card/import/", {"file": good})
    assert done.status_code == 302
    card = Card.objects.get(question="Is a puncture covered?")
    assert (card.status, card.drafted_by.username) == (Card.Status.DRAFT, "demo-editor")
    exported = client.get("/admin/knowledge/card/export/")
    assert exported["Content-Type"].startswith("text/csv")
    assert card.card_id in exported.content.decode()
