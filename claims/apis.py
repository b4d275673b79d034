"""REST API v1 of the claim agent: one view per operation."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.module_loading import import_string
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from claims.agent.turn import turn_run
from claims.agent.types import TurnRequest
from claims.client_scope import (
    conversation_policy_verify,
    conversation_start,
    turn_policy_allowed,
    turn_schedule_read_record,
)
from claims.models import Conversation, Turn
from claims.selectors import access_conversation
from claims.streaming import EVENT_STREAM, EventStreamRenderer, turn_stream, wants_stream
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


# What the API accepts as a policy number: the canonical NW-MTR-204518, in any
# case and with surrounding spaces (it is upper-cased and trimmed), or blank.
POLICY_NUMBER_INPUT_PATTERN = (
    r"^\s*(?:[Nn][Ww]-(?:[Mm][Tt][Rr]|[Hh][Oo][Mm]|[Cc][Nn][Tt])-[0-9]+)?\s*$"
)
POLICY_NUMBER_REQUIRED_PATTERN = (
    r"^\s*[Nn][Ww]-(?:[Mm][Tt][Rr]|[Hh][Oo][Mm]|[Cc][Nn][Tt])-[0-9]+\s*$"
)


@extend_schema_field(
    {
        "type": "string",
        "maxLength": 32,
        "pattern": POLICY_NUMBER_INPUT_PATTERN,
        "example": "NW-MTR-204518",
        "description": "NW-, then MTR (motor), HOM (home) or CNT (contents), a hyphen and digits.",
    }
)
class RawLengthMixin:
    """Count ``max_length`` on the text as sent, spaces included.

    DRF trims first and counts after; the schema's maxLength counts what the
    client sends, and a client is held to what the schema says.
    """

    def run_validation(self, data=serializers.empty):
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().run_validation(data)


class PolicyNumberField(RawLengthMixin, serializers.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(max_length=32, **kwargs)

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


class BirthDateField(serializers.DateField):
    """The holder's date of birth, as 1985-03-17."""

    def __init__(self, **kwargs):
        super().__init__(
            input_formats=["iso-8601"],
            required=False,
            allow_null=True,
            help_text="The policyholder's date of birth, YYYY-MM-DD.",
            **kwargs,
        )


class PostcodeField(RawLengthMixin, serializers.RegexField):
    def __init__(self, **kwargs):
        super().__init__(
            r"^\s*[0-9]{4}\s*$",
            max_length=8,
            required=False,
            allow_blank=True,
            error_messages={"invalid": "A New Zealand postcode is four digits."},
            help_text="The postcode of the policyholder's address (four digits).",
            **kwargs,
        )


class VerificationSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["verified", "not_verified"])
    method = serializers.CharField(allow_blank=True)
    at = serializers.DateTimeField(allow_null=True)


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MESSAGE_MAX_LENGTH,
        # Not only spaces, no NUL: what the field refuses as blank or unstorable.
        "pattern": r"^[^\x00]*\S[^\x00]*$",
        "description": f"The customer's message: 1 to {MESSAGE_MAX_LENGTH} characters, "
        "not only spaces.",
    }
)
class MessageField(RawLengthMixin, TextField):
    pass


class ConversationOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    policy_number = serializers.CharField()
    line = serializers.CharField()
    channel = serializers.CharField()
    facts = serializers.SerializerMethodField()
    client_scope = serializers.ChoiceField(choices=Conversation.Scope.choices)
    verification = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    @extend_schema_field(VerificationSerializer)
    def get_verification(self, conversation) -> dict:
        return {
            "status": "verified" if conversation.verified_by else "not_verified",
            "method": conversation.verified_by,
            "at": serializers.DateTimeField().to_representation(conversation.verified_at)
            if conversation.verified_at
            else None,
        }

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
        date_of_birth = BirthDateField()
        postcode = PostcodeField()

        class Meta:
            ref_name = "ConversationCreateInput"

    @extend_schema(
        request=InputSerializer,
        responses={201: ConversationOutputSerializer},
        summary="Start a conversation",
        description=(
            "An internal client may name any policy. A customer client that names a policy "
            "proves it in the same request with the holder's `date_of_birth` or `postcode`; "
            "otherwise it starts without one and verifies later."
        ),
        operation_id="conversation_create",
    )
    def post(self, request):
        data = _validated(self.InputSerializer, request)
        conversation = conversation_start(
            client=request.user,
            channel=data["channel"],
            policy_number=data.get("policy_number", ""),
            birth_date=data.get("date_of_birth"),
            postcode=data.get("postcode", ""),
        )
        return Response(
            ConversationOutputSerializer(conversation).data, status=status.HTTP_201_CREATED
        )


@extend_schema_field(
    {
        "type": "string",
        "maxLength": 32,
        "pattern": POLICY_NUMBER_REQUIRED_PATTERN,
        "example": "NW-MTR-204518",
        "description": "NW-, then MTR (motor), HOM (home) or CNT (contents), a hyphen and digits.",
    }
)
class RequiredPolicyNumberField(PolicyNumberField):
    def __init__(self, **kwargs):
        super().__init__(required=True, allow_blank=False, **kwargs)


class ConversationVerificationCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        policy_number = RequiredPolicyNumberField()
        date_of_birth = BirthDateField()
        postcode = PostcodeField()

        class Meta:
            ref_name = "ConversationVerificationInput"

    @extend_schema(
        request=InputSerializer,
        responses={200: ConversationOutputSerializer},
        summary="Bind a policy to the conversation (a customer client proves it)",
        description=(
            "A customer client sends the policy number with the holder's `date_of_birth` or "
            "`postcode`. A mismatch and an unknown number get the same 403 "
            "(`verification_failed`); repeated failures for the client or the policy get 429 "
            "(`verification_locked`). An internal client binds any policy; either way the "
            "binding is in the audit trail."
        ),
        operation_id="conversation_verification_create",
    )
    def post(self, request, conversation_id: int):
        conversation = access_conversation(request.user, conversation_id)
        data = _validated(self.InputSerializer, request)
        conversation = conversation_policy_verify(
            conversation=conversation,
            acting_client=request.user,
            policy_number=data["policy_number"],
            birth_date=data.get("date_of_birth"),
            postcode=data.get("postcode", ""),
        )
        return Response(ConversationOutputSerializer(conversation).data)


class CitationSerializer(serializers.Serializer):
    """A clause citation ``{clause_id, title, document, version}`` or an answer
    card citation ``{card_id, title, sources}`` (the clause ids it rests on)."""

    clause_id = serializers.CharField(required=False)
    card_id = serializers.CharField(required=False)
    title = serializers.CharField()
    document = serializers.CharField(required=False)
    version = serializers.CharField(required=False)
    sources = serializers.ListField(child=serializers.CharField(), required=False)


class CardsSerializer(serializers.Serializer):
    requested = serializers.ListField(child=serializers.CharField())
    returned = serializers.ListField(child=serializers.CharField())


class ClausesSerializer(serializers.Serializer):
    requested = serializers.ListField(child=serializers.CharField())
    returned = serializers.ListField(child=serializers.CharField())
    not_found = serializers.ListField(child=serializers.CharField())


class PendingQuestionRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.CharField()
    status = serializers.CharField()


class ToolCallSerializer(serializers.Serializer):
    name = serializers.CharField()
    risk = serializers.ChoiceField(choices=["L0", "L1", "L2", "L3", "L4"])
    status = serializers.CharField()


class TurnOutputSerializer(serializers.Serializer):
    turn_id = serializers.IntegerField()
    trace_id = serializers.CharField()
    reply = serializers.CharField()
    guidance_status = serializers.ChoiceField(choices=Turn.GuidanceStatus.choices)
    citations = CitationSerializer(many=True)
    clauses = ClausesSerializer()
    cards = CardsSerializer()
    schedule = serializers.DictField(allow_null=True)
    facts = serializers.DictField()
    pending_question = PendingQuestionRefSerializer(allow_null=True)
    limitations = serializers.ListField(child=serializers.CharField())
    tool_calls = ToolCallSerializer(many=True)


def turn_payload(
    turn: Turn,
    titles: dict[str, str],
    cards: dict[str, tuple[str, list[str]]] | None = None,
    tool_results=(),
) -> dict:
    """The message response; ``cards`` maps a returned card id to (title, sources)."""
    pending = turn.pending_question
    cards = cards or {}
    return {
        "turn_id": turn.pk,
        "trace_id": turn.trace_id,
        "reply": getattr(turn, "reply_sent", turn.reply),
        "guidance_status": turn.guidance_status,
        "citations": [
            {
                "clause_id": clause_id,
                "title": titles.get(clause_id, ""),
                "document": turn.wording_document,
                "version": turn.wording_label,
            }
            for clause_id in turn.cited_ids
        ]
        + [
            {
                "card_id": card_id,
                "title": cards.get(card_id, ("", []))[0],
                "sources": cards.get(card_id, ("", []))[1],
            }
            for card_id in turn.card_cited_ids
        ],
        "clauses": {
            "requested": turn.requested_ids,
            "returned": turn.returned_ids,
            "not_found": turn.not_found_ids,
        },
        "cards": {"requested": turn.card_requested_ids, "returned": turn.card_returned_ids},
        "schedule": turn.schedule_summary,
        "facts": turn.facts,
        "pending_question": (
            {"id": pending.pk, "reason": pending.reason, "status": pending.status}
            if pending is not None
            else None
        ),
        "limitations": turn.limitations,
        "tool_calls": [
            {"name": r.name, "risk": r.risk.value, "status": r.status} for r in tool_results
        ],
    }


def turn_body(result) -> dict:
    """The JSON body of a turn (the non-streamed response, and the stream's ``done``)."""
    titles = {c.clause_id: c.title for c in result.outcome.returned}
    found = result.outcome.cards
    cards = {
        c.card_id: (c.question, list(c.source_clause_ids))
        for c in (found.returned if found else ())
    }
    return turn_payload(result.turn, titles, cards, result.outcome.tool_results)


class ConversationMessageCreateApi(APIView):
    # JSON as usual; with ``Accept: text/event-stream`` the turn is streamed (claims/streaming.py).
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, EventStreamRenderer]

    def get_renderers(self):
        """The event-stream renderer only for a request that asks for a stream.

        Offered to every request, ``?format=sse`` rendered a JSON 201 body as
        an "error" event, and the schema promised TurnOutput as the stream's
        body; the stream's events are documented in README and agent-turn.md.
        """
        renderers = super().get_renderers()
        request = getattr(self, "request", None)
        if request is not None and wants_stream(request):
            return renderers
        return [r for r in renderers if not isinstance(r, EventStreamRenderer)]

    class InputSerializer(serializers.Serializer):
        message = MessageField(max_length=MESSAGE_MAX_LENGTH, trim_whitespace=True)
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
        turn_policy_allowed(
            conversation=conversation,
            acting_client=request.user,
            policy_number=data.get("policy_number"),
        )
        turn_request = TurnRequest(
            conversation_id=conversation.pk,
            message=data["message"],
            policy_number=data.get("policy_number") or None,
            received_at=timezone.now(),
            trace_id=uuid.uuid4().hex,
            conversation_policy_number=conversation.policy_number,
            conversation_line=conversation.line,
            conversation_name_digests=tuple(conversation.name_digests or ()),
        )
        from claims.agent.registry import planner, writer

        chooser = claim_agent_model()

        def run(on_step=None):
            result = turn_run(
                turn_request,
                chooser=chooser,
                writer=writer(chooser_in_use=chooser),
                store=clause_store(),
                planner=planner(chooser),
                on_step=on_step,
            )
            turn_schedule_read_record(
                conversation=conversation,
                acting_client=request.user,
                policy_number=result.turn.policy_number,
                trace_id=result.turn.trace_id,
            )
            return result

        if wants_stream(request):
            response = StreamingHttpResponse(
                turn_stream(
                    run,
                    trace_id=turn_request.trace_id,
                    conversation_id=conversation.pk,
                    body_of=turn_body,
                ),
                content_type=EVENT_STREAM,
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # nginx: pass events on as they come
            return response
        return Response(turn_body(run()), status=status.HTTP_201_CREATED)


def _validated(serializer_class, request) -> dict:
    if not isinstance(request.data, dict):
        raise serializers.ValidationError({"non_field_errors": ["Send a JSON object."]})
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
