"""Routing impact of a release change, computed before anyone confirms it.

For one line: the approved windows per sales channel before and after the
change, and every policy in force (from the schedules) routed with the same
router the claim agent uses (``schedules.routing.wording_route``), once with
the windows before and once with the windows after. The confirmation pages
show it and ``release_withdraw`` refuses, without an explicit confirmation, a
withdrawal that leaves policies in force with no wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.utils import timezone

from knowledge.models import Channel, Release, WordingVersion
from knowledge.selectors import ReleaseWindow
from knowledge.services.releases import WindowPlan, window_plan, window_text


@dataclass(frozen=True)
class PolicyRoute:
    policy_number: str
    sales_channel: str
    term_start: date | None
    before: str  # "NW-MOTOR 2026.2", or "no wording (why)"
    after: str
    before_version_id: int | None
    after_version_id: int | None

    @property
    def changes(self) -> bool:
        return self.before_version_id != self.after_version_id


@dataclass(frozen=True)
class ChannelWindows:
    channel: str
    before: tuple[str, ...]
    after: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class RoutingImpact:
    line: str
    today: date
    windows: tuple[ChannelWindows, ...]
    window_changes: tuple[str, ...]
    policies_in_force: int
    # Policies whose routed version changes (from one version to another, or
    # to or from no wording).
    changed: tuple[PolicyRoute, ...]
    # Routed before, no wording after: customers' questions would be queued.
    newly_unrouted: tuple[PolicyRoute, ...]
    # No wording before either (not caused by this change).
    already_unrouted: tuple[PolicyRoute, ...]
    flags: tuple[str, ...]
    refusal: str = ""

    @property
    def routes_change(self) -> bool:
        return bool(self.changed or self.window_changes)


def _windows(line: str, triples) -> list[ReleaseWindow]:
    return [
        ReleaseWindow(
            version_id=version.pk,
            document_id=version.document.document_id,
            label=version.label,
            line=line,
            effective_from=start,
            effective_to=end,
            channels=tuple(version.channels),
        )
        for version, start, end in triples
    ]


def _route(line: str, policy, windows: list[ReleaseWindow], today: date) -> tuple[int | None, str]:
    from schedules.routing import WordingRouteError, wording_route

    try:
        route = wording_route(
            line=line,
            term_start=policy.term_start,
            sales_channel=policy.sales_channel,
            question_date=today,
            releases=windows,
        )
    except WordingRouteError as exc:
        return None, f"no wording ({exc})"
    if route.kind == "routed":
        return route.version_id, f"{route.document_id} {route.label}"
    return None, f"no wording ({route.reason})"


def policies_count(count: int) -> str:
    """ "1 policy", "2 policies": the count as the pages and messages say it."""
    return f"{count} {'policy' if count == 1 else 'policies'}"


def policies_in_force(line: str, today: date):
    """Active schedules of ``line`` whose term holds ``today``."""
    from django.db.models import Q

    from schedules.models import PolicySchedule

    return (
        PolicySchedule.objects.filter(
            line=line,
            status=PolicySchedule.Status.ACTIVE,
            term_start__lte=today,
        )
        .filter(Q(term_end__isnull=True) | Q(term_end__gt=today))
        .order_by("policy_number")
    )


def _channel_windows(triples, channel: str) -> tuple[str, ...]:
    return tuple(
        f"{version.document.document_id} {version.label} {window_text(start, end)}"
        for version, start, end in sorted(triples, key=lambda t: t[1])
        if channel in version.channels
    )


def routing_impact(
    line: str,
    plan: WindowPlan,
    *,
    today: date | None = None,
    candidate: WordingVersion | None = None,
) -> RoutingImpact:
    today = today or timezone.localdate()
    before = _windows(line, plan.approved_before)
    after = _windows(line, plan.approved_after)
    routes = []
    for policy in policies_in_force(line, today):
        before_id, before_text = _route(line, policy, before, today)
        after_id, after_text = _route(line, policy, after, today)
        routes.append(
            PolicyRoute(
                policy_number=policy.policy_number,
                sales_channel=policy.sales_channel,
                term_start=policy.term_start,
                before=before_text,
                after=after_text,
                before_version_id=before_id,
                after_version_id=after_id,
            )
        )
    flags = []
    if candidate is not None:
        if candidate.effective_from < today:
            flags.append(
                f"Backdated: {candidate} starts on {candidate.effective_from.isoformat()}, "
                f"before today ({today.isoformat()})."
            )
        started_after = [
            r
            for r in routes
            if r.term_start
            and r.term_start >= candidate.effective_from
            and r.sales_channel in candidate.channels
        ]
        if started_after:
            numbers = ", ".join(r.policy_number for r in started_after[:5])
            flags.append(
                f"{candidate} starts before the current term of "
                f"{policies_count(len(started_after))} in force ({numbers}"
                f"{', …' if len(started_after) > 5 else ''}): their wording would change "
                "mid-term."
            )
    window_changes = tuple(
        f"{c.version}: {window_text(c.version.effective_from, c.effective_to_before)} → "
        f"{window_text(c.version.effective_from, c.effective_to_after)} ({c.why})"
        for c in plan.changes
    )
    return RoutingImpact(
        line=line,
        today=today,
        windows=tuple(
            ChannelWindows(
                channel=channel,
                before=_channel_windows(plan.approved_before, channel),
                after=_channel_windows(plan.approved_after, channel),
            )
            for channel in Channel.values
        ),
        window_changes=window_changes,
        policies_in_force=len(routes),
        changed=tuple(r for r in routes if r.changes),
        newly_unrouted=tuple(
            r for r in routes if r.before_version_id is not None and r.after_version_id is None
        ),
        already_unrouted=tuple(
            r for r in routes if r.before_version_id is None and r.after_version_id is None
        ),
        flags=tuple(flags),
        refusal=plan.refusal,
    )


def release_impact(*, release: Release, action: str, today: date | None = None) -> RoutingImpact:
    """What ``action`` on ``release`` would do to routing, before it is confirmed."""
    plan = window_plan(release, action)
    candidate = release.version if action in ("request", "approve") else None
    return routing_impact(release.line, plan, today=today, candidate=candidate)


def version_discard_impact(*, version: WordingVersion, today: date | None = None) -> RoutingImpact:
    """A discarded version was never released: routing stays as it is (shown anyway)."""
    approved = (
        Release.objects.filter(line=version.document.line, status=Release.Status.APPROVED)
        .select_related("version__document")
        .order_by("pk")
    )
    triples = tuple((r.version, r.version.effective_from, r.version.effective_to) for r in approved)
    return routing_impact(version.document.line, WindowPlan(triples, triples), today=today)
