"""REST API v1 routes of the claim agent (mounted under /api/v1/)."""

from django.urls import path

from claims.apis import (
    ConversationCreateApi,
    ConversationMessageCreateApi,
    ConversationVerificationCreateApi,
)
from claims.conversation_apis import ConversationDetailApi, ReplyRatingApi
from webhooks.apis import WebhookDeleteApi, WebhookListCreateApi

urlpatterns = [
    path("conversations/", ConversationCreateApi.as_view(), name="conversation-create"),
    path(
        "conversations/<int:conversation_id>/",
        ConversationDetailApi.as_view(),
        name="conversation-detail",
    ),
    path(
        "conversations/<int:conversation_id>/verification/",
        ConversationVerificationCreateApi.as_view(),
        name="conversation-verification-create",
    ),
    path(
        "conversations/<int:conversation_id>/messages/",
        ConversationMessageCreateApi.as_view(),
        name="conversation-message-create",
    ),
    path(
        "conversations/<int:conversation_id>/messages/<int:turn_id>/rating/",
        ReplyRatingApi.as_view(),
        name="reply-rating",
    ),
    path("webhooks/", WebhookListCreateApi.as_view(), name="webhook-list-create"),
    path("webhooks/<int:endpoint_id>/", WebhookDeleteApi.as_view(), name="webhook-delete"),
]
