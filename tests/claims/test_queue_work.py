"""The queue as staff run it: overview, deadlines, release and reassign, bulk
actions, evidence with clause links, and the same permission on every page."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from claims.models import AnswerDeadline, PendingQuestion
from claims.services import (
    PendingQuestionError,
    pending_question_reassign,
    pending_question_release,
    pending_question_take,
)

pytestmark = pytest.mark.django_db

PASSWORDS = {
    "demo-agent": "northwind-agent-demo",
    "demo-lead": "northwind-lead-demo",
    "demo-editor": "northwind-editor-demo",
    "demo-approver": "northwind-approver-demo",
}


def _ask(api_client, policy, message) -> PendingQuestion:
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": policy}, format="json"
    ).json()["id"]
    body = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/", {"message": message}, format="json"
    ).json()
    return PendingQuestion.objects.get(pk=body["pending_question"]["id"])


@pytest.fixture
def entries(api_client):
    routed = _ask(api_client, "NW-MTR-204518", "Will you cover my pet llama's vet bills?")
    fleet = _ask(api_client, "NW-MTR-550001", "Can I get a hire car while mine is fixed?")
    return routed, fleet


def _login(client, username):
    assert client.login(username=username, password=PASSWORDS[username]) is True
    return client


def _user(username):
    return get_user_model().objects.get(username=username)


@pytest.mark.parametrize("username", ["demo-editor", "demo-approver"])
def test_every_queue_page_is_403_without_the_queue_permission(client, entries, username):
    entry = entries[0]
    _login(client, username)
    base = f"/admin/claims/pendingquestion/{entry.pk}"
    for url in [
        "/admin/claims/pendingquestion/",
        "/admin/claims/pendingquestion/overview/",
        f"{base}/change/",
        f"{base}/answer/",
        f"{base}/dismiss/",
    ]:
        assert client.get(url).status_code == 403, url
    for url in [f"{base}/take/", f"{base}/release/", f"{base}/answer/", f"{base}/dismiss/"]:
        assert client.post(url, {"answer": "x", "reason": "x"}).status_code == 403, url
    entry.refresh_from_db()
    assert entry.status == "open" and entry.assignee is None


def test_the_entry_page_offers_no_save_and_shows_evidence_with_clause_links(client, entries):
    routed, _ = entries
    _login(client, "demo-agent")
    page = client.get(f"/admin/claims/pendingquestion/{routed.pk}/change/").content.decode()
    assert 'name="_save"' not in page
    assert "Directory the model saw" in page
    assert "Guard findings" in page
    assert "pet llama" in page
    # A clause of the directory links to its text in the version the turn used.
    clause_url = re.search(r'href="(/admin/knowledge/clause/\d+/change/)"', page).group(1)
    clause_page = client.get(clause_url)
    assert clause_page.status_code == 200  # queue agents read clauses
    assert "Text (read from object storage)" in clause_page.content.decode()
    # Posting to the read-only page writes nothing.
    before = routed.history.count()
    client.post(f"/admin/claims/pendingquestion/{routed.pk}/change/", {})
    assert routed.history.count() == before


def test_overview_counts_by_reason_age_and_line_and_marks_overdue(client, entries):
    routed, fleet = entries
    # The fleet question has waited three days; its reason's deadline is 48 h.
    PendingQuestion.objects.filter(pk=fleet.pk).update(
        created_at=timezone.now() - timedelta(days=3, hours=1)
    )
    _login(client, "demo-agent")
    page = client.get("/admin/claims/pendingquestion/overview/").content.decode()
    assert "2</strong> open entries" in page
    assert "1 overdue" in page
    oldest = page[page.index('id="oldest"') :]
    assert oldest.index(fleet.reference) < oldest.index(routed.reference)  # oldest first
    assert "OVERDUE" in oldest[: oldest.index(routed.reference)]
    listing = client.get("/admin/claims/pendingquestion/?deadline=overdue").content.decode()
    assert fleet.reference in listing and routed.reference not in listing

    # A lead shortens the routed entry's reason to 1 hour: it is overdue an hour later.
    AnswerDeadline.objects.create(reason=routed.reason, hours=1)
    PendingQuestion.objects.filter(pk=routed.pk).update(
        created_at=timezone.now() - timedelta(hours=2)
    )
    page = client.get("/admin/claims/pendingquestion/overview/").content.decode()
    assert "2 overdue" in page


def test_release_and_reassign_rules(entries):
    entry = entries[0]
    agent, lead = _user("demo-agent"), _user("demo-lead")
    other = get_user_model().objects.create(username="agent-three", is_staff=True)
    other.groups.set(agent.groups.all())
    other = _user("agent-three")

    pending_question_take(entry_id=entry.pk, acting_user=agent)
    with pytest.raises(PermissionDenied, match="Only the agent who took PQ-"):
        pending_question_release(entry_id=entry.pk, acting_user=other)
    with pytest.raises(PermissionDenied, match="Only a queue lead can reassign"):
        pending_question_reassign(entry_id=entry.pk, acting_user=agent, assignee_id=other.pk)
    editor = _user("demo-editor")
    with pytest.raises(PendingQuestionError, match="active queue agent"):
        pending_question_reassign(entry_id=entry.pk, acting_user=lead, assignee_id=editor.pk)

    pending_question_reassign(entry_id=entry.pk, acting_user=lead, assignee_id=other.pk)
    entry.refresh_from_db()
    assert entry.assignee == other
    pending_question_release(entry_id=entry.pk, acting_user=other)
    entry.refresh_from_db()
    assert entry.assignee is None
    reasons = [h.history_change_reason for h in entry.history.order_by("history_id")]
    assert reasons[1:] == [
        "Taken by demo-agent",
        "Reassigned to agent-three by demo-lead (was demo-agent)",
        "Released by agent-three",
    ]


def test_lead_reassigns_in_the_browser_form_and_bulk_actions_dismiss_and_take(client, entries):
    routed, fleet = entries
    _login(client, "demo-lead")
    page = client.get(f"/admin/claims/pendingquestion/{routed.pk}/change/").content.decode()
    assert 'id="reassign-form"' in page
    agent = _user("demo-agent")
    client.post(f"/admin/claims/pendingquestion/{routed.pk}/reassign/", {"agent": agent.pk})
    routed.refresh_from_db()
    assert routed.assignee == agent

    # Bulk dismiss needs a reason; then both are closed, each with its history row.
    ids = [routed.pk, fleet.pk]
    client.post(
        "/admin/claims/pendingquestion/",
        {"action": "dismiss_selected", "_selected_action": ids, "reason": ""},
    )
    assert PendingQuestion.objects.filter(status="open").count() == 2
    response = client.post(
        "/admin/claims/pendingquestion/",
        {"action": "dismiss_selected", "_selected_action": ids, "reason": "Test questions."},
        follow=True,
    )
    # The lead may not dismiss an entry taken by someone else.
    assert f"{routed.reference}: {routed.reference} is taken by demo-agent." in (
        response.content.decode()
    )
    fleet.refresh_from_db()
    assert fleet.status == "dismissed"
    assert fleet.history.first().history_change_reason == "Dismissed by demo-lead: Test questions."


def test_agent_page_hides_reassign(client, entries):
    _login(client, "demo-agent")
    page = client.get(f"/admin/claims/pendingquestion/{entries[0].pk}/change/").content.decode()
    assert 'id="reassign-form"' not in page
    assert (
        client.post(
            f"/admin/claims/pendingquestion/{entries[0].pk}/reassign/", {"agent": 1}
        ).status_code
        == 403
    )
