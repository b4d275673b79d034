"""What the reply says about the tool calls of a turn, and what those calls back.

Written by code from the tool results, whoever writes the rest of the draft:
a claim's status and dates come from the claims system word for word, an L3
change request gives its confirmation code, an L4 request gives the path.
``status_backings`` tells the guard which status and date statements a tool
result of this turn backs; every other one is struck.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from claims.agent.types import StatusBacking, ToolResult

# The claims system's status, in the words the reply uses (and the guard allows
# for that claim only).
CLAIM_STATUS_WORDS = {
    "lodged": "is lodged and waiting for an assessor",
    "assessing": "is being assessed",
    "awaiting_documents": "is waiting for documents",
    "approved": "has been approved",
    "declined": "has been declined",
    "settled": "has been settled",
}
FIELD_WORDS = {
    "email": "email address",
    "phone": "phone number",
    "postal_address": "postal address",
}


def date_words(value: str | date) -> str:
    day = date.fromisoformat(value) if isinstance(value, str) else value
    return f"{day.day} {day:%B %Y}"


def _claim_sentences(claim: dict[str, Any]) -> list[str]:
    number = claim["claim_number"]
    what = claim["description"].rstrip(".")
    status = CLAIM_STATUS_WORDS[claim["status"]]
    lines = [
        f"Claim {number} ({what}, lodged on {date_words(claim['lodged_on'])}) {status}, "
        f"according to our claims system, last updated on "
        f"{date_words(claim['last_updated_on'])}."
    ]
    if claim["status"] == "awaiting_documents" and claim.get("awaiting"):
        lines.append(f"For claim {number} the claims system lists: {claim['awaiting']}.")
    return lines


def tool_lines(results: tuple[ToolResult, ...], *, policy_number: str | None) -> list[str]:
    """The reply's sentences about this turn's tool calls, in call order."""
    lines: list[str] = []
    for result in results:
        if result.name == "claim.status":
            if result.status == "ok" and result.output.get("claims"):
                for claim in result.output["claims"][:3]:
                    lines.extend(_claim_sentences(claim))
            elif result.status == "ok":
                lines.append(
                    f"I can't find a claim on policy {policy_number} in our claims system."
                )
            elif result.status in ("error", "timeout"):
                lines.append(
                    "I can't reach our claims system right now, so I can't tell you where your "
                    "claim is up to. I have not guessed."
                )
        elif result.name == "contact.update_request":
            field = FIELD_WORDS.get(result.output.get("field", ""), "contact details")
            if result.status == "needs_confirmation":
                code = result.output.get("confirmation_code", "")
                lines.append(
                    f"I can ask our staff to change the {field} on your policy. Nothing is "
                    f"changed yet: to confirm this request, reply with CONFIRM {code}. The code "
                    "works once, in this conversation only, and expires after 15 minutes."
                )
            elif result.status == "ok":
                lines.append(
                    f"Thank you: your request to change the {field} on your policy is "
                    "confirmed and recorded for our staff, who make the change."
                )
            elif result.status == "refused":
                lines.append(
                    "I can't confirm that request: the confirmation code is wrong, already used "
                    "or expired. Send the change again to get a new code."
                )
        elif result.status == "not_executed" and result.output.get("path"):
            lines.append(result.output["path"])
    return lines


def status_backings(results: tuple[ToolResult, ...]) -> tuple[StatusBacking, ...]:
    """The status and date statements this turn's tool results back, per claim."""
    backings = []
    for result in results:
        if result.name != "claim.status" or result.status != "ok":
            continue
        for claim in result.output.get("claims", []):
            phrases = (
                CLAIM_STATUS_WORDS[claim["status"]],
                claim["status"].replace("_", " "),
                date_words(claim["lodged_on"]),
                date_words(claim["last_updated_on"]),
                claim["lodged_on"],
                claim["last_updated_on"],
            )
            backings.append(StatusBacking(subject=claim["claim_number"], phrases=phrases))
    return tuple(backings)


def queue_requested(results: tuple[ToolResult, ...]) -> str | None:
    """The reason a tool call of this turn asked to open a pending question, if any."""
    for result in results:
        if result.name == "queue.open" and result.status == "ok":
            return str(result.output["reason"])
        if result.status == "not_executed":
            return "staff_action"
        if result.name == "contact.update_request" and result.status == "ok":
            return "staff_action"
        if result.name == "claim.status" and result.status == "ok" and not result.output["claims"]:
            return "claim_not_found"
    return None


# Tools whose result is the answer to the message: the turn looks up no clause.
ANSWERING_TOOLS = frozenset({"claim.status", "contact.update_request", "queue.open"})


def tool_answered(results: tuple[ToolResult, ...]) -> bool:
    """Whether a tool call of this turn answers the message (no clause lookup then).

    A call the offline rules planned answers whatever came of it (the reply
    says so), except one refused for want of a confirmed policy (the turn then
    asks for the policy number). A model's call answers only if it ran.
    """
    for result in results:
        if result.name not in ANSWERING_TOOLS and result.status != "not_executed":
            continue
        if result.requested_by != "rules":
            if result.status in ("ok", "needs_confirmation"):
                return True
            continue
        if result.status == "invalid":
            continue
        if result.status == "refused" and result.name != "contact.update_request":
            continue
        return True
    return False
