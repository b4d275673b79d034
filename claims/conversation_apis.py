"""REST API v1: reading a conversation as it grows, and rating a reply.

Kept apart from ``claims/apis.py`` (creating conversations and posting
messages) so each can change without the other.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.apis import ConversationOutputSerializer, TextField, _validated
from claims.models import PendingQuestion, ReplyRating, Turn
from claims.selectors import (
    CursorError,
    access_conversation,
    access_turn,
    conversation_view,
    cursor_decode,
)
from claims.services import reply_rate


class MessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["customer", "agent", "staff"])
    text = serializers.CharField()
    at = serializers.DateTimeField()
    turn_id = serializers.IntegerField(required=False, help_text="Customer and agent messages.")
    pending_reference = serializers.CharField(
        required=False, help_text="The pending question this message opened or answers (PQ-n)."
    )


class PendingQuestionPublicSerializer(serializers.Serializer):
    reference = serializers.CharField()
    status = serializers.ChoiceField(choices=PendingQuestion.Status.choices)
    reason = serializers.ChoiceField(choices=PendingQuestion.Reason.choices)
    created_at = serializers.DateTimeField()
    answered_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField()


class TurnSummarySerializer(serializers.Serializer):
    turn_id = serializers.IntegerField()
    trace_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    message = serializers.CharField()
    reply = serializers.CharField()
    guidance_status = serializers.ChoiceField(choices=Turn.GuidanceStatus.choices)
    cited_ids = serializers.ListField(child=serializers.CharField())
    cited_card_ids = serializers.ListField(child=serializers.CharField())
    pending_question_id = serializers.IntegerField(allow_null=True)


class ConversationDetailApi(APIView):
    class OutputSerializer(ConversationOutputSerializer):
        messages = MessageSerializer(many=True)
        pending_questions = PendingQuestionPublicSerializer(many=True)
        turns = TurnSummarySerializer(many=True)
        cursor = serializers.CharField(
            help_text="Pass as ?after= to get only what is newer than this answer."
        )

        class Meta:
            ref_name = "ConversationDetail"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "after",
                {"type": "string", "pattern": r"^\s*([sc][0-9]{1,17})?\s*$"},
                required=False,
                description="A cursor from an earlier answer: only messages, turns and "
                "pending questions newer than it.",
            )
        ],
        responses={200: OutputSerializer},
        summary="A conversation with its messages (staff answers included) and pending questions",
        operation_id="conversation_detail",
    )
    def get(self, request, conversation_id: int):
        conversation = access_conversation(request.user, conversation_id)
        raw_after = request.query_params.get("after", "").strip()
        try:
            after = cursor_decode(raw_after) if raw_after else None
        except CursorError as exc:
            raise serializers.ValidationError({"after": [str(exc)]}) from None
        view = conversation_view(conversation, after=after)
        data = {
            **ConversationOutputSerializer(conversation).data,
            "messages": view.messages,
            "pending_questions": view.pending_questions,
            "turns": [
                {
                    "turn_id": turn.pk,
                    "trace_id": turn.trace_id,
                    "created_at": serializers.DateTimeField().to_representation(turn.created_at),
                    "message": turn.message,
                    "reply": turn.reply,
                    "guidance_status": turn.guidance_status,
                    "cited_ids": turn.cited_ids,
                    "cited_card_ids": turn.card_cited_ids,
                    "pending_question_id": turn.pending_question_id,
                }
                for turn in view.turns
            ],
            "cursor": view.cursor,
        }
        return Response(data)


class ReplyRatingApi(APIView):
    class InputSerializer(serializers.Serializer):
        rating = serializers.ChoiceField(choices=ReplyRating.Rating.choices)
        comment = TextField(max_length=1000, required=False, allow_blank=True, default="")

        class Meta:
            ref_name = "ReplyRatingInput"

    class OutputSerializer(serializers.Serializer):
        turn_id = serializers.IntegerField()
        rating = serializers.ChoiceField(choices=ReplyRating.Rating.choices)
        comment = serializers.CharField()
        updated_at = serializers.DateTimeField()

        class Meta:
            ref_name = "ReplyRating"

    @extend_schema(
        request=InputSerializer,
        responses={201: OutputSerializer},
        summary="Rate the agent's reply to one message (helpful or not); the latest rating counts",
        operation_id="reply_rating_create",
    )
    def post(self, request, conversation_id: int, turn_id: int):
        turn = access_turn(request.user, conversation_id, turn_id)
        data = _validated(self.InputSerializer, request)
        rating = reply_rate(turn=turn, rating=data["rating"], comment=data["comment"])
        return Response(
            self.OutputSerializer(
                {
                    "turn_id": turn.pk,
                    "rating": rating.rating,
                    "comment": rating.comment,
                    "updated_at": rating.updated_at,
                }
            ).data,
            status=status.HTTP_201_CREATED,
        )
