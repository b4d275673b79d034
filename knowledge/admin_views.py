"""Release review pages of the admin: confirm a change, see its impact and diff.

Every release change (request, approve, reject, withdraw, cancel) and the
discard of a version is a confirmation page (GET) that shows the routing
impact, the clause diff and, for approval, the evaluation gate, and a POST
that calls the one service with the reason written there. Refusals come
back on the same page as an error (``northwind.admin_errors.service_call``).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from knowledge.diff import version_diff
from knowledge.models import Release, ReleaseStatus, WordingVersion
from knowledge.release_impact import release_impact, version_discard_impact
from knowledge.services.ingestion import wording_version_discard
from knowledge.services.releases import (
    TRANSITIONS,
    ReleaseAction,
    evaluation_latest,
    gate_refusal,
    release_request,
    release_transition,
)
from northwind.admin_errors import service_call

ACTION_TITLES = {
    ReleaseAction.REQUEST: "Request a release of {version}",
    ReleaseAction.APPROVE: "Approve the release of {version}",
    ReleaseAction.REJECT: "Reject the release of {version}",
    ReleaseAction.WITHDRAW: "Withdraw the release of {version}",
    ReleaseAction.CANCEL: "Cancel the request for {version}",
    "discard": "Discard {version}",
}


def serving_version_for(version: WordingVersion) -> WordingVersion | None:
    """The version to compare ``version`` with: the one serving its line now.

    When ``version`` is itself the one serving (it was approved), the latest
    earlier ingested version of the same document instead.
    """
    from claims.evaluation.gate import serving_version

    serving = serving_version(version.document.line)
    if serving is not None and serving.pk != version.pk:
        return serving
    return (
        WordingVersion.objects.filter(
            document=version.document,
            status=WordingVersion.Status.INGESTED,
            effective_from__lte=version.effective_from,
        )
        .exclude(pk=version.pk)
        .order_by("-effective_from", "-pk")
        .first()
    )


def diff_url(version: WordingVersion, against: WordingVersion | None = None) -> str:
    url = reverse("admin:knowledge_wordingversion_diff", args=[version.pk])
    return f"{url}?against={against.pk}" if against else url


def _pct(value) -> str:
    return "—" if value is None else f"{value:.1%}"


def evaluation_rows(evaluation) -> list[tuple[str, dict]]:
    """The gate's figures as table rows: serving, then candidate."""
    if evaluation is None or not evaluation.figures:
        return []
    rows = []
    for key, name in (("serving", "serving"), ("candidate", "candidate")):
        figures = evaluation.figures.get(key)
        if not figures:
            continue
        zero = figures.get("must_be_zero", {})
        bad = {k: v for k, v in zero.items() if v}
        rows.append(
            (
                f"{name}: {figures.get('version', '')}",
                {
                    "returned_pct": _pct(figures.get("returned")),
                    "cited_pct": _pct(figures.get("cited")),
                    "nothing_fits_pct": _pct(figures.get("nothing_fits")),
                    "must_be_zero_text": ", ".join(f"{k} {v}" for k, v in bad.items())
                    or "all zero",
                },
            )
        )
    return rows


def _reason_text(request: HttpRequest, name: str = "reason") -> str:
    return request.POST.get(name, "").strip()[:2000]


def release_action_view(model_admin, request: HttpRequest, pk: int, action: str) -> HttpResponse:
    release = get_object_or_404(Release.objects.select_related("version__document"), pk=pk)
    transition = TRANSITIONS.get(action)
    if transition is None or action == ReleaseAction.REQUEST:
        raise Http404(f"There is no release action {action!r}.")
    if not model_admin.has_view_permission(request, release):
        raise PermissionDenied
    release_url = reverse("admin:knowledge_release_change", args=[release.pk])
    if request.method == "POST":
        with service_call(request) as call:
            release_transition(
                release_id=release.pk,
                action=action,
                acting_user=request.user,
                reason=_reason_text(request),
                gate_override_reason=_reason_text(request, "gate_override_reason"),
                confirm_unrouted=request.POST.get("confirm_unrouted") == "yes",
            )
        if call.ok:
            messages.success(request, f"The release of {release.version} was {transition.done}.")
            return HttpResponseRedirect(release_url)
        release.refresh_from_db()
    impact = release_impact(release=release, action=action)
    serving = serving_version_for(release.version)
    evaluation = evaluation_latest(release)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": Release._meta,
        "title": ACTION_TITLES[action].format(version=release.version),
        "subject": release,
        "version": release.version,
        "action": action,
        "transition": transition,
        "impact": impact,
        "policies_url": reverse(
            "admin:knowledge_release_impact_policies", args=[release.pk, action]
        ),
        "diff_url": diff_url(release.version, serving),
        "serving": serving,
        "evaluation": evaluation if action == ReleaseAction.APPROVE else None,
        "evaluation_rows": evaluation_rows(evaluation),
        "gate_refusal": gate_refusal(release) if action == ReleaseAction.APPROVE else "",
        "reason_required": bool(transition.reason_required),
        "back_url": release_url,
        "posted": request.POST if request.method == "POST" else {},
        "wrong_state": release.status != transition.source,
        "status_display": release.get_status_display(),
    }
    return TemplateResponse(request, "admin/knowledge/confirm_action.html", context)


def impact_policies_view(model_admin, request: HttpRequest, pk: int, action: str) -> HttpResponse:
    release = get_object_or_404(Release.objects.select_related("version__document"), pk=pk)
    if action not in TRANSITIONS or not model_admin.has_view_permission(request, release):
        raise Http404("No such release action.")
    impact = release_impact(release=release, action=action)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": Release._meta,
        "title": f"Policies in force: {ACTION_TITLES[action].format(version=release.version)}",
        "impact": impact,
        "back_url": reverse("admin:knowledge_release_action", args=[release.pk, action]),
    }
    return TemplateResponse(request, "admin/knowledge/impact_policies.html", context)


def version_request_view(model_admin, request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(WordingVersion.objects.select_related("document"), pk=pk)
    if not request.user.has_perm("knowledge.request_release"):
        raise PermissionDenied
    version_url = reverse("admin:knowledge_wordingversion_change", args=[version.pk])
    if request.method == "POST":
        with service_call(request) as call:
            release = release_request(
                version_id=version.pk, acting_user=request.user, reason=_reason_text(request)
            )
        if call.ok:
            messages.success(
                request,
                f"Release of {version} requested; the evaluation gate is replaying the "
                "agent on it. This page shows its result when it is done.",
            )
            return HttpResponseRedirect(
                reverse("admin:knowledge_release_change", args=[release.pk])
            )
    # What approving it would do, on a release that is not saved.
    draft = Release(line=version.document.line, version=version, status=ReleaseStatus.DRAFT)
    impact = release_impact(release=draft, action=ReleaseAction.REQUEST)
    serving = serving_version_for(version)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": WordingVersion._meta,
        "title": ACTION_TITLES[ReleaseAction.REQUEST].format(version=version),
        "subject": version,
        "version": version,
        "action": ReleaseAction.REQUEST,
        "impact": impact,
        "impact_if_approved": True,
        "diff_url": diff_url(version, serving),
        "serving": serving,
        "reason_required": False,
        "back_url": version_url,
        "posted": request.POST if request.method == "POST" else {},
    }
    return TemplateResponse(request, "admin/knowledge/confirm_action.html", context)


def version_discard_view(model_admin, request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(WordingVersion.objects.select_related("document"), pk=pk)
    if not request.user.has_perm("knowledge.change_wordingversion"):
        raise PermissionDenied
    version_url = reverse("admin:knowledge_wordingversion_change", args=[version.pk])
    if request.method == "POST":
        with service_call(request) as call:
            wording_version_discard(
                version_id=version.pk, acting_user=request.user, reason=_reason_text(request)
            )
        if call.ok:
            messages.success(request, f"{version} discarded; its clause ids are free again.")
            return HttpResponseRedirect(version_url)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": WordingVersion._meta,
        "title": ACTION_TITLES["discard"].format(version=version),
        "subject": version,
        "version": version,
        "action": "discard",
        "impact": version_discard_impact(version=version),
        "diff_url": diff_url(version, serving_version_for(version)),
        "reason_required": True,
        "back_url": version_url,
        "posted": request.POST if request.method == "POST" else {},
    }
    return TemplateResponse(request, "admin/knowledge/confirm_action.html", context)


def version_diff_view(model_admin, request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(WordingVersion.objects.select_related("document"), pk=pk)
    if not model_admin.has_view_permission(request, version):
        raise PermissionDenied
    others = (
        WordingVersion.objects.filter(document=version.document)
        .exclude(pk=version.pk)
        .order_by("effective_from", "label")
    )
    against_raw = request.GET.get("against", "")
    if against_raw:
        if not against_raw.isdigit() or not others.filter(pk=int(against_raw)).exists():
            messages.error(
                request,
                f"There is no other version of {version.document} with id {against_raw!r}; "
                "showing the diff against the version serving the line.",
            )
            against = serving_version_for(version)
        else:
            against = others.get(pk=int(against_raw))
    else:
        against = serving_version_for(version)
    diff = version_diff(old=against, new=version)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": WordingVersion._meta,
        "title": f"{version} against {against or 'nothing (no version serves the line)'}",
        "diff": diff,
        "version": version,
        "against": against,
        "others": others,
        "back_url": reverse("admin:knowledge_wordingversion_change", args=[version.pk]),
    }
    return TemplateResponse(request, "admin/knowledge/version_diff.html", context)
