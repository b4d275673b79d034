"""A client registers a webhook and gets the staff answer, signed, even when its
receiver fails at first; it sees the same answer by polling the conversation."""

import json
import time

import pytest
from django.contrib.auth import get_user_model

from claims.services import pending_question_answer, pending_question_dismiss
from tests.webhooks.receiver import Receiver
from webhooks.models import WebhookEvent
from webhooks.services import webhook_signature_verify

ANSWER = "Corporate fleet policies use the fleet wording; your account manager has the terms."


@pytest.fixture
def receiver():
    receiver = Receiver(fail_first=1).start()
    yield receiver
    receiver.stop()


def _register(api_client, url) -> dict:
    response = api_client.post("/api/v1/webhooks/", {"url": url}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _queued_question(api_client) -> tuple[int, int]:
    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": "NW-MTR-550001"}, format="json"
    ).json()["id"]
    body = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/",
        {"message": "Can I get a hire car while mine is fixed?"},
        format="json",
    ).json()
    return conversation, body["pending_question"]["id"]


def _agent():
    return get_user_model().objects.get(username="demo-agent")


def _check_deliveries(receiver, secret, entry_id, conversation):
    assert len(receiver.received) == 2  # the first failed (503), the retry was acknowledged
    first, second = receiver.received
    for delivery in receiver.received:
        assert (
            webhook_signature_verify(
                secret=secret, header=delivery.headers["X-Northwind-Signature"], body=delivery.body
            )
            is True
        )
        assert (
            webhook_signature_verify(
                secret="whsec_wrong",
                header=delivery.headers["X-Northwind-Signature"],
                body=delivery.body,
            )
            is False
        )
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"]
    assert first.body == second.body
    payload = json.loads(second.body)
    assert payload["id"] == second.headers["Idempotency-Key"]
    assert payload["type"] == "pending_question.answered"
    assert payload["data"]["conversation_id"] == conversation
    assert payload["data"]["pending_question"]["reference"] == f"PQ-{entry_id}"
    assert payload["data"]["pending_question"]["status"] == "answered"
    assert payload["data"]["message"]["role"] == "staff"
    assert payload["data"]["message"]["text"] == ANSWER
    assert "demo-agent" not in second.body.decode()  # a role, never a staff name
    # A tampered body no longer matches its signature.
    tampered = second.body.replace(b"fleet", b"FLEET")
    assert (
        webhook_signature_verify(
            secret=secret, header=second.headers["X-Northwind-Signature"], body=tampered
        )
        is False
    )

    event = WebhookEvent.objects.get(idempotency_key=payload["id"])
    assert event.status == "delivered"
    attempts = list(event.attempts.order_by("number"))
    assert [(a.number, a.succeeded, a.status_code) for a in attempts] == [
        (1, False, 503),
        (2, True, 204),
    ]
    assert attempts[0].error == "HTTP 503"


@pytest.mark.django_db
def test_staff_answer_is_signed_and_retried_to_the_client_webhook(
    api_client, receiver, settings, django_capture_on_commit_callbacks
):
    settings.DEBUG = True  # http:// on loopback is for a developer's machine only
    secret = _register(api_client, receiver.url)["secret"]
    conversation, entry_id = _queued_question(api_client)

    with django_capture_on_commit_callbacks(execute=True):
        pending_question_answer(entry_id=entry_id, acting_user=_agent(), answer=ANSWER)

    _check_deliveries(receiver, secret, entry_id, conversation)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_delivers_and_retries_with_backoff(
    api_client, receiver, settings, celery_worker
):
    settings.DEBUG = True
    secret = _register(api_client, receiver.url)["secret"]
    conversation, entry_id = _queued_question(api_client)

    pending_question_answer(entry_id=entry_id, acting_user=_agent(), answer=ANSWER)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if WebhookEvent.objects.filter(status="delivered").exists():
            break
        time.sleep(0.2)
    _check_deliveries(receiver, secret, entry_id, conversation)
    first, second = WebhookEvent.objects.get().attempts.order_by("number")
    # The worker waited the backoff (0.5 s base in tests) before trying again.
    assert (second.attempted_at - first.attempted_at).total_seconds() >= 0.4


@pytest.mark.django_db
def test_receiver_that_never_answers_ends_failed_after_the_last_attempt(
    api_client, settings, django_capture_on_commit_callbacks
):
    settings.DEBUG = True
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    receiver = Receiver(fail_first=99).start()
    try:
        _register(api_client, receiver.url)
        _, entry_id = _queued_question(api_client)
        with django_capture_on_commit_callbacks(execute=True):
            pending_question_dismiss(entry_id=entry_id, acting_user=_agent(), reason="Duplicate.")
    finally:
        receiver.stop()
    event = WebhookEvent.objects.get()
    assert event.event_type == "pending_question.dismissed"
    assert event.status == "failed"
    assert event.attempts.count() == 3
    assert len(receiver.received) == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://hooks.example.com/x", "Webhook URLs must use https://."),
        ("https://127.0.0.1/x", "Webhook URLs must name a public address, not a private one."),
        ("https://10.1.2.3/x", "Webhook URLs must name a public address, not a private one."),
        ("https://localhost/x", "Webhook URLs must name a public host, not this machine."),
        ("not a url", "Give a full URL, such as https://example.com/northwind-events."),
    ],
)
def test_outside_debug_only_public_https_urls_are_accepted(api_client, settings, url, message):
    settings.DEBUG = False
    response = api_client.post("/api/v1/webhooks/", {"url": url}, format="json")
    assert response.status_code == 400
    assert response.json() == {"url": [message]}


@pytest.mark.django_db
def test_register_list_delete_and_clients_see_only_their_own(api_client, settings):
    settings.DEBUG = False
    created = _register(api_client, "https://hooks.example.com/northwind")
    assert created["secret"].startswith("whsec_")
    listing = api_client.get("/api/v1/webhooks/").json()
    assert [e["url"] for e in listing] == ["https://hooks.example.com/northwind"]
    assert "secret" not in listing[0]
    duplicate = api_client.post(
        "/api/v1/webhooks/", {"url": "https://hooks.example.com/northwind"}, format="json"
    )
    assert duplicate.json() == {"url": ["That URL is already registered."]}
    bad_event = api_client.post(
        "/api/v1/webhooks/", {"url": "https://b.example.com/", "events": ["nope"]}, format="json"
    )
    assert bad_event.status_code == 400

    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    other_user = get_user_model().objects.create(username="other-client")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other_user).key}")
    assert other.get("/api/v1/webhooks/").json() == []
    assert other.delete(f"/api/v1/webhooks/{created['id']}/").status_code == 404
    assert api_client.delete(f"/api/v1/webhooks/{created['id']}/").status_code == 204
    assert api_client.get("/api/v1/webhooks/").json() == []
