"""The schedules admin: search, filters, validated coverage, history, masking."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from schedules.models import PolicySchedule
from schedules.services import schedule_create, schedule_update
from tests.schedules.conftest import motor_fields

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("coverage_vocabulary")]

CHANGELIST = reverse("admin:schedules_policyschedule_changelist")
ADD = reverse("admin:schedules_policyschedule_add")


def change_url(schedule):
    return reverse("admin:schedules_policyschedule_change", args=[schedule.pk])


def staff(username, *codenames):
    user = get_user_model().objects.create_user(username, password="x", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="schedules", codename__in=codenames)
    )
    return user


@pytest.fixture
def schedules():
    first = schedule_create(acting_user=None, **motor_fields())
    second = schedule_create(
        acting_user=None,
        **motor_fields(
            policy_number="NW-HOM-200002",
            line="home",
            sales_channel="broker",
            insured_item="12 Example Street, Wellington",
            sums_insured={"dwelling": 650000},
            coverage_sections=["landlord"],
            holder_name="Wiremu Example",
            holder_email="wiremu@example.com",
            holder_phone="021 555 0177",
        ),
    )
    return first, second


@pytest.fixture
def editor():
    return staff("editor", "view_policyschedule", "change_policyschedule", "add_policyschedule")


@pytest.fixture
def privileged():
    return staff(
        "privileged",
        "view_policyschedule",
        "change_policyschedule",
        "add_policyschedule",
        "view_personal_data",
    )


def form_data(schedule: PolicySchedule, **overrides) -> dict:
    data = {
        "policy_number": schedule.policy_number,
        "line": schedule.line,
        "status": schedule.status,
        "sales_channel": schedule.sales_channel,
        "term_start": schedule.term_start.isoformat(),
        "term_end": schedule.term_end.isoformat(),
        "insured_item": schedule.insured_item,
        "excess": str(schedule.excess),
        "sums_insured": '{"vehicle_agreed_value": 18500}',
        "coverage_sections": list(schedule.coverage_sections),
    }
    return {**data, **overrides}


def test_search_by_policy_number(client, editor, schedules):
    client.force_login(editor)
    response = client.get(CHANGELIST, {"q": "NW-HOM-200002"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [schedules[1]]


def test_search_does_not_match_personal_data(client, editor, schedules):
    client.force_login(editor)
    response = client.get(CHANGELIST, {"q": "Wiremu"})
    assert list(response.context["cl"].result_list) == []


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"line": "home"}, "NW-HOM-200002"),
        ({"sales_channel__exact": "direct"}, "NW-MTR-100001"),
        ({"status__exact": "active", "line__exact": "motor"}, "NW-MTR-100001"),
    ],
)
def test_list_filters(client, editor, schedules, params, expected):
    client.force_login(editor)
    response = client.get(CHANGELIST, params)
    assert [s.policy_number for s in response.context["cl"].result_list] == [expected]


def test_the_list_masks_holder_names_without_the_permission(client, editor, privileged, schedules):
    client.force_login(editor)
    content = client.get(CHANGELIST).content.decode()
    assert "W*** E***" in content
    assert "Wiremu" not in content
    client.force_login(privileged)
    assert "Wiremu Example" in client.get(CHANGELIST).content.decode()


def test_the_change_form_masks_personal_data_without_the_permission(client, editor, schedules):
    client.force_login(editor)
    response = client.get(change_url(schedules[0]))
    content = response.content.decode()
    assert response.status_code == 200
    for secret in ("Aroha", "aroha@example.com", "555 0100"):
        assert secret not in content
    assert "A*** T***" in content
    assert "a***@example.com" in content
    assert "*** *** 00" in content
    assert "holder_email" not in response.context["adminform"].form.fields


def test_the_change_form_shows_personal_data_with_the_permission(client, privileged, schedules):
    client.force_login(privileged)
    content = client.get(change_url(schedules[0])).content.decode()
    assert "aroha@example.com" in content
    assert "021 555 0100" in content


def test_the_coverage_field_shows_the_allowed_codes_of_each_line(client, editor, schedules):
    client.force_login(editor)
    content = client.get(change_url(schedules[0])).content.decode()
    assert "motor: alternative_transport, excess_free_glass" in content
    assert "home: landlord" in content
    assert 'value="alternative_transport"' in content


def test_an_unknown_coverage_code_is_refused_in_the_admin_with_a_clear_message(
    client, editor, schedules
):
    client.force_login(editor)
    schedule = schedules[0]
    response = client.post(
        change_url(schedule), form_data(schedule, coverage_sections=["hire_car"])
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["coverage_sections"] == [
        "Unknown coverage section 'hire_car' for the motor line. "
        "Allowed: alternative_transport, excess_free_glass."
    ]
    schedule.refresh_from_db()
    assert schedule.coverage_sections == ["alternative_transport"]


def test_a_code_of_another_line_is_refused_in_the_admin(client, editor, schedules):
    client.force_login(editor)
    schedule = schedules[0]
    response = client.post(
        change_url(schedule), form_data(schedule, coverage_sections=["landlord"])
    )
    assert "Unknown coverage section &#x27;landlord&#x27; for the motor line" in (
        response.content.decode()
    )


def test_a_mismatched_policy_number_is_refused_in_the_admin(client, editor, schedules):
    client.force_login(editor)
    schedule = schedules[0]
    response = client.post(change_url(schedule), form_data(schedule, policy_number="NW-CNT-100001"))
    assert response.context["adminform"].form.errors["policy_number"] == [
        "NW-CNT-100001 is a contents policy number, but the line is motor; "
        "a motor policy number looks like NW-MTR-<digits>."
    ]


def test_an_admin_change_goes_through_the_service_and_keeps_personal_data(
    client, editor, schedules
):
    """Staff who cannot see personal data can still edit the rest, without erasing it."""
    client.force_login(editor)
    schedule = schedules[0]
    response = client.post(change_url(schedule), form_data(schedule, coverage_sections=[]))
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.coverage_sections == []
    assert schedule.holder_email == "aroha@example.com"
    latest = schedule.history.first()
    assert latest.history_user == editor
    assert latest.history_change_reason == "Changed coverage_sections."


def test_a_schedule_added_in_the_admin_is_normalised_and_validated(client, editor, schedules):
    client.force_login(editor)
    data = form_data(
        schedules[0],
        policy_number="nw-mtr-300003",
        holder_name="New Holder",
        holder_email="new@example.com",
        holder_phone="021 555 0111",
    )
    response = client.post(ADD, data)
    assert response.status_code == 302
    created = PolicySchedule.objects.get(policy_number="NW-MTR-300003")
    assert created.history.get().history_user == editor


def test_the_history_masks_personal_data_without_the_permission(
    client, editor, privileged, schedules
):
    schedule = schedules[0]
    schedule_update(
        schedule_id=schedule.pk,
        acting_user=privileged,
        holder_email="aroha.new@example.com",
        coverage_sections=[],
    )
    history = reverse("admin:schedules_policyschedule_history", args=[schedule.pk])
    client.force_login(editor)
    content = client.get(history).content.decode()
    assert "Changed coverage_sections, holder_email." in content
    assert "aroha.new@example.com" not in content
    assert "aroha@example.com" not in content
    assert "a***@example.com" in content

    record = schedule.history.last()
    version = reverse(
        "admin:schedules_policyschedule_simple_history", args=[schedule.pk, record.history_id]
    )
    content = client.get(version).content.decode()
    assert "aroha@example.com" not in content
    assert "Aroha" not in content

    client.force_login(privileged)
    assert "aroha.new@example.com" in client.get(history).content.decode()
