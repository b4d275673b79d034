"""Validation of schedule fields, shared by the model, the services and the admin.

Every failure is a ``ValidationError`` keyed by the field it is about, with a
message a member of staff can act on: what was wrong and what is allowed.
"""

import importlib
import re
from typing import Any

from django.core.exceptions import ValidationError

POLICY_NUMBER_PATTERN = r"^NW-(MTR|HOM|CNT)-[0-9]+$"
POLICY_NUMBER_PREFIX_BY_LINE: dict[str, str] = {"motor": "MTR", "home": "HOM", "contents": "CNT"}
LINE_BY_POLICY_NUMBER_PREFIX: dict[str, str] = {
    prefix: line for line, prefix in POLICY_NUMBER_PREFIX_BY_LINE.items()
}
_POLICY_NUMBER_RE = re.compile(POLICY_NUMBER_PATTERN)


def policy_number_normalize(raw: str) -> str:
    """Upper-case and strip a policy number as a customer or clerk typed it."""
    return raw.strip().upper()


def policy_number_is_valid(policy_number: str) -> bool:
    return bool(_POLICY_NUMBER_RE.match(policy_number))


def policy_number_line(policy_number: str) -> str | None:
    """The line a well-formed policy number belongs to, or None."""
    match = _POLICY_NUMBER_RE.match(policy_number)
    return LINE_BY_POLICY_NUMBER_PREFIX[match.group(1)] if match else None


def policy_number_line_validate(policy_number: str, line: str) -> None:
    number_line = policy_number_line(policy_number or "")
    if number_line is None or not line:
        return  # the field validators report a malformed number or a missing line
    if number_line != line:
        prefix = POLICY_NUMBER_PREFIX_BY_LINE.get(line)
        expected = f"NW-{prefix}-<digits>" if prefix else "a number of its own line"
        raise ValidationError(
            {
                "policy_number": (
                    f"{policy_number} is a {number_line} policy number, but the line is "
                    f"{line}; a {line} policy number looks like {expected}."
                )
            }
        )


def coverage_vocabulary() -> dict[str, dict[str, str]]:
    """The knowledge base's coverage vocabulary: line -> {code: plain label}.

    Read at call time so the vocabulary can grow without a restart of the
    code that validates against it.
    """
    try:
        module = importlib.import_module("knowledge.coverage")
        vocabulary = module.COVERAGE_SECTIONS
    except (ImportError, AttributeError) as exc:
        raise ValidationError(
            {
                "coverage_sections": (
                    "Coverage vocabulary missing: knowledge.coverage.COVERAGE_SECTIONS could not "
                    "be loaded, so no coverage section can be checked."
                )
            }
        ) from exc
    return vocabulary


def coverage_sections_allowed(line: str) -> dict[str, str]:
    """The codes a schedule of ``line`` may list, with their labels."""
    return dict(coverage_vocabulary().get(line, {}))


def coverage_sections_validate(line: str, codes: Any) -> None:
    """Refuse anything but a list of distinct codes of the line's vocabulary."""
    if not isinstance(codes, list) or not all(isinstance(code, str) for code in codes):
        raise ValidationError(
            {"coverage_sections": "Coverage sections must be a list of codes (strings)."}
        )
    duplicates = sorted({code for code in codes if codes.count(code) > 1})
    if duplicates:
        raise ValidationError(
            {"coverage_sections": f"Coverage section listed twice: {', '.join(duplicates)}."}
        )
    if not codes:
        return
    allowed = coverage_sections_allowed(line)
    unknown = [code for code in codes if code not in allowed]
    if unknown:
        names = ", ".join(repr(code) for code in unknown)
        noun = "section" if len(unknown) == 1 else "sections"
        allowed_text = ", ".join(sorted(allowed)) or "none"
        raise ValidationError(
            {
                "coverage_sections": (
                    f"Unknown coverage {noun} {names} for the {line or 'unset'} line. "
                    f"Allowed: {allowed_text}."
                )
            }
        )


def sums_insured_validate(value: Any) -> None:
    """Sums insured are a dict of item name -> non-negative NZD amount."""
    if not isinstance(value, dict):
        raise ValidationError(
            'Sums insured must be an object of item -> NZD amount, e.g. {"dwelling": 650000}.'
        )
    for key, amount in value.items():
        if not isinstance(key, str) or not key.strip():
            raise ValidationError("Each sum insured needs a non-empty item name.")
        if isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0:
            raise ValidationError(
                f"The sum insured for {key!r} must be a non-negative number of NZD, not {amount!r}."
            )
