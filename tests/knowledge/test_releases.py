"""Release workflow and the approved-version selector."""

from __future__ import annotations

import threading
from datetime import date

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection

from knowledge.models import Release
from knowledge.selectors import approved_release_windows, release_approved_for_date
from knowledge.services.releases import (
    ReleaseError,
    release_approve,
    release_reject,
    release_request,
    release_withdraw,
)
from tests.knowledge.conftest import COV_01, EXC_01, ingested_version, wording

SMALL = wording(COV_01, EXC_01)


# These tests are about the workflow's other rules; the evaluation gate has its
# own tests (tests/evaluation/test_gate.py), so approvals here override it.
GATE = "gate not under test here"


def approved(version, users, requester="editor", approver="approver"):
    release = release_request(version_id=version.pk, acting_user=users[requester])
    return release_approve(
        release_id=release.pk, acting_user=users[approver], gate_override_reason=GATE
    )


@pytest.mark.django_db
def test_request_then_approve_by_someone_else(users):
    version = ingested_version(SMALL)
    release = release_request(version_id=version.pk, acting_user=users["editor"], reason="new")
    assert release.status == Release.Status.PENDING_APPROVAL
    assert release.line == "motor"
    release = release_approve(
        release_id=release.pk, acting_user=users["approver"], reason="ok", gate_override_reason=GATE
    )
    assert release.status == Release.Status.APPROVED
    assert release.decided_by == users["approver"]
    assert release.decided_at is not None


@pytest.mark.django_db
def test_approving_your_own_release_is_refused(users):
    version = ingested_version(SMALL)
    # an administrator holds every permission, yet cannot decide their own request
    release = release_request(version_id=version.pk, acting_user=users["admin"])
    with pytest.raises(ReleaseError) as raised:
        release_approve(
            release_id=release.pk, acting_user=users["admin"], gate_override_reason=GATE
        )
    assert str(raised.value) == "The person who requested a release cannot approve it."
    with pytest.raises(ReleaseError, match="cannot reject it"):
        release_reject(release_id=release.pk, acting_user=users["admin"], reason="no")
    release.refresh_from_db()
    assert release.status == Release.Status.PENDING_APPROVAL


@pytest.mark.django_db
def test_roles_are_checked_in_the_services(users):
    version = ingested_version(SMALL)
    with pytest.raises(PermissionDenied, match="You do not have permission to request releases"):
        release_request(version_id=version.pk, acting_user=users["approver"])
    release = release_request(version_id=version.pk, acting_user=users["editor"])
    with pytest.raises(PermissionDenied, match="You do not have permission to approve releases"):
        release_approve(
            release_id=release.pk, acting_user=users["editor2"], gate_override_reason=GATE
        )


@pytest.mark.django_db
def test_only_an_ingested_version_can_be_requested(users, source_file):
    from django.core.management import CommandError

    from knowledge.models import WordingVersion
    from tests.knowledge.conftest import clause, ingest_command

    with pytest.raises(CommandError):
        ingest_command(source_file(wording(clause("MTR-COV-01", title="Exclusions"))), "bad")
    failed = WordingVersion.objects.get(label="bad")
    with pytest.raises(ReleaseError, match=r"Only an ingested version can be released; .* failed"):
        release_request(version_id=failed.pk, acting_user=users["editor"])


@pytest.mark.django_db
def test_an_overlapping_approval_is_refused(users):
    current = ingested_version(
        SMALL, label="2026.1", effective_from=date(2025, 7, 1), effective_to=date(2026, 7, 1)
    )
    approved(current, users)
    overlapping = ingested_version(SMALL, label="2026.2", effective_from=date(2026, 6, 30))
    release = release_request(version_id=overlapping.pk, acting_user=users["editor"])
    with pytest.raises(ReleaseError) as raised:
        release_approve(
            release_id=release.pk, acting_user=users["approver"], gate_override_reason=GATE
        )
    assert str(raised.value) == (
        "NW-MOTOR 2026.2 [2026-06-30, open-ended) overlaps the approved release of "
        "NW-MOTOR 2026.1 [2025-07-01, 2026-07-01); withdraw that one first or change the window."
    )
    # a window that starts where the other ends does not overlap
    adjacent = ingested_version(SMALL, label="2026.3", effective_from=date(2026, 7, 1))
    approved(adjacent, users)


@pytest.mark.django_db
def test_a_successor_closes_its_predecessors_open_window_where_it_starts(users):
    current = ingested_version(SMALL, label="2026.2", effective_from=date(2026, 7, 1))
    approved(current, users)
    successor = ingested_version(SMALL, label="2026.3", effective_from=date(2027, 1, 1))
    # when
    release = approved(successor, users)
    # then both are approved and policies keep the wording their term started in
    assert release.status == Release.Status.APPROVED
    current.refresh_from_db()
    assert current.effective_to == date(2027, 1, 1)
    assert release_approved_for_date(line="motor", on=date(2026, 8, 15)).window.label == "2026.2"
    assert release_approved_for_date(line="motor", on=date(2027, 2, 1)).window.label == "2026.3"
    assert "Closes the open window of NW-MOTOR 2026.2 at 2027-01-01." in release.decision_reason
    reason = current.history.first().history_change_reason
    assert reason.startswith("Window closed at 2027-01-01: superseded by NW-MOTOR 2026.3")


@pytest.mark.django_db
def test_a_version_starting_with_or_before_the_open_one_is_no_successor(users):
    approved(ingested_version(SMALL, label="2026.2", effective_from=date(2026, 7, 1)), users)
    for label, start in (("2026.2b", date(2026, 7, 1)), ("2026.1b", date(2026, 1, 1))):
        other = ingested_version(SMALL, label=label, effective_from=start)
        release = release_request(version_id=other.pk, acting_user=users["editor"])
        with pytest.raises(
            ReleaseError, match=r"overlaps the approved release of NW-MOTOR 2026\.2"
        ):
            release_approve(
                release_id=release.pk, acting_user=users["approver"], gate_override_reason=GATE
            )


@pytest.mark.django_db
def test_a_withdrawn_version_is_never_returned_by_the_selector(users):
    version = ingested_version(SMALL, label="MVP-2026.1", effective_from=date(2025, 7, 1))
    release = approved(version, users)
    assert release_approved_for_date(line="motor", on=date(2026, 1, 1)).kind == "found"
    # when
    release_withdraw(release_id=release.pk, acting_user=users["approver2"], reason="superseded")
    # then
    lookup = release_approved_for_date(line="motor", on=date(2026, 1, 1))
    assert lookup.kind == "none"
    assert lookup.window is None
    assert lookup.reason == "no approved wording release for the motor line"
    assert approved_release_windows(line="motor") == []


@pytest.mark.django_db
def test_the_selector_uses_half_open_windows_and_says_why_none(users):
    old = ingested_version(
        SMALL, label="2026.1", effective_from=date(2025, 7, 1), effective_to=date(2026, 7, 1)
    )
    new = ingested_version(SMALL, label="2026.2", effective_from=date(2026, 7, 1))
    approved(old, users)
    approved(new, users)
    assert release_approved_for_date(line="motor", on=date(2026, 6, 30)).window.label == "2026.1"
    found = release_approved_for_date(line="motor", on=date(2026, 7, 1))
    assert found.kind == "found"
    assert found.window.label == "2026.2"
    assert found.window.document_id == "NW-MOTOR"
    assert found.window.channels == ("direct", "broker")
    assert found.window.effective_to is None
    none = release_approved_for_date(line="motor", on=date(2024, 1, 1))
    assert none.kind == "none"
    assert none.reason.startswith("no approved motor wording covers 2024-01-01")
    assert release_approved_for_date(line="home", on=date(2026, 7, 1)).kind == "none"
    assert [w.label for w in approved_release_windows(line="motor")] == ["2026.1", "2026.2"]


@pytest.mark.django_db
def test_a_pending_or_rejected_release_is_not_served(users):
    version = ingested_version(SMALL)
    release = release_request(version_id=version.pk, acting_user=users["editor"])
    assert release_approved_for_date(line="motor", on=date(2026, 8, 1)).kind == "none"
    with pytest.raises(ReleaseError, match="Say why"):
        release_reject(release_id=release.pk, acting_user=users["approver"], reason=" ")
    release_reject(release_id=release.pk, acting_user=users["approver"], reason="typo in 03")
    assert release_approved_for_date(line="motor", on=date(2026, 8, 1)).kind == "none"
    with pytest.raises(ReleaseError, match="Only a release pending approval can be approved"):
        release_approve(
            release_id=release.pk, acting_user=users["approver"], gate_override_reason=GATE
        )


@pytest.mark.django_db
def test_every_transition_is_in_the_history_with_who_and_why(users):
    version = ingested_version(SMALL)
    release = release_request(version_id=version.pk, acting_user=users["editor"], reason="go")
    release_approve(
        release_id=release.pk,
        acting_user=users["approver"],
        reason="checked",
        gate_override_reason=GATE,
    )
    with pytest.raises(ReleaseError, match="Say why the release is withdrawn"):
        release_withdraw(release_id=release.pk, acting_user=users["approver"], reason="")
    release_withdraw(release_id=release.pk, acting_user=users["approver"], reason="superseded")
    rows = list(release.history.order_by("history_date"))
    assert [(r.status, r.history_change_reason) for r in rows] == [
        ("draft", "Draft"),
        ("pending_approval", "Requested: go"),
        ("approved", "Approved: checked; Gate overridden: gate not under test here"),
        ("withdrawn", "Withdrawn: superseded"),
    ]
    final = rows[-1]
    assert final.requested_by == users["editor"]
    assert final.decided_by == users["approver"]
    assert final.withdrawn_by == users["approver"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_overlapping_approvals_in_two_threads_exactly_one_wins(users):
    # the same start: neither is a successor of the other, so they conflict
    first = ingested_version(SMALL, label="2026.2", effective_from=date(2026, 7, 1))
    second = ingested_version(SMALL, label="2026.2b", effective_from=date(2026, 7, 1))
    requests = [
        release_request(version_id=v.pk, acting_user=users["editor"]) for v in (first, second)
    ]
    approvers = [users["approver"], users["approver2"]]
    barrier = threading.Barrier(2)
    outcomes: dict[int, str] = {}

    def approve(index: int) -> None:
        try:
            barrier.wait(10)
            release_approve(
                release_id=requests[index].pk,
                acting_user=approvers[index],
                gate_override_reason=GATE,
            )
            outcomes[index] = "approved"
        except ReleaseError as exc:
            outcomes[index] = f"refused: {exc}"
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(o.split(":")[0] for o in outcomes.values()) == ["approved", "refused"], outcomes
    refusal = next(o for o in outcomes.values() if o.startswith("refused"))
    assert "overlaps the approved release of NW-MOTOR 2026.2" in refusal
    assert Release.objects.filter(status="approved").count() == 1


@pytest.mark.django_db
def test_a_requester_can_cancel_their_own_pending_request_only(users):
    """Cancelled, a request is a draft again; nobody decided it."""
    from knowledge.services.releases import release_cancel

    version = ingested_version(SMALL)
    release = release_request(version_id=version.pk, acting_user=users["editor"])
    with pytest.raises(ReleaseError, match="Only the person who requested"):
        release_cancel(release_id=release.pk, acting_user=users["editor2"], reason="not mine")
    with pytest.raises(ReleaseError, match="Say why"):
        release_cancel(release_id=release.pk, acting_user=users["editor"], reason=" ")
    release = release_cancel(release_id=release.pk, acting_user=users["editor"], reason="typo")
    assert release.status == Release.Status.DRAFT
    assert release.history.first().history_change_reason == "Request cancelled: typo"
    # and the version can be requested again
    assert release_request(version_id=version.pk, acting_user=users["editor"]).status == (
        Release.Status.PENDING_APPROVAL
    )
