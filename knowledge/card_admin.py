"""Admin for answer cards: draft, see the gates, activate (someone else), deprecate.

Every change goes through ``knowledge.services.cards``: the form saves with
``card_create`` / ``card_update``; the actions call ``card_activate``,
``card_deprecate`` and ``card_sources_review``; the import view calls
``cards_csv_import``. A refusal is shown as an error message, never a 500.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from knowledge.coverage import COVERAGE_SECTIONS
from knowledge.models import Card, Channel, Release, WordingVersion
from knowledge.services.cards import (
    MAX_IMPORT_BYTES,
    OPTIONAL_CONDITION_NAMES,
    POLICY_STATUSES,
    CardContent,
    CardError,
    card_activate,
    card_content_clean,
    card_create,
    card_deprecate,
    card_gates_check,
    card_health_flags,
    card_sources_review,
    card_update,
    cards_csv_export,
    cards_csv_import,
)
from northwind.admin_errors import service_call
from northwind.admin_history import ReadOnlyHistoryAdmin

_SECTIONS = sorted({code for codes in COVERAGE_SECTIONS.values() for code in codes})
_CHANNELS = list(Channel.choices)
_STATUSES = [(s, s.capitalize()) for s in POLICY_STATUSES]


class _Lines(forms.CharField):
    """One entry per line of a text area."""

    widget = forms.Textarea(attrs={"rows": 6, "cols": 70})

    def to_python(self, value):
        return [v.strip() for v in (value or "").splitlines() if v.strip()]

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list) else value


class _Ids(forms.CharField):
    def to_python(self, value):
        return [v for v in (value or "").replace(",", " ").split() if v]

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value


def _multi(choices, label: str) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=choices, required=False, widget=forms.CheckboxSelectMultiple, label=label
    )


class CardForm(forms.ModelForm):
    aliases = _Lines(required=False, help_text="3 to 8, one per line: how customers ask it.")
    required_channels = _multi(_CHANNELS, "Required sales channel")
    required_policy_statuses = _multi(_STATUSES, "Required policy status")
    required_schedule_sections = _multi([(s, s) for s in _SECTIONS], "Required schedule section")
    optional_channels = _multi(_CHANNELS, "Optional: sales channel")
    optional_policy_statuses = _multi(_STATUSES, "Optional: policy status")
    optional_schedule_sections = _multi([(s, s) for s in _SECTIONS], "Optional: schedule section")
    source_clause_ids = _Ids(
        required=False, help_text="Clause ids of the source version, e.g. MTR-CLM-01."
    )

    class Meta:
        model = Card
        fields = [
            "line",
            "kind",
            "topic",
            "priority",
            "question",
            "aliases",
            "conclusion",
            "detail",
            "required_channels",
            "required_policy_statuses",
            "required_schedule_sections",
            "source_version",
            "source_clause_ids",
            "source_reference",
            "confidence_hint",
            "owner",
            "next_review_on",
            "duplicate_justification",
        ]
        widgets = {
            "question": forms.TextInput(attrs={"size": 60}),
            "conclusion": forms.TextInput(attrs={"size": 60}),
            "detail": forms.Textarea(attrs={"rows": 5, "cols": 70}),
            "duplicate_justification": forms.Textarea(attrs={"rows": 2, "cols": 70}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source_version"].queryset = WordingVersion.objects.filter(
            status=WordingVersion.Status.INGESTED
        ).select_related("document")
        from django.contrib.auth import get_user_model

        self.fields["owner"].queryset = get_user_model().objects.filter(is_staff=True)
        if self.instance.pk:
            for name in OPTIONAL_CONDITION_NAMES:
                self.initial[f"optional_{name}"] = self.instance.optional_conditions.get(name, [])
            self.fields["line"].disabled = True  # the id carries the line

    def content(self) -> CardContent:
        data = self.cleaned_data
        return CardContent(
            line=data["line"],
            kind=data["kind"],
            topic=data["topic"],
            priority=data["priority"],
            question=data["question"],
            aliases=data["aliases"],
            conclusion=data["conclusion"],
            detail=data.get("detail", ""),
            required_channels=data["required_channels"],
            required_policy_statuses=data["required_policy_statuses"],
            required_schedule_sections=data["required_schedule_sections"],
            optional_conditions={
                name: data[f"optional_{name}"]
                for name in OPTIONAL_CONDITION_NAMES
                if data[f"optional_{name}"]
            },
            source_version_id=data["source_version"].pk if data.get("source_version") else None,
            source_clause_ids=data["source_clause_ids"],
            source_reference=data.get("source_reference", ""),
            confidence_hint=data["confidence_hint"],
            owner_id=data["owner"].pk if data.get("owner") else None,
            next_review_on=data.get("next_review_on"),
            duplicate_justification=data.get("duplicate_justification", ""),
        )

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.cleaned_content = card_content_clean(self.content())
        except CardError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


class CardImportForm(forms.Form):
    file = forms.FileField(label="CSV file", help_text="The columns of an export; UTF-8.")


class CardActionForm(admin.helpers.ActionForm):
    reason = forms.CharField(
        required=False,
        max_length=500,
        label="Reason",
        widget=forms.TextInput(attrs={"size": 40, "placeholder": "why (recorded in the history)"}),
    )


def _gate_list(results: list[dict]) -> str:
    return format_html(
        "<ul class='card-gates'>{}</ul>",
        format_html_join(
            "",
            "<li><strong style='color:{}'>{}</strong> {}: {}</li>",
            (
                (
                    "#1b7f3b" if r["passed"] else "#b00020",
                    ("justified" if r.get("justified") else "pass") if r["passed"] else "FAIL",
                    r["gate"].replace("_", " "),
                    r["detail"],
                )
                for r in results
            ),
        ),
    )


@admin.register(Card)
class CardAdmin(ReadOnlyHistoryAdmin):
    form = CardForm
    change_list_template = "admin/knowledge/card/change_list.html"
    list_display = [
        "card_id",
        "question",
        "line_label",
        "kind_short",
        "status",
        "topic",
        "priority",
        "recall_count",
        "last_returned_at",
        "cited_count",
        "ratings",
        "health",
    ]
    list_filter = ["status", "line", "kind", "source_changed", "confidence_hint"]
    search_fields = ["card_id", "question", "topic", "conclusion"]
    action_form = CardActionForm
    actions = ["activate", "deprecate", "review_sources", "export_csv"]
    readonly_fields = [
        "card_id",
        "status",
        "gates",
        "health_flags",
        "drafted_by",
        "activated_by",
        "activated_at",
        "deprecated_by",
        "deprecated_at",
        "deprecate_reason",
        "source_clause_hashes",
        "from_pending_reference",
        "recall_count",
        "last_returned_at",
        "cited_count",
        "conflict_count",
        "helpful_count",
        "not_helpful_count",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("source_version__document")

    def get_fieldsets(self, request, obj=None):
        content = [
            (None, {"fields": ["line", "kind", "topic", "priority"]}),
            ("Question", {"fields": ["question", "aliases"]}),
            ("Answer", {"fields": ["conclusion", "detail"]}),
            (
                "Required conditions (a card that fails one is not used)",
                {
                    "fields": [
                        "required_channels",
                        "required_policy_statuses",
                        "required_schedule_sections",
                    ]
                },
            ),
            (
                "Optional conditions (each that fails lowers the card's rank)",
                {
                    "fields": [
                        "optional_channels",
                        "optional_policy_statuses",
                        "optional_schedule_sections",
                    ]
                },
            ),
            ("Source", {"fields": ["source_version", "source_clause_ids", "source_reference"]}),
            (
                "Maintenance",
                {
                    "fields": [
                        "confidence_hint",
                        "owner",
                        "next_review_on",
                        "duplicate_justification",
                    ]
                },
            ),
        ]
        if obj is None:
            return content
        if self._all_read_only(request, obj):
            content[4] = ("Optional conditions", {"fields": ["optional_conditions"]})
        state = (
            "State and gates",
            {"fields": ["card_id", "status", "gates", "health_flags"]},
        )
        record = (
            "Record",
            {
                "fields": [
                    "drafted_by",
                    "activated_by",
                    "activated_at",
                    "deprecated_by",
                    "deprecated_at",
                    "deprecate_reason",
                    "source_clause_hashes",
                    "from_pending_reference",
                    "recall_count",
                    "last_returned_at",
                    "cited_count",
                    "conflict_count",
                    "helpful_count",
                    "not_helpful_count",
                ]
            },
        )
        return [state, *content, record]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        if self._all_read_only(request, obj):
            return [f for fs in self.get_fieldsets(request, obj) for f in fs[1]["fields"]]
        return self.readonly_fields

    def _all_read_only(self, request, obj) -> bool:
        return obj.status == Card.Status.DEPRECATED or not self.has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # kept for good; deprecate instead

    def has_activate_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.activate_card")

    def has_export_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.view_card")

    def save_model(self, request, obj, form, change):
        try:
            if change:
                saved = card_update(
                    card_id=obj.card_id, acting_user=request.user, content=form.cleaned_content
                )
            else:
                saved = card_create(acting_user=request.user, content=form.cleaned_content)
        except CardError as exc:
            raise PermissionDenied(str(exc)) from exc
        obj.__dict__.update(Card.objects.get(pk=saved.pk).__dict__)

    def save_related(self, request, form, formsets, change):
        pass  # no relations beyond what the service saved

    # --- columns and read-only fields --------------------------------------------

    @admin.display(description="Line", ordering="line")
    def line_label(self, obj) -> str:
        return obj.get_line_display() if obj.line else "all lines"

    @admin.display(description="Kind", ordering="kind")
    def kind_short(self, obj) -> str:
        return "outside the wording" if obj.kind == Card.Kind.NOT_HERE else "answer"

    @admin.display(description="Helpful / not")
    def ratings(self, obj) -> str:
        return f"{obj.helpful_count} / {obj.not_helpful_count}"

    @admin.display(description="Health")
    def health(self, obj) -> str:
        flags = card_health_flags(obj)
        if not flags:
            return "ok"
        return format_html("<span style='color:#b00020'>{}</span>", " ".join(flags))

    @admin.display(description="Health")
    def health_flags(self, obj) -> str:
        flags = card_health_flags(obj)
        return " ".join(flags) if flags else "Nothing to look at."

    @admin.display(description="Gates (checked now)")
    def gates(self, obj) -> str:
        if obj.status != Card.Status.DRAFT:
            stored = obj.gate_results or []
            when = obj.gates_checked_at.strftime("%Y-%m-%d %H:%M") if obj.gates_checked_at else ""
            if not stored:
                return "—"
            return format_html("As checked at activation ({}):{}", when, _gate_list(stored))
        results = [r.as_dict() for r in card_gates_check(card=obj)]
        verdict = (
            "Ready: another person with the activate permission can activate it."
            if all(r["passed"] for r in results)
            else "Not ready: fix what failed, save, and the gates run again."
        )
        return format_html("{}{}", verdict, _gate_list(results))

    # --- actions ---------------------------------------------------------------------

    def _reason(self, request) -> str:
        return request.POST.get("reason", "").strip()

    def _run(self, request, queryset, service, done: str, **kwargs) -> None:
        for card in queryset.order_by("pk"):
            with service_call(request, subject=card.card_id) as call:
                service(card_id=card.card_id, acting_user=request.user, **kwargs)
            if call.ok:
                self.message_user(request, f"{card.card_id}: {done}.")

    @admin.action(description="Activate the selected draft cards", permissions=["activate"])
    def activate(self, request, queryset):
        self._run(
            request,
            queryset,
            card_activate,
            "active from the next turn",
            reason=self._reason(request),
        )

    @admin.action(
        description="Deprecate the selected cards (give a reason)", permissions=["activate"]
    )
    def deprecate(self, request, queryset):
        self._run(
            request,
            queryset,
            card_deprecate,
            "deprecated; out of the index",
            reason=self._reason(request),
        )

    @admin.action(
        description="Sources reviewed: pin to the approved version (give a reason)",
        permissions=["activate"],
    )
    def review_sources(self, request, queryset):
        for card in queryset.select_related("source_version__document").order_by("pk"):
            version = None
            if card.source_version is not None:
                release = (
                    Release.objects.filter(
                        version__document=card.source_version.document,
                        status=Release.Status.APPROVED,
                    )
                    .select_related("version")
                    .order_by("-version__effective_from")
                    .first()
                )
                version = release.version if release else None
            if version is None:
                self.message_user(
                    request,
                    f"{card.card_id}: no approved version to review against.",
                    messages.ERROR,
                )
                continue
            with service_call(request, subject=card.card_id) as call:
                card_sources_review(
                    card_id=card.card_id,
                    acting_user=request.user,
                    version_id=version.pk,
                    reason=self._reason(request),
                )
            if call.ok:
                self.message_user(request, f"{card.card_id}: reviewed against {version}.")

    @admin.action(description="Export the selected cards as CSV", permissions=["export"])
    def export_csv(self, request, queryset):
        return self._csv_response(queryset)

    def _csv_response(self, queryset) -> HttpResponse:
        stamp = timezone.now().strftime("%Y%m%d-%H%M")
        response = HttpResponse(cards_csv_export(queryset), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="cards-{stamp}.csv"'
        return response

    # --- import and export views ----------------------------------------------------

    def get_urls(self):
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="knowledge_card_import",
            ),
            path(
                "export/",
                self.admin_site.admin_view(self.export_view),
                name="knowledge_card_export",
            ),
            *super().get_urls(),
        ]

    def export_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        return self._csv_response(Card.objects.all())

    def import_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied
        result = None
        form = CardImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            if upload.size > MAX_IMPORT_BYTES:
                form.add_error("file", f"The file is {upload.size // 1024} KB; at most 1024 KB.")
            else:
                result = cards_csv_import(data=upload.read(), acting_user=request.user)
                if not result.errors:
                    self.message_user(
                        request,
                        f"Imported: {len(result.created)} drafted, {len(result.updated)} "
                        f"changed (drafts again), {len(result.unchanged)} unchanged.",
                    )
                    return HttpResponseRedirect(reverse("admin:knowledge_card_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Import answer cards from CSV",
            "form": form,
            "result": result,
        }
        return TemplateResponse(request, "admin/knowledge/card/import.html", context)
