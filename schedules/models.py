"""Policy schedules: one customer policy each, with its change history.

A schedule is what the claim agent reads to confirm the line, the term and
the optional covers (``coverage_sections``) of the policy a customer names.
Personal data (holder name, email, phone) is kept here and nowhere else; the
agent only ever sees it masked (``schedules.lookup.ScheduleEvidence``).
"""

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from knowledge.models import Channel as SalesChannel
from knowledge.models import Line
from schedules.validators import (
    POLICY_NUMBER_PATTERN,
    POLICY_NUMBER_PREFIX_BY_LINE,
    coverage_sections_validate,
    policy_number_line_validate,
    sums_insured_validate,
)


class ScheduleStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    LAPSED = "lapsed", "Lapsed"
    CANCELLED = "cancelled", "Cancelled"


class PolicySchedule(models.Model):
    Status = ScheduleStatus
    SalesChannel = SalesChannel

    policy_number = models.CharField(
        max_length=32,
        unique=True,
        validators=[
            RegexValidator(
                POLICY_NUMBER_PATTERN,
                message="A policy number looks like NW-MTR-204518: NW-, then MTR, HOM or CNT, "
                "then a hyphen and digits.",
            )
        ],
        help_text="NW-, then MTR (motor), HOM (home) or CNT (contents), a hyphen and digits: "
        "NW-MTR-204518.",
    )
    line = models.CharField(max_length=16, choices=Line.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    term_start = models.DateField(null=True, blank=True)
    term_end = models.DateField(null=True, blank=True)
    sales_channel = models.CharField(max_length=16, choices=SalesChannel.choices)
    insured_item = models.CharField(
        max_length=255, help_text="The vehicle (year, make, model) or the insured address."
    )
    excess = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        validators=[MinValueValidator(0)],
        help_text="NZD per claim.",
    )
    sums_insured = models.JSONField(
        default=dict,
        blank=True,
        validators=[sums_insured_validate],
        help_text='NZD amounts by item, e.g. {"vehicle_agreed_value": 18500}.',
    )
    coverage_sections = models.JSONField(
        default=list,
        blank=True,
        help_text="The optional covers this policy includes, as codes of the line's vocabulary.",
    )
    holder_name = models.CharField(max_length=200)
    holder_email = models.EmailField(blank=True)
    holder_phone = models.CharField(max_length=32, blank=True)
    # The second facts a customer client proves a policy with (with its number).
    holder_birth_date = models.DateField(null=True, blank=True)
    holder_postcode = models.CharField(
        max_length=4,
        blank=True,
        validators=[RegexValidator(r"^\d{4}$", message="A New Zealand postcode is four digits.")],
        help_text="The postcode of the holder's address (four digits).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["policy_number"]
        permissions = [
            (
                "view_personal_data",
                "Can see schedule holders' name, email, phone, birth date and postcode",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(policy_number__regex=POLICY_NUMBER_PATTERN),
                name="schedule_policy_number_format",
            ),
            models.CheckConstraint(
                condition=Q(
                    *(
                        Q(line=line, policy_number__startswith=f"NW-{prefix}-")
                        for line, prefix in POLICY_NUMBER_PREFIX_BY_LINE.items()
                    ),
                    _connector=Q.OR,
                ),
                name="schedule_policy_number_matches_line",
            ),
            models.CheckConstraint(condition=Q(line__in=Line.values), name="schedule_line_valid"),
            models.CheckConstraint(
                condition=Q(status__in=ScheduleStatus.values), name="schedule_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(sales_channel__in=SalesChannel.values),
                name="schedule_sales_channel_valid",
            ),
            models.CheckConstraint(condition=Q(excess__gte=0), name="schedule_excess_not_negative"),
            models.CheckConstraint(
                condition=Q(term_start__isnull=True)
                | Q(term_end__isnull=True)
                | Q(term_end__gt=models.F("term_start")),
                name="schedule_term_end_after_start",
            ),
        ]

    def __str__(self) -> str:
        return self.policy_number

    def clean(self) -> None:
        """Cross-field rules; run by ``full_clean`` in the services."""
        policy_number_line_validate(self.policy_number, self.line)
        coverage_sections_validate(self.line, self.coverage_sections)
        if self.term_start and self.term_end and self.term_end <= self.term_start:
            raise ValidationError({"term_end": "The term must end after it starts."})
