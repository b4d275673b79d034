"""Admin for policy schedules.

Changes go through the same services as everything else, so the admin
cannot store what the services refuse. Holder name, email and phone are
shown masked and read-only to staff without
``schedules.view_personal_data`` — in the list, the change form and the
history.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from simple_history.template_utils import HistoricalRecordContextHelper

from northwind.admin_history import ReadOnlyHistoryAdmin
from schedules.lookup import name_mask
from schedules.models import PolicySchedule
from schedules.services import SCHEDULE_FIELDS, schedule_create, schedule_update
from schedules.validators import coverage_vocabulary, policy_number_normalize

PERSONAL_DATA_PERMISSION = "schedules.view_personal_data"
PERSONAL_FIELDS = (
    "holder_name",
    "holder_email",
    "holder_phone",
    "holder_birth_date",
    "holder_postcode",
)
MASKED_FIELDS = (
    "holder_name_masked",
    "holder_email_masked",
    "holder_phone_masked",
    "holder_birth_date_masked",
    "holder_postcode_masked",
)


def email_mask(email: str) -> str:
    local, _, domain = email.partition("@")
    return f"{local[:1]}***@{domain}" if local and domain else ("***" if email else "")


def phone_mask(phone: str) -> str:
    digits = [char for char in phone if char.isdigit()]
    return f"*** *** {''.join(digits[-2:])}" if digits else ""


def personal_value_mask(field: str, value: Any) -> str:
    if not value:
        return ""
    masks = {
        "holder_name": name_mask,
        "holder_email": email_mask,
        "holder_phone": phone_mask,
        "holder_birth_date": lambda _: "****-**-**",
        "holder_postcode": lambda _: "****",
    }
    return masks[field](str(value))


def _coverage_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    try:
        vocabulary = coverage_vocabulary()
    except ValidationError:  # the model's validation reports it by name
        return []
    return [
        (line.capitalize(), [(code, f"{code} — {label}") for code, label in codes.items()])
        for line, codes in vocabulary.items()
    ]


class CoverageSectionsField(forms.MultipleChoiceField):
    """Tick boxes of the codes, grouped by line.

    Any submitted code is passed on: the model's validation refuses a code
    that is not in the schedule's line with a message that names it and the
    allowed codes, which is clearer than "not one of the available choices".
    """

    widget = forms.CheckboxSelectMultiple

    def valid_value(self, value: str) -> bool:
        return True


class PolicyScheduleForm(forms.ModelForm):
    coverage_sections = CoverageSectionsField(
        required=False,
        help_text="Only the codes of the schedule's own line are accepted; "
        "e.g. alternative_transport switches on MTR-BEN-03 for a motor policy.",
    )

    class Meta:
        model = PolicySchedule
        fields = (
            "policy_number",
            "line",
            "status",
            "sales_channel",
            "term_start",
            "term_end",
            "insured_item",
            "excess",
            "sums_insured",
            "coverage_sections",
            "holder_name",
            "holder_email",
            "holder_phone",
            "holder_birth_date",
            "holder_postcode",
        )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = _coverage_choices()
        field = self.fields["coverage_sections"]
        field.choices = choices
        allowed = "; ".join(
            f"{group.lower()}: {', '.join(code for code, _ in codes) or 'none'}"
            for group, codes in choices
        )
        field.help_text = f"{field.help_text} Allowed codes — {allowed or 'vocabulary missing'}."

    def clean_policy_number(self) -> str:
        return policy_number_normalize(self.cleaned_data["policy_number"])


class MaskingContextHelper(HistoricalRecordContextHelper):
    """Shows personal fields in the history's "Changes" column masked."""

    def __init__(self, *args, show_personal_data: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.show_personal_data = show_personal_data

    def prepare_delta_change_value(self, change, value):
        if not self.show_personal_data and change.field in PERSONAL_FIELDS:
            return personal_value_mask(change.field, value)
        return super().prepare_delta_change_value(change, value)


@admin.register(PolicySchedule)
class PolicyScheduleAdmin(ReadOnlyHistoryAdmin):
    form = PolicyScheduleForm
    search_fields = ("policy_number",)
    search_help_text = "Search by policy number, e.g. NW-MTR-204518."
    list_filter = ("line", "status", "sales_channel")
    list_display = (
        "policy_number",
        "line",
        "status",
        "sales_channel",
        "term_start",
        "term_end",
        "coverage_sections",
        "holder_name",
    )
    ordering = ("policy_number",)
    history_list_per_page = 50

    def can_see_personal_data(self, request) -> bool:
        return request.user.has_perm(PERSONAL_DATA_PERMISSION)

    # --- masking -------------------------------------------------------------
    @admin.display(description="Holder name")
    def holder_name_masked(self, obj: PolicySchedule) -> str:
        return personal_value_mask("holder_name", obj.holder_name)

    @admin.display(description="Holder email")
    def holder_email_masked(self, obj: PolicySchedule) -> str:
        return personal_value_mask("holder_email", obj.holder_email)

    @admin.display(description="Holder phone")
    def holder_phone_masked(self, obj: PolicySchedule) -> str:
        return personal_value_mask("holder_phone", obj.holder_phone)

    @admin.display(description="Holder birth date")
    def holder_birth_date_masked(self, obj: PolicySchedule) -> str:
        return personal_value_mask("holder_birth_date", obj.holder_birth_date)

    @admin.display(description="Holder postcode")
    def holder_postcode_masked(self, obj: PolicySchedule) -> str:
        return personal_value_mask("holder_postcode", obj.holder_postcode)

    def get_list_display(self, request):
        if self.can_see_personal_data(request):
            return self.list_display
        return tuple("holder_name_masked" if f == "holder_name" else f for f in self.list_display)

    def get_fields(self, request, obj=None):
        fields = [name for name in self.form.base_fields if name in SCHEDULE_FIELDS]
        if obj is None or self.can_see_personal_data(request):
            return fields
        return [
            MASKED_FIELDS[PERSONAL_FIELDS.index(name)] if name in PERSONAL_FIELDS else name
            for name in fields
        ]

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None and not self.can_see_personal_data(request):
            readonly += MASKED_FIELDS
        return readonly

    def get_historical_record_context_helper(self, request, historical_record):
        return MaskingContextHelper(
            self.model,
            historical_record,
            show_personal_data=self.can_see_personal_data(request),
        )

    # --- writes go through the services --------------------------------------
    def save_model(self, request, obj, form, change):
        fields = {
            name: value for name, value in form.cleaned_data.items() if name in SCHEDULE_FIELDS
        }
        if change:
            saved = schedule_update(schedule_id=obj.pk, acting_user=request.user, **fields)
        else:
            saved = schedule_create(acting_user=request.user, **fields)
        obj.pk = saved.pk
        obj._state.adding = False
