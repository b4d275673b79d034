"""A client reads its conversation as it grows: messages in order, staff answers
included, pending questions with their status, and only what is new after a cursor."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model

from claims.models import ReplyRating, Turn
from claims.services import pending_question_answer

pytestmark = pytest.mark.django_db

ANSWER = "Corporate fleet policies use the fleet wording; your account manager has the terms."


def _start(api_client, policy_number="NW-MTR-550001") -> int:
    return api_client.post(
        "/api/v1/conversations/", {"policy_number": policy_number}, format="json"
    ).json()["id"]


def _say(api_client, conversation, message) -> dict:
    response = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/", {"message": message}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_messages_in_order_with_the_staff_answer_and_the_pending_status(api_client):
    conversation = _start(api_client)
    body = _say(api_client, conversation, "Can I get a hire car while mine is fixed?")
    entry_id = body["pending_question"]["id"]

    before = api_client.get(f"/api/v1/conversations/{conversation}/").json()
    assert [m["role"] for m in before["messages"]] == ["customer", "agent"]
    assert before["messages"][1]["pending_reference"] == f"PQ-{entry_id}"
    assert before["messages"][1]["turn_id"] == body["turn_id"]
    assert before["pending_questions"] == [
        {
            "reference": f"PQ-{entry_id}",
            "status": "open",
            "reason": "out_of_scope",
            "created_at": before["pending_questions"][0]["created_at"],
            "answered_at": None,
            "updated_at": before["pending_questions"][0]["updated_at"],
        }
    ]
    cursor = before["cursor"]
    nothing_new = api_client.get(f"/api/v1/conversations/{conversation}/?after={cursor}").json()
    assert nothing_new["messages"] == []
    assert nothing_new["pending_questions"] == []
    assert nothing_new["cursor"] == cursor

    agent = get_user_model().objects.get(username="demo-agent")
    pending_question_answer(entry_id=entry_id, acting_user=agent, answer=ANSWER)

    after = api_client.get(f"/api/v1/conversations/{conversation}/?after={cursor}").json()
    assert after["messages"] == [
        {
            "role": "staff",
            "text": ANSWER,
            "at": after["messages"][0]["at"],
            "pending_reference": f"PQ-{entry_id}",
        }
    ]
    assert after["pending_questions"][0]["status"] == "answered"
    assert after["pending_questions"][0]["answered_at"] == after["messages"][0]["at"]
    assert after["turns"] == []
    assert "demo-agent" not in str(after)

    whole = api_client.get(f"/api/v1/conversations/{conversation}/").json()
    assert [m["role"] for m in whole["messages"]] == ["customer", "agent", "staff"]
    assert whole["cursor"] > cursor  # same width: the cursors compare as strings too


def test_a_turn_stored_after_a_newer_staff_answer_is_not_skipped(api_client):
    """The cursor counts changes in the order they were stored, not by their times.

    A turn that started before a staff answer but was stored after the client
    polled (a slow model, a busy database) still comes after that cursor.
    """
    conversation = _start(api_client)
    entry_id = _say(api_client, conversation, "Can I get a hire car while mine is fixed?")[
        "pending_question"
    ]["id"]
    agent = get_user_model().objects.get(username="demo-agent")
    answered = pending_question_answer(entry_id=entry_id, acting_user=agent, answer=ANSWER)
    cursor = api_client.get(f"/api/v1/conversations/{conversation}/").json()["cursor"]

    late = _say(api_client, conversation, "And a courtesy car?")
    Turn.objects.filter(pk=late["turn_id"]).update(
        created_at=answered.closed_at - timedelta(seconds=5)
    )

    after = api_client.get(f"/api/v1/conversations/{conversation}/?after={cursor}").json()
    assert [t["turn_id"] for t in after["turns"]] == [late["turn_id"]]
    assert [m["role"] for m in after["messages"]] == ["customer", "agent"]
    assert after["cursor"] > cursor


def test_a_time_cursor_of_an_earlier_release_still_reads_by_time(api_client):
    conversation = _start(api_client)
    _say(api_client, conversation, "Can I get a hire car while mine is fixed?")
    response = api_client.get(f"/api/v1/conversations/{conversation}/?after=c1000000")
    assert response.status_code == 200
    assert [m["role"] for m in response.json()["messages"]] == ["customer", "agent"]
    now = api_client.get(f"/api/v1/conversations/{conversation}/?after=c9{'0' * 16}").json()
    assert now["messages"] == [] and now["cursor"].startswith("s")


@pytest.mark.parametrize("cursor", ["yesterday", "c12x", "c" + "9" * 40, "s-1", "-1"])
def test_a_cursor_the_api_did_not_give_is_a_400(api_client, cursor):
    conversation = _start(api_client)
    response = api_client.get(f"/api/v1/conversations/{conversation}/?after={cursor}")
    assert response.status_code == 400
    assert response.json() == {
        "after": ["Pass back a cursor this API returned, such as s000000000012."]
    }


def test_rate_a_reply_and_change_the_rating(api_client):
    conversation = _start(api_client, "NW-MTR-204518")
    turn = _say(api_client, conversation, "Will my policy pay for a rental car?")["turn_id"]
    url = f"/api/v1/conversations/{conversation}/messages/{turn}/rating/"

    first = api_client.post(url, {"rating": "helpful"}, format="json")
    assert first.status_code == 201
    assert first.json()["rating"] == "helpful"
    second = api_client.post(
        url,
        {"rating": "not_helpful", "comment": "Call me on 021 555 0199, it did not say how long."},
        format="json",
    )
    assert second.json()["rating"] == "not_helpful"
    rating = ReplyRating.objects.get(turn_id=turn)
    assert rating.rating == "not_helpful"
    assert "021 555 0199" not in rating.comment  # masked like the message
    assert rating.history.count() == 2

    assert api_client.post(url, {"rating": "meh"}, format="json").status_code == 400
    assert api_client.post(url, {"rating": "helpful", "comment": 5}, format="json").json() == {
        "comment": ["Send the message as a JSON string."]
    }
    other_turn = f"/api/v1/conversations/{conversation}/messages/{turn + 999}/rating/"
    assert api_client.post(other_turn, {"rating": "helpful"}, format="json").status_code == 404
