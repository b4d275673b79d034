"""Admin: read-only run records, and the pending-answers queue worked through services."""

from __future__ import annotations

import re
from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.db.models import Case, When
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from claims.models import ApiClient, Conversation, PendingQuestion, PolicyAccess, Turn
from claims.services import (
    pending_question_answer,
    pending_question_dismiss,
    pending_question_take,
)
from northwind.admin_errors import service_call
from northwind.admin_history import ReadOnlyHistoryAdmin


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "trace_id",
        "guidance_status",
        "line",
        "policy_number",
        "wording_label",
        "cited",
        "model_name",
    ]
    list_filter = ["guidance_status", "line", "created_at", "model_name"]
    date_hierarchy = "created_at"
    search_fields = ["trace_id", "policy_number", "message"]
    readonly_fields = [f.name for f in Turn._meta.fields]

    @admin.display(description="cited")
    def cited(self, turn: Turn) -> str:
        return ", ".join(turn.cited_ids) or "—"


class TurnInline(admin.TabularInline):
    model = Turn
    fields = ["created_at", "message", "reply", "guidance_status", "cited_ids"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = [
        "pk",
        "client",
        "client_scope",
        "channel",
        "policy_number",
        "verified_by",
        "line",
        "created_at",
    ]
    list_filter = ["client_scope", "verified_by", "channel", "line"]
    search_fields = ["policy_number"]
    inlines = [TurnInline]


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"

    def lookups(self, request, model_admin):
        return [
            ("1d", "Older than a day"),
            ("3d", "Older than 3 days"),
            ("7d", "Older than a week"),
        ]

    def queryset(self, request, queryset):
        days = {"1d": 1, "3d": 3, "7d": 7}.get(self.value() or "")
        if days:
            return queryset.filter(created_at__lt=timezone.now() - timedelta(days=days))
        return queryset


class AnswerForm(forms.Form):
    answer = forms.CharField(widget=forms.Textarea(attrs={"rows": 6, "cols": 80}))
    proposed_content = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        help_text="Optional: a draft clause or answer card, so the next customer gets it.",
    )


class DismissForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))


@admin.register(PendingQuestion)
class PendingQuestionAdmin(ReadOnlyHistoryAdmin):
    list_display = [
        "reference_link",
        "created_at",
        "reason",
        "status",
        "line",
        "policy_number",
        "assignee",
        "short_question",
    ]
    list_filter = ["status", "reason", "line", AgeFilter, ("assignee", RelatedOnlyFieldListFilter)]
    search_fields = ["question", "policy_number"]
    # Open entries first, oldest first: the queue is worked from the top.
    ordering = [Case(When(status="open", then=0), default=1), "created_at"]
    actions = ["take_selected"]
    change_form_template = "admin/claims/pendingquestion/change_form.html"
    readonly_fields = [
        "question",
        "conversation",
        "turn",
        "line",
        "policy_number",
        "reason",
        "status",
        "evidence",
        "assignee",
        "staff_answer",
        "proposed_content",
        "dismiss_reason",
        "created_at",
        "taken_at",
        "closed_at",
        "closed_by",
        "work_links",
    ]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_search_results(self, request, queryset, search_term):
        """Find an entry by the reference the customer was given ("PQ-12")."""
        match = re.fullmatch(r"\s*PQ-?(\d+)\s*", search_term, flags=re.IGNORECASE)
        if match:
            return queryset.filter(pk=int(match.group(1))), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="reference", ordering="pk")
    def reference_link(self, entry: PendingQuestion) -> str:
        url = reverse("admin:claims_pendingquestion_change", args=[entry.pk])
        return format_html('<a href="{}">{}</a>', url, entry.reference)

    @admin.display(description="question")
    def short_question(self, entry: PendingQuestion) -> str:
        return entry.question[:90]

    @admin.display(description="turn")
    def turn_link(self, entry: PendingQuestion) -> str:
        turn = Turn.objects.filter(pending_question=entry).only("pk", "trace_id").first()
        if turn is None:
            return "—"
        url = reverse("admin:claims_turn_change", args=[turn.pk])
        return format_html('<a href="{}">{}</a>', url, turn.trace_id)

    @admin.display(description="work this entry")
    def work_links(self, entry: PendingQuestion) -> str:
        if entry.status != PendingQuestion.Status.OPEN:
            return "Closed."
        return "Use Take, Answer or Dismiss at the top right of this page."

    def get_urls(self):
        return [
            path(
                "<int:pk>/take/",
                self.admin_site.admin_view(self.take_view),
                name="claims_pendingquestion_take",
            ),
            path(
                "<int:pk>/answer/",
                self.admin_site.admin_view(self.answer_view),
                name="claims_pendingquestion_answer",
            ),
            path(
                "<int:pk>/dismiss/",
                self.admin_site.admin_view(self.dismiss_view),
                name="claims_pendingquestion_dismiss",
            ),
            *super().get_urls(),
        ]

    def _back(self, pk: int):
        return HttpResponseRedirect(reverse("admin:claims_pendingquestion_change", args=[pk]))

    def take_view(self, request, pk: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        with service_call(request) as call:
            entry = pending_question_take(entry_id=pk, acting_user=request.user)
        if call.ok:
            self.message_user(request, f"{entry.reference} is yours.", messages.SUCCESS)
        return self._back(pk)

    @admin.action(description="Take the selected entries")
    def take_selected(self, request, queryset):
        taken = []
        for entry in queryset.order_by("pk"):
            with service_call(request):
                taken.append(pending_question_take(entry_id=entry.pk, acting_user=request.user))
        if taken:
            names = ", ".join(e.reference for e in taken)
            self.message_user(request, f"Yours now: {names}.", messages.SUCCESS)

    def _form_view(self, request, pk: int, form_class, title: str, act):
        entry = self.get_object(request, str(pk))
        if entry is None:
            self.message_user(request, "No such entry.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:claims_pendingquestion_changelist"))
        form = form_class(request.POST or None)
        if request.method == "POST" and form.is_valid():
            with service_call(request) as call:
                act(entry, form.cleaned_data)
            if call.ok:
                self.message_user(request, f"{entry.reference}: done.", messages.SUCCESS)
                return self._back(pk)
        context = {
            **self.admin_site.each_context(request),
            "title": f"{title} {entry.reference}",
            "entry": entry,
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/claims/pendingquestion/work_form.html", context)

    def answer_view(self, request, pk: int):
        return self._form_view(
            request,
            pk,
            AnswerForm,
            "Answer",
            lambda entry, data: pending_question_answer(
                entry_id=entry.pk,
                acting_user=request.user,
                answer=data["answer"],
                proposed_content=data["proposed_content"],
            ),
        )

    def dismiss_view(self, request, pk: int):
        return self._form_view(
            request,
            pk,
            DismissForm,
            "Dismiss",
            lambda entry, data: pending_question_dismiss(
                entry_id=entry.pk, acting_user=request.user, reason=data["reason"]
            ),
        )


@admin.register(ApiClient)
class ApiClientAdmin(ReadOnlyHistoryAdmin):
    """Which data scope each API client has; changes are kept in history."""

    list_display = ["user", "scope", "description", "created_at"]
    list_filter = ["scope"]
    search_fields = ["user__username", "description"]
    autocomplete_fields = ["user"]


@admin.register(PolicyAccess)
class PolicyAccessAdmin(ReadOnlyAdmin):
    """The audit trail of policy bindings, verification attempts and schedule reads."""

    list_display = [
        "created_at",
        "client",
        "scope",
        "event",
        "method",
        "policy_number",
        "conversation",
        "trace_id",
    ]
    list_filter = ["event", "scope", "method", ("client", RelatedOnlyFieldListFilter)]
    search_fields = ["policy_number", "trace_id"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in PolicyAccess._meta.fields]
