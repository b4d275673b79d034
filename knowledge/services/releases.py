"""Release workflow: request → approve or reject → withdraw.

Knowledge editors (``knowledge.request_release``) request; approvers
(``knowledge.approve_release``) decide and withdraw. Whoever requested a
release never decides it. Approved releases of one line never have
overlapping effective windows: ``release_approve`` checks that under row
locks, after re-reading the release. The one overlap it resolves itself is
a successor: a later version of the same document that starts inside the
approved open-ended window of an earlier one closes that window where it
starts, so policies already in force keep their wording.
"""

from __future__ import annotations

from datetime import date

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from knowledge.models import Release, WordingDocument, WordingVersion
from northwind.errors import PermissionDenied, ServiceError


class ReleaseError(ServiceError):
    """A release transition was refused; the message says why."""

    code = "release_refused"


def _require(user: AbstractBaseUser, perm: str, doing: str) -> None:
    if user is None or not user.is_active or not user.has_perm(perm):
        raise PermissionDenied(f"You do not have permission to {doing}.")


def windows_overlap(a_from: date, a_to: date | None, b_from: date, b_to: date | None) -> bool:
    """Whether [a_from, a_to) and [b_from, b_to) share a day; None is open-ended."""
    return (b_to is None or a_from < b_to) and (a_to is None or b_from < a_to)


def _supersedes(successor: WordingVersion, predecessor: WordingVersion) -> bool:
    """A later version of the same document starting inside an open-ended window."""
    return (
        predecessor.effective_to is None
        and predecessor.document_id == successor.document_id
        and predecessor.effective_from < successor.effective_from
    )


def _window(version: WordingVersion) -> str:
    end = version.effective_to.isoformat() if version.effective_to else "open-ended"
    return f"[{version.effective_from.isoformat()}, {end})"


@transaction.atomic
def release_request(*, version_id: int, acting_user: AbstractBaseUser, reason: str = "") -> Release:
    """Ask for a version to be released; only ingested versions can be."""
    _require(acting_user, "knowledge.request_release", "request releases")
    version = (
        WordingVersion.objects.select_for_update().select_related("document").get(pk=version_id)
    )
    if version.status != WordingVersion.Status.INGESTED:
        raise ReleaseError(
            f"Only an ingested version can be released; {version} is {version.status}."
        )
    open_release = version.releases.filter(
        status__in=[Release.Status.PENDING_APPROVAL, Release.Status.APPROVED]
    ).first()
    if open_release is not None:
        raise ReleaseError(
            f"{version} already has a release that is {open_release.get_status_display().lower()}."
        )
    release = Release(
        line=version.document.line,
        version=version,
        status=Release.Status.PENDING_APPROVAL,
        requested_by=acting_user,
        requested_at=timezone.now(),
        request_reason=reason,
    )
    release._change_reason = f"Requested: {reason}" if reason else "Requested"
    release.save()
    return release


def _locked_release(release_id: int) -> Release:
    # of=("self",): lock the release row only; the line is locked explicitly.
    return (
        Release.objects.select_for_update(of=("self",))
        .select_related("version__document")
        .get(pk=release_id)
    )


@transaction.atomic
def release_approve(*, release_id: int, acting_user: AbstractBaseUser, reason: str = "") -> Release:
    """Approve a pending release, unless its window overlaps an approved one of the line.

    Lock order, the same for every approval: the release, the line's
    documents, then the line's approved releases, each in pk order. The
    documents' rows serialise approvals of one line even when no release is
    approved yet; the overlap check runs after the locks are held.
    """
    _require(acting_user, "knowledge.approve_release", "approve releases")
    release = _locked_release(release_id)
    if release.status != Release.Status.PENDING_APPROVAL:
        raise ReleaseError(
            f"Only a release pending approval can be approved; this one is "
            f"{release.get_status_display().lower()}."
        )
    if release.requested_by_id == acting_user.pk:
        raise ReleaseError("The person who requested a release cannot approve it.")
    version = release.version
    if version.status != WordingVersion.Status.INGESTED:
        raise ReleaseError(f"{version} is {version.status}, not ingested; it cannot be approved.")

    list(WordingDocument.objects.select_for_update().filter(line=release.line).order_by("pk"))
    approved = list(
        Release.objects.select_for_update()
        .filter(line=release.line, status=Release.Status.APPROVED)
        .exclude(pk=release.pk)
        .select_related("version__document")
        .order_by("pk")
    )
    superseded = []
    for other in approved:
        if not windows_overlap(
            version.effective_from,
            version.effective_to,
            other.version.effective_from,
            other.version.effective_to,
        ):
            continue
        if _supersedes(version, other.version):
            superseded.append(other.version)
            continue
        raise ReleaseError(
            f"{version} {_window(version)} overlaps the approved release of "
            f"{other.version} {_window(other.version)}; withdraw that one first or "
            "change the window."
        )
    # A successor closes its predecessor's open-ended window where it starts:
    # policies whose term began before keep routing to the predecessor.
    for predecessor in superseded:
        predecessor.effective_to = version.effective_from
        predecessor._change_reason = (
            f"Window closed at {version.effective_from.isoformat()}: superseded by "
            f"{version} (release approved by {acting_user})"
        )
        predecessor.save(update_fields=["effective_to"])
        reason = (reason + " " if reason else "") + (
            f"Closes the open window of {predecessor} at {version.effective_from.isoformat()}."
        )

    release.status = Release.Status.APPROVED
    release.decided_by = acting_user
    release.decided_at = timezone.now()
    release.decision_reason = reason
    release._change_reason = f"Approved: {reason}" if reason else "Approved"
    release.save(update_fields=["status", "decided_by", "decided_at", "decision_reason"])
    return release


@transaction.atomic
def release_reject(*, release_id: int, acting_user: AbstractBaseUser, reason: str) -> Release:
    _require(acting_user, "knowledge.approve_release", "reject releases")
    if not reason.strip():
        raise ReleaseError("Say why the release is rejected.")
    release = _locked_release(release_id)
    if release.status != Release.Status.PENDING_APPROVAL:
        raise ReleaseError(
            f"Only a release pending approval can be rejected; this one is "
            f"{release.get_status_display().lower()}."
        )
    if release.requested_by_id == acting_user.pk:
        raise ReleaseError("The person who requested a release cannot reject it.")
    release.status = Release.Status.REJECTED
    release.decided_by = acting_user
    release.decided_at = timezone.now()
    release.decision_reason = reason
    release._change_reason = f"Rejected: {reason}"
    release.save(update_fields=["status", "decided_by", "decided_at", "decision_reason"])
    return release


@transaction.atomic
def release_withdraw(*, release_id: int, acting_user: AbstractBaseUser, reason: str) -> Release:
    """Withdraw an approved release: the claim agent stops using it at once."""
    _require(acting_user, "knowledge.approve_release", "withdraw releases")
    if not reason.strip():
        raise ReleaseError("Say why the release is withdrawn.")
    release = _locked_release(release_id)
    if release.status != Release.Status.APPROVED:
        raise ReleaseError(
            f"Only an approved release can be withdrawn; this one is "
            f"{release.get_status_display().lower()}."
        )
    release.status = Release.Status.WITHDRAWN
    release.withdrawn_by = acting_user
    release.withdrawn_at = timezone.now()
    release.withdraw_reason = reason
    release._change_reason = f"Withdrawn: {reason}"
    release.save(update_fields=["status", "withdrawn_by", "withdrawn_at", "withdraw_reason"])
    return release


@transaction.atomic
def release_cancel(*, release_id: int, acting_user: AbstractBaseUser, reason: str) -> Release:
    """Take back your own request before anyone decides it: it is a draft again.

    Nobody decided it, so it is neither rejected nor withdrawn; the history
    keeps the request and its cancellation with the reason.
    """
    if not reason.strip():
        raise ReleaseError("Say why the request is cancelled.")
    release = _locked_release(release_id)
    if release.status != Release.Status.PENDING_APPROVAL:
        raise ReleaseError(
            f"Only a request pending approval can be cancelled; this one is "
            f"{release.get_status_display().lower()}."
        )
    if release.requested_by_id != acting_user.pk:
        raise ReleaseError("Only the person who requested a release can cancel the request.")
    release.status = Release.Status.DRAFT
    release.request_reason = f"{release.request_reason} (cancelled: {reason})".strip()
    release._change_reason = f"Request cancelled: {reason}"
    release.save(update_fields=["status", "request_reason"])
    return release
