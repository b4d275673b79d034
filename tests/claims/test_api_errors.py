"""Bad input gets a clear error, never a 500, and loses nothing."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from claims.models import Conversation, Turn

pytestmark = pytest.mark.django_db


def post(client, url, body, **kwargs):
    return client.post(url, body, format="json", **kwargs)


def test_no_token_is_401(demo):
    response = post(APIClient(), "/api/v1/conversations/", {})
    assert response.status_code == 401


def test_a_bad_token_is_401(demo):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert post(client, "/api/v1/conversations/", {}).status_code == 401


def test_another_clients_conversation_is_404(api_client):
    conversation = post(api_client, "/api/v1/conversations/", {}).json()["id"]
    other_user = get_user_model().objects.create(username="other-client")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other_user).key}")
    assert other.get(f"/api/v1/conversations/{conversation}/").status_code == 404
    response = post(other, f"/api/v1/conversations/{conversation}/messages/", {"message": "hi"})
    assert response.status_code == 404
    assert Turn.objects.count() == 0


def test_an_unknown_conversation_is_404(api_client):
    response = post(api_client, "/api/v1/conversations/999999/messages/", {"message": "hi"})
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"message": ""}, "message", "may not be blank"),
        ({"message": "   "}, "message", "may not be blank"),
        ({}, "message", "required"),
        ({"message": "x" * 2001}, "message", "no more than 2000 characters"),
        ({"message": 42}, "message", "Send the message as a JSON string."),
        ({"message": ["hi"]}, "message", "Send the message as a JSON string."),
        ({"message": "hi", "policy_number": "MTR-12"}, "policy_number", "looks like NW-MTR-204518"),
        ({"message": "hi", "policy_number": "NW-XYZ-123"}, "policy_number", "looks like"),
    ],
)
def test_bad_message_input_is_400_with_field_errors(api_client, body, field, words):
    conversation = post(api_client, "/api/v1/conversations/", {}).json()["id"]
    response = post(api_client, f"/api/v1/conversations/{conversation}/messages/", body)
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])
    assert Turn.objects.count() == 0


def test_a_malformed_policy_number_on_create_is_400(api_client):
    response = post(api_client, "/api/v1/conversations/", {"policy_number": "12345"})
    assert response.status_code == 400
    assert "policy_number" in response.json()
    assert Conversation.objects.count() == 0


def test_an_unknown_channel_is_400(api_client):
    response = post(api_client, "/api/v1/conversations/", {"channel": "fax"})
    assert response.status_code == 400
    assert "channel" in response.json()


def test_a_json_array_or_broken_json_is_400(api_client):
    conversation = post(api_client, "/api/v1/conversations/", {}).json()["id"]
    url = f"/api/v1/conversations/{conversation}/messages/"
    assert post(api_client, url, ["hi"]).status_code == 400
    broken = api_client.post(url, data="{not json", content_type="application/json")
    assert broken.status_code == 400


def test_deeply_nested_json_is_400_not_500(api_client):
    body = "[" * 5000 + "]" * 5000
    for url in ("/api/v1/conversations/", "/api/v1/conversations/1/messages/"):
        response = api_client.post(url, data=body, content_type="application/json")
        assert response.status_code in (400, 404), url
    response = api_client.post("/api/v1/conversations/", data=body, content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


def test_only_json_bodies_are_accepted(api_client):
    response = api_client.post(
        "/api/v1/conversations/", data={"channel": "web"}, format="multipart"
    )
    assert response.status_code == 415
    assert Conversation.objects.count() == 0


def test_a_conversation_id_that_is_not_a_number_is_a_json_404(api_client):
    response = api_client.post(
        "/api/v1/conversations/abc/messages/", {"message": "hi"}, format="json"
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def test_an_oversized_body_is_refused(api_client):
    conversation = post(api_client, "/api/v1/conversations/", {}).json()["id"]
    response = post(
        api_client,
        f"/api/v1/conversations/{conversation}/messages/",
        {"message": "x" * (300 * 1024)},
    )
    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is too large."}
    assert Turn.objects.count() == 0


def test_throttling_answers_429(api_client, settings):
    from django.core.cache import cache

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "3/minute"},
    }
    from rest_framework.settings import api_settings
    from rest_framework.throttling import UserRateThrottle

    cache.clear()
    # DRF reads the rates into a class attribute at import time.
    original = UserRateThrottle.THROTTLE_RATES
    UserRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        codes = [post(api_client, "/api/v1/conversations/", {}).status_code for _ in range(5)]
    finally:
        UserRateThrottle.THROTTLE_RATES = original
        cache.clear()
    assert codes[:3] == [201, 201, 201]
    assert codes[3:] == [429, 429]


def test_the_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/v1/conversations/", "/api/v1/conversations/{conversation_id}/messages/"):
        assert path in text
    assert client.get("/api/docs/").status_code == 200


def test_the_committed_openapi_schema_is_current(tmp_path):
    """docs/openapi.yaml is what `make schema` writes from the code today."""
    from pathlib import Path

    from django.core.management import call_command

    generated = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(generated), "--validate")
    committed = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"
    assert generated.read_text() == committed.read_text(), "run `make schema` and commit"
