"""The demo policies: loaded idempotently, and each routes as README says.

These tests read schedules from the database, so both passes of ``.ci/run``
(SQLite, then PostgreSQL) route the demo policies.
"""

import io
from dataclasses import dataclass
from datetime import date

import pytest

from schedules.demo import DEMO_POLICIES, demo_load
from schedules.lookup import schedule_lookup
from schedules.models import PolicySchedule
from schedules.routing import wording_route
from schedules.selectors import schedule_wording_route

pytestmark = pytest.mark.django_db

ASKED = date(2026, 11, 29)


@dataclass(frozen=True)
class Window:
    version_id: int
    document_id: str
    label: str
    line: str
    effective_from: date
    effective_to: date | None
    channels: tuple[str, ...]


# The demo's approved releases (CONTRACT.md): only 2026.2 of each line;
# MVP-2026.1 [2025-07-01, 2026-07-01) is withdrawn, so it is not passed in.
APPROVED = {
    line: [
        Window(
            n, f"NW-{line.upper()}", "2026.2", line, date(2026, 7, 1), None, ("direct", "broker")
        )
    ]
    for n, line in enumerate(("motor", "home", "contents"), start=1)
}

# What README.md and docs/schedules.md say each demo policy routes to.
EXPECTED = {
    "NW-MTR-204518": ("routed", "2026.2"),
    "NW-MTR-204577": ("routed", "2026.2"),
    "NW-HOM-310042": ("routed", "2026.2"),
    "NW-CNT-410815": ("routed", "2026.2"),
    "NW-MTR-198800": ("not_routable", "date_in_no_window"),
    "NW-MTR-550001": ("not_routable", "channel_not_served"),
    "NW-MTR-170301": ("not_routable", "date_in_no_window"),
}


def outcome(route):
    return (route.kind, route.label if route.kind == "routed" else route.reason_code)


def test_the_demo_loads_the_seven_contract_policies_once():
    """Run twice: one copy of each, one history row each, with the real vocabulary."""
    demo_load(stdout=io.StringIO())
    demo_load(stdout=io.StringIO())
    numbers = set(PolicySchedule.objects.values_list("policy_number", flat=True))
    assert numbers == set(EXPECTED)
    for schedule in PolicySchedule.objects.all():
        assert schedule.history.count() == 1


def test_the_demo_resets_a_changed_policy_with_a_reason():
    demo_load(stdout=io.StringIO())
    PolicySchedule.objects.filter(policy_number="NW-MTR-204518").update(coverage_sections=[])
    demo_load(stdout=io.StringIO())
    schedule = PolicySchedule.objects.get(policy_number="NW-MTR-204518")
    assert schedule.coverage_sections == ["alternative_transport"]
    assert schedule.history.first().history_change_reason == "Demo policy reset."


def test_the_coverage_sections_of_the_demo_are_what_the_contract_says():
    demo_load(stdout=io.StringIO())
    assert "alternative_transport" in schedule_lookup("NW-MTR-204518").evidence.coverage_sections
    assert "alternative_transport" not in (
        schedule_lookup("NW-MTR-204577").evidence.coverage_sections
    )
    assert schedule_lookup("NW-MTR-198800").evidence.status == "lapsed"
    assert schedule_lookup("NW-MTR-550001").evidence.sales_channel == "corporate"


def test_the_demo_data_is_synthetic():
    for fields in DEMO_POLICIES:
        assert fields["holder_email"].endswith("example.com")
        assert fields["holder_phone"].startswith("021 555 ")


@pytest.mark.parametrize(("number", "expected"), EXPECTED.items())
def test_each_demo_policy_routes_as_documented(number, expected):
    demo_load(stdout=io.StringIO())
    evidence = schedule_lookup(number).evidence
    route = wording_route(
        line=evidence.line,
        term_start=evidence.term_start,
        sales_channel=evidence.sales_channel,
        question_date=ASKED,
        releases=APPROVED[evidence.line],
    )
    assert outcome(route) == expected


def test_schedule_wording_route_asks_the_knowledge_base_for_the_line(monkeypatch):
    import knowledge.selectors

    asked = []

    def approved_release_windows(*, line):
        asked.append(line)
        return APPROVED[line]

    demo_load(stdout=io.StringIO())
    monkeypatch.setattr(knowledge.selectors, "approved_release_windows", approved_release_windows)
    route = schedule_wording_route(schedule_lookup("NW-HOM-310042").evidence, question_date=ASKED)
    assert outcome(route) == ("routed", "2026.2")
    assert route.document_id == "NW-HOME"
    assert asked == ["home"]


def test_load_demo_routes_every_demo_policy_as_documented():
    """End to end: the real demo releases, through the knowledge selectors."""
    from django.core.management import call_command

    call_command("load_demo", stdout=io.StringIO())
    for number, expected in EXPECTED.items():
        evidence = schedule_lookup(number).evidence
        assert outcome(schedule_wording_route(evidence, question_date=ASKED)) == expected, number
