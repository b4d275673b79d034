"""Finding the schedule of a policy number, behind a replaceable source.

The claim agent calls ``schedule_lookup``; where the schedule comes from is
a ``ScheduleSource``. The default reads this app's database; a deployment
that keeps schedules in a legacy policy system points the setting
``SCHEDULE_SOURCE`` at an adapter (``HttpScheduleSource`` is one) without
touching the agent. A number that matches nothing is "no evidence": the agent
says it cannot find the schedule and does not guess.
"""

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from northwind.errors import ServiceUnavailable
from schedules.validators import policy_number_is_valid, policy_number_normalize

DEFAULT_SCHEDULE_SOURCE = "schedules.lookup.DatabaseScheduleSource"


def name_mask(name: str) -> str:
    """Mask a person's name to initials: "Jane Smith" -> "J*** S***"."""
    return " ".join(f"{part[0]}***" for part in name.split())


@dataclass(frozen=True)
class ScheduleEvidence:
    """What the agent may know about a schedule: no email, no phone."""

    policy_number: str
    line: str
    status: str
    term_start: date | None
    term_end: date | None
    sales_channel: str
    insured_item: str
    excess: Decimal
    sums_insured: dict
    coverage_sections: tuple[str, ...]
    holder_name: str

    @classmethod
    def from_schedule(cls, schedule: Any) -> "ScheduleEvidence":
        return cls(
            policy_number=schedule.policy_number,
            line=schedule.line,
            status=schedule.status,
            term_start=schedule.term_start,
            term_end=schedule.term_end,
            sales_channel=schedule.sales_channel,
            insured_item=schedule.insured_item,
            excess=Decimal(schedule.excess),
            sums_insured=dict(schedule.sums_insured or {}),
            coverage_sections=tuple(schedule.coverage_sections or ()),
            holder_name=schedule.holder_name,
        )

    def masked_summary(self) -> dict:
        """The schedule as the API returns it: JSON-ready, the holder's name masked."""
        return {
            "policy_number": self.policy_number,
            "line": self.line,
            "status": self.status,
            "term_start": self.term_start.isoformat() if self.term_start else None,
            "term_end": self.term_end.isoformat() if self.term_end else None,
            "sales_channel": self.sales_channel,
            "insured_item": self.insured_item,
            "excess": str(self.excess),
            "sums_insured": dict(self.sums_insured),
            "coverage_sections": list(self.coverage_sections),
            "holder_name": name_mask(self.holder_name),
        }


@dataclass(frozen=True)
class ScheduleLookup:
    kind: Literal["found", "no_evidence", "invalid_number"]
    evidence: ScheduleEvidence | None
    reason: str


@dataclass(frozen=True)
class HolderFacts:
    """The facts a customer proves a policy with; never shown to the agent."""

    birth_date: date | None
    postcode: str


class ScheduleSource(Protocol):
    def lookup(self, policy_number: str) -> ScheduleLookup: ...

    def holder_facts(self, policy_number: str) -> HolderFacts | None:
        """The holder's verification facts, or None when there is no such policy."""
        ...


class ScheduleSourceError(ServiceUnavailable):
    """The source could not be asked (an outage), as opposed to "no such policy"."""

    code = "schedule_source_unavailable"


def _invalid(policy_number: str) -> ScheduleLookup:
    return ScheduleLookup(
        kind="invalid_number",
        evidence=None,
        reason=(
            f"{policy_number!r} is not a Northwind policy number; "
            "one looks like NW-MTR-204518 (MTR motor, HOM home, CNT contents)."
        ),
    )


def _no_evidence(policy_number: str) -> ScheduleLookup:
    return ScheduleLookup(
        kind="no_evidence",
        evidence=None,
        reason=f"No schedule found for {policy_number}.",
    )


def _found(evidence: ScheduleEvidence) -> ScheduleLookup:
    return ScheduleLookup(
        kind="found", evidence=evidence, reason=f"Schedule {evidence.policy_number} found."
    )


class DatabaseScheduleSource:
    """Schedules kept in this app's database (the default source)."""

    def lookup(self, policy_number: str) -> ScheduleLookup:
        from schedules.models import PolicySchedule

        number = policy_number_normalize(policy_number)
        if not policy_number_is_valid(number):
            return _invalid(policy_number)
        schedule = PolicySchedule.objects.filter(policy_number=number).first()
        if schedule is None:
            return _no_evidence(number)
        return _found(ScheduleEvidence.from_schedule(schedule))

    def holder_facts(self, policy_number: str) -> HolderFacts | None:
        from schedules.models import PolicySchedule

        number = policy_number_normalize(policy_number)
        row = (
            PolicySchedule.objects.filter(policy_number=number)
            .values("holder_birth_date", "holder_postcode")
            .first()
        )
        if row is None:
            return None
        return HolderFacts(birth_date=row["holder_birth_date"], postcode=row["holder_postcode"])


class HttpScheduleSource:
    """An adapter for a legacy policy system that serves schedules as JSON.

    ``GET <base_url>/policies/<number>`` answers 200 with the fields of
    ``ScheduleEvidence`` (dates as ``YYYY-MM-DD``, ``excess`` as a string or
    number), or 404 when there is no such policy. Anything else raises
    ``ScheduleSourceError``: an outage is never reported as "no evidence".
    The base URL comes from the argument or ``SCHEDULE_SOURCE_URL``.
    """

    def __init__(self, base_url: str | None = None, *, timeout: float = 3.0):
        self.base_url = str(base_url or getattr(settings, "SCHEDULE_SOURCE_URL", "") or "").rstrip(
            "/"
        )
        if not self.base_url:
            raise ScheduleSourceError("HttpScheduleSource needs a base URL (SCHEDULE_SOURCE_URL).")
        self.timeout = timeout

    def _get(self, number: str) -> bytes | None:
        """The policy's JSON, or None for a 404."""
        url = f"{self.base_url}/policies/{urllib.parse.quote(number)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise ScheduleSourceError(f"Policy system answered {exc.code} for {number}.") from exc
        except OSError as exc:
            raise ScheduleSourceError(f"Policy system unreachable for {number}: {exc}") from exc

    def holder_facts(self, policy_number: str) -> HolderFacts | None:
        """``holder_birth_date`` (YYYY-MM-DD) and ``holder_postcode`` of the same JSON."""
        number = policy_number_normalize(policy_number)
        if not policy_number_is_valid(number):
            return None
        body = self._get(number)
        if body is None:
            return None
        try:
            payload = json.loads(body)
            return HolderFacts(
                birth_date=_iso_date(payload.get("holder_birth_date")),
                postcode=str(payload.get("holder_postcode") or ""),
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise ScheduleSourceError(
                f"Policy system sent an unreadable schedule for {number}: {exc}"
            ) from exc

    def lookup(self, policy_number: str) -> ScheduleLookup:
        number = policy_number_normalize(policy_number)
        if not policy_number_is_valid(number):
            return _invalid(policy_number)
        body = self._get(number)
        if body is None:
            return _no_evidence(number)
        try:
            payload = json.loads(body)
            evidence = ScheduleEvidence(
                policy_number=payload["policy_number"],
                line=payload["line"],
                status=payload["status"],
                term_start=_iso_date(payload.get("term_start")),
                term_end=_iso_date(payload.get("term_end")),
                sales_channel=payload.get("sales_channel") or "",
                insured_item=payload.get("insured_item") or "",
                excess=Decimal(str(payload.get("excess", "0"))),
                sums_insured=dict(payload.get("sums_insured") or {}),
                coverage_sections=tuple(payload.get("coverage_sections") or ()),
                holder_name=payload.get("holder_name") or "",
            )
        except (KeyError, TypeError, ValueError, AttributeError, InvalidOperation) as exc:
            raise ScheduleSourceError(
                f"Policy system sent an unreadable schedule for {number}: {exc}"
            ) from exc
        if evidence.policy_number != number:
            raise ScheduleSourceError(
                f"Policy system answered {evidence.policy_number} when asked for {number}."
            )
        return _found(evidence)


def _iso_date(value: Any) -> date | None:
    return date.fromisoformat(value) if value else None


def schedule_source_default() -> ScheduleSource:
    """The source named by ``SCHEDULE_SOURCE`` (a dotted path), read now."""
    target = import_string(getattr(settings, "SCHEDULE_SOURCE", DEFAULT_SCHEDULE_SOURCE))
    return target() if isinstance(target, type) else target


def schedule_holder_facts(
    policy_number: str, *, source: ScheduleSource | None = None
) -> HolderFacts | None:
    """The holder's verification facts of ``policy_number``, or None if there is none."""
    if not policy_number_is_valid(policy_number_normalize(policy_number)):
        return None
    return (source or schedule_source_default()).holder_facts(policy_number)


def schedule_lookup(policy_number: str, *, source: ScheduleSource | None = None) -> ScheduleLookup:
    """Find the schedule of ``policy_number``: found, no evidence, or an invalid number."""
    if not isinstance(policy_number, str) or not policy_number.strip():
        return _invalid(str(policy_number or ""))
    return (source or schedule_source_default()).lookup(policy_number)
