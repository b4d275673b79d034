"""The deterministic wording router (seed 002): pure, no database needed.

The same module runs in both passes of ``.ci/run``; the class at the bottom
also routes schedules stored in the database, so the rules are exercised on
SQLite and on PostgreSQL.
"""

from dataclasses import dataclass
from datetime import date, datetime

import pytest

from schedules.routing import REASON_CODES, WordingRouteError, wording_route


@dataclass(frozen=True)
class Window:
    version_id: int
    document_id: str
    label: str
    line: str
    effective_from: date
    effective_to: date | None
    channels: tuple[str, ...]


OLDER = Window(1, "NW-MOTOR", "2025.1", "motor", date(2025, 7, 1), date(2026, 7, 1), ("direct",))
NEWER = Window(2, "NW-MOTOR", "2026.2", "motor", date(2026, 7, 1), None, ("direct", "broker"))
RELEASES = (OLDER, NEWER)
ASKED = date(2026, 11, 29)


def route(term_start, *, channel="direct", line="motor", asked=ASKED, releases=RELEASES):
    return wording_route(
        line=line,
        term_start=term_start,
        sales_channel=channel,
        question_date=asked,
        releases=releases,
    )


def test_first_day_of_the_older_window_routes_to_it():
    result = route(date(2025, 7, 1))
    assert (result.kind, result.version_id, result.label) == ("routed", 1, "2025.1")
    assert result.document_id == "NW-MOTOR"
    assert result.reason_code == ""


def test_last_day_of_the_older_window_routes_to_it():
    result = route("2026-06-30")
    assert (result.kind, result.label) == ("routed", "2025.1")


def test_first_day_of_the_newer_window_routes_to_it_because_windows_end_before_effective_to():
    result = route("2026-07-01")
    assert (result.kind, result.version_id, result.label) == ("routed", 2, "2026.2")
    assert "2026-07-01" in result.reason


def test_a_date_before_every_window_is_not_routable():
    result = route(date(2025, 6, 30))
    assert result.kind == "not_routable"
    assert result.reason_code == "date_in_no_window"
    assert result.version_id is None
    assert result.label == ""
    assert "2025-06-30" in result.reason


def test_a_missing_term_start_is_not_routable():
    result = route(None)
    assert (result.kind, result.reason_code) == ("not_routable", "term_start_missing")


def test_the_corporate_channel_is_not_served():
    result = route("2026-08-01", channel="corporate")
    assert (result.kind, result.reason_code) == ("not_routable", "channel_not_served")
    assert "corporate" in result.reason


@pytest.mark.parametrize("channel", [None, ""])
def test_a_missing_channel_is_not_routable(channel):
    result = route("2026-08-01", channel=channel)
    assert result.reason_code == "channel_missing"


def test_a_channel_served_only_by_the_newer_window_does_not_fall_back_to_the_older_one():
    result = route("2026-01-15", channel="broker")
    assert (result.kind, result.reason_code) == ("not_routable", "date_in_no_window")


def test_a_line_with_no_wording_is_not_routable():
    result = route("2026-08-01", line="home")
    assert (result.kind, result.reason_code) == ("not_routable", "line_has_no_wording")
    assert route("2026-08-01", releases=()).reason_code == "line_has_no_wording"


def test_a_term_start_after_the_question_date_is_not_routable():
    result = route("2026-12-01", asked=date(2026, 11, 29))
    assert (result.kind, result.reason_code) == ("not_routable", "term_start_after_question_date")
    assert route("2026-11-29", asked="2026-11-29").kind == "routed"


@pytest.mark.parametrize(
    "bad",
    [
        "15/08/2026",
        "2026-8-15",
        "20260815",
        "2026-02-30",
        "tomorrow",
        "",
        20260815,
        datetime(2026, 8, 15, 9, 0),
    ],
)
def test_a_term_start_that_is_not_an_iso_date_raises(bad):
    with pytest.raises(WordingRouteError, match="term_start"):
        route(bad)


@pytest.mark.parametrize("bad", ["29 Nov 2026", None, datetime(2026, 11, 29)])
def test_a_question_date_that_is_not_an_iso_date_raises(bad):
    with pytest.raises(WordingRouteError, match="question_date"):
        route("2026-08-01", asked=bad)


def test_overlapping_windows_raise_instead_of_picking_one():
    overlapping = Window(3, "NW-MOTOR", "2026.3", "motor", date(2026, 9, 1), None, ("direct",))
    with pytest.raises(WordingRouteError, match=r"overlap.*2026\.2.*2026\.3"):
        route("2025-08-01", releases=(*RELEASES, overlapping))


def test_windows_that_overlap_only_for_another_channel_do_not_block_this_one():
    broker_only = Window(3, "NW-MOTOR", "2026.2-B", "motor", date(2026, 8, 1), None, ("broker",))
    assert route("2026-08-01", releases=(*RELEASES, broker_only)).label == "2026.2"
    with pytest.raises(WordingRouteError, match="broker"):
        route("2026-08-01", channel="broker", releases=(*RELEASES, broker_only))


def test_release_windows_may_carry_iso_strings_but_not_garbage():
    as_strings = Window(9, "NW-HOME", "2026.2", "home", "2026-07-01", None, ("direct",))
    assert route("2026-07-01", line="home", releases=(as_strings,)).version_id == 9
    garbage = Window(9, "NW-HOME", "2026.2", "home", "1 July", None, ("direct",))
    with pytest.raises(WordingRouteError, match="effective_from"):
        route("2026-07-01", line="home", releases=(garbage,))


def test_wrong_types_raise():
    with pytest.raises(WordingRouteError, match="line"):
        route("2026-08-01", line=None)
    with pytest.raises(WordingRouteError, match="sales_channel"):
        route("2026-08-01", channel=3)
    with pytest.raises(WordingRouteError, match="releases"):
        route("2026-08-01", releases="2026.2")


def test_the_router_has_no_fallback_version():
    """Every not-routable result carries a known reason code and no version."""
    results = [
        route(None),
        route("2020-01-01"),
        route("2026-08-01", channel="corporate"),
        route("2026-08-01", line="contents"),
    ]
    for result in results:
        assert result.reason_code in REASON_CODES
        assert (result.version_id, result.document_id, result.label) == (None, "", "")
