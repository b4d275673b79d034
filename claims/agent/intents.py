"""Messages a person must handle whatever the wording says: complaints, and
requests to speak to a person.

New Zealand's Fair Insurance Code asks insurers to acknowledge and handle a
complaint on a clock, so a complaint is never answered from a clause: it is
queued with its own reason and the queue's shortest deadline. The patterns
are deliberately narrow (a question about what the policy covers is not a
complaint because it says "unhappy").
"""

from __future__ import annotations

import re

from claims.agent.types import CustomerIntent

_COMPLAINT = [
    r"\b(?:make|making|lodge|lodging|file|filing|raise|raising|register|submit|put in|have)"
    r" (?:a |an )?(?:formal |official )?complaint\b",
    r"\bI(?:'d| would)? (?:like|want|wish) to complain\b",
    r"\bI(?:'m| am) (?:complaining|going to complain)\b",
    r"\bthis is a (?:formal )?complaint\b",
    r"\bcomplain(?:t)? (?:about|regarding|against) (?:you|your|the way|how|my claim|the claim)\b",
    r"\b(?:insurance (?:and financial services )?ombudsman|IFSO|disputes? resolution scheme)\b",
]
_WANTS_PERSON = [
    r"\b(?:speak|talk|chat) (?:to|with) (?:a |an |some )?(?:real |actual |live )?"
    r"(?:person|human|people|agent|staff(?: member)?|someone|somebody|manager|supervisor)\b",
    r"\b(?:real|actual|live) (?:person|human)\b",
    r"\b(?:human|person|agent|operator) please\b",
    r"\b(?:please )?call me(?: back)?\b",
    r"\b(?:can|could) (?:someone|somebody|a person) (?:call|phone|ring|contact) me\b",
    r"\bnot (?:a |an )?(?:bot|robot|machine|chatbot|AI)\b",
]
COMPLAINT_RE = [re.compile(p, re.IGNORECASE) for p in _COMPLAINT]
WANTS_PERSON_RE = [re.compile(p, re.IGNORECASE) for p in _WANTS_PERSON]


def customer_intent(message: str) -> CustomerIntent | None:
    """``complaint``, ``wants_person``, or None for an ordinary question."""
    if any(p.search(message) for p in COMPLAINT_RE):
        return CustomerIntent.COMPLAINT
    if any(p.search(message) for p in WANTS_PERSON_RE):
        return CustomerIntent.WANTS_PERSON
    return None
