"""Answer cards in the claim agent turn, through the REST endpoint (seed 001 §4)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from claims.models import Turn
from knowledge.models import Card
from knowledge.services.cards import card_deprecate

COVERED = "NW-MTR-204518"  # lists alternative transport
NOT_COVERED = "NW-MTR-204577"


def _ask(api_client, message: str, policy: str = COVERED) -> dict:
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": policy}, format="json"
    ).json()
    response = api_client.post(
        f"/api/v1/conversations/{conversation['id']}/messages/", {"message": message}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_the_claims_line_hours_are_answered_from_a_card_and_cited(api_client):
    body = _ask(api_client, "what hours is the claims line open?")
    assert body["guidance_status"] == "answered"
    assert body["reply"].startswith("The claims line is open 24 hours, 7 days a week.")
    assert "QA-GEN-0001" in body["reply"]
    assert {
        "card_id": "QA-GEN-0001",
        "title": "What hours is the claims line open?",
        "sources": [],
    } in body["citations"]
    assert body["cards"]["returned"][0] == "QA-GEN-0001"
    assert body["pending_question"] is None
    assert len(body["cards"]["returned"]) + len(body["clauses"]["returned"]) <= 3
    turn = Turn.objects.get(pk=body["turn_id"])
    assert turn.card_returned_ids[0] == "QA-GEN-0001"
    assert turn.card_cited_ids == ["QA-GEN-0001"]
    card = Card.objects.get(card_id="QA-GEN-0001")
    assert (card.recall_count, card.cited_count) == (1, 1)
    assert card.last_returned_at == turn.created_at


def test_a_card_and_the_clause_it_rests_on_come_back_together(api_client):
    body = _ask(api_client, "how do I book the hire car?")
    assert body["cards"]["returned"][0] == "QA-MTR-0003"
    assert "MTR-BEN-03" in body["clauses"]["returned"]
    card_citation = next(c for c in body["citations"] if c.get("card_id") == "QA-MTR-0003")
    assert card_citation["sources"] == ["MTR-BEN-03"]
    assert any(c.get("clause_id") == "MTR-BEN-03" for c in body["citations"])
    assert body["reply"].index("Ask your assessor") < body["reply"].index("MTR-BEN-03 (")
    assert len(body["cards"]["returned"]) + len(body["clauses"]["returned"]) <= 3


def test_a_card_whose_required_schedule_section_is_missing_is_not_used(api_client):
    body = _ask(api_client, "how do I book the hire car?", policy=NOT_COVERED)
    assert "QA-MTR-0003" not in body["cards"]["returned"]
    assert not any(c.get("card_id") == "QA-MTR-0003" for c in body["citations"])


def test_deprecating_a_card_takes_it_out_of_the_next_turn(api_client):
    question = "what hours is the claims line open?"
    assert _ask(api_client, question)["cards"]["returned"][0] == "QA-GEN-0001"
    approver = get_user_model().objects.get(username="demo-approver")
    card_deprecate(card_id="QA-GEN-0001", acting_user=approver, reason="hours changed")
    body = _ask(api_client, question)
    assert "QA-GEN-0001" not in body["cards"]["requested"]
    assert not any(c.get("card_id") == "QA-GEN-0001" for c in body["citations"])


def test_a_we_do_not_answer_this_here_card_replaces_the_queue(api_client):
    body = _ask(api_client, "does my warranty from the dealer cover the gearbox")
    assert body["cards"]["returned"] == ["QA-GEN-0012"]
    assert body["clauses"]["requested"] == []
    assert body["pending_question"] is None
    assert body["reply"].startswith("A warranty is between you and the dealer.")


def test_a_clause_question_still_gets_its_clause(api_client):
    body = _ask(api_client, "Will my policy pay for a rental car while mine is repaired?")
    assert "MTR-BEN-03" in body["clauses"]["returned"]
    assert any(c.get("clause_id") == "MTR-BEN-03" for c in body["citations"])


def test_a_reply_rating_counts_on_the_cards_it_cited(api_client):
    body = _ask(api_client, "what hours is the claims line open?")
    turn = Turn.objects.get(pk=body["turn_id"])
    url = f"/api/v1/conversations/{turn.conversation_id}/messages/{turn.pk}/rating/"
    assert api_client.post(url, {"rating": "helpful"}, format="json").status_code == 201
    card = Card.objects.get(card_id="QA-GEN-0001")
    assert (card.helpful_count, card.not_helpful_count) == (1, 0)
    # the latest rating counts
    assert api_client.post(url, {"rating": "not_helpful"}, format="json").status_code == 201
    card.refresh_from_db()
    assert (card.helpful_count, card.not_helpful_count) == (0, 1)


def test_a_draft_wording_that_changes_a_cited_clause_leaves_the_card_serving_until_released(
    api_client,
):
    from datetime import date
    from pathlib import Path

    from knowledge.services.ingestion import wording_version_create, wording_version_ingest
    from knowledge.services.releases import release_approve, release_request

    users = get_user_model().objects
    wording = Path(__file__).resolve().parents[2] / "knowledge" / "content" / "wording"
    source = (wording / "NW-MOTOR-2026.2.md").read_text(encoding="utf-8")
    assert "up to NZD 60 a day" in source
    # given a draft version that changes MTR-BEN-03, which QA-MTR-0003 cites
    version = wording_version_create(
        document_id="NW-MOTOR",
        label="2027.1",
        source_bytes=source.replace("up to NZD 60 a day", "up to NZD 80 a day").encode(),
        filename="2027.1.md",
        effective_from=date(2027, 1, 1),
        effective_to=None,
        channels=["direct", "broker"],
        acting_user=users.get(username="demo-editor"),
        queue_ingestion=False,
    )
    assert wording_version_ingest(version_id=version.pk).outcome == "ingested"
    assert Card.objects.get(card_id="QA-MTR-0003").source_pending == {
        str(version.pk): "MTR-BEN-03 changes in NW-MOTOR 2027.1 (not yet released)."
    }
    # then the card still answers and is cited while the version is a draft
    body = _ask(api_client, "how do I book the hire car?")
    assert body["cards"]["returned"][0] == "QA-MTR-0003"
    assert any(c.get("card_id") == "QA-MTR-0003" for c in body["citations"])
    # when its release is approved, the card is flagged and leaves the next turn
    release = release_request(version_id=version.pk, acting_user=users.get(username="demo-editor"))
    release_approve(
        release_id=release.pk,
        acting_user=users.get(username="demo-approver"),
        gate_override_reason="the release gate is not under test here",
    )
    assert Card.objects.get(card_id="QA-MTR-0003").source_changed is True
    body = _ask(api_client, "how do I book the hire car?")
    assert "QA-MTR-0003" not in body["cards"]["requested"]
    assert not any(c.get("card_id") == "QA-MTR-0003" for c in body["citations"])


def test_a_how_to_question_is_still_led_by_its_card(api_client):
    body = _ask(api_client, "My car was stolen, what do I do?")
    assert body["cards"]["returned"][0] == "QA-MTR-0005"
    assert body["clauses"]["returned"][0] == "MTR-CLM-02"
    assert body["reply"].startswith("Yes: report it to the Police within 48 hours.")
