"""Queue agents work the pending-answers queue in the admin, through the services."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied

from claims.models import PendingQuestion
from claims.services import PendingQuestionError, pending_question_answer, pending_question_take

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry(api_client) -> PendingQuestion:
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": "NW-MTR-550001"}, format="json"
    ).json()["id"]
    body = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/",
        {"message": "Can I get a hire car while mine is fixed?"},
        format="json",
    ).json()
    return PendingQuestion.objects.get(pk=body["pending_question"]["id"])


@pytest.fixture
def agent_client(client, demo):
    assert client.login(username="demo-agent", password="northwind-agent-demo") is True
    return client


def test_queue_agent_filters_the_queue_by_reason_line_status_and_age(agent_client, entry):
    for query in (
        "",
        "?reason__exact=out_of_scope",
        "?line=motor",
        "?status__exact=open",
        "?age=1d",
    ):
        response = agent_client.get(f"/admin/claims/pendingquestion/{query}")
        assert response.status_code == 200, query
    listing = agent_client.get("/admin/claims/pendingquestion/?reason__exact=out_of_scope")
    assert entry.reference in listing.content.decode()
    other = agent_client.get("/admin/claims/pendingquestion/?reason__exact=no_clause")
    assert entry.reference not in other.content.decode()


def test_take_then_answer_in_the_admin(agent_client, entry):
    page = agent_client.get(f"/admin/claims/pendingquestion/{entry.pk}/change/")
    assert f'action="/admin/claims/pendingquestion/{entry.pk}/take/"' in page.content.decode()
    response = agent_client.post(f"/admin/claims/pendingquestion/{entry.pk}/take/", follow=True)
    assert f"{entry.reference} is yours." in response.content.decode()
    response = agent_client.post(
        f"/admin/claims/pendingquestion/{entry.pk}/answer/",
        {
            "answer": "Corporate fleet policies use the fleet wording; your account manager "
            "has the hire-car terms.",
            "proposed_content": "A card for fleet customers.",
        },
        follow=True,
    )
    assert response.status_code == 200
    entry.refresh_from_db()
    assert entry.status == "answered"
    assert entry.assignee.username == "demo-agent"
    assert entry.proposed_content == "A card for fleet customers."
    assert entry.history.count() == 3  # opened, taken, answered
    assert entry.history.first().history_change_reason == "Answered by demo-agent"


def test_dismiss_needs_a_reason(agent_client, entry):
    response = agent_client.post(
        f"/admin/claims/pendingquestion/{entry.pk}/dismiss/", {"reason": ""}
    )
    assert response.status_code == 200
    entry.refresh_from_db()
    assert entry.status == "open"
    agent_client.post(
        f"/admin/claims/pendingquestion/{entry.pk}/dismiss/",
        {"reason": "Duplicate of an earlier question."},
    )
    entry.refresh_from_db()
    assert entry.status == "dismissed"
    assert entry.dismiss_reason == "Duplicate of an earlier question."


def test_a_closed_entry_cannot_be_answered_again(agent_client, entry):
    agent = get_user_model().objects.get(username="demo-agent")
    pending_question_answer(entry_id=entry.pk, acting_user=agent, answer="Done.")
    response = agent_client.post(
        f"/admin/claims/pendingquestion/{entry.pk}/answer/", {"answer": "Again"}, follow=True
    )
    assert "only open entries change" in response.content.decode()
    entry.refresh_from_db()
    assert entry.staff_answer == "Done."


def test_an_entry_taken_by_someone_else_cannot_be_taken(entry):
    User = get_user_model()
    agent = User.objects.get(username="demo-agent")
    other = User.objects.create(username="agent-two", is_staff=True)
    other.groups.set(agent.groups.all())
    pending_question_take(entry_id=entry.pk, acting_user=agent)
    with pytest.raises(PendingQuestionError, match="already taken by demo-agent"):
        pending_question_take(entry_id=entry.pk, acting_user=User.objects.get(pk=other.pk))


def test_staff_without_the_queue_permission_cannot_work_it(entry):
    editor = get_user_model().objects.get(username="demo-editor")
    with pytest.raises(PermissionDenied, match="permission to work the pending-answers queue"):
        pending_question_take(entry_id=entry.pk, acting_user=editor)


def test_run_records_are_read_only_and_filterable(agent_client, entry):
    listing = agent_client.get("/admin/claims/turn/?guidance_status__exact=wording_not_routable")
    assert listing.status_code == 200
    assert "wording_not_routable" in listing.content.decode()
    turn = entry.turn
    page = agent_client.get(f"/admin/claims/turn/{turn.pk}/change/")
    assert page.status_code == 200
    assert agent_client.get("/admin/claims/turn/add/").status_code == 403


def test_the_admin_index_links_the_evaluation_page(agent_client, settings, tmp_path):
    index = agent_client.get("/admin/")
    assert 'href="/admin/reports/evaluation/"' in index.content.decode()
    # before any run: the evaluation page, which says what to do
    settings.VAR_DIR = tmp_path
    response = agent_client.get("/admin/reports/evaluation/latest/")
    assert response.status_code == 302
    assert response["Location"] == "/admin/reports/evaluation/"
    page = agent_client.get("/admin/reports/evaluation/").content.decode()
    assert "No evaluation report yet. Run <code>python manage.py evaluate</code>" in page
    assert "No release has been evaluated yet." in page
    # after runs: the newest report
    reports = tmp_path / "reports"
    reports.mkdir(exist_ok=True)
    (reports / "evaluation-20261101-000000.html").write_text("<h1>older</h1>")
    (reports / "evaluation-20261102-000000.html").write_text("<h1>newest</h1>")
    response = agent_client.get("/admin/reports/evaluation/latest/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"<h1>newest</h1>"


def test_taking_is_a_post_and_taking_twice_changes_nothing(agent_client, entry):
    url = f"/admin/claims/pendingquestion/{entry.pk}/take/"
    assert agent_client.get(url).status_code == 405
    agent_client.post(url)
    agent_client.post(url)
    entry.refresh_from_db()
    assert entry.assignee.username == "demo-agent"
    assert entry.history.count() == 2  # opened, taken once


def test_nobody_dismisses_an_entry_someone_else_has_taken(entry):
    from claims.services import pending_question_dismiss

    User = get_user_model()
    agent = User.objects.get(username="demo-agent")
    other = User.objects.create(username="agent-two", is_staff=True)
    other.groups.set(agent.groups.all())
    pending_question_take(entry_id=entry.pk, acting_user=agent)
    with pytest.raises(PendingQuestionError, match="is taken by demo-agent"):
        pending_question_dismiss(
            entry_id=entry.pk, acting_user=User.objects.get(pk=other.pk), reason="dup"
        )


def test_the_queue_lists_open_entries_first_and_finds_a_reference(agent_client, entry, api_client):
    agent = get_user_model().objects.get(username="demo-agent")
    pending_question_answer(entry_id=entry.pk, acting_user=agent, answer="Done.")
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": "NW-MTR-550001"}, format="json"
    ).json()["id"]
    newer = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/",
        {"message": "Is my windscreen covered?"},
        format="json",
    ).json()["pending_question"]["id"]
    listing = agent_client.get("/admin/claims/pendingquestion/").content.decode()
    assert listing.index(f"PQ-{newer}<") < listing.index(f"{entry.reference}<")
    found = agent_client.get(f"/admin/claims/pendingquestion/?q=pq-{newer}").content.decode()
    assert f"PQ-{newer}<" in found and f"{entry.reference}<" not in found


def test_an_answered_entry_is_proposed_as_a_draft_card(agent_client, entry):
    from knowledge.models import Card

    agent = get_user_model().objects.get(username="demo-agent")
    page = agent_client.get(f"/admin/claims/pendingquestion/{entry.pk}/change/").content.decode()
    assert "propose-card/" not in page  # open: nothing to propose yet
    response = agent_client.post(
        f"/admin/claims/pendingquestion/{entry.pk}/propose-card/", follow=True
    )
    assert "has no staff answer to propose as a card" in response.content.decode()
    assert not Card.objects.filter(from_pending_reference=entry.reference).exists()
    pending_question_take(entry_id=entry.pk, acting_user=agent)
    pending_question_answer(
        entry_id=entry.pk,
        acting_user=agent,
        answer="A hire car is included when you chose the Hire car option on your schedule.",
    )
    page = agent_client.get(f"/admin/claims/pendingquestion/{entry.pk}/change/").content.decode()
    assert f'action="/admin/claims/pendingquestion/{entry.pk}/propose-card/"' in page
    assert (
        agent_client.get(f"/admin/claims/pendingquestion/{entry.pk}/propose-card/").status_code
        == 405
    )
    response = agent_client.post(
        f"/admin/claims/pendingquestion/{entry.pk}/propose-card/", follow=True
    )
    card = Card.objects.get(from_pending_reference=entry.reference)
    assert f"{entry.reference} proposed as draft card {card.card_id}" in response.content.decode()
    assert card.status == Card.Status.DRAFT
    assert card.line == "motor"
    assert card.aliases == ["Can I get a hire car while mine is fixed?"]
    assert card.detail.startswith("A hire car is included")
    assert card.drafted_by == agent
    # Proposed once: the list action (like the button) says so and drafts nothing more.
    response = agent_client.post(
        "/admin/claims/pendingquestion/",
        {"action": "propose_card_selected", "_selected_action": [entry.pk]},
        follow=True,
    )
    assert f"is already proposed as card {card.card_id}" in response.content.decode()
    assert Card.objects.filter(from_pending_reference=entry.reference).count() == 1


def test_staff_without_the_queue_permission_cannot_propose_a_card(client, entry):
    from knowledge.models import Card

    entry.status, entry.staff_answer = "answered", "Yes, with the Hire car option."
    entry.save()
    assert client.login(username="demo-editor", password="northwind-editor-demo") is True
    response = client.post(f"/admin/claims/pendingquestion/{entry.pk}/propose-card/")
    assert response.status_code == 403
    response = client.post(
        "/admin/claims/pendingquestion/",
        {"action": "propose_card_selected", "_selected_action": [entry.pk]},
    )
    assert response.status_code == 403
    assert not Card.objects.filter(from_pending_reference=entry.reference).exists()
