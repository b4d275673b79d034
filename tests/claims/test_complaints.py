"""Complaints and requests for a person go to a person, with the shortest deadline."""

import pytest

from claims.agent.intents import customer_intent
from claims.agent.types import CustomerIntent
from claims.models import PendingQuestion
from claims.selectors import answer_deadlines

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("message", "intent"),
    [
        ("I want to make a complaint", CustomerIntent.COMPLAINT),
        ("I'd like to complain about how my claim was handled", CustomerIntent.COMPLAINT),
        (
            "I am very unhappy with how my claim was handled and want to complain formally",
            CustomerIntent.COMPLAINT,
        ),
        ("I don't want to complain, but is my windscreen covered?", None),
        ("How do I take this to the Insurance and Financial Services Ombudsman?", "complaint"),
        ("Can I speak to a real person please", CustomerIntent.WANTS_PERSON),
        ("I want to talk to a human", CustomerIntent.WANTS_PERSON),
        ("Please call me back", CustomerIntent.WANTS_PERSON),
        ("Will my policy pay for a rental car while mine is repaired?", None),
        ("Am I covered if someone complains my tree damaged their fence?", None),
        ("What happens if I'm unhappy with the repairer's work?", None),
    ],
)
def test_complaints_and_requests_for_a_person_are_recognised(message, intent):
    assert customer_intent(message) == intent


@pytest.mark.parametrize(
    ("policy", "message", "status"),
    [
        ("NW-MTR-204518", "I want to make a complaint about my claim", "complaint"),
        (None, "I want to make a complaint", "complaint"),
        ("NW-HOM-310042", "Can I speak to a real person please?", "wants_person"),
    ],
)
def test_queued_with_its_own_reason_and_a_reply_that_promises_no_time(
    api_client, policy, message, status
):
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": policy} if policy else {}, format="json"
    ).json()["id"]
    body = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/", {"message": message}, format="json"
    ).json()
    assert body["guidance_status"] == status
    assert body["citations"] == []
    entry = PendingQuestion.objects.get(pk=body["pending_question"]["id"])
    assert entry.reason == status
    reply = body["reply"]
    assert f"(reference {entry.reference}) and a person will respond to it." in reply
    for when in ("today", "shortly", "soon", "hours", "days", "within"):
        assert when not in reply.lower()
    turn = api_client.get(f"/api/v1/conversations/{conversation}/").json()["turns"][-1]
    assert turn["guidance_status"] == status


def test_complaints_have_the_shortest_deadline():
    deadlines = answer_deadlines()
    assert deadlines["complaint"] == min(deadlines.values())
    assert deadlines["wants_person"] == min(deadlines.values())
