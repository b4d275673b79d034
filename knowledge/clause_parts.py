"""A clause's parts: each paragraph or bullet that can be quoted on its own.

Parsed once, at ingestion, and stored with the clause (``Clause.parts``), so
the composer reads the structure instead of re-parsing the text every turn.
A part is verbatim from the clause; a bullet keeps the line it hangs from
("Not covered:", "What we pay:") as its ``lead_in``, also verbatim.
"""

from __future__ import annotations

import re
from typing import TypedDict

# The clause stating its own exclusion ("Not included:", "We do not cover", "This policy
# does not cover:"), not a sentence about someone else ("The NHC does not cover ...", "injury
# to other people that is not covered by ACC: up to NZD 1,000,000" is what we pay).
_NEGATIVE = re.compile(
    r"^(not included|not covered|excluded)\b|\b(we do not cover|we don't cover|"
    r"we do not pay|(?:this|the|your) policy does not cover|"
    r"(?:is|are) not covered(?! by (?:acc|the nhc|nhc|eqc|the natural hazards))|not included)\b",
    re.IGNORECASE,
)
_AMOUNT = re.compile(r"\b(NZD|\$)\s?[\d,]+|\bup to\b|\blimit\b", re.IGNORECASE)
_DURATION = re.compile(r"\b(starts?|ends?|days?|weeks?|until|whichever is first)\b", re.IGNORECASE)
_META = re.compile(r"^(Kind|Schedule section|Visibility|Refers to):", re.IGNORECASE)
_BULLETS = ("- ", "* ", "\u2022 ")


class ClausePart(TypedDict):
    text: str  # verbatim from the clause
    lead_in: str  # the "We do not cover:" line a bullet hangs from, verbatim, or ""
    negative: bool  # the part (or its lead-in) states an exclusion
    amount: bool  # it states an amount or a limit
    duration: bool  # it states when something starts or ends, or for how long


def clause_parts(text: str) -> list[ClausePart]:
    """The quotable parts of a stored clause, in order: heading and metadata skipped."""
    parts: list[ClausePart] = []
    lead_in = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or _META.match(line) or line.startswith(">"):
            continue
        is_bullet = line.startswith(_BULLETS)
        body = line[2:].strip() if is_bullet else line
        if not is_bullet:
            lead_in = line if line.endswith(":") else ""
            if lead_in:
                continue
        context = lead_in if is_bullet else ""
        parts.append(
            ClausePart(
                text=body,
                lead_in=context,
                negative=bool(_NEGATIVE.search(body) or _NEGATIVE.search(context)),
                amount=bool(_AMOUNT.search(body)),
                duration=bool(_DURATION.search(body)),
            )
        )
    return parts
