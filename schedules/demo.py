"""The demo policies of CONTRACT.md, loaded by ``manage.py load_demo``.

Idempotent: each policy is created, or updated back to these values, through
the services (so a second run writes no history unless someone changed a
demo policy in between). Holders, emails and phones are synthetic.

With the demo wording windows (MVP-2026.1 [2025-07-01, 2026-07-01)
withdrawn; 2026.2 [2026-07-01, open) approved for direct and broker), the
first four route to 2026.2 and the last three are not routable, each for its
own reason (see docs/schedules.md).
"""

from datetime import date
from decimal import Decimal
from typing import Any, TextIO

from django.utils import timezone

from schedules.lookup import ScheduleEvidence
from schedules.models import PolicySchedule
from schedules.routing import WordingRouteError
from schedules.selectors import schedule_wording_route
from schedules.services import schedule_create, schedule_update

DEMO_POLICIES: list[dict[str, Any]] = [
    {
        "policy_number": "NW-MTR-204518",
        "line": "motor",
        "status": "active",
        "sales_channel": "direct",
        "term_start": date(2026, 8, 15),
        "term_end": date(2027, 8, 15),
        "insured_item": "2019 Toyota Corolla GX hatchback, reg. DEM518",
        "excess": Decimal("400.00"),
        "sums_insured": {"vehicle_agreed_value": 18500},
        "coverage_sections": ["alternative_transport"],
        "holder_name": "Aroha Sample",
        "holder_email": "aroha.sample@example.com",
        "holder_phone": "021 555 0118",
        "holder_birth_date": date(1985, 3, 17),
        "holder_postcode": "3010",
    },
    {
        "policy_number": "NW-MTR-204577",
        "line": "motor",
        "status": "active",
        "sales_channel": "direct",
        "term_start": date(2026, 9, 1),
        "term_end": date(2027, 9, 1),
        "insured_item": "2016 Mazda 3 sedan, reg. DEM577",
        "excess": Decimal("500.00"),
        "sums_insured": {"vehicle_agreed_value": 12000},
        "coverage_sections": [],
        "holder_name": "Ben Example",
        "holder_email": "ben.example@example.com",
        "holder_phone": "021 555 0177",
        "holder_birth_date": date(1979, 11, 2),
        "holder_postcode": "8011",
    },
    {
        "policy_number": "NW-HOM-310042",
        "line": "home",
        "status": "active",
        "sales_channel": "broker",
        "term_start": date(2026, 7, 20),
        "term_end": date(2027, 7, 20),
        "insured_item": "14 Sample Street, Karori, Wellington 6012",
        "excess": Decimal("1000.00"),
        "sums_insured": {"dwelling": 650000},
        # Owner-occupied, with excess-free glass; not a landlord policy.
        "coverage_sections": ["glass_sanitary_excess_free"],
        "holder_name": "Chloe Demo",
        "holder_email": "chloe.demo@example.com",
        "holder_phone": "021 555 0142",
        "holder_birth_date": date(1990, 6, 24),
        "holder_postcode": "6012",
    },
    {
        "policy_number": "NW-CNT-410815",
        "line": "contents",
        "status": "active",
        "sales_channel": "direct",
        "term_start": date(2026, 10, 1),
        "term_end": date(2027, 10, 1),
        "insured_item": "Flat 3, 27 Example Road, Mount Eden, Auckland 1024",
        "excess": Decimal("250.00"),
        "sums_insured": {"contents": 85000, "specified item: engagement ring": 9500},
        # An engagement ring listed as a specified item; no overseas cover.
        "coverage_sections": ["specified_items"],
        "holder_name": "Dev Placeholder",
        "holder_email": "dev.placeholder@example.com",
        "holder_phone": "021 555 0115",
        "holder_birth_date": date(1993, 1, 9),
        "holder_postcode": "1024",
    },
    {
        "policy_number": "NW-MTR-198800",
        "line": "motor",
        "status": "lapsed",
        "sales_channel": "direct",
        "term_start": date(2025, 9, 1),
        "term_end": date(2026, 9, 1),
        "insured_item": "2012 Honda Jazz, reg. DEM800",
        "excess": Decimal("400.00"),
        "sums_insured": {"vehicle_agreed_value": 6500},
        "coverage_sections": [],
        "holder_name": "Erin Fixture",
        "holder_email": "erin.fixture@example.com",
        "holder_phone": "021 555 0188",
        "holder_birth_date": date(1968, 8, 30),
        "holder_postcode": "9016",
    },
    {
        "policy_number": "NW-MTR-550001",
        "line": "motor",
        "status": "active",
        "sales_channel": "corporate",
        "term_start": date(2026, 8, 1),
        "term_end": date(2027, 8, 1),
        "insured_item": "2023 Toyota Hilux SR double cab (fleet vehicle), reg. DEM001",
        "excess": Decimal("1000.00"),
        "sums_insured": {"vehicle_agreed_value": 52000},
        "coverage_sections": ["alternative_transport"],
        "holder_name": "Fern Testco Limited",
        "holder_email": "fleet@testco.example.com",
        "holder_phone": "021 555 0101",
        "holder_birth_date": None,
        "holder_postcode": "0632",
    },
    {
        "policy_number": "NW-MTR-170301",
        "line": "motor",
        "status": "active",
        "sales_channel": "direct",
        "term_start": date(2026, 3, 10),
        "term_end": date(2027, 3, 10),
        "insured_item": "2018 Suzuki Swift, reg. DEM301",
        "excess": Decimal("400.00"),
        "sums_insured": {"vehicle_agreed_value": 11000},
        "coverage_sections": ["alternative_transport"],
        "holder_name": "Gus Mockford",
        "holder_email": "gus.mockford@example.com",
        "holder_phone": "021 555 0130",
        "holder_birth_date": date(2001, 12, 5),
        "holder_postcode": "4410",
    },
]


def demo_load(*, stdout: TextIO) -> list[PolicySchedule]:
    """Create or reset the demo policies; print one line per policy."""
    loaded = []
    for fields in DEMO_POLICIES:
        existing = PolicySchedule.objects.filter(policy_number=fields["policy_number"]).first()
        if existing is None:
            schedule = schedule_create(
                acting_user=None, change_reason="Demo policy loaded.", **fields
            )
        else:
            schedule = schedule_update(
                schedule_id=existing.pk,
                acting_user=None,
                change_reason="Demo policy reset.",
                **fields,
            )
        loaded.append(schedule)
    stdout.write(f"Demo policies ({len(loaded)}), routed as of {timezone.localdate()}:")
    for schedule in loaded:
        stdout.write(f"  {schedule.policy_number:<14} {schedule.line:<9} {_route_text(schedule)}")
    return loaded


def _route_text(schedule: PolicySchedule) -> str:
    evidence = ScheduleEvidence.from_schedule(schedule)
    try:
        route = schedule_wording_route(evidence, question_date=timezone.localdate())
    except WordingRouteError as exc:
        return f"routing error: {exc}"
    if route.kind == "routed":
        return f"-> {route.document_id} {route.label}"
    return f"-> not routable ({route.reason_code})"
