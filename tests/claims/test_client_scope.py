"""Data scope per API client: customer clients see only a policy they have proven."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from claims.models import Conversation, PolicyAccess, Turn

pytestmark = pytest.mark.django_db

RENTAL = "Will my policy pay for a rental car while mine is repaired?"
# NW-MTR-204518: holder born 1985-03-17, postcode 3010 (schedules/demo.py).
POLICY, BIRTH_DATE, POSTCODE = "NW-MTR-204518", "1985-03-17", "3010"


def token_client(username: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user__username=username).key}")
    return client


@pytest.fixture
def customer(demo) -> APIClient:
    return token_client("demo-customer-app")


def start(client, **body):
    return client.post("/api/v1/conversations/", body, format="json")


def say(client, conversation_id, message=RENTAL, **body):
    return client.post(
        f"/api/v1/conversations/{conversation_id}/messages/",
        {"message": message, **body},
        format="json",
    )


def test_demo_has_one_client_of_each_scope(demo):
    assert "demo-client" in demo and "(internal scope)" in demo
    assert "demo-customer-app" in demo and "(customer scope" in demo


def test_a_customer_client_cannot_name_a_policy_without_proof(customer):
    response = start(customer, policy_number=POLICY)
    assert response.status_code == 400
    assert response.json()["code"] == "verification_required"
    assert Conversation.objects.count() == 0


@pytest.mark.parametrize(
    "body",
    [
        {"policy_number": POLICY, "date_of_birth": "1985-03-18"},
        {"policy_number": POLICY, "postcode": "3011"},
        {"policy_number": "NW-MTR-999999", "date_of_birth": BIRTH_DATE},
        {"policy_number": "NW-MTR-999999", "postcode": POSTCODE},
    ],
)
def test_a_failed_proof_never_says_whether_the_number_exists(customer, body):
    response = start(customer, **body)
    assert response.status_code == 403
    assert response.json() == {
        "detail": "We could not verify that policy with the details given.",
        "code": "verification_failed",
    }
    assert Conversation.objects.count() == 0
    [audit] = PolicyAccess.objects.all()
    assert (audit.event, audit.scope, audit.policy_number) == (
        "verification_failed",
        "customer",
        body["policy_number"],
    )


@pytest.mark.parametrize(
    ("fact", "method"),
    [
        ({"date_of_birth": BIRTH_DATE}, "birth_date"),
        ({"postcode": POSTCODE}, "postcode"),
    ],
)
def test_a_proven_policy_is_bound_and_its_schedule_answers(customer, fact, method):
    response = start(customer, policy_number=POLICY, **fact)
    assert response.status_code == 201
    body = response.json()
    assert body["policy_number"] == POLICY
    assert body["client_scope"] == "customer"
    assert body["verification"]["status"] == "verified"
    assert body["verification"]["method"] == method
    turn = say(customer, body["id"]).json()
    assert turn["schedule"]["policy_number"] == POLICY
    assert turn["citations"][0]["clause_id"] == "MTR-BEN-03"
    events = list(PolicyAccess.objects.order_by("pk").values_list("event", "method"))
    assert events == [("bound", method), ("schedule_read", method)]


def test_a_customer_cannot_reach_a_schedule_through_a_message(customer):
    conversation = start(customer).json()["id"]
    response = say(customer, conversation, policy_number="NW-CNT-410815")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert "not verified" in response.json()["detail"]
    assert Turn.objects.count() == 0
    assert PolicyAccess.objects.get().event == "refused"
    # without a number the turn runs, and shows no schedule
    turn = say(customer, conversation).json()
    assert turn["schedule"] is None
    assert turn["guidance_status"] == "line_unconfirmed"


def test_a_customer_cannot_switch_to_another_policy_after_proving_one(customer):
    conversation = start(customer, policy_number=POLICY, postcode=POSTCODE).json()["id"]
    response = say(customer, conversation, policy_number="NW-CNT-410815")
    assert response.status_code == 403
    assert say(customer, conversation, policy_number=POLICY).status_code == 201


def test_verifying_later_in_the_conversation(customer):
    conversation = start(customer).json()["id"]
    url = f"/api/v1/conversations/{conversation}/verification/"
    wrong = customer.post(url, {"policy_number": POLICY, "postcode": "9999"}, format="json")
    assert wrong.status_code == 403
    assert Conversation.objects.get(pk=conversation).policy_number == ""
    right = customer.post(url, {"policy_number": POLICY, "postcode": POSTCODE}, format="json")
    assert right.status_code == 200
    assert right.json()["verification"]["status"] == "verified"
    assert say(customer, conversation).json()["schedule"]["policy_number"] == POLICY


def test_failures_are_limited_per_client_even_for_the_right_answer(customer, settings):
    settings.VERIFY_FAILURES_PER_CLIENT = (3, 900)
    for number in ("NW-MTR-100001", "NW-MTR-100002", "NW-MTR-100003"):
        assert start(customer, policy_number=number, postcode="1111").status_code == 403
    locked = start(customer, policy_number=POLICY, postcode=POSTCODE)
    assert locked.status_code == 429
    assert locked.json()["code"] == "verification_locked"
    assert int(locked["Retry-After"]) > 0
    assert PolicyAccess.objects.filter(event="verification_locked").count() == 1
    assert Conversation.objects.count() == 0


def test_failures_are_limited_per_policy_across_clients(customer, settings):
    from django.contrib.auth import get_user_model

    settings.VERIFY_FAILURES_PER_POLICY = (2, 3600)
    for postcode in ("1111", "2222"):
        assert start(customer, policy_number=POLICY, postcode=postcode).status_code == 403
    other_user = get_user_model().objects.create(username="another-chat")  # customer by default
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other_user).key}")
    assert start(other, policy_number=POLICY, postcode=POSTCODE).status_code == 429
    # another policy is not locked
    other_policy = start(other, policy_number="NW-HOM-310042", postcode="6012")
    assert other_policy.status_code == 201


def test_an_internal_client_reaches_any_policy_and_every_access_is_audited(api_client):
    response = start(api_client, policy_number="NW-CNT-410815")
    assert response.status_code == 201
    body = response.json()
    assert body["client_scope"] == "internal"
    assert body["verification"]["method"] == "internal"
    say(api_client, body["id"], "Is my engagement ring covered overseas?")
    say(api_client, body["id"], "What about my home?", policy_number="NW-HOM-310042")
    audit = list(PolicyAccess.objects.order_by("pk").values_list("event", "scope", "policy_number"))
    assert audit == [
        ("bound", "internal", "NW-CNT-410815"),
        ("schedule_read", "internal", "NW-CNT-410815"),
        ("schedule_read", "internal", "NW-HOM-310042"),
    ]


def test_a_client_without_a_scope_is_a_customer_client(demo):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create(username="new-integration")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert start(client, policy_number=POLICY).status_code == 400
    assert start(client).json()["client_scope"] == "customer"
