"""Looking a schedule up by policy number, behind a replaceable source."""

import json
import threading
from datetime import date
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from schedules.lookup import (
    DatabaseScheduleSource,
    HttpScheduleSource,
    ScheduleEvidence,
    ScheduleLookup,
    ScheduleSourceError,
    name_mask,
    schedule_lookup,
)
from schedules.services import schedule_create
from tests.schedules.conftest import motor_fields


@pytest.fixture
def stored(db, coverage_vocabulary):
    return schedule_create(acting_user=None, **motor_fields())


def test_a_stored_schedule_is_found_with_its_evidence(stored):
    result = schedule_lookup("NW-MTR-100001")
    assert result.kind == "found"
    evidence = result.evidence
    assert evidence.line == "motor"
    assert evidence.term_start == date(2026, 8, 15)
    assert evidence.excess == Decimal("500.00")
    assert evidence.coverage_sections == ("alternative_transport",)
    assert not hasattr(evidence, "holder_email")
    assert not hasattr(evidence, "holder_phone")


def test_a_number_is_found_however_the_customer_typed_it(stored):
    assert schedule_lookup("  nw-mtr-100001 ").kind == "found"


def test_an_unknown_number_is_no_evidence(stored):
    result = schedule_lookup("NW-MTR-999999")
    assert result == ScheduleLookup(
        kind="no_evidence", evidence=None, reason="No schedule found for NW-MTR-999999."
    )


@pytest.mark.parametrize("number", ["hello", "NW-CAR-1", "204518", "", "   "])
def test_a_malformed_number_is_invalid_without_a_query(number, django_assert_num_queries, db):
    with django_assert_num_queries(0):
        result = schedule_lookup(number)
    assert result.kind == "invalid_number"
    assert result.evidence is None
    assert "NW-MTR-204518" in result.reason


def test_the_masked_summary_has_no_contact_details_and_initials_only(stored):
    summary = schedule_lookup("NW-MTR-100001").evidence.masked_summary()
    assert summary == {
        "policy_number": "NW-MTR-100001",
        "line": "motor",
        "status": "active",
        "term_start": "2026-08-15",
        "term_end": "2027-08-15",
        "sales_channel": "direct",
        "insured_item": "2019 Toyota Corolla",
        "excess": "500.00",
        "sums_insured": {"vehicle_agreed_value": 18500},
        "coverage_sections": ["alternative_transport"],
        "holder_name": "A*** T***",
    }
    assert "aroha" not in json.dumps(summary).lower()


@pytest.mark.parametrize(
    ("name", "masked"),
    [
        ("John Smith", "J*** S***"),
        ("Aroha", "A***"),
        ("  Mary  Jane   Doe ", "M*** J*** D***"),
        ("", ""),
    ],
)
def test_names_are_masked_to_initials(name, masked):
    assert name_mask(name) == masked


class OneSchedule:
    """A source of our own, as a test double that speaks the Protocol."""

    def __init__(self):
        self.asked = []

    def lookup(self, policy_number):
        self.asked.append(policy_number)
        return ScheduleLookup(kind="no_evidence", evidence=None, reason="from the test source")


def test_a_source_can_be_passed_in(db):
    source = OneSchedule()
    assert schedule_lookup("NW-MTR-1", source=source).reason == "from the test source"
    assert source.asked == ["NW-MTR-1"]


def test_the_source_setting_is_read_at_call_time(settings, db):
    settings.SCHEDULE_SOURCE = "tests.schedules.test_lookup.OneSchedule"
    assert schedule_lookup("NW-MTR-1").reason == "from the test source"
    del settings.SCHEDULE_SOURCE
    assert isinstance(DatabaseScheduleSource().lookup("NW-MTR-1"), ScheduleLookup)
    assert schedule_lookup("NW-MTR-1").kind == "no_evidence"


# --- An adapter for a legacy policy system over HTTP -------------------------

LEGACY = {
    "NW-HOM-777001": {
        "policy_number": "NW-HOM-777001",
        "line": "home",
        "status": "active",
        "term_start": "2026-07-20",
        "term_end": "2027-07-20",
        "sales_channel": "broker",
        "insured_item": "12 Example Street, Wellington",
        "excess": "1000",
        "sums_insured": {"dwelling": 650000},
        "coverage_sections": [],
        "holder_name": "Legacy Holder",
        "holder_email": "legacy@example.com",
    },
    "NW-HOM-777002": "not json",
}


class LegacyHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        number = self.path.rsplit("/", 1)[-1]
        if self.path.startswith("/policies/") and number in LEGACY:
            body = LEGACY[number]
            payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload)
        elif number == "NW-HOM-777500":
            self.send_error(500)
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def legacy_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), LegacyHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_http_adapter_finds_a_schedule_in_the_legacy_system(legacy_server, settings):
    settings.SCHEDULE_SOURCE_URL = legacy_server
    result = schedule_lookup("nw-hom-777001", source=HttpScheduleSource())
    assert result.kind == "found"
    assert result.evidence == ScheduleEvidence(
        policy_number="NW-HOM-777001",
        line="home",
        status="active",
        term_start=date(2026, 7, 20),
        term_end=date(2027, 7, 20),
        sales_channel="broker",
        insured_item="12 Example Street, Wellington",
        excess=Decimal("1000"),
        sums_insured={"dwelling": 650000},
        coverage_sections=(),
        holder_name="Legacy Holder",
    )


def test_the_http_adapter_maps_404_to_no_evidence(legacy_server):
    result = HttpScheduleSource(legacy_server).lookup("NW-HOM-123")
    assert result.kind == "no_evidence"


def test_the_http_adapter_never_reports_an_outage_as_no_evidence(legacy_server):
    with pytest.raises(ScheduleSourceError, match="answered 500"):
        HttpScheduleSource(legacy_server).lookup("NW-HOM-777500")
    with pytest.raises(ScheduleSourceError, match="unreadable"):
        HttpScheduleSource(legacy_server).lookup("NW-HOM-777002")
    from tests.conftest import free_port

    with pytest.raises(ScheduleSourceError, match="unreachable"):
        HttpScheduleSource(f"http://127.0.0.1:{free_port()}", timeout=1).lookup("NW-HOM-1")
