"""The offline tool planner: which tools a customer's message asks for, by rule.

Deterministic and always on, whatever model is configured: the L4 requests
(cancel a policy, change bank details, lodge or settle a claim) and the
confirmation of an L3 change request are recognised here and nowhere else,
so no model can turn them into something else. A model planner
(``claims.agent.llm``) may add calls of risk L2 or less, and the L3 draft.
Complaints and requests for a person are not tools: ``claims.agent.intents``
sends them to a person.
"""

from __future__ import annotations

import re

from claims.agent.types import ToolRequest

RULES = "rules"

_CLAIM_NUMBER = re.compile(r"\bCL-\d{4,8}\b", re.IGNORECASE)
CLAIM_STATUS = re.compile(
    r"\b(?:where|how far along)(?: is|'s|s)? (?:my|our|the) claim\b"
    r"|\bwhat(?: is|'s) happening (?:with|to) (?:my|our|the) claim\b"
    r"|\b(?:status|progress|stage) of (?:my|our|the) claim\b"
    r"|\b(?:my|our) claim(?:'s)? (?:status|progress)\b"
    r"|\b(?:any|an) (?:news|update|updates|progress) (?:on|about|with) (?:my|our|the) claim\b"
    r"|\bhow(?: is|'s) (?:my|our|the) claim (?:going|progressing|coming along)\b"
    r"|\bclaim (?:is )?up to\b"
    r"|\b(?:check|track) (?:on )?(?:my|our|the) claim\b",
    re.IGNORECASE,
)
CONFIRMATION = re.compile(r"\bconfirm(?:ation)?(?: code)?:?\s+([A-Z0-9]{4}-[A-Z0-9]{4})\b", re.I)

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s-]?\d{1,4}|0\d{1,4})(?:[\s-]?\d{2,4}){2,3}(?!\w)")
CONTACT_CHANGE = re.compile(
    r"\b(?:change|update|correct|new)\b[^.?!]{0,40}?\b(?P<field>e-?mail(?: address)?|"
    r"(?:phone|mobile|cell)(?: number)?|(?:postal |home |mailing )?address)\b",
    re.IGNORECASE,
)
_ADDRESS_VALUE = re.compile(r"\bto:?\s+(?P<value>\d[^.?!\n]{5,150})", re.IGNORECASE)

# "How do I change my bank account?" asks how it is done, which the wording or
# an answer card says; "change my bank account to ..." asks for it to be done.
HOW_TO = re.compile(
    r"^\W*(?:how (?:do|can|could|would|should) (?:i|we)|how to|where (?:do|can) (?:i|we)"
    r"|what do (?:i|we) (?:need|have) to do to)\b",
    re.IGNORECASE,
)

L4_INTENTS = {
    "policy.cancel": re.compile(
        r"\bcancel (?:my|the|this|our) (?:policy|insurance|cover)\b"
        r"|\b(?:end|terminate|stop) (?:my|the|this|our) (?:policy|insurance)\b",
        re.IGNORECASE,
    ),
    "payment_details.change": re.compile(
        r"\b(?:change|update|switch|replace)\b[^.?!]{0,30}\b(?:bank account|bank details|"
        r"account number|direct debit|payment details|card details|credit card)\b",
        re.IGNORECASE,
    ),
    "claim.lodge": re.compile(
        r"\b(?:lodge|file|submit|open|start|make) (?:a|my|the|this|our) (?:new )?claim for me\b"
        r"|\b(?:please|can you|could you|i want you to) (?:lodge|file|submit) "
        r"(?:a|my|the|this|our) (?:new )?claim\b",
        re.IGNORECASE,
    ),
    "claim.settle": re.compile(
        r"\b(?:settle|close out|finali[sz]e) (?:my|the|this|our) claim\b", re.IGNORECASE
    ),
}


def _contact_request(message: str) -> ToolRequest | None:
    match = CONTACT_CHANGE.search(message)
    if match is None:
        return None
    word = match.group("field").lower()
    rest = message[match.end() :]
    if word.startswith("e"):
        field, found = "email", _EMAIL.search(rest)
        value = found.group(0) if found else None
    elif any(w in word for w in ("phone", "mobile", "cell")):
        field, found = "phone", _PHONE.search(rest)
        value = found.group(0) if found else None
    else:
        field, found = "postal_address", _ADDRESS_VALUE.search(rest)
        value = found.group("value").strip() if found else None
    if not value:
        return None
    arguments = {"field": field, "new_value": value, "confirmation_code": None}
    return ToolRequest("contact.update_request", arguments, RULES)


def rules_plan(message: str) -> list[ToolRequest]:
    """The tool calls the message asks for, by rule; [] for a question about the wording."""
    confirm = CONFIRMATION.search(message)
    if confirm:
        code = confirm.group(1).upper()
        arguments = {"field": None, "new_value": None, "confirmation_code": code}
        return [ToolRequest("contact.update_request", arguments, RULES)]
    if not HOW_TO.search(message):
        for name, pattern in L4_INTENTS.items():
            if pattern.search(message):
                return [ToolRequest(name, {"policy_number": None}, RULES)]
    contact = _contact_request(message)
    if contact is not None:
        return [contact]
    if CLAIM_STATUS.search(message):
        number = _CLAIM_NUMBER.search(message)
        arguments = {
            "policy_number": None,
            "claim_number": number.group(0).upper() if number else None,
        }
        return [ToolRequest("claim.status", arguments, RULES)]
    return []
