"""Writes to policy schedules. Every change is validated and kept in history."""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from schedules.models import PolicySchedule
from schedules.validators import policy_number_normalize

# The fields a service may set; timestamps and the id are the database's.
SCHEDULE_FIELDS: frozenset[str] = frozenset(
    {
        "policy_number",
        "line",
        "status",
        "term_start",
        "term_end",
        "sales_channel",
        "insured_item",
        "excess",
        "sums_insured",
        "coverage_sections",
        "holder_name",
        "holder_email",
        "holder_phone",
        "holder_birth_date",
        "holder_postcode",
    }
)


def _fields_check(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(fields) - SCHEDULE_FIELDS)
    if unknown:
        raise TypeError(f"Unknown schedule field(s): {', '.join(unknown)}.")
    if isinstance(fields.get("policy_number"), str):
        fields = {**fields, "policy_number": policy_number_normalize(fields["policy_number"])}
    return fields


@transaction.atomic
def schedule_create(
    *,
    acting_user: AbstractBaseUser | None,
    change_reason: str | None = None,
    **fields: Any,
) -> PolicySchedule:
    """Create a schedule after full validation.

    Raises ``ValidationError`` (keyed by field) for a malformed policy number,
    a number of another line, an unknown coverage section, and so on.
    """
    schedule = PolicySchedule(**_fields_check(fields))
    schedule.full_clean()
    schedule._history_user = acting_user
    schedule._change_reason = change_reason or "Schedule created."
    schedule.save()
    return schedule


@transaction.atomic
def schedule_update(
    *,
    schedule_id: int,
    acting_user: AbstractBaseUser | None,
    change_reason: str | None = None,
    **fields: Any,
) -> PolicySchedule:
    """Change some fields of a schedule after full validation.

    A call that changes nothing writes nothing (and no history row). The
    change reason names the changed fields, never their values, so personal
    data does not leak into the history list.
    """
    schedule = PolicySchedule.objects.select_for_update().get(pk=schedule_id)
    changed = []
    for name, value in _fields_check(fields).items():
        if getattr(schedule, name) != value:
            setattr(schedule, name, value)
            changed.append(name)
    if not changed:
        return schedule
    schedule.full_clean()
    schedule._history_user = acting_user
    schedule._change_reason = change_reason or f"Changed {', '.join(sorted(changed))}."
    schedule.save(update_fields=[*changed, "updated_at"])
    return schedule
