"""The health page shows the day's activity per line, drawn as SVG on the server."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from claims.health import line_health
from claims.services import pending_question_answer

pytestmark = pytest.mark.django_db


def _say(api_client, policy, message) -> dict:
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": policy}, format="json"
    ).json()["id"]
    body = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/", {"message": message}, format="json"
    ).json()
    body["conversation"] = conversation
    return body


@pytest.fixture
def activity(api_client):
    answered = _say(api_client, "NW-MTR-204518", "Will my policy pay for a rental car?")
    nothing = _say(
        api_client, "NW-MTR-204518", "Is there any cover for vet bills for my pet llama?"
    )
    api_client.post(
        f"/api/v1/conversations/{answered['conversation']}/messages/{answered['turn_id']}/rating/",
        {"rating": "helpful"},
        format="json",
    )
    agent = get_user_model().objects.get(username="demo-agent")
    pending_question_answer(
        entry_id=nothing["pending_question"]["id"], acting_user=agent, answer="Animals: no."
    )
    return answered, nothing


def test_todays_figures_per_line(activity):
    health = line_health(line="motor")
    today = health.days[-1]
    assert today.day == timezone.localdate()
    assert len(health.days) == 30
    assert today.turns == 2
    assert today.answered == 1
    assert today.answered_rate == 0.5
    assert today.inflow == 1 and today.outflow == 1
    assert today.median_answer_hours is not None and today.median_answer_hours < 1
    assert (today.rated, today.helpful) == (1, 1)
    assert today.overdue == 0
    assert "MTR-BEN-03" not in [clause_id for clause_id, _ in health.never_selected]
    assert len(health.never_selected) > 10  # two questions select few of ~30 clauses
    assert line_health(line="home").days[-1].turns == 0


def test_health_page_for_editors_and_leads_not_agents(client, activity):
    assert client.login(username="demo-agent", password="northwind-agent-demo") is True
    assert client.get("/admin/claims/turn/health/").status_code == 403
    client.logout()
    assert client.login(username="demo-lead", password="northwind-lead-demo") is True
    page = client.get("/admin/claims/turn/health/?line=motor").content.decode()
    assert page.count("<svg") >= 9
    assert "http://www.w3.org/2000/svg" in page
    assert "cdn" not in page.lower()
    assert "Queue inflow" in page and "Clauses never selected in 30 days" in page
    assert "<th>Turns</th><td>2</td>" in page
    index = client.get("/admin/").content.decode()
    assert "/admin/claims/turn/health/" in index
