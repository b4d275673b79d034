"""Masking of customer personal data before it is stored in a run record."""

import re

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# NZ and international phone numbers: 021 555 0123, +64 21 555 0123, (09) 555-0123.
_PHONE = re.compile(r"(?<![\w-])(?:\+?\d[\d\s().-]{6,}\d)(?![\w-])")
_CARD_OR_ACCOUNT = re.compile(r"\b\d{2}-\d{4}-\d{7}-\d{2,3}\b|\b(?:\d[ -]?){13,19}\b")
_PLATE = re.compile(r"\b(?:plate|rego|registration)\s*(?:is|:|number)?\s*([A-Z0-9]{2,7})\b", re.I)


def personal_data_mask(text: str, *, names: tuple[str, ...] = ()) -> str:
    """Replace emails, phone, card and account numbers, and known names.

    Policy numbers (NW-MTR-204518) are kept: they are the record's key, not
    personal data on their own.
    """
    masked = _EMAIL.sub("[email]", text)
    masked = _CARD_OR_ACCOUNT.sub("[number]", masked)
    masked = _PHONE.sub(_phone_or_keep, masked)
    masked = _PLATE.sub(lambda m: m.group(0).replace(m.group(1), "[plate]"), masked)
    for name in names:
        for part in name.split():
            if len(part) >= 3:
                masked = re.sub(rf"\b{re.escape(part)}\b", "[name]", masked, flags=re.IGNORECASE)
    return masked


def _phone_or_keep(match: re.Match) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return "[phone]" if len(digits) >= 7 else match.group(0)
