"""REST API v1 routes of the claim agent (mounted under /api/v1/)."""

from django.urls import path

from claims.apis import ConversationCreateApi, ConversationDetailApi, ConversationMessageCreateApi

urlpatterns = [
    path("conversations/", ConversationCreateApi.as_view(), name="conversation-create"),
    path(
        "conversations/<int:conversation_id>/",
        ConversationDetailApi.as_view(),
        name="conversation-detail",
    ),
    path(
        "conversations/<int:conversation_id>/messages/",
        ConversationMessageCreateApi.as_view(),
        name="conversation-message-create",
    ),
]
