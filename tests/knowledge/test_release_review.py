"""Release review: routing impact, windows given back, confirmation pages, diff."""

from __future__ import annotations

from datetime import date

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from knowledge.demo import CONTENT_DIR
from knowledge.diff import version_diff, words_changed
from knowledge.models import Release, WordingVersion
from knowledge.release_impact import release_impact
from knowledge.services.ingestion import wording_version_create, wording_version_ingest
from knowledge.services.releases import (
    ReleaseError,
    release_approve,
    release_cancel,
    release_request,
    release_withdraw,
)

TODAY = date(2026, 12, 1)
GATE = "gate not under test here"


def staff(name: str):
    return get_user_model().objects.get(username=name)


def new_version(document_id: str, label: str, starts: date, text: str | None = None):
    source = text or (CONTENT_DIR / f"{document_id}-2026.2.md").read_text(encoding="utf-8")
    version = wording_version_create(
        document_id=document_id,
        label=label,
        source_bytes=source.encode(),
        filename=f"{label}.md",
        effective_from=starts,
        effective_to=None,
        channels=["direct", "broker"],
        acting_user=staff("demo-editor"),
        queue_ingestion=False,
    )
    assert wording_version_ingest(version_id=version.pk).outcome == "ingested"
    version.refresh_from_db()
    return version


def approved(version) -> Release:
    release = release_request(version_id=version.pk, acting_user=staff("demo-editor"))
    return release_approve(
        release_id=release.pk, acting_user=staff("demo-approver"), gate_override_reason=GATE
    )


def home_2026_2() -> WordingVersion:
    return WordingVersion.objects.get(document__document_id="NW-HOME", label="2026.2")


def route_of(policy_number: str) -> str:
    from knowledge.selectors import approved_release_windows
    from schedules.models import PolicySchedule
    from schedules.routing import wording_route

    policy = PolicySchedule.objects.get(policy_number=policy_number)
    route = wording_route(
        line=policy.line,
        term_start=policy.term_start,
        sales_channel=policy.sales_channel,
        question_date=TODAY,
        releases=approved_release_windows(line=policy.line),
    )
    return route.label if route.kind == "routed" else route.reason_code


@pytest.mark.django_db
def test_withdrawing_a_successor_gives_its_predecessor_the_window_back(demo):
    # given NW-HOME 2026.3 from 2026-07-15, approved over 2026.2's open window
    successor = new_version("NW-HOME", "2026.3", date(2026, 7, 15))
    release = approved(successor)
    assert home_2026_2().effective_to == date(2026, 7, 15)
    assert route_of("NW-HOM-310042") == "2026.3"
    # when it is withdrawn
    release_withdraw(
        release_id=release.pk, acting_user=staff("demo-approver"), reason="wrong start date"
    )
    # then 2026.2 is open-ended again and the home policy still answers from it
    predecessor = home_2026_2()
    assert predecessor.effective_to is None
    assert route_of("NW-HOM-310042") == "2026.2"
    latest = predecessor.history.order_by("-history_id").first()
    assert "Window given back (now ends open-ended)" in latest.history_change_reason
    assert "NW-HOME 2026.3" in latest.history_change_reason
    release.refresh_from_db()
    assert "Gives back to NW-HOME 2026.2 the part of its window it had lost" in (
        release.withdraw_reason
    )


@pytest.mark.django_db
def test_the_impact_of_approving_counts_the_policies_whose_wording_changes(demo):
    successor = new_version("NW-HOME", "2026.3", date(2026, 7, 15))
    release = release_request(version_id=successor.pk, acting_user=staff("demo-editor"))
    impact = release_impact(release=release, action="approve", today=TODAY)
    assert impact.policies_in_force == 1
    assert [p.policy_number for p in impact.changed] == ["NW-HOM-310042"]
    assert impact.changed[0].before == "NW-HOME 2026.2"
    assert impact.changed[0].after == "NW-HOME 2026.3"
    assert impact.newly_unrouted == ()
    direct = next(w for w in impact.windows if w.channel == "direct")
    assert direct.before == ("NW-HOME 2026.2 [2026-07-01, open-ended)",)
    assert direct.after == (
        "NW-HOME 2026.2 [2026-07-01, 2026-07-15)",
        "NW-HOME 2026.3 [2026-07-15, open-ended)",
    )
    assert impact.flags[0] == (
        "Backdated: NW-HOME 2026.3 starts on 2026-07-15, before today (2026-12-01)."
    )
    assert "before the current term of 1 policy in force (NW-HOM-310042)" in impact.flags[1]


@pytest.mark.django_db
def test_a_withdrawal_that_leaves_policies_without_wording_needs_a_confirmation(demo):
    release = Release.objects.get(
        version__document__document_id="NW-MOTOR", version__label="2026.2"
    )
    impact = release_impact(release=release, action="withdraw", today=TODAY)
    assert sorted(p.policy_number for p in impact.newly_unrouted) == [
        "NW-MTR-204518",
        "NW-MTR-204577",
    ]
    with pytest.raises(ReleaseError) as refused:
        release_withdraw(release_id=release.pk, acting_user=staff("demo-approver"), reason="x")
    assert refused.value.code == "would_unroute"
    assert "Withdrawing leaves 2 policies in force with no wording" in refused.value.message
    release.refresh_from_db()
    assert release.status == Release.Status.APPROVED
    # confirmed, with a reason: withdrawn, and the confirmation is in the history
    release_withdraw(
        release_id=release.pk,
        acting_user=staff("demo-approver"),
        reason="recalled by legal",
        confirm_unrouted=True,
    )
    release.refresh_from_db()
    assert release.status == Release.Status.WITHDRAWN
    reason = release.history.order_by("-history_id").first().history_change_reason
    assert reason == "Withdrawn: recalled by legal; Confirmed: 2 policies left unrouted"
    assert release.withdraw_reason == (
        "recalled by legal Confirmed: 2 policies in force are left with no wording."
    )


@pytest.mark.django_db
def test_only_the_requester_with_the_permission_may_cancel(demo):
    successor = new_version("NW-HOME", "2026.3", date(2027, 1, 1))
    release = release_request(version_id=successor.pk, acting_user=staff("demo-editor"))
    with pytest.raises(PermissionDenied, match="You do not have permission to cancel"):
        release_cancel(release_id=release.pk, acting_user=staff("demo-approver"), reason="no")
    with pytest.raises(ReleaseError, match="Only the person who requested"):
        release_cancel(release_id=release.pk, acting_user=staff("demo-editor-2"), reason="no")
    release_cancel(release_id=release.pk, acting_user=staff("demo-editor"), reason="typo")
    # a cancelled request is a draft again, and requesting again reuses it
    again = release_request(version_id=successor.pk, acting_user=staff("demo-editor"))
    assert again.pk == release.pk


@pytest.mark.django_db
def test_the_diff_shows_the_changed_words_of_a_same_length_change(demo):
    motor = (CONTENT_DIR / "NW-MOTOR-2026.2.md").read_text(encoding="utf-8")
    changed = motor.replace(
        "up to NZD 60 a day, for up to 21 days", "up to NZD 50 a day, for up to 28 days"
    )
    assert changed != motor
    candidate = new_version("NW-MOTOR", "2026.3", date(2027, 1, 1), changed)
    serving = WordingVersion.objects.get(document__document_id="NW-MOTOR", label="2026.2")
    diff = version_diff(old=serving, new=candidate)
    assert diff.counts == {"added": 0, "removed": 0, "changed": 1, "unchanged": 29}
    (clause,) = diff.shown
    assert clause.clause_id == "MTR-BEN-03"
    (body,) = clause.parts
    assert body.part == "body"
    assert words_changed(body.before, body.after) == (["60", "21"], ["50", "28"])
    assert "<del>60</del><ins>50</ins>" in body.html


@pytest.mark.django_db
def test_every_release_change_is_a_confirmation_page_then_a_post(demo, client):
    successor = new_version("NW-HOME", "2026.3", date(2026, 7, 15))
    client.force_login(staff("demo-editor"))
    # the editor's confirmation page shows what approving would do, and the diff link
    url = reverse("admin:knowledge_wordingversion_request", args=[successor.pk])
    page = client.get(url).content.decode()
    assert "Routing impact if approved" in page
    assert "Backdated: NW-HOME 2026.3 starts on 2026-07-15" in page
    assert reverse("admin:knowledge_wordingversion_diff", args=[successor.pk]) in page
    response = client.post(url, {"reason": "new glass wording"})
    release = Release.objects.get(version=successor)
    assert response.status_code == 302
    assert release.status == Release.Status.PENDING_APPROVAL
    assert release.request_reason == "new glass wording"
    # self-approval is refused on the page, not a 500
    client.force_login(staff("demo-admin"))
    own = new_version("NW-CONTENTS", "2027.1", date(2027, 1, 1))
    client.post(reverse("admin:knowledge_wordingversion_request", args=[own.pk]), {"reason": "x"})
    own_release = Release.objects.get(version=own)
    approve_own = reverse("admin:knowledge_release_action", args=[own_release.pk, "approve"])
    page = client.post(approve_own, {"reason": "mine", "gate_override_reason": "x"})
    assert page.status_code == 200
    assert "The person who requested a release cannot approve it." in page.content.decode()
    # the approver sees the impact, and the gate blocks a click without a reason
    client.force_login(staff("demo-approver"))
    approve = reverse("admin:knowledge_release_action", args=[release.pk, "approve"])
    page = client.get(approve).content.decode()
    assert 'routed version changes: <strong class="nw-count-changed">1</strong>' in page
    assert "Evaluation gate" in page
    refused = client.post(approve, {"reason": "looks right"}).content.decode()
    assert "Approve anyway only with a written reason to override the gate." in refused
    client.post(approve, {"reason": "looks right", "gate_override_reason": "urgent fix"})
    release.refresh_from_db()
    assert release.status == Release.Status.APPROVED
    assert release.gate_override_reason == "urgent fix"
    history = release.history.order_by("-history_id").first().history_change_reason
    assert history.startswith("Approved: looks right; Gate overridden: urgent fix")
    assert "Evaluation gate overridden" in release.decision_reason
    # the list of affected policies
    policies = client.get(
        reverse("admin:knowledge_release_impact_policies", args=[release.pk, "withdraw"])
    )
    assert "NW-HOM-310042" in policies.content.decode()
    # a withdrawal page: reason required, then the window comes back
    withdraw = reverse("admin:knowledge_release_action", args=[release.pk, "withdraw"])
    assert "Say why the release is withdrawn." in client.post(withdraw, {}).content.decode()
    client.post(withdraw, {"reason": "wrong start date"})
    assert home_2026_2().effective_to is None
    # an unknown action is a 404, not a 500
    assert client.get(f"/admin/knowledge/release/{release.pk}/act/explode/").status_code == 404
