"""REST API v1 of the claim agent: one view per operation."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.agent.turn import turn_run
from claims.agent.types import TurnRequest
from claims.models import Conversation, Turn
from claims.selectors import access_conversation
from claims.services import conversation_create, conversation_line_confirm
from schedules.validators import policy_number_is_valid, policy_number_normalize

MESSAGE_MAX_LENGTH = 2000


def claim_agent_model():
    """The configured ``ClauseChooser`` (``claims.agent.registry.chooser``).

    ``CLAIM_AGENT_MODEL`` names an offline selector (``hybrid``, the default;
    ``bm25``, ``embedding``, ``baseline``) or the dotted path of a class that
    implements ``ClauseChooser`` (an LLM adapter, a test fake).
    """
    from claims.agent.registry import chooser

    return chooser()


def clause_store():
    return import_string(
        getattr(settings, "CLAIM_AGENT_CLAUSE_STORE", "knowledge.clause_store.StorageClauseStore")
    )()


class PolicyNumberField(serializers.CharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=32, required=False, allow_blank=True, **kwargs)

    def to_internal_value(self, data):
        value = policy_number_normalize(super().to_internal_value(data))
        if value and not policy_number_is_valid(value):
            raise serializers.ValidationError(
                "A policy number looks like NW-MTR-204518 (NW, then MTR, HOM or CNT, then digits)."
            )
        return value


class TextField(serializers.CharField):
    """A CharField that takes only JSON strings (DRF would turn 1e999 into "inf")."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Send the message as a JSON string.")
        return super().to_internal_value(data)


class ConversationOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    policy_number = serializers.CharField()
    line = serializers.CharField()
    channel = serializers.CharField()
    facts = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_facts(self, conversation) -> dict:
        facts = {}
        if conversation.policy_number:
            facts["policy_number"] = conversation.policy_number
        if conversation.line:
            facts["line"] = conversation.line
        return facts


class ConversationCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        policy_number = PolicyNumberField()
        channel = serializers.ChoiceField(
            choices=Conversation.Channel.choices, required=False, default="web"
        )

        class Meta:
            ref_name = "ConversationCreateInput"

    @extend_schema(
        request=InputSerializer,
        responses={201: ConversationOutputSerializer},
        summary="Start a conversation",
        operation_id="conversation_create",
    )
    def post(self, request):
        data = _validated(self.InputSerializer, request)
        conversation = conversation_create(
            client=request.user,
            channel=data["channel"],
            policy_number=data.get("policy_number", ""),
        )
        conversation_line_confirm(conversation=conversation)
        return Response(
            ConversationOutputSerializer(conversation).data, status=status.HTTP_201_CREATED
        )


class CitationSerializer(serializers.Serializer):
    clause_id = serializers.CharField()
    title = serializers.CharField()
    document = serializers.CharField()
    version = serializers.CharField()


class ClausesSerializer(serializers.Serializer):
    requested = serializers.ListField(child=serializers.CharField())
    returned = serializers.ListField(child=serializers.CharField())
    not_found = serializers.ListField(child=serializers.CharField())


class PendingQuestionRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.CharField()
    status = serializers.CharField()


class TurnOutputSerializer(serializers.Serializer):
    turn_id = serializers.IntegerField()
    trace_id = serializers.CharField()
    reply = serializers.CharField()
    guidance_status = serializers.ChoiceField(choices=Turn.GuidanceStatus.choices)
    citations = CitationSerializer(many=True)
    clauses = ClausesSerializer()
    schedule = serializers.DictField(allow_null=True)
    facts = serializers.DictField()
    pending_question = PendingQuestionRefSerializer(allow_null=True)
    limitations = serializers.ListField(child=serializers.CharField())


def turn_payload(turn: Turn, titles: dict[str, str]) -> dict:
    pending = turn.pending_question
    return {
        "turn_id": turn.pk,
        "trace_id": turn.trace_id,
        "reply": turn.reply,
        "guidance_status": turn.guidance_status,
        "citations": [
            {
                "clause_id": clause_id,
                "title": titles.get(clause_id, ""),
                "document": turn.wording_document,
                "version": turn.wording_label,
            }
            for clause_id in turn.cited_ids
        ],
        "clauses": {
            "requested": turn.requested_ids,
            "returned": turn.returned_ids,
            "not_found": turn.not_found_ids,
        },
        "schedule": turn.schedule_summary,
        "facts": turn.facts,
        "pending_question": (
            {"id": pending.pk, "reason": pending.reason, "status": pending.status}
            if pending is not None
            else None
        ),
        "limitations": turn.limitations,
    }


class ConversationMessageCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        message = TextField(max_length=MESSAGE_MAX_LENGTH, trim_whitespace=True)
        policy_number = PolicyNumberField()

        class Meta:
            ref_name = "ConversationMessageInput"

    @extend_schema(
        request=InputSerializer,
        responses={201: TurnOutputSerializer},
        summary="Send a customer message and get the agent's checked reply draft",
        operation_id="conversation_message_create",
    )
    def post(self, request, conversation_id: int):
        conversation = access_conversation(request.user, conversation_id)
        data = _validated(self.InputSerializer, request)
        turn_request = TurnRequest(
            conversation_id=conversation.pk,
            message=data["message"],
            policy_number=data.get("policy_number") or None,
            received_at=timezone.now(),
            trace_id=uuid.uuid4().hex,
            conversation_policy_number=conversation.policy_number,
            conversation_line=conversation.line,
        )
        from claims.agent.registry import writer

        chooser = claim_agent_model()
        result = turn_run(
            turn_request,
            chooser=chooser,
            writer=writer(chooser_in_use=chooser),
            store=clause_store(),
        )
        titles = {c.clause_id: c.title for c in result.outcome.returned}
        return Response(turn_payload(result.turn, titles), status=status.HTTP_201_CREATED)


def _validated(serializer_class, request) -> dict:
    if not isinstance(request.data, dict):
        raise serializers.ValidationError({"non_field_errors": ["Send a JSON object."]})
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
