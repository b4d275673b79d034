"""Release workflow as data: one transition table, one guarded function.

Knowledge editors (``knowledge.request_release``) request and may cancel
their own request; approvers (``knowledge.approve_release``) approve, reject
and withdraw. Whoever requested a release never decides it. Every move is a
row of ``TRANSITIONS`` and goes through ``release_transition``, which checks
the permission, the reason, the state after taking the lock and who may act,
applies the window changes the move implies, and records who and why in the
history. ``release_request``, ``release_approve`` … are thin names for it.

Approved releases of one line never have overlapping effective windows. The
one overlap approval resolves itself is a successor: a later version of the
same document that starts inside the open-ended window of an earlier one
closes that window where it starts (policies already in force keep their
wording). Withdrawing the successor gives that part of the window back.

Approval also waits for the evaluation gate (``ReleaseEvaluation``), unless
the approver overrides it with a written reason; and a withdrawal that would
leave policies in force with no wording needs an explicit confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from knowledge.models import (
    EvaluationStatus,
    Release,
    ReleaseEvaluation,
    ReleaseStatus,
    VersionStatus,
    WordingDocument,
    WordingVersion,
)
from northwind.errors import PermissionDenied, ServiceError


class ReleaseError(ServiceError):
    """A release transition was refused; the message says why, the code what kind."""

    code = "release_refused"


class ReleaseAction:
    REQUEST = "request"
    APPROVE = "approve"
    REJECT = "reject"
    WITHDRAW = "withdraw"
    CANCEL = "cancel"


@dataclass(frozen=True)
class Transition:
    action: str
    source: str
    target: str
    permission: str
    doing: str  # "approve releases": what a refusal says you may not do
    done: str  # "approved": past tense, for messages
    # Who may act: anyone with the permission, only the requester, or anyone
    # but the requester (nobody decides their own release).
    actor: Literal["anyone", "requester", "not_requester"]
    reason_required: str = ""  # the refusal when no reason is given
    # The fields stamped with (who, when, why).
    stamps: tuple[str, str, str] | None = None
    history_label: str = ""


TRANSITIONS: dict[str, Transition] = {
    t.action: t
    for t in (
        Transition(
            action=ReleaseAction.REQUEST,
            source=ReleaseStatus.DRAFT,
            target=ReleaseStatus.PENDING_APPROVAL,
            permission="knowledge.request_release",
            doing="request releases",
            done="requested",
            actor="anyone",
            stamps=("requested_by", "requested_at", "request_reason"),
            history_label="Requested",
        ),
        Transition(
            action=ReleaseAction.APPROVE,
            source=ReleaseStatus.PENDING_APPROVAL,
            target=ReleaseStatus.APPROVED,
            permission="knowledge.approve_release",
            doing="approve releases",
            done="approved",
            actor="not_requester",
            stamps=("decided_by", "decided_at", "decision_reason"),
            history_label="Approved",
        ),
        Transition(
            action=ReleaseAction.REJECT,
            source=ReleaseStatus.PENDING_APPROVAL,
            target=ReleaseStatus.REJECTED,
            permission="knowledge.approve_release",
            doing="reject releases",
            done="rejected",
            actor="not_requester",
            reason_required="Say why the release is rejected.",
            stamps=("decided_by", "decided_at", "decision_reason"),
            history_label="Rejected",
        ),
        Transition(
            action=ReleaseAction.WITHDRAW,
            source=ReleaseStatus.APPROVED,
            target=ReleaseStatus.WITHDRAWN,
            permission="knowledge.approve_release",
            doing="withdraw releases",
            done="withdrawn",
            actor="anyone",
            reason_required="Say why the release is withdrawn.",
            stamps=("withdrawn_by", "withdrawn_at", "withdraw_reason"),
            history_label="Withdrawn",
        ),
        Transition(
            action=ReleaseAction.CANCEL,
            source=ReleaseStatus.PENDING_APPROVAL,
            target=ReleaseStatus.DRAFT,
            permission="knowledge.request_release",
            doing="cancel release requests",
            done="cancelled",
            actor="requester",
            reason_required="Say why the request is cancelled.",
            history_label="Request cancelled",
        ),
    )
}


def transitions_available(release: Release, user: AbstractBaseUser) -> list[Transition]:
    """The moves ``user`` may try on ``release`` now (buttons on its page)."""
    out = []
    for transition in TRANSITIONS.values():
        if transition.action == ReleaseAction.REQUEST or release.status != transition.source:
            continue
        if not (user.is_active and user.has_perm(transition.permission)):
            continue
        if transition.actor == "requester" and release.requested_by_id != user.pk:
            continue
        if transition.actor == "not_requester" and release.requested_by_id == user.pk:
            continue
        out.append(transition)
    return out


def windows_overlap(a_from: date, a_to: date | None, b_from: date, b_to: date | None) -> bool:
    """Whether [a_from, a_to) and [b_from, b_to) share a day; None is open-ended."""
    return (b_to is None or a_from < b_to) and (a_to is None or b_from < a_to)


def window_text(effective_from: date, effective_to: date | None) -> str:
    end = effective_to.isoformat() if effective_to else "open-ended"
    return f"[{effective_from.isoformat()}, {end})"


# django-simple-history keeps a change reason in 100 characters; the whole
# account is in the release's own reason fields, which the history shows too.
HISTORY_REASON_MAX = 100


def history_reason(text: str) -> str:
    return text if len(text) <= HISTORY_REASON_MAX else text[: HISTORY_REASON_MAX - 1] + "…"


def _window(version: WordingVersion) -> str:
    return window_text(version.effective_from, version.effective_to)


# --- what a move does to the approved windows of the line ---------------------


@dataclass(frozen=True)
class WindowChange:
    """Another approved version's window end moves (``None``: open-ended)."""

    version: WordingVersion
    effective_to_before: date | None
    effective_to_after: date | None
    why: str

    @property
    def short(self) -> str:
        if self.effective_to_after is not None and self.effective_to_before is None:
            return f"closes {self.version} at {self.effective_to_after.isoformat()}"
        return f"gives {self.version} its window back"

    @property
    def summary(self) -> str:
        if self.effective_to_after is not None and self.effective_to_before is None:
            return (
                f"Closes the open window of {self.version} at "
                f"{self.effective_to_after.isoformat()}."
            )
        was = window_text(self.version.effective_from, self.effective_to_before)
        now = window_text(self.version.effective_from, self.effective_to_after)
        return f"Gives back to {self.version} the part of its window it had lost: {was} → {now}."


@dataclass(frozen=True)
class WindowPlan:
    """The approved windows of the line before and after a move, or why it is refused.

    ``approved_before`` and ``approved_after`` are (version, effective_from,
    effective_to) for every approved version of the line.
    """

    approved_before: tuple[tuple[WordingVersion, date, date | None], ...]
    approved_after: tuple[tuple[WordingVersion, date, date | None], ...]
    changes: tuple[WindowChange, ...] = ()
    refusal: str = ""
    superseded: WordingVersion | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _supersedes(successor: WordingVersion, predecessor: WordingVersion) -> bool:
    """A later version of the same document starting inside an open-ended window."""
    return (
        predecessor.effective_to is None
        and predecessor.document_id == successor.document_id
        and predecessor.effective_from < successor.effective_from
    )


def _approved_of_line(line: str, *, lock: bool = False, exclude_pk: int | None = None):
    queryset = Release.objects.filter(line=line, status=ReleaseStatus.APPROVED)
    if lock:
        queryset = queryset.select_for_update()
    if exclude_pk is not None:
        queryset = queryset.exclude(pk=exclude_pk)
    return list(queryset.select_related("version__document").order_by("pk"))


def window_plan(release: Release, action: str, *, lock: bool = False) -> WindowPlan:
    """What ``action`` on ``release`` does to the line's approved windows.

    The same plan is shown on the confirmation page (``lock=False``) and
    applied by the service under its locks (``lock=True``).
    """
    approved = _approved_of_line(release.line, lock=lock)
    before = tuple((r.version, r.version.effective_from, r.version.effective_to) for r in approved)
    version = release.version
    if action in (ReleaseAction.REQUEST, ReleaseAction.APPROVE):
        # A request shows what approving it would do.
        if action == ReleaseAction.APPROVE and release.status != ReleaseStatus.PENDING_APPROVAL:
            return WindowPlan(before, before)
        changes: list[WindowChange] = []
        superseded = None
        for other in approved:
            if other.pk == release.pk or not windows_overlap(
                version.effective_from,
                version.effective_to,
                other.version.effective_from,
                other.version.effective_to,
            ):
                continue
            if _supersedes(version, other.version):
                superseded = other.version
                changes.append(
                    WindowChange(
                        version=other.version,
                        effective_to_before=None,
                        effective_to_after=version.effective_from,
                        why=f"superseded by {version} from {version.effective_from.isoformat()}",
                    )
                )
                continue
            return WindowPlan(
                before,
                before,
                refusal=(
                    f"{version} {_window(version)} overlaps the approved release of "
                    f"{other.version} {_window(other.version)}; withdraw that one first or "
                    "change the window."
                ),
            )
        moved = {c.version.pk: c.effective_to_after for c in changes}
        kept = [(v, start, moved.get(v.pk, end)) for v, start, end in before if v.pk != version.pk]
        after = (*kept, (version, version.effective_from, version.effective_to))
        return WindowPlan(before, after, changes=tuple(changes), superseded=superseded)

    if action == ReleaseAction.WITHDRAW and release.status == ReleaseStatus.APPROVED:
        remaining = [r for r in approved if r.pk != release.pk]
        changes = []
        predecessor = release.superseded_version
        current = next(
            (r for r in remaining if r.version_id == getattr(predecessor, "pk", 0)), None
        )
        if current is not None and current.version.effective_to == version.effective_from:
            # Give back what approval took: up to where the next approved window starts.
            new_end = None
            for other in remaining:
                if other.pk == current.pk:
                    continue
                starts = other.version.effective_from
                if starts > current.version.effective_from and (
                    new_end is None or starts < new_end
                ):
                    new_end = starts
            changes.append(
                WindowChange(
                    version=current.version,
                    effective_to_before=current.version.effective_to,
                    effective_to_after=new_end,
                    why=f"the part of its window that approving {version} took is given back",
                )
            )
        moved = {c.version.pk: c.effective_to_after for c in changes}
        after = tuple(
            (r.version, r.version.effective_from, moved.get(r.version_id, r.version.effective_to))
            for r in remaining
        )
        return WindowPlan(before, after, changes=tuple(changes))
    # Reject, cancel, discard: nothing approved changes.
    return WindowPlan(before, before)


# --- the one guarded transition ----------------------------------------------


def _require(user: AbstractBaseUser | None, transition: Transition) -> None:
    if user is None or not user.is_active or not user.has_perm(transition.permission):
        raise PermissionDenied(f"You do not have permission to {transition.doing}.")


def _locked_release(release_id: int) -> Release:
    # of=("self",): lock the release row only; the line is locked explicitly.
    return (
        Release.objects.select_for_update(of=("self",))
        .select_related("version__document", "superseded_version")
        .get(pk=release_id)
    )


def _state_refusal(release: Release, transition: Transition) -> str:
    wanted = {
        ReleaseStatus.DRAFT: "a draft release",
        ReleaseStatus.PENDING_APPROVAL: "a release pending approval",
        ReleaseStatus.APPROVED: "an approved release",
    }[transition.source]
    if transition.action == ReleaseAction.CANCEL:
        wanted = "a request pending approval"
    return (
        f"Only {wanted} can be {transition.done}; this one is "
        f"{release.get_status_display().lower()}."
    )


def evaluation_latest(release: Release) -> ReleaseEvaluation | None:
    return release.evaluations.order_by("-pk").first()


def gate_refusal(release: Release) -> str:
    """Why the evaluation gate holds this release back, or "" when it passed."""
    evaluation = evaluation_latest(release)
    if evaluation is None:
        return "No evaluation has been run for this release."
    if evaluation.status in (EvaluationStatus.PENDING, EvaluationStatus.RUNNING):
        return "The evaluation of this release is still running."
    if evaluation.status == EvaluationStatus.ERROR:
        return f"The evaluation of this release did not finish: {evaluation.detail}"
    if evaluation.status == EvaluationStatus.FAILED:
        return "The evaluation found regressions: " + " ".join(evaluation.findings)
    return ""


@transaction.atomic
def release_transition(
    *,
    release_id: int,
    action: str,
    acting_user: AbstractBaseUser,
    reason: str = "",
    gate_override_reason: str = "",
    confirm_unrouted: bool = False,
    today: date | None = None,
    evaluate: bool = True,
) -> Release:
    """Move a release along ``TRANSITIONS[action]``, or raise ``ReleaseError``.

    Lock order, the same for every move: the release, the line's documents,
    then the line's approved releases, each in pk order. The documents' rows
    serialise the moves of one line even when no release is approved yet;
    the window checks run after the locks are held and the state re-read.
    """
    transition = TRANSITIONS.get(action)
    if transition is None:
        raise ReleaseError(f"There is no release action {action!r}.", code="invalid")
    _require(acting_user, transition)
    reason = reason.strip()
    if transition.reason_required and not reason:
        raise ReleaseError(transition.reason_required, code="reason_required")
    release = _locked_release(release_id)
    if release.status != transition.source:
        raise ReleaseError(_state_refusal(release, transition), code="invalid_state")
    if transition.actor == "not_requester" and release.requested_by_id == acting_user.pk:
        raise ReleaseError(
            f"The person who requested a release cannot {transition.action} it.",
            code="self_decision",
        )
    if transition.actor == "requester" and release.requested_by_id != acting_user.pk:
        raise ReleaseError(
            "Only the person who requested a release can cancel the request.",
            code="not_requester",
        )
    version = release.version
    if action in (ReleaseAction.REQUEST, ReleaseAction.APPROVE) and (
        version.status != VersionStatus.INGESTED
    ):
        raise ReleaseError(
            f"{version} is {version.get_status_display().lower()}, not ingested; "
            f"it cannot be {transition.done}.",
            code="invalid_state",
        )

    # ``history`` is the full account, kept in the release's reason field;
    # ``notes`` its short form for the history row (at most 100 characters).
    history = [f"{transition.history_label}: {reason}" if reason else transition.history_label]
    notes = [history[0]]
    if action in (ReleaseAction.APPROVE, ReleaseAction.WITHDRAW):
        list(WordingDocument.objects.select_for_update().filter(line=release.line).order_by("pk"))
        plan = window_plan(release, action, lock=True)
        if plan.refusal:
            raise ReleaseError(plan.refusal, code="overlap")
        if action == ReleaseAction.APPROVE:
            refusal = gate_refusal(release)
            override = gate_override_reason.strip()
            if refusal and not override:
                raise ReleaseError(
                    f"{refusal} Approve anyway only with a written reason to override the gate.",
                    code="gate",
                )
            if refusal:
                release.gate_override_reason = override
                history.append(f"Evaluation gate overridden ({refusal}): {override}")
                notes.append(f"Gate overridden: {override}")
            release.superseded_version = plan.superseded
        if action == ReleaseAction.WITHDRAW:
            from knowledge.release_impact import policies_count, routing_impact

            impact = routing_impact(release.line, plan, today=today)
            if impact.newly_unrouted and not confirm_unrouted:
                raise ReleaseError(
                    f"Withdrawing leaves {policies_count(len(impact.newly_unrouted))} in force "
                    "with no wording: "
                    + ", ".join(p.policy_number for p in impact.newly_unrouted[:10])
                    + ". Confirm that this is intended, with a reason, to withdraw anyway.",
                    code="would_unroute",
                )
            if impact.newly_unrouted:
                history.append(
                    f"Confirmed: {policies_count(len(impact.newly_unrouted))} in force "
                    f"{'is' if len(impact.newly_unrouted) == 1 else 'are'} left with no wording."
                )
                notes.append(
                    f"Confirmed: {policies_count(len(impact.newly_unrouted))} left unrouted"
                )
        for change in plan.changes:
            _window_end_move(change, release=release, action=action, acting_user=acting_user)
            history.append(change.summary)
            notes.append(change.short)

    release.status = transition.target
    fields = ["status"]
    if transition.stamps:
        who, when, why = transition.stamps
        setattr(release, who, acting_user)
        setattr(release, when, timezone.now())
        setattr(release, why, " ".join([reason, *history[1:]]).strip())
        fields += [who, when, why]
    if action == ReleaseAction.CANCEL:
        release.request_reason = f"{release.request_reason} (cancelled: {reason})".strip()
        fields.append("request_reason")
    if action == ReleaseAction.APPROVE:
        fields += ["gate_override_reason", "superseded_version"]
    release._change_reason = history_reason("; ".join(notes))
    release.save(update_fields=fields)
    # Cards resting on a clause this version drops or changes: flagged (out
    # of the index) once it is released; only a warning while it is not.
    from knowledge.services import cards

    if action == ReleaseAction.APPROVE:
        cards.cards_sources_check(version_id=version.pk)
    elif action == ReleaseAction.REQUEST:
        cards.cards_sources_warn(version_id=version.pk)
    elif action == ReleaseAction.REJECT:
        cards.cards_sources_warning_clear(version_id=version.pk, why=f"{version} rejected")
    elif action == ReleaseAction.WITHDRAW:
        cards.cards_sources_withdrawn(version_id=version.pk)
    if action == ReleaseAction.REQUEST and evaluate:
        _evaluation_start(release)
    return release


def _window_end_move(
    change: WindowChange, *, release: Release, action: str, acting_user: AbstractBaseUser
) -> None:
    version = change.version
    version.effective_to = change.effective_to_after
    if action == ReleaseAction.APPROVE:
        version._change_reason = history_reason(
            f"Window closed at {change.effective_to_after.isoformat()}: superseded by "
            f"{release.version}, approved by {acting_user}"
        )
    else:
        end = change.effective_to_after.isoformat() if change.effective_to_after else "open-ended"
        version._change_reason = history_reason(
            f"Window given back (now ends {end}): {release.version} withdrawn by {acting_user}"
        )
    version.save(update_fields=["effective_to"])


def _evaluation_start(release: Release) -> ReleaseEvaluation:
    """Queue the evaluation gate's run for a requested release (on commit)."""
    from django.conf import settings

    from knowledge.tasks import release_evaluate_task

    evaluation = ReleaseEvaluation.objects.create(
        release=release,
        candidate_version=release.version,
        recent_limit=settings.RELEASE_GATE_RECENT_QUESTIONS,
    )
    transaction.on_commit(lambda: release_evaluate_task.delay(evaluation.pk))
    return evaluation


# --- the names callers use ----------------------------------------------------


@transaction.atomic
def release_request(
    *, version_id: int, acting_user: AbstractBaseUser, reason: str = "", evaluate: bool = True
) -> Release:
    """Ask for an ingested version to be released; starts the evaluation gate.

    A request cancelled earlier left a draft release: it is requested again
    (one history for the version), otherwise a draft is made first. With
    ``evaluate=False`` (the demo data) no gate run starts, and approving the
    release then needs an override reason like any release whose gate did
    not pass.
    """
    _require(acting_user, TRANSITIONS[ReleaseAction.REQUEST])
    version = (
        WordingVersion.objects.select_for_update().select_related("document").get(pk=version_id)
    )
    if version.status != VersionStatus.INGESTED:
        raise ReleaseError(
            f"Only an ingested version can be released; {version} is {version.status}.",
            code="invalid_state",
        )
    open_release = version.releases.filter(
        status__in=[ReleaseStatus.PENDING_APPROVAL, ReleaseStatus.APPROVED]
    ).first()
    if open_release is not None:
        raise ReleaseError(
            f"{version} already has a release that is {open_release.get_status_display().lower()}.",
            code="invalid_state",
        )
    draft = version.releases.filter(status=ReleaseStatus.DRAFT).order_by("pk").first()
    if draft is None:
        draft = Release(line=version.document.line, version=version, status=ReleaseStatus.DRAFT)
        draft._change_reason = "Draft"
        draft.save()
    return release_transition(
        release_id=draft.pk,
        action=ReleaseAction.REQUEST,
        acting_user=acting_user,
        reason=reason,
        evaluate=evaluate,
    )


def release_approve(
    *,
    release_id: int,
    acting_user: AbstractBaseUser,
    reason: str = "",
    gate_override_reason: str = "",
) -> Release:
    """Approve a pending release whose evaluation passed (or with an override reason)."""
    return release_transition(
        release_id=release_id,
        action=ReleaseAction.APPROVE,
        acting_user=acting_user,
        reason=reason,
        gate_override_reason=gate_override_reason,
    )


def release_reject(*, release_id: int, acting_user: AbstractBaseUser, reason: str) -> Release:
    return release_transition(
        release_id=release_id, action=ReleaseAction.REJECT, acting_user=acting_user, reason=reason
    )


def release_withdraw(
    *,
    release_id: int,
    acting_user: AbstractBaseUser,
    reason: str,
    confirm_unrouted: bool = False,
) -> Release:
    """Withdraw an approved release: the claim agent stops using it at once.

    The predecessor gets back the part of its window this release's approval
    took. If policies in force would still be left with no wording, the
    withdrawal needs ``confirm_unrouted=True`` (and, like every withdrawal,
    a reason).
    """
    return release_transition(
        release_id=release_id,
        action=ReleaseAction.WITHDRAW,
        acting_user=acting_user,
        reason=reason,
        confirm_unrouted=confirm_unrouted,
    )


def release_cancel(*, release_id: int, acting_user: AbstractBaseUser, reason: str) -> Release:
    """Take back your own request before anyone decides it: it is a draft again."""
    return release_transition(
        release_id=release_id, action=ReleaseAction.CANCEL, acting_user=acting_user, reason=reason
    )
