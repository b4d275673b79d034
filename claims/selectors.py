"""Reads of the claims app, and the access helpers for conversations."""

from __future__ import annotations

from django.http import Http404

from claims.models import Conversation


def access_conversation(user, conversation_id: int, *, lock: bool = False) -> Conversation:
    """The conversation if ``user`` owns it; 404 otherwise (never a 403 that leaks ids)."""
    queryset = Conversation.objects.filter(pk=conversation_id, client_id=user.pk)
    if lock:
        queryset = queryset.select_for_update()
    conversation = queryset.first()
    if conversation is None:
        raise Http404("No such conversation.")
    return conversation
