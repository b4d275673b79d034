"""One error taxonomy, translated in one place for the API and for the admin."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.exceptions import PermissionDenied
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from claims.agent.types import ClauseModelError
from claims.services import PendingQuestionError
from knowledge.services.ingestion import WordingError
from knowledge.services.releases import ReleaseError
from knowledge.storage import StorageUnavailable
from northwind.errors import ServiceError, ServiceUnavailable
from schedules.lookup import ScheduleSourceError
from schedules.routing import WordingRouteError


def test_every_service_error_shares_the_base_and_has_a_code():
    for cls in (
        ReleaseError,
        WordingError,
        PendingQuestionError,
        WordingRouteError,
        StorageUnavailable,
        ScheduleSourceError,
        ClauseModelError,
    ):
        error = cls("Something was refused.")
        assert isinstance(error, ServiceError)
        assert error.message == "Something was refused."
        assert str(error) == "Something was refused."
        assert error.code and error.code != ServiceError.code, cls
    for cls in (StorageUnavailable, ScheduleSourceError, ClauseModelError):
        assert issubclass(cls, ServiceUnavailable)


def test_a_raise_may_give_a_more_precise_code():
    assert ReleaseError("x", code="release_overlap").code == "release_overlap"
    assert ReleaseError("x").code == "release_refused"


def _raising(exc: Exception):
    class Raising(APIView):
        def get(self, request):
            raise exc

    request = APIRequestFactory().get("/api/v1/anything/")
    force_authenticate(request, user=get_user_model()(username="someone"))
    return Raising.as_view()(request)


@pytest.mark.parametrize(
    ("exc", "status", "body"),
    [
        (
            ReleaseError("Say why the release is rejected."),
            400,
            {"detail": "Say why the release is rejected.", "code": "release_refused"},
        ),
        (
            StorageUnavailable("object storage unavailable"),
            503,
            {"detail": "object storage unavailable", "code": "storage_unavailable"},
        ),
        (
            PermissionDenied("You do not have permission to approve releases."),
            403,
            {
                "detail": "You do not have permission to approve releases.",
                "code": "permission_denied",
            },
        ),
        (
            PermissionDenied(),
            403,
            {"detail": "You do not have permission to do this.", "code": "permission_denied"},
        ),
    ],
)
def test_the_api_answers_service_errors_with_their_message_and_code(exc, status, body):
    response = _raising(exc)
    assert response.status_code == status
    assert response.data == body


@pytest.mark.django_db
def test_the_admin_shows_a_permission_refusal_as_a_message(client, demo, api_client):
    # given an open queue entry taken by one queue agent, and a second agent
    # (an editor gets 403 on every queue page: the pages check the list's permission)
    from django.contrib.auth import get_user_model

    from claims.models import PendingQuestion
    from claims.services import pending_question_take

    conversation = api_client.post(
        "/api/v1/conversations/", {"policy_number": "NW-MTR-550001"}, format="json"
    ).json()["id"]
    body = api_client.post(
        f"/api/v1/conversations/{conversation}/messages/",
        {"message": "Can I get a hire car while mine is fixed?"},
        format="json",
    ).json()
    entry = PendingQuestion.objects.get(pk=body["pending_question"]["id"])
    first = get_user_model().objects.get(username="demo-agent")
    pending_question_take(entry_id=entry.pk, acting_user=first)
    assert client.login(username="demo-agent-2", password="northwind-agent2-demo") is True
    # when the second agent tries to release it
    response = client.post(f"/admin/claims/pendingquestion/{entry.pk}/release/")
    # then the next page says why, and nothing changed
    assert response.status_code == 302
    shown = [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)]
    assert shown == [
        ("error", f"Only the agent who took {entry.reference} or a queue lead can release it.")
    ]
    entry.refresh_from_db()
    assert entry.assignee_id == first.pk
