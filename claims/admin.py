"""Admin: read-only run records, and the pending-answers queue worked through services."""

from __future__ import annotations

import re
from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.admin.helpers import ActionForm
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Case, Q, When
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from claims.gaps import (
    ContentGapError,
    content_gap_accept,
    content_gap_accept_card,
    content_gap_card_content,
    content_gap_questions,
    content_gap_reject,
    content_gaps_listed,
    content_gaps_refresh,
)
from claims.models import (
    AnswerDeadline,
    ApiClient,
    ClaimRecord,
    ContactUpdateRequest,
    ContentGap,
    Conversation,
    PendingQuestion,
    PolicyAccess,
    ReplyRating,
    ToolCall,
    Turn,
)
from claims.selectors import (
    answer_deadlines,
    pending_question_evidence,
    pending_question_is_overdue,
    pending_questions_with_due,
    queue_overview,
)
from claims.services import (
    pending_question_answer,
    pending_question_dismiss,
    pending_question_reassign,
    pending_question_release,
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


class ToolCallInline(admin.TabularInline):
    """The turn's tool calls as audited: who asked, risk, status, masked arguments, time."""

    model = ToolCall
    fields = [
        "call_id",
        "name",
        "risk",
        "status",
        "requested_by",
        "arguments_summary",
        "detail",
        "duration_ms",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    inlines = [ToolCallInline]
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

    def get_urls(self):
        return [
            path(
                "health/",
                self.admin_site.admin_view(self.health_view),
                name="claims_turn_health",
            ),
            *super().get_urls(),
        ]

    def health_view(self, request):
        """Per line and per day, the last 30 days (claims.health)."""
        from claims.health import LINES, line_health

        if not request.user.has_perm("claims.view_health"):
            raise PermissionDenied
        chosen = request.GET.get("line", "")
        lines = [chosen] if chosen in LINES else list(LINES)
        charts = [
            ("turns", "Turns", False),
            ("answered_rate", "Answered", True),
            ("nothing_fits_rate", "Nothing fits (no clause selected)", True),
            ("inflow", "Queue inflow", False),
            ("outflow", "Queue outflow", False),
            ("median_answer_hours", "Median hours to a staff answer", False),
            ("overdue", "Overdue at the end of the day", False),
            ("guard_interventions", "Guard interventions", False),
            ("helpful_rate", "Rated helpful", True),
        ]
        sections = []
        for line in lines:
            health = line_health(line=line)
            sections.append(
                {
                    "health": health,
                    "charts": [
                        (title, health.chart(name, rate=rate)) for name, title, rate in charts
                    ],
                }
            )
        context = {
            **self.admin_site.each_context(request),
            "title": "Claim agent health, last 30 days",
            "sections": sections,
            "lines": LINES,
            "chosen": chosen,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/claims/health.html", context)


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


def queue_agents():
    """Active staff who may work the queue (the choices a lead reassigns to)."""
    User = get_user_model()
    perm = Q(codename="change_pendingquestion", content_type__app_label="claims")
    return (
        User.objects.filter(is_active=True, is_staff=True)
        .filter(
            Q(is_superuser=True)
            | Q(user_permissions__in=_perms(perm))
            | Q(groups__permissions__in=_perms(perm))
        )
        .distinct()
        .order_by("username")
    )


def _perms(condition):
    from django.contrib.auth.models import Permission

    return Permission.objects.filter(condition)


class AnswerForm(forms.Form):
    answer = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        help_text="Sent to the customer's conversation as a staff message (your name is not).",
    )
    proposed_content = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        help_text="Optional: text for a new or changed clause (or card), so the next customer "
        "gets the answer; knowledge editors see it under Content gaps.",
    )


class DismissForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))


class QueueActionForm(ActionForm):
    reason = forms.CharField(
        required=False,
        max_length=500,
        label="Reason",
        widget=forms.TextInput(attrs={"size": 30, "placeholder": "why (for Dismiss)"}),
    )
    agent = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        label="Agent",
        empty_label="(for Reassign)",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = queue_agents()


class OverdueFilter(admin.SimpleListFilter):
    title = "deadline"
    parameter_name = "deadline"

    def lookups(self, request, model_admin):
        return [("overdue", "Overdue"), ("due", "Not yet due")]

    def queryset(self, request, queryset):
        if self.value() == "overdue":
            return queryset.filter(status="open", due_at__lt=timezone.now())
        if self.value() == "due":
            return queryset.filter(status="open", due_at__gte=timezone.now())
        return queryset


def _card_proposed(card) -> str:
    return (
        f"{card.from_pending_reference} proposed as draft card {card.card_id}: a knowledge "
        "editor completes it, then someone else activates it."
    )


@admin.register(PendingQuestion)
class PendingQuestionAdmin(ReadOnlyHistoryAdmin):
    """The queue: the pages show; every change is a button or action calling a service.

    The entry page is read-only for everyone (no Save: there is nothing to
    save there); the Take, Release, Reassign, Answer and Dismiss pages and
    actions each check the permission of the change they make, and every
    page checks the same view permission as the list.
    """

    list_display = [
        "reference_link",
        "created_at",
        "due",
        "reason",
        "status",
        "line",
        "policy_number",
        "assignee",
        "short_question",
    ]
    list_display_links = None  # reference_link is the link
    list_filter = [
        "status",
        OverdueFilter,
        "reason",
        "line",
        AgeFilter,
        ("assignee", RelatedOnlyFieldListFilter),
    ]
    search_fields = ["question", "policy_number"]
    # Open entries first, oldest first: the queue is worked from the top.
    ordering = [Case(When(status="open", then=0), default=1), "created_at"]
    actions = [
        "take_selected",
        "release_selected",
        "reassign_selected",
        "dismiss_selected",
        "propose_card_selected",
    ]
    action_form = QueueActionForm
    change_form_template = "admin/claims/pendingquestion/change_form.html"
    change_list_template = "admin/claims/pendingquestion/change_list.html"
    readonly_fields = [
        "question",
        "evidence_view",
        "conversation",
        "line",
        "policy_number",
        "reason",
        "status",
        "due",
        "assignee",
        "staff_answer",
        "proposed_content",
        "dismiss_reason",
        "created_at",
        "taken_at",
        "closed_at",
        "closed_by",
    ]
    fields = readonly_fields

    def get_queryset(self, request):
        return pending_questions_with_due(super().get_queryset(request)).select_related("assignee")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # read-only pages: changes go through the buttons and actions

    def has_delete_permission(self, request, obj=None):
        return False

    def has_work_permission(self, request, obj=None):
        return request.user.has_perm("claims.change_pendingquestion")

    def has_reassign_permission(self, request, obj=None):
        return request.user.has_perm("claims.reassign_pendingquestion")

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

    @admin.display(description="answer due", ordering="due_at")
    def due(self, entry: PendingQuestion) -> str:
        due_at = getattr(entry, "due_at", None)
        if due_at is None or entry.status != PendingQuestion.Status.OPEN:
            return "—"
        when = timezone.localtime(due_at).strftime("%d %b %H:%M")
        if pending_question_is_overdue(entry):
            return format_html(
                '<strong class="overdue" style="color:#ba2121">OVERDUE</strong> {}', when
            )
        return when

    @admin.display(description="evidence")
    def evidence_view(self, entry: PendingQuestion) -> str:
        return render_to_string(
            "admin/claims/pendingquestion/evidence.html",
            {"evidence": pending_question_evidence(entry), "entry": entry},
        )

    def get_urls(self):
        def route(suffix, view, name):
            return path(suffix, self.admin_site.admin_view(view), name=name)

        return [
            route("overview/", self.overview_view, "claims_pendingquestion_overview"),
            route("<int:pk>/take/", self.take_view, "claims_pendingquestion_take"),
            route("<int:pk>/release/", self.release_view, "claims_pendingquestion_release"),
            route("<int:pk>/reassign/", self.reassign_view, "claims_pendingquestion_reassign"),
            route("<int:pk>/answer/", self.answer_view, "claims_pendingquestion_answer"),
            route("<int:pk>/dismiss/", self.dismiss_view, "claims_pendingquestion_dismiss"),
            route("<int:pk>/propose-card/", self.propose_card_view, "claims_pendingquestion_card"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = {
            **(extra_context or {}),
            "can_work": self.has_work_permission(request),
            "can_reassign": self.has_reassign_permission(request),
            "agents": queue_agents() if self.has_reassign_permission(request) else [],
        }
        return super().change_view(request, object_id, form_url, extra)

    def _require(self, request, permission: str) -> None:
        """The same check as the list (view), plus the change's own permission."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if permission == "work" and not self.has_work_permission(request):
            raise PermissionDenied
        if permission == "reassign" and not self.has_reassign_permission(request):
            raise PermissionDenied

    def _back(self, pk: int):
        return HttpResponseRedirect(reverse("admin:claims_pendingquestion_change", args=[pk]))

    def _post_action(self, request, pk: int, act, done: str):
        self._require(request, "work")
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        with service_call(request) as call:
            entry = act()
        if call.ok:
            self.message_user(request, done.format(ref=entry.reference), messages.SUCCESS)
        return self._back(pk)

    def overview_view(self, request):
        self._require(request, "view")
        context = {
            **self.admin_site.each_context(request),
            "title": "Pending-answers queue: overview",
            "overview": queue_overview(),
            "deadlines": sorted(answer_deadlines().items(), key=lambda item: (item[1], item[0])),
            "reason_labels": dict(PendingQuestion.Reason.choices),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/claims/pendingquestion/overview.html", context)

    def take_view(self, request, pk: int):
        return self._post_action(
            request,
            pk,
            lambda: pending_question_take(entry_id=pk, acting_user=request.user),
            "{ref} is yours.",
        )

    def release_view(self, request, pk: int):
        return self._post_action(
            request,
            pk,
            lambda: pending_question_release(entry_id=pk, acting_user=request.user),
            "{ref} is back in the queue.",
        )

    def reassign_view(self, request, pk: int):
        self._require(request, "reassign")
        try:
            assignee_id = int(request.POST.get("agent", ""))
        except ValueError:
            if request.method == "POST":
                self.message_user(request, "Choose the agent to give it to.", messages.ERROR)
                return self._back(pk)
            assignee_id = 0
        return self._post_action(
            request,
            pk,
            lambda: pending_question_reassign(
                entry_id=pk, acting_user=request.user, assignee_id=assignee_id
            ),
            "{ref} reassigned.",
        )

    def propose_card_view(self, request, pk: int):
        """Propose this entry's staff answer as a draft answer card (for the card gates)."""
        from knowledge.services.cards import card_draft_from_pending

        self._require(request, "work")
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        with service_call(request, subject=f"PQ-{pk}") as call:
            card = card_draft_from_pending(entry_id=pk, acting_user=request.user)
        if call.ok:
            self.message_user(request, _card_proposed(card), messages.SUCCESS)
        return self._back(pk)

    def _bulk(self, request, queryset, act, done: str):
        changed = []
        for entry in queryset.order_by("pk"):
            with service_call(request, subject=entry.reference):
                changed.append(act(entry))
        if changed:
            names = ", ".join(e.reference for e in changed)
            self.message_user(request, done.format(refs=names), messages.SUCCESS)

    @admin.action(description="Take the selected entries", permissions=["work"])
    def take_selected(self, request, queryset):
        self._bulk(
            request,
            queryset,
            lambda e: pending_question_take(entry_id=e.pk, acting_user=request.user),
            "Yours now: {refs}.",
        )

    @admin.action(description="Release the selected entries to the queue", permissions=["work"])
    def release_selected(self, request, queryset):
        self._bulk(
            request,
            queryset,
            lambda e: pending_question_release(entry_id=e.pk, acting_user=request.user),
            "Back in the queue: {refs}.",
        )

    @admin.action(
        description="Reassign the selected entries to the chosen agent", permissions=["reassign"]
    )
    def reassign_selected(self, request, queryset):
        try:
            agent_id = int(request.POST.get("agent", ""))
        except ValueError:
            self.message_user(request, "Choose the agent in the Agent box.", messages.ERROR)
            return
        self._bulk(
            request,
            queryset,
            lambda e: pending_question_reassign(
                entry_id=e.pk, acting_user=request.user, assignee_id=agent_id
            ),
            "Reassigned: {refs}.",
        )

    @admin.action(
        description="Dismiss the selected entries (give the reason)", permissions=["work"]
    )
    def dismiss_selected(self, request, queryset):
        reason = request.POST.get("reason", "").strip()
        if not reason:
            self.message_user(request, "Say why in the Reason box.", messages.ERROR)
            return
        self._bulk(
            request,
            queryset,
            lambda e: pending_question_dismiss(
                entry_id=e.pk, acting_user=request.user, reason=reason
            ),
            "Dismissed: {refs}.",
        )

    @admin.action(
        description="Propose the selected answered entries as draft answer cards",
        permissions=["work"],
    )
    def propose_card_selected(self, request, queryset):
        from knowledge.services.cards import card_draft_from_pending

        for entry in queryset.order_by("pk"):
            with service_call(request, subject=entry.reference) as call:
                card = card_draft_from_pending(entry_id=entry.pk, acting_user=request.user)
            if call.ok:
                self.message_user(request, _card_proposed(card), messages.SUCCESS)

    def _form_view(self, request, pk: int, form_class, title: str, act, submit: str):
        self._require(request, "work")
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
            "evidence": pending_question_evidence(entry),
            "form": form,
            "submit": submit,
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
            "Send the answer",
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
            "Dismiss",
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


@admin.register(AnswerDeadline)
class AnswerDeadlineAdmin(ReadOnlyHistoryAdmin):
    """Queue leads set how long each reason may wait; reasons with no row use the default."""

    list_display = ["reason", "hours"]
    fields = ["reason", "hours"]

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        obj._change_reason = f"Deadline set to {obj.hours} h by {request.user}"
        super().save_model(request, obj, form, change)


@admin.register(ReplyRating)
class ReplyRatingAdmin(ReadOnlyAdmin):
    list_display = ["updated_at", "rating", "turn", "comment"]
    list_filter = ["rating", "updated_at"]
    readonly_fields = ["turn", "rating", "comment", "created_at", "updated_at"]


class GapAcceptForm(forms.Form):
    clause_id = forms.CharField(
        max_length=20,
        help_text="A new id (the next free one is suggested; ids are never reused) or an "
        "existing clause's id to change that clause.",
    )
    title = forms.CharField(
        max_length=300,
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="Plain language, five words or more: what the clause covers.",
    )
    kind = forms.ChoiceField(choices=[])
    schedule_section = forms.CharField(
        required=False, help_text="Only if the schedule switches the clause on."
    )
    body = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "cols": 90}),
        help_text="The clause text (at most about 1,500 characters), checked at ingestion.",
    )

    def __init__(self, *args, **kwargs):
        from knowledge.models import Clause

        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = Clause.Kind.choices


class GapCardForm(forms.Form):
    question = forms.CharField(
        max_length=50,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="The standard question (at most 50 characters). Every customer's question "
        "becomes an alias.",
    )
    conclusion = forms.CharField(
        max_length=50,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="The answer in at most 50 characters; the staff answers are its detail.",
    )


class GapRejectForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}))


@admin.register(ContentGap)
class ContentGapAdmin(ReadOnlyHistoryAdmin):
    """Knowledge editors turn grouped questions into draft clauses (or reject them)."""

    list_display = [
        "gap_link",
        "line",
        "customers",
        "asked",
        "proposal",
        "status",
        "updated_at",
        "draft",
    ]
    list_display_links = None  # gap_link is the link (the admin's own would nest inside it)
    list_filter = ["status", "line"]
    search_fields = ["title", "questions__turn__message"]
    change_form_template = "admin/claims/contentgap/change_form.html"
    fields = [
        "title",
        "line",
        "status",
        "questions_view",
        "decided_by",
        "decided_at",
        "reject_reason",
        "draft",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        # Not super(): the admin would order by the annotations before they exist.
        return content_gaps_listed(ContentGap.objects.all()).select_related(
            "draft_version__document", "draft_card"
        )

    def get_ordering(self, request):
        return ["-customers", "-asked", "-updated_at"]

    def changelist_view(self, request, extra_context=None):
        content_gaps_refresh()  # new questions join their gaps before the list is read
        return super().changelist_view(request, extra_context)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_decide_permission(self, request, obj=None):
        return request.user.has_perm("claims.change_contentgap")

    @admin.display(description="gap", ordering="pk")
    def gap_link(self, gap: ContentGap) -> str:
        url = reverse("admin:claims_contentgap_change", args=[gap.pk])
        return format_html('<a href="{}">{}</a>', url, gap.title[:90])

    @admin.display(description="customers asking", ordering="customers")
    def customers(self, gap) -> int:
        return gap.customers

    @admin.display(description="questions", ordering="asked")
    def asked(self, gap) -> int:
        return gap.asked

    @admin.display(description="proposed text", boolean=True)
    def proposal(self, gap) -> bool:
        return gap.has_proposal

    @admin.display(description="draft")
    def draft(self, gap: ContentGap) -> str:
        if gap.draft_card_id is not None:
            url = reverse("admin:knowledge_card_change", args=[gap.draft_card_id])
            card = gap.draft_card
            return format_html(
                '<a href="{}">card {}</a> ({})', url, card.card_id, card.get_status_display()
            )
        if gap.draft_version_id is None:
            return "—"
        url = reverse("admin:knowledge_wordingversion_change", args=[gap.draft_version_id])
        version = gap.draft_version
        return format_html(
            '<a href="{}">{} {}</a> ({}, {})',
            url,
            version.document.document_id,
            version.label,
            gap.draft_clause_id,
            version.get_status_display(),
        )

    @admin.display(description="questions, staff answers and proposed text")
    def questions_view(self, gap: ContentGap) -> str:
        return render_to_string(
            "admin/claims/contentgap/questions.html", {"rows": content_gap_questions(gap)}
        )

    def get_urls(self):
        def route(suffix, view, name):
            return path(suffix, self.admin_site.admin_view(view), name=name)

        return [
            route("<int:pk>/accept/", self.accept_view, "claims_contentgap_accept"),
            route("<int:pk>/accept-card/", self.accept_card_view, "claims_contentgap_card"),
            route("<int:pk>/reject/", self.reject_view, "claims_contentgap_reject"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = {**(extra_context or {}), "can_decide": self.has_decide_permission(request)}
        return super().change_view(request, object_id, form_url, extra)

    def _gap_form(self, request, pk, form_class, initial, title, act, submit):
        if not (self.has_view_permission(request) and self.has_decide_permission(request)):
            raise PermissionDenied
        gap = ContentGap.objects.filter(pk=pk).first()
        if gap is None:
            self.message_user(request, "No such content gap.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:claims_contentgap_changelist"))
        form = form_class(request.POST or None, initial=initial(gap))
        if request.method == "POST" and form.is_valid():
            with service_call(request, subject=f"Gap {gap.pk}") as call:
                done = act(gap, form.cleaned_data)
            if call.ok:
                self.message_user(request, done, messages.SUCCESS)
                return HttpResponseRedirect(
                    reverse("admin:claims_contentgap_change", args=[gap.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "title": f"{title}: {gap.title[:80]}",
            "gap": gap,
            "rows": content_gap_questions(gap),
            "form": form,
            "submit": submit,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/claims/contentgap/decide_form.html", context)

    def accept_view(self, request, pk: int):
        from knowledge.services.drafts import clause_id_next

        def initial(gap):
            rows = content_gap_questions(gap)
            proposed = next((r.proposed_content for r in rows if r.proposed_content), "")
            answer = next((r.staff_answer for r in rows if r.staff_answer), "")
            return {
                "clause_id": clause_id_next(line=gap.line, segment="GEN"),
                "title": "",
                "kind": "general",
                "body": proposed or answer,
            }

        def act(gap, data):
            gap = content_gap_accept(gap_id=gap.pk, acting_user=request.user, **data)
            return (
                f"Drafted {gap.draft_version} with {gap.draft_clause_id}; ingestion is queued. "
                "Check it on the version page, then request its release."
            )

        return self._gap_form(
            request, pk, GapAcceptForm, initial, "Accept into a draft clause", act, "Draft it"
        )

    def accept_card_view(self, request, pk: int):
        def initial(gap):
            try:
                content = content_gap_card_content(gap)
            except ContentGapError:
                return {}  # the service says why when the form is sent
            return {"question": content.question, "conclusion": content.conclusion}

        def act(gap, data):
            gap = content_gap_accept_card(gap_id=gap.pk, acting_user=request.user, **data)
            return (
                f"Drafted answer card {gap.draft_card.card_id} from gap {gap.pk}. Complete it "
                "(aliases, topic, sources) until its gates pass; someone else activates it."
            )

        return self._gap_form(
            request, pk, GapCardForm, initial, "Accept into a draft card", act, "Draft the card"
        )

    def reject_view(self, request, pk: int):
        def act(gap, data):
            content_gap_reject(gap_id=gap.pk, acting_user=request.user, reason=data["reason"])
            return f"Gap {gap.pk} rejected."

        return self._gap_form(
            request, pk, GapRejectForm, lambda gap: {}, "Reject", act, "Reject the gap"
        )


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "name",
        "risk",
        "status",
        "trace_id",
        "conversation",
        "duration_ms",
    ]
    list_filter = ["name", "risk", "status", "created_at"]
    search_fields = ["trace_id", "call_id", "name"]
    readonly_fields = [f.name for f in ToolCall._meta.fields]


@admin.register(ClaimRecord)
class ClaimRecordAdmin(ReadOnlyAdmin):
    """The demo claims system's claims (read by the agent's claim.status tool)."""

    list_display = ["claim_number", "policy_number", "status", "lodged_on", "last_updated_on"]
    list_filter = ["status"]
    search_fields = ["claim_number", "policy_number"]
    readonly_fields = [f.name for f in ClaimRecord._meta.fields]


@admin.register(ContactUpdateRequest)
class ContactUpdateRequestAdmin(ReadOnlyAdmin):
    """Change requests the customer confirmed with the one-time code, for staff to make."""

    list_display = ["pk", "policy_number", "field", "status", "created_at", "confirmed_at"]
    list_filter = ["status", "field"]
    search_fields = ["policy_number"]
    readonly_fields = [f.name for f in ContactUpdateRequest._meta.fields if f.name != "token_hash"]
    exclude = ["token_hash"]
