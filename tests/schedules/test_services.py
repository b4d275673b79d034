"""Writing schedules: validation, database constraints and history."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from schedules.models import PolicySchedule
from schedules.services import schedule_create, schedule_update
from tests.schedules.conftest import motor_fields

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("coverage_vocabulary")]


@pytest.fixture
def clerk():
    return get_user_model().objects.create_user("clerk", password="x", is_staff=True)


def test_a_valid_schedule_is_created_with_a_history_row(clerk):
    schedule = schedule_create(acting_user=clerk, **motor_fields())
    assert PolicySchedule.objects.get().policy_number == "NW-MTR-100001"
    record = schedule.history.get()
    assert record.history_type == "+"
    assert record.history_user == clerk
    assert record.history_change_reason == "Schedule created."


def test_a_policy_number_is_normalised_before_it_is_stored(clerk):
    schedule = schedule_create(acting_user=clerk, **motor_fields(policy_number=" nw-mtr-100001 "))
    assert schedule.policy_number == "NW-MTR-100001"


@pytest.mark.parametrize(
    "number", ["NW-XYZ-100001", "NW-MTR-", "MTR-100001", "NW-MTR-12A4", "NW_MTR_100001", ""]
)
def test_a_malformed_policy_number_is_refused(clerk, number):
    with pytest.raises(ValidationError) as excinfo:
        schedule_create(acting_user=clerk, **motor_fields(policy_number=number))
    assert "policy_number" in excinfo.value.message_dict
    assert not PolicySchedule.objects.exists()


def test_a_policy_number_of_another_line_is_refused_with_the_expected_form(clerk):
    with pytest.raises(ValidationError) as excinfo:
        schedule_create(
            acting_user=clerk,
            **motor_fields(policy_number="NW-HOM-310042", coverage_sections=[]),
        )
    assert excinfo.value.message_dict["policy_number"] == [
        "NW-HOM-310042 is a home policy number, but the line is motor; "
        "a motor policy number looks like NW-MTR-<digits>."
    ]


def test_a_duplicate_policy_number_is_refused(clerk):
    schedule_create(acting_user=clerk, **motor_fields())
    with pytest.raises(ValidationError, match="already exists"):
        schedule_create(acting_user=clerk, **motor_fields())


def test_an_unknown_coverage_code_is_refused_naming_it_and_the_allowed_codes(clerk):
    with pytest.raises(ValidationError) as excinfo:
        schedule_create(acting_user=clerk, **motor_fields(coverage_sections=["hire_car"]))
    assert excinfo.value.message_dict["coverage_sections"] == [
        "Unknown coverage section 'hire_car' for the motor line. "
        "Allowed: alternative_transport, excess_free_glass."
    ]
    assert not PolicySchedule.objects.exists()


def test_a_code_of_another_line_is_refused(clerk):
    schedule = schedule_create(acting_user=clerk, **motor_fields())
    with pytest.raises(ValidationError, match="Unknown coverage section 'landlord' for the motor"):
        schedule_update(schedule_id=schedule.pk, acting_user=clerk, coverage_sections=["landlord"])
    schedule.refresh_from_db()
    assert schedule.coverage_sections == ["alternative_transport"]


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        ("alternative_transport", "must be a list of codes"),
        ([1], "must be a list of codes"),
        (["alternative_transport", "alternative_transport"], "listed twice"),
    ],
)
def test_coverage_sections_must_be_a_list_of_distinct_codes(clerk, codes, message):
    with pytest.raises(ValidationError, match=message):
        schedule_create(acting_user=clerk, **motor_fields(coverage_sections=codes))


def test_a_missing_vocabulary_fails_clearly(clerk, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "knowledge.coverage", None)
    with pytest.raises(ValidationError, match="Coverage vocabulary missing"):
        schedule_create(acting_user=clerk, **motor_fields())


@pytest.mark.parametrize(
    "sums", [[18500], {"vehicle_agreed_value": -1}, {"vehicle": "lots"}, {"": 1}, {"x": True}]
)
def test_sums_insured_must_map_items_to_non_negative_amounts(clerk, sums):
    with pytest.raises(ValidationError) as excinfo:
        schedule_create(acting_user=clerk, **motor_fields(sums_insured=sums))
    assert "sums_insured" in excinfo.value.message_dict


def test_the_term_must_end_after_it_starts(clerk):
    with pytest.raises(ValidationError, match="end after it starts"):
        schedule_create(acting_user=clerk, **motor_fields(term_end=motor_fields()["term_start"]))


def test_unknown_fields_are_a_programming_error(clerk):
    with pytest.raises(TypeError, match="Unknown schedule field"):
        schedule_create(acting_user=clerk, **motor_fields(colour="red"))


def test_an_update_records_who_changed_which_fields_without_their_values(clerk):
    schedule = schedule_create(acting_user=None, **motor_fields())
    schedule_update(
        schedule_id=schedule.pk,
        acting_user=clerk,
        coverage_sections=[],
        holder_phone="021 555 0199",
        excess=Decimal("750"),
    )
    latest = schedule.history.first()
    assert latest.history_type == "~"
    assert latest.history_user == clerk
    assert latest.history_change_reason == "Changed coverage_sections, excess, holder_phone."
    assert latest.coverage_sections == []
    assert schedule.history.count() == 2


def test_an_update_that_changes_nothing_writes_no_history(clerk):
    schedule = schedule_create(acting_user=clerk, **motor_fields())
    schedule_update(schedule_id=schedule.pk, acting_user=clerk, **motor_fields())
    assert schedule.history.count() == 1


def test_the_database_refuses_rows_that_skip_the_service():
    """The constraints hold even for code that writes rows directly."""
    bad_rows = [
        motor_fields(policy_number="NW-MTR-X1"),
        motor_fields(policy_number="NW-HOM-100001"),
        motor_fields(status="suspended"),
        motor_fields(sales_channel="online"),
        motor_fields(excess=Decimal("-1")),
        motor_fields(term_end=motor_fields()["term_start"]),
    ]
    for row in bad_rows:
        with pytest.raises(IntegrityError), transaction.atomic():
            PolicySchedule.objects.create(**row)
