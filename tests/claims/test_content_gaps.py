"""Knowledge editors see similar unanswered questions grouped, with the staff
answers and proposed text, and turn a gap into a draft clause of the next version."""

import pytest
from django.contrib.auth import get_user_model

from claims.gaps import content_gaps_listed, content_gaps_refresh
from claims.models import ContentGap
from claims.services import pending_question_answer
from knowledge.models import Clause, WordingVersion
from northwind.errors import PermissionDenied

pytestmark = pytest.mark.django_db

LLAMA = [
    "Is there any cover for vet bills for my pet llama?",
    "Is there any cover for vet bills for my pet alpaca?",
]
HAIL = "Does the wording say anything about a car wash scratching my paint?"


def _ask(api_client, message, policy="NW-MTR-204518") -> dict:
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": policy}, format="json"
    ).json()["id"]
    return api_client.post(
        f"/api/v1/conversations/{conversation}/messages/", {"message": message}, format="json"
    ).json()


@pytest.fixture
def gap(api_client):
    agent = get_user_model().objects.get(username="demo-agent")
    bodies = [_ask(api_client, message) for message in LLAMA]
    for body in bodies:
        assert body["pending_question"] is not None, body["reply"]
    pending_question_answer(
        entry_id=bodies[0]["pending_question"]["id"],
        acting_user=agent,
        answer="Motor policies do not cover animals.",
        proposed_content="We do not pay veterinary bills for any animal.",
    )
    # A reply rated not helpful is a candidate too, on its own line of questions.
    other = _ask(api_client, HAIL)
    turn = other["turn_id"]
    from claims.models import Turn

    rated = Turn.objects.get(pk=turn)
    response = api_client.post(
        f"/api/v1/conversations/{rated.conversation_id}/messages/{turn}/rating/",
        {"rating": "not_helpful", "comment": "It did not answer."},
        format="json",
    )
    assert response.status_code == 201
    assert content_gaps_refresh() == 3
    return ContentGap.objects.get(questions__turn_id=bodies[0]["turn_id"])


def test_similar_questions_are_one_gap_ranked_by_customers(gap):
    listed = list(content_gaps_listed())
    assert listed[0] == gap
    assert listed[0].customers == 2
    assert listed[0].has_proposal is True
    assert gap.questions.count() == 2
    assert content_gaps_refresh() == 0  # idempotent: nothing placed twice


def test_editor_accepts_a_gap_into_a_draft_clause_that_is_ingested(
    client, gap, django_capture_on_commit_callbacks
):
    assert client.login(username="demo-editor", password="northwind-editor-demo") is True
    listing = client.get("/admin/claims/contentgap/").content.decode()
    assert "llama" in listing
    page = client.get(f"/admin/claims/contentgap/{gap.pk}/change/").content.decode()
    assert "We do not pay veterinary bills for any animal." in page
    assert "Motor policies do not cover animals." in page
    form = client.get(f"/admin/claims/contentgap/{gap.pk}/accept/").content.decode()
    assert "We do not pay veterinary bills for any animal." in form  # prefilled
    serving = WordingVersion.objects.get(document__document_id="NW-MOTOR", label="2026.2")
    next_exc = 1 + max(
        int(c.split("-")[2])
        for c in Clause.objects.filter(clause_id__startswith="MTR-EXC-").values_list(
            "clause_id", flat=True
        )
    )
    clause_id = f"MTR-EXC-{next_exc:02d}"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/admin/claims/contentgap/{gap.pk}/accept/",
            {
                "clause_id": clause_id,
                "title": "Vet bills for pets, livestock and other animals are not covered",
                "kind": "exclusion",
                "schedule_section": "",
                "body": "We do not pay veterinary bills for any animal, including pets and "
                "livestock, whatever happened to your car.",
            },
            follow=True,
        )
    assert "ingestion is queued" in response.content.decode()
    gap.refresh_from_db()
    assert gap.status == "accepted"
    draft = gap.draft_version
    assert draft.label == "2026.2.1"
    assert draft.status == "ingested", draft.validation_errors
    ids = set(draft.clauses.values_list("clause_id", flat=True))
    assert clause_id in ids
    assert ids >= set(serving.clauses.values_list("clause_id", flat=True))
    assert draft.effective_from > serving.effective_from
    assert not draft.releases.exists()  # released only through the normal flow
    assert gap.history.first().history_change_reason == (
        f"Accepted by demo-editor: {clause_id} added in draft NW-MOTOR 2026.2.1"
    )


def test_reject_needs_a_reason_and_queue_agents_cannot_decide(client, gap):
    assert client.login(username="demo-agent", password="northwind-agent-demo") is True
    assert client.get("/admin/claims/contentgap/").status_code == 403
    assert (
        client.post(f"/admin/claims/contentgap/{gap.pk}/reject/", {"reason": "x"}).status_code
        == 403
    )
    client.logout()
    assert client.login(username="demo-editor", password="northwind-editor-demo") is True
    client.post(f"/admin/claims/contentgap/{gap.pk}/reject/", {"reason": ""})
    gap.refresh_from_db()
    assert gap.status == "open"
    client.post(f"/admin/claims/contentgap/{gap.pk}/reject/", {"reason": "Out of scope."})
    gap.refresh_from_db()
    assert gap.status == "rejected"
    assert gap.reject_reason == "Out of scope."


def test_editor_accepts_a_gap_into_a_draft_card_someone_else_must_activate(client, gap):
    from knowledge.models import Card
    from knowledge.services.cards import CardError, card_activate

    assert client.login(username="demo-editor", password="northwind-editor-demo") is True
    page = client.get(f"/admin/claims/contentgap/{gap.pk}/change/").content.decode()
    assert f"/admin/claims/contentgap/{gap.pk}/accept-card/" in page
    form = client.get(f"/admin/claims/contentgap/{gap.pk}/accept-card/").content.decode()
    assert 'value="Motor policies do not cover animals."' in form  # the staff answer, prefilled
    response = client.post(
        f"/admin/claims/contentgap/{gap.pk}/accept-card/",
        {"question": "Do you pay vet bills for my pet?", "conclusion": "No: not for any animal."},
        follow=True,
    )
    assert "Drafted answer card QA-MTR-" in response.content.decode()
    gap.refresh_from_db()
    assert gap.status == "accepted"
    assert gap.draft_version is None
    card = gap.draft_card
    assert card.status == Card.Status.DRAFT
    assert card.line == "motor"
    assert card.question == "Do you pay vet bills for my pet?"
    assert card.aliases == LLAMA  # every customer's (masked) question, once
    assert card.conclusion == "No: not for any animal."
    assert card.detail == "Motor policies do not cover animals."
    assert card.confidence_hint == Card.Confidence.LOW
    assert card.drafted_by.username == "demo-editor"
    assert card.history.first().history_change_reason == f"Drafted from content gap {gap.pk}"
    assert gap.history.first().history_change_reason == (
        f"Accepted by demo-editor into draft card {card.card_id}"
    )
    listing = client.get("/admin/claims/contentgap/?status__exact=accepted").content.decode()
    assert f"card {card.card_id}" in listing
    page = client.get(f"/admin/claims/contentgap/{gap.pk}/change/").content.decode()
    assert f"/admin/knowledge/card/{card.pk}/change/" in page
    assert "accept-card/" not in page  # decided: no more buttons
    # A second accept is refused and drafts nothing.
    cards = Card.objects.count()
    client.post(
        f"/admin/claims/contentgap/{gap.pk}/accept-card/",
        {"question": "Again?", "conclusion": "Again."},
    )
    assert Card.objects.count() == cards
    # The normal card path: its author never activates it; an approver runs the gates.
    editor = get_user_model().objects.get(username="demo-editor")
    with pytest.raises(PermissionDenied):
        card_activate(card_id=card.card_id, acting_user=editor)
    editor.groups.add(*get_user_model().objects.get(username="demo-approver").groups.all())
    editor = get_user_model().objects.get(pk=editor.pk)  # fresh permission cache
    with pytest.raises(CardError, match="drafted a card cannot activate it"):
        card_activate(card_id=card.card_id, acting_user=editor)
    approver = get_user_model().objects.get(username="demo-approver")
    with pytest.raises(CardError, match="alias"):  # two aliases: the completeness gate fails
        card_activate(card_id=card.card_id, acting_user=approver)
    card.refresh_from_db()
    assert card.status == Card.Status.DRAFT


def test_only_editors_accept_a_gap_into_a_card_and_only_with_an_answer(client, gap):
    from claims.gaps import ContentGapError, content_gap_accept_card

    assert client.login(username="demo-agent", password="northwind-agent-demo") is True
    assert client.get(f"/admin/claims/contentgap/{gap.pk}/accept-card/").status_code == 403
    response = client.post(
        f"/admin/claims/contentgap/{gap.pk}/accept-card/",
        {"question": "Vet bills?", "conclusion": "No."},
    )
    assert response.status_code == 403
    agent = get_user_model().objects.get(username="demo-agent")
    with pytest.raises(PermissionDenied):
        content_gap_accept_card(gap_id=gap.pk, acting_user=agent)
    gap.refresh_from_db()
    assert gap.status == "open"
    # The rated-not-helpful gap has no staff answer and no proposal: nothing to draft from.
    rated = ContentGap.objects.get(title=HAIL)
    editor = get_user_model().objects.get(username="demo-editor")
    with pytest.raises(ContentGapError, match="no staff answer or proposed text"):
        content_gap_accept_card(gap_id=rated.pk, acting_user=editor)
    client.logout()
    assert client.login(username="demo-editor", password="northwind-editor-demo") is True
    response = client.post(
        f"/admin/claims/contentgap/{rated.pk}/accept-card/",
        {"question": "Car wash scratches?", "conclusion": "Maybe."},
    )
    assert "no staff answer or proposed text" in response.content.decode()
    rated.refresh_from_db()
    assert rated.status == "open" and rated.draft_card is None
