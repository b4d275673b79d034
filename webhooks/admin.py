"""Admin: API clients' webhook endpoints and every delivery attempt (read-only)."""

from django.contrib import admin, messages

from northwind.admin_history import ReadOnlyHistoryAdmin
from webhooks.models import WebhookAttempt, WebhookEndpoint, WebhookEvent
from webhooks.services import WebhookError, webhook_event_redeliver


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyHistoryAdmin):
    list_display = ["url", "client", "is_active", "event_list", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["url", "client__username"]
    fields = ["client", "url", "event_list", "is_active", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False  # clients register through the API, which returns the secret once

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="events")
    def event_list(self, endpoint: WebhookEndpoint) -> str:
        return ", ".join(endpoint.events) or "all"


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ["number", "attempted_at", "succeeded", "status_code", "error", "duration_ms"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookEvent)
class WebhookEventAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "event_type",
        "endpoint",
        "status",
        "attempt_count",
        "next_attempt_at",
        "delivered_at",
    ]
    list_filter = ["status", "event_type"]
    search_fields = ["idempotency_key", "endpoint__url"]
    fields = [
        "endpoint",
        "event_type",
        "idempotency_key",
        "status",
        "attempt_count",
        "next_attempt_at",
        "delivered_at",
        "created_at",
        "payload",
    ]
    readonly_fields = fields
    inlines = [WebhookAttemptInline]
    actions = ["send_again"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_redeliver_permission(self, request):
        return request.user.is_superuser

    @admin.action(
        description="Send the selected failed events once more", permissions=["redeliver"]
    )
    def send_again(self, request, queryset):
        for event in queryset.order_by("pk"):
            try:
                webhook_event_redeliver(event_id=event.pk)
                self.message_user(request, f"{event}: queued again.", messages.SUCCESS)
            except WebhookError as exc:
                self.message_user(request, f"{event}: {exc}", messages.ERROR)
