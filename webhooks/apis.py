"""REST API v1: an API client registers, lists and removes its webhooks."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.apis import _validated
from webhooks.models import EventType, WebhookEndpoint
from webhooks.services import WebhookError, webhook_endpoint_delete, webhook_endpoint_register

SIGNING = (
    "Every delivery is a POST of JSON `{id, type, created_at, data}` with the headers "
    "`X-Northwind-Event`, `Idempotency-Key` (the event id; the same on every retry) and "
    "`X-Northwind-Signature: t=<unix seconds>,v1=<hex>`, where the hex is "
    "HMAC-SHA256(secret, `<t>.<raw body>`). Refuse a signature that does not match or a "
    "`t` older than five minutes. Answer 2xx to acknowledge; anything else, or no answer "
    "within 5 s, is retried with exponential backoff (6 attempts by default)."
)


class EndpointSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=EventType.choices))
    is_active = serializers.BooleanField()
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WebhookEndpoint"


class WebhookListCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        url = serializers.CharField(max_length=500)
        events = serializers.ListField(
            child=serializers.ChoiceField(choices=EventType.choices),
            required=False,
            default=list,
            help_text="Event types to receive; empty or absent for all.",
        )

        class Meta:
            ref_name = "WebhookEndpointInput"

    class CreatedSerializer(EndpointSerializer):
        secret = serializers.CharField(help_text="Shown only in this answer: keep it.")

        class Meta:
            ref_name = "WebhookEndpointCreated"

    @extend_schema(
        responses={200: EndpointSerializer(many=True)},
        summary="This client's webhooks",
        operation_id="webhook_list",
    )
    def get(self, request):
        endpoints = WebhookEndpoint.objects.filter(client=request.user)
        return Response(EndpointSerializer(endpoints, many=True).data)

    @extend_schema(
        request=InputSerializer,
        responses={201: CreatedSerializer},
        summary="Register a webhook for staff answers to this client's conversations",
        description=SIGNING,
        operation_id="webhook_create",
    )
    def post(self, request):
        data = _validated(self.InputSerializer, request)
        try:
            endpoint = webhook_endpoint_register(
                client=request.user, url=data["url"], events=data["events"]
            )
        except WebhookError as exc:
            raise serializers.ValidationError({"url": [str(exc)]}) from None
        return Response(self.CreatedSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class WebhookDeleteApi(APIView):
    @extend_schema(responses={204: None}, summary="Remove a webhook", operation_id="webhook_delete")
    def delete(self, request, endpoint_id: int):
        endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, client=request.user).first()
        if endpoint is None:
            raise Http404("No such webhook.")
        webhook_endpoint_delete(endpoint=endpoint)
        return Response(status=status.HTTP_204_NO_CONTENT)
