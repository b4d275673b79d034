"""Admin for the knowledge base: upload versions, read clauses, decide releases.

Every change goes through the services: an upload calls
``wording_version_create``; the release actions call the release services and
show their refusal as an error message.
"""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from knowledge import admin_views
from knowledge.clause_store import StorageClauseStore
from knowledge.models import (
    DOCUMENT_LINES,
    Channel,
    Clause,
    Release,
    WordingDocument,
    WordingVersion,
)
from knowledge.services.ingestion import (
    WordingError,
    wording_version_check,
    wording_version_create,
    wording_version_requeue,
)
from knowledge.services.releases import evaluation_latest, transitions_available
from knowledge.storage import object_read_once
from northwind.admin_errors import service_call
from northwind.admin_history import ReadOnlyHistoryAdmin


@admin.register(WordingDocument)
class WordingDocumentAdmin(ReadOnlyHistoryAdmin):
    list_display = ["document_id", "line", "title"]
    readonly_fields = ["document_id", "line", "title", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False  # documents are created with their first version

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class WordingVersionUploadForm(forms.ModelForm):
    document_id = forms.ChoiceField(
        label="Document", choices=[(d, d) for d in DOCUMENT_LINES], initial="NW-MOTOR"
    )
    source_file = forms.FileField(label="Source (Markdown)")
    channels = forms.MultipleChoiceField(
        choices=Channel.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[Channel.DIRECT, Channel.BROKER],
    )

    class Meta:
        model = WordingVersion
        fields = ["label", "effective_from", "effective_to"]

    # A whole wording is tens of kilobytes (30 clauses of at most 1,500
    # characters); anything far larger is the wrong file.
    MAX_SOURCE_BYTES = 512 * 1024

    def clean_source_file(self):
        upload = self.cleaned_data["source_file"]
        if upload.size > self.MAX_SOURCE_BYTES:
            raise forms.ValidationError(
                f"The source is {upload.size // 1024} KB; a wording source is at most "
                f"{self.MAX_SOURCE_BYTES // 1024} KB (Markdown text, not a PDF or a Word file)."
            )
        return upload

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            wording_version_check(
                document_id=data["document_id"],
                label=data["label"],
                effective_from=data["effective_from"],
                effective_to=data.get("effective_to"),
                channels=data["channels"],
            )
        except WordingError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


class ClauseInline(admin.TabularInline):
    model = Clause
    fields = [
        "position",
        "clause_id",
        "title",
        "kind",
        "visibility",
        "schedule_section",
        "char_count",
    ]
    readonly_fields = fields
    show_change_link = True
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WordingVersion)
class WordingVersionAdmin(ReadOnlyHistoryAdmin):
    list_display = [
        "__str__",
        "status",
        "effective_from",
        "effective_to",
        "channel_list",
        "clause_count",
        "release_status",
        "ingested_at",
    ]
    list_filter = ["document", "status"]
    search_fields = ["label", "document__document_id"]
    # Requesting a release and discarding are confirmation pages on the
    # version's own page (knowledge/admin_views.py), which show the impact.
    actions = ["ingest_again"]
    inlines = [ClauseInline]
    readonly_fields = [
        "document",
        "label",
        "status",
        "errors",
        "effective_from",
        "effective_to",
        "channel_list",
        "source_link",
        "source_sha256",
        "manifest_key",
        "embedding_model",
        "ingested_at",
        "created_by",
        "created_at",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("document")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = WordingVersionUploadForm
            kwargs["fields"] = ["label", "effective_from", "effective_to"]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [
                (
                    None,
                    {
                        "fields": [
                            "document_id",
                            "label",
                            "source_file",
                            "effective_from",
                            "effective_to",
                            "channels",
                        ]
                    },
                )
            ]
        return [(None, {"fields": self.readonly_fields})]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_inlines(self, request, obj):
        return [] if obj is None else self.inlines

    def has_change_permission(self, request, obj=None) -> bool:
        # A version never changes once uploaded; the change permission lets an
        # editor run the actions, the page itself stays read-only.
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_request_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.request_release")

    def has_ingest_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.change_wordingversion")

    def save_model(self, request, obj, form, change):
        if change:
            raise PermissionDenied("A wording version cannot be changed; upload a new one.")
        upload = form.cleaned_data["source_file"]
        created = wording_version_create(
            document_id=form.cleaned_data["document_id"],
            label=form.cleaned_data["label"],
            source_bytes=upload.read(),
            filename=upload.name,
            effective_from=form.cleaned_data["effective_from"],
            effective_to=form.cleaned_data["effective_to"],
            channels=form.cleaned_data["channels"],
            acting_user=request.user,
        )
        # The admin goes on with ``obj`` (log entry, redirect): make it the row.
        obj.__dict__.update(created.__dict__)

    def get_changeform_initial_data(self, request):
        # "Upload a corrected file" links here with the failed version's
        # document, label, window and channels filled in.
        initial = super().get_changeform_initial_data(request)
        if "channels" in request.GET:
            initial["channels"] = request.GET["channels"].split(",")
        return initial

    def response_add(self, request, obj, post_url_continue=None):
        # Ingestion is dispatched when the upload's transaction commits, after
        # this response is built, and runs on a worker later still (at once on
        # the embedded default). Say nothing here: the version's page says the
        # one state the version is in when it opens.
        url = reverse("admin:knowledge_wordingversion_change", args=[obj.pk])
        return HttpResponseRedirect(f"{url}?uploaded=1")

    def _state_message(self, request, version: WordingVersion, *, just_uploaded: bool) -> None:
        Status = WordingVersion.Status
        if version.status == Status.FAILED:
            self.message_user(
                request,
                f"{version} failed ingestion with {len(version.validation_errors)} error(s); "
                "nothing was published. Fix the source and upload a corrected file under the "
                "same label.",
                messages.ERROR,
            )
        elif version.status == Status.UPLOADED and version.dispatched_at is None:
            self.message_user(
                request,
                f"{version} is uploaded and waiting: its ingestion could not be handed to the "
                "task queue yet (the broker is unreachable). It is dispatched automatically when "
                "the broker is back; nothing is lost.",
                messages.WARNING,
            )
        elif version.status == Status.UPLOADED:
            self.message_user(
                request, f"{version}: ingestion is queued; reload this page to see progress."
            )
        elif version.status == Status.INGESTING:
            self.message_user(
                request,
                f"{version} is being ingested (attempt {version.ingest_attempt}); reload this "
                "page to see progress.",
            )
        elif version.status == Status.INGESTED and just_uploaded:
            self.message_user(
                request,
                f"{version} uploaded and ingested: {version.clauses.count()} clauses. "
                "Check them below, then request a release.",
                messages.SUCCESS,
            )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        version = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if version is not None and request.method == "GET":
            self._state_message(request, version, just_uploaded="uploaded" in request.GET)
            replaceable = (WordingVersion.Status.FAILED, WordingVersion.Status.DISCARDED)
            if version.status in replaceable and self.has_add_permission(request):
                extra_context["corrected_upload_url"] = self.corrected_upload_url(version)
        if version is not None:
            released = version.releases.exclude(status=Release.Status.DRAFT).exists()
            extra_context["can_request_release"] = (
                version.status == WordingVersion.Status.INGESTED
                and request.user.has_perm("knowledge.request_release")
                and not version.releases.filter(
                    status__in=[Release.Status.PENDING_APPROVAL, Release.Status.APPROVED]
                ).exists()
            )
            extra_context["can_discard"] = (
                version.status != WordingVersion.Status.DISCARDED
                and not released
                and request.user.has_perm("knowledge.change_wordingversion")
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def corrected_upload_url(self, version: WordingVersion) -> str:
        """The upload form, filled in to replace ``version`` under the same label."""
        query = {
            "document_id": version.document.document_id,
            "label": version.label,
            "effective_from": version.effective_from.isoformat(),
            "channels": ",".join(version.channels),
        }
        if version.effective_to:
            query["effective_to"] = version.effective_to.isoformat()
        return f"{reverse('admin:knowledge_wordingversion_add')}?{urlencode(query)}"

    @admin.display(description="Source")
    def source_link(self, obj) -> str:
        if not obj.source:
            return "—"
        url = reverse("admin:knowledge_wordingversion_source", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, obj.source.name)

    def get_urls(self):
        return [
            path(
                "<int:pk>/source/",
                self.admin_site.admin_view(self.source_view),
                name="knowledge_wordingversion_source",
            ),
            path(
                "<int:pk>/request-release/",
                self.admin_site.admin_view(partial(admin_views.version_request_view, self)),
                name="knowledge_wordingversion_request",
            ),
            path(
                "<int:pk>/discard/",
                self.admin_site.admin_view(partial(admin_views.version_discard_view, self)),
                name="knowledge_wordingversion_discard",
            ),
            path(
                "<int:pk>/diff/",
                self.admin_site.admin_view(partial(admin_views.version_diff_view, self)),
                name="knowledge_wordingversion_diff",
            ),
            *super().get_urls(),
        ]

    def source_view(self, request, pk: int):
        """The uploaded Markdown, read from object storage, for staff who may view it."""
        version = self.get_object(request, str(pk))
        if version is None or not self.has_view_permission(request, version):
            raise PermissionDenied
        try:
            data = object_read_once(version.source.name)
        except Exception as exc:  # storage down: say so, never a 500
            return HttpResponse(
                f"The source cannot be read right now ({type(exc).__name__}).",
                status=503,
                content_type="text/plain; charset=utf-8",
            )
        return HttpResponse(data, content_type="text/plain; charset=utf-8")

    @admin.display(description="Channels")
    def channel_list(self, obj) -> str:
        return ", ".join(obj.channels)

    @admin.display(description="Clauses")
    def clause_count(self, obj) -> int:
        return obj.clauses.count()

    @admin.display(description="Release")
    def release_status(self, obj) -> str:
        latest = obj.releases.order_by("-pk").first()
        return latest.get_status_display() if latest else "—"

    @admin.display(description="Validation errors")
    def errors(self, obj) -> str:
        if not obj.validation_errors:
            return "—"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{}{}</li>",
                (
                    (f"line {e['line']}: " if e.get("line") else "", e["message"])
                    for e in obj.validation_errors
                ),
            ),
        )

    @admin.action(
        description="Ingest the selected failed or stalled versions again", permissions=["ingest"]
    )
    def ingest_again(self, request, queryset):
        for version in queryset.order_by("pk"):
            sent = False
            with service_call(request) as call:
                sent = wording_version_requeue(version_id=version.pk, acting_user=request.user)
            if not call.ok:
                continue
            version.refresh_from_db()
            if not sent:
                self.message_user(
                    request,
                    f"{version}: the task queue is unreachable; it stays uploaded and is "
                    "dispatched automatically when the broker is back.",
                    messages.WARNING,
                )
            elif version.status == WordingVersion.Status.FAILED:  # ran at once (embedded)
                self.message_user(
                    request, f"{version} failed again; see its errors.", messages.ERROR
                )
            elif version.status == WordingVersion.Status.INGESTED:
                self.message_user(request, f"{version} ingested.")
            else:
                self.message_user(request, f"{version}: ingestion queued.")


@admin.register(Clause)
class ClauseAdmin(ReadOnlyHistoryAdmin):
    list_display = ["clause_id", "title", "kind", "visibility", "schedule_section", "version"]
    list_filter = ["version", "kind", "visibility"]
    search_fields = ["clause_id", "title"]
    fields = [
        "version",
        "clause_id",
        "title",
        "kind",
        "visibility",
        "schedule_section",
        "refers_to",
        "position",
        "char_count",
        "sha256",
        "storage_key",
        "similar_questions",
        "stored_text",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("version__document")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Similar questions (how customers ask; used to select it)")
    def similar_questions(self, obj) -> str:
        if not obj.questions:
            return "(none)"
        return format_html_join(mark_safe("<br>"), "{}", ((q,) for q in obj.questions))

    @admin.display(description="Text (read from object storage)")
    def stored_text(self, obj) -> str:
        fetch = StorageClauseStore().fetch(
            version_id=obj.version_id, clause_ids=[obj.clause_id], visibility="internal"
        )
        if fetch.status != "ok" or not fetch.returned:
            detail = fetch.detail or "not found in storage"
            return format_html("<strong>Unavailable</strong>: {}", detail)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', fetch.returned[0].text)


@admin.register(Release)
class ReleaseAdmin(ReadOnlyHistoryAdmin):
    list_display = [
        "pk",
        "line",
        "version_link",
        "window",
        "status",
        "requested_by",
        "decided_by",
        "withdrawn_by",
        "requested_at",
    ]
    list_filter = ["line", "status"]
    # Every change is a confirmation page on the release's own page, showing
    # its routing impact, the diff and the gate (knowledge/admin_views.py).
    actions = None
    readonly_fields = [
        "line",
        "version",
        "status",
        "requested_by",
        "requested_at",
        "request_reason",
        "decided_by",
        "decided_at",
        "decision_reason",
        "withdrawn_by",
        "withdrawn_at",
        "withdraw_reason",
        "superseded_version",
        "gate_override_reason",
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("version__document", "requested_by", "decided_by", "withdrawn_by")
        )

    def has_add_permission(self, request) -> bool:
        return False  # a release is requested from its wording version

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_decide_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.approve_release")

    @admin.display(description="Version")
    def version_link(self, obj) -> str:
        url = reverse("admin:knowledge_wordingversion_change", args=[obj.version_id])
        return format_html('<a href="{}">{}</a>', url, obj.version)

    @admin.display(description="Window")
    def window(self, obj) -> str:
        end = obj.version.effective_to or "open"
        return f"[{obj.version.effective_from}, {end})"

    def get_urls(self):
        return [
            path(
                "<int:pk>/act/<str:action>/",
                self.admin_site.admin_view(partial(admin_views.release_action_view, self)),
                name="knowledge_release_action",
            ),
            path(
                "<int:pk>/act/<str:action>/policies/",
                self.admin_site.admin_view(partial(admin_views.impact_policies_view, self)),
                name="knowledge_release_impact_policies",
            ),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        release = self.get_object(request, object_id)
        extra_context = {**(extra_context or {})}
        if release is not None:
            evaluation = evaluation_latest(release)
            extra_context.update(
                release_transitions=transitions_available(release, request.user),
                evaluation=evaluation,
                evaluation_rows=admin_views.evaluation_rows(evaluation),
                release_diff_url=admin_views.diff_url(
                    release.version,
                    evaluation.serving_version
                    if evaluation and evaluation.serving_version_id
                    else admin_views.serving_version_for(release.version),
                ),
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def has_request_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.request_release")


from knowledge import card_admin  # noqa: E402,F401  (answer cards: their own module)
