"""Masking of customer personal data before it is stored in a run record.

What is masked: emails; phone numbers (NZ and international forms, starting
with 0 or +); card and bank account numbers; dates of birth given as such;
driver licence numbers (two letters and six digits); names the customer
introduces ("I'm Aroha Sample", "my name is ...", "this is ...") and the
policyholder's name when the schedule is known. What is kept: policy numbers
(the record's key), claim or reference numbers, and ordinary dates (the date
of an event is a fact the agent needs).
"""

import re

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_CARD_OR_ACCOUNT = re.compile(r"\b\d{2}-\d{4}-\d{7}-\d{2,3}\b|\b(?:\d[ -]?){13,19}\b")
# 021 555 0142, 021-555-0142, (09) 555 0123, +64 21 555 0142, 0800 555 123
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s-]?\(?\d{1,4}\)?|\(0\d{1,4}\)|0\d{1,4})(?:[\s-]?\d{2,4}){2,3}(?!\w)"
)
_DOB = re.compile(
    r"\b(?:dob|d\.o\.b\.?|date of birth|born(?: on)?)\s*(?:is|:)?\s*"
    r"(?:\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}|\d{1,2}(?:st|nd|rd|th)? [A-Za-z]+ \d{4}"
    r"|[A-Za-z]+ \d{1,2},? \d{4})",
    re.IGNORECASE,
)
_LICENCE = re.compile(r"\b[A-Z]{2}\d{6}\b")
_PLATE = re.compile(r"\b(?:plate|rego|registration)\s*(?:is|:|number)?\s*([A-Z0-9]{2,7})\b", re.I)
_NAME_WORD = r"[A-Z][a-zA-Z'\u00C0-\u017F-]+"
_INTRODUCED = re.compile(
    rf"\b(?:my name is|my name's|i am|i'm|im|this is|it's|its|name:)\s+"
    rf"((?:{_NAME_WORD})(?:\s+{_NAME_WORD}){{0,2}})",
    re.IGNORECASE,
)


def personal_data_mask(text: str, *, names: tuple[str, ...] = ()) -> str:
    """Replace personal data in a customer's message with labelled placeholders."""
    masked = _EMAIL.sub("[email]", text)
    masked = _DOB.sub("[date of birth]", masked)
    masked = _CARD_OR_ACCOUNT.sub("[number]", masked)
    masked = _PHONE.sub("[phone]", masked)
    masked = _LICENCE.sub("[licence]", masked)
    masked = _PLATE.sub(lambda m: m.group(0).replace(m.group(1), "[plate]"), masked)
    introduced = [m.group(1) for m in _INTRODUCED.finditer(masked) if _is_name(m.group(1))]
    for name in (*names, *introduced):
        for part in name.split():
            if len(part) >= 2:
                masked = re.sub(rf"\b{re.escape(part)}\b", "[name]", masked, flags=re.IGNORECASE)
    return masked


# Words that follow "I'm" or "this is" without being a name.
_NOT_NAMES = frozenset(
    "a an the not so very just still really sure trying wondering asking looking hoping going "
    "calling writing covered insured unsure worried new back here there happy sorry about "
    "after in on at from with your my our".split()
)


def _is_name(candidate: str) -> bool:
    """A capitalised word after "I'm" that is not an ordinary word of the sentence."""
    first = candidate.split()[0]
    return first[:1].isupper() and first.lower() not in _NOT_NAMES
