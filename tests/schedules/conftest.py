import sys
import types
from datetime import date
from decimal import Decimal

import pytest

# A fixed vocabulary, so these tests do not move when the content grows.
TEST_COVERAGE_SECTIONS = {
    "motor": {
        "alternative_transport": "Alternative transport after an accepted claim",
        "excess_free_glass": "No excess for glass claims",
    },
    "home": {"landlord": "Landlord cover"},
    "contents": {},
}


@pytest.fixture
def coverage_vocabulary(monkeypatch):
    module = types.ModuleType("knowledge.coverage")
    module.COVERAGE_SECTIONS = TEST_COVERAGE_SECTIONS
    monkeypatch.setitem(sys.modules, "knowledge.coverage", module)
    return TEST_COVERAGE_SECTIONS


def motor_fields(**overrides) -> dict:
    fields = {
        "policy_number": "NW-MTR-100001",
        "line": "motor",
        "status": "active",
        "term_start": date(2026, 8, 15),
        "term_end": date(2027, 8, 15),
        "sales_channel": "direct",
        "insured_item": "2019 Toyota Corolla",
        "excess": Decimal("500.00"),
        "sums_insured": {"vehicle_agreed_value": 18500},
        "coverage_sections": ["alternative_transport"],
        "holder_name": "Aroha Test-Holder",
        "holder_email": "aroha@example.com",
        "holder_phone": "021 555 0100",
    }
    return {**fields, **overrides}
