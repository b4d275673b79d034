"""The agent's tools, registered with their contracts (see ``claims.agent.tools``).

| tool | risk | data scope |
|---|---|---|
| ``clause.fetch`` | L0 | customer-visible clauses of the routed wording version |
| ``card.search`` | L0 | active answer cards of the conversation's line |
| ``schedule.summary`` | L1 | the conversation's own policy |
| ``claim.status`` | L1 | the conversation's own policy |
| ``queue.open`` | L2 | the conversation (an entry staff answer) |
| ``contact.update_request`` | L3 | the conversation's own policy; confirmed by the customer |
| ``policy.cancel``, ``payment_details.change`` | L4 | never executed |
| ``claim.lodge``, ``claim.settle`` | L4 | never executed |
"""

from __future__ import annotations

import hashlib
import importlib.util
import secrets
from datetime import datetime, timedelta
from typing import Any

from claims.agent.tools import (
    Arguments,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRefused,
    tool_register,
)
from claims.agent.types import PENDING_REFERENCE, Risk

CLAUSE_ID_PATTERN = r"^(?:MTR|HOM|CNT)-[A-Z]{2,3}-\d{1,3}$"
POLICY_PATTERN = r"^NW-(?:MTR|HOM|CNT)-\d{4,8}$"
CLAIM_PATTERN = r"^CL-\d{4,8}$"
CODE_PATTERN = r"^[A-Z0-9]{4}-[A-Z0-9]{4}$"
CONFIRMATION_MINUTES = 15
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


# --- L0 --------------------------------------------------------------------------


def _clause_fetch(arguments: Arguments, ctx: ToolContext, timeout: float) -> ToolOutput:
    from knowledge.clause_store import StorageClauseStore

    if ctx.version_id is None:  # the auth policy (routed_wording) refuses it first
        raise ToolRefused("no wording version is routed for this conversation")
    store = ctx.store or StorageClauseStore()
    fetch = store.fetch(
        version_id=ctx.version_id,
        clause_ids=arguments["clause_ids"],
        ingested_at=ctx.version_ingested_at,
    )
    return ToolOutput(
        data={
            "status": fetch.status,
            "returned": [c.clause_id for c in fetch.returned],
            "not_found": list(fetch.not_found),
        },
        value=fetch,
        detail=fetch.detail,
    )


CLAUSE_FETCH = tool_register(
    Tool(
        name="clause.fetch",
        description="Read whole policy wording clauses, by id, from the wording that applies.",
        input_schema=_object(
            {
                "clause_ids": {
                    "type": "array",
                    "items": {"type": "string", "pattern": CLAUSE_ID_PATTERN},
                    "minItems": 1,
                    "maxItems": 3,
                    "uniqueItems": True,
                }
            }
        ),
        output_schema=_object(
            {
                "status": {"enum": ["ok", "unavailable"]},
                "returned": {"type": "array", "items": {"type": "string"}},
                "not_found": {"type": "array", "items": {"type": "string"}},
            }
        ),
        auth_policy="routed_wording",
        data_scope="customer-visible clauses of the routed wording version",
        risk=Risk.L0,
        audit_type="knowledge_read",
        timeout_ms=8000,
        fallback="The reply says the wording store is unavailable and queues the question.",
        handler=_clause_fetch,
    )
)


def _card_search(arguments: Arguments, ctx: ToolContext, timeout: float) -> ToolOutput:
    """Answer cards, once the card engine (``claims.agent.cards``) is installed."""
    if importlib.util.find_spec("claims.agent.cards") is None:
        return ToolOutput(data={"cards": []}, detail="No answer cards are installed.")
    from claims.agent import cards

    found = cards.cards_retrieve(arguments["query"], cards.CardContext(line=ctx.line))
    return ToolOutput(
        data={
            "cards": [
                {
                    "card_id": card.card_id,
                    "question": card.question,
                    "sources": list(card.source_clause_ids),
                }
                for card in found.returned
            ]
        },
        value=found,
    )


tool_register(
    Tool(
        name="card.search",
        description="Find approved answer cards for a customer question, on the policy's line.",
        input_schema=_object({"query": {"type": "string", "minLength": 1, "maxLength": 500}}),
        output_schema=_object(
            {
                "cards": {
                    "type": "array",
                    "items": _object(
                        {
                            "card_id": {"type": "string"},
                            "question": {"type": "string"},
                            "sources": {"type": "array", "items": {"type": "string"}},
                        }
                    ),
                }
            }
        ),
        auth_policy="conversation_client",
        data_scope="active answer cards of the conversation's line",
        risk=Risk.L0,
        audit_type="knowledge_read",
        timeout_ms=2000,
        fallback="The reply rests on the wording clauses alone.",
        handler=_card_search,
    )
)


# --- L1 --------------------------------------------------------------------------

_POLICY_ARG = {"type": ["string", "null"], "pattern": POLICY_PATTERN}


def _own_policy(ctx: ToolContext) -> str:
    """The conversation's confirmed policy (the auth policy refuses a call without one)."""
    if not ctx.policy_number:
        raise ToolRefused("no policy is confirmed for this conversation")
    return ctx.policy_number


def _schedule_summary(arguments: Arguments, ctx: ToolContext, timeout: float) -> ToolOutput:
    from schedules.lookup import schedule_lookup

    lookup = schedule_lookup(_own_policy(ctx))
    if lookup.kind != "found" or lookup.evidence is None:
        raise ToolRefused(lookup.reason)
    return ToolOutput(data={"schedule": lookup.evidence.masked_summary()})


tool_register(
    Tool(
        name="schedule.summary",
        description="The masked schedule of this conversation's policy (covers, term, excess).",
        input_schema=_object({"policy_number": _POLICY_ARG}),
        output_schema=_object({"schedule": {"type": "object"}}),
        auth_policy="conversation_policy",
        data_scope="the conversation's own policy",
        risk=Risk.L1,
        audit_type="policy_data_read",
        timeout_ms=3000,
        fallback="The reply says the policy system is unavailable.",
        handler=_schedule_summary,
    )
)


def _claim_status(arguments: Arguments, ctx: ToolContext, timeout: float) -> ToolOutput:
    from claims.claims_system import claims_for_policy

    claims = claims_for_policy(_own_policy(ctx), timeout=timeout)
    wanted = arguments.get("claim_number")
    if wanted:
        claims = [c for c in claims if c.claim_number == wanted.upper()]
    return ToolOutput(
        data={"policy_number": ctx.policy_number, "claims": [c.as_dict() for c in claims[:5]]},
        value=claims[:5],
    )


_CLAIM_ITEM = _object(
    {
        "claim_number": {"type": "string"},
        "policy_number": {"type": "string"},
        "status": {
            "enum": ["lodged", "assessing", "awaiting_documents", "approved", "declined", "settled"]
        },
        "lodged_on": {"type": "string", "format": "date"},
        "last_updated_on": {"type": "string", "format": "date"},
        "description": {"type": "string"},
        "awaiting": {"type": "string"},
    }
)

tool_register(
    Tool(
        name="claim.status",
        description=(
            "The status of the claims on this conversation's policy, from the claims system, "
            "with the date each was last updated. Use it for 'where is my claim up to?'."
        ),
        input_schema=_object(
            {
                "policy_number": _POLICY_ARG,
                "claim_number": {"type": ["string", "null"], "pattern": CLAIM_PATTERN},
            }
        ),
        output_schema=_object(
            {
                "policy_number": {"type": "string"},
                "claims": {"type": "array", "items": _CLAIM_ITEM, "maxItems": 5},
            }
        ),
        auth_policy="conversation_policy",
        data_scope="the conversation's own policy",
        risk=Risk.L1,
        audit_type="policy_data_read",
        timeout_ms=3000,
        fallback="The reply says the claims system is unavailable and queues the question.",
        handler=_claim_status,
    )
)


# --- L2 --------------------------------------------------------------------------

QUEUE_REASONS = ["claim_not_found", "staff_action"]


def _queue_open(arguments: Arguments, ctx: ToolContext, timeout: float) -> ToolOutput:
    # Written by the record step, in the run record's transaction.
    return ToolOutput(data={"reference": PENDING_REFERENCE, "reason": arguments["reason"]})


QUEUE_OPEN = tool_register(
    Tool(
        name="queue.open",
        description="Put the customer's question in the pending-answers queue for staff.",
        input_schema=_object(
            {
                "reason": {"enum": QUEUE_REASONS},
                "summary": {"type": "string", "maxLength": 300},
            }
        ),
        output_schema=_object({"reference": {"type": "string"}, "reason": {"enum": QUEUE_REASONS}}),
        auth_policy="conversation_client",
        data_scope="the conversation",
        risk=Risk.L2,
        audit_type="queue_write",
        timeout_ms=1000,
        fallback="The reply asks the customer to contact Northwind directly.",
        handler=_queue_open,
    )
)


# --- L3 --------------------------------------------------------------------------


def confirmation_hash(conversation_id: int, code: str) -> str:
    return hashlib.sha256(f"{conversation_id}:{code.upper()}".encode()).hexdigest()


def _contact_update(arguments: Arguments, ctx: ToolContext, timeout: float) -> ToolOutput:
    from django.utils import timezone

    from claims.models import ContactUpdateRequest

    code = arguments.get("confirmation_code")
    if code:
        entry = (
            ContactUpdateRequest.objects.filter(
                conversation_id=ctx.conversation_id,
                token_hash=confirmation_hash(ctx.conversation_id, code),
                status=ContactUpdateRequest.Status.AWAITING_CONFIRMATION,
                expires_at__gt=timezone.now(),
            )
            .order_by("-created_at")
            .first()
        )
        if entry is None:
            raise ToolRefused(
                "That confirmation code is not valid in this conversation: it is wrong, "
                "already used or expired."
            )
        return ToolOutput(
            data={
                "status": "confirmed",
                "field": entry.field,
                "new_value": None,
                "confirmation_code": None,
                "request_id": entry.pk,
            }
        )
    if not arguments.get("field") or not arguments.get("new_value"):
        raise ToolRefused("A change request needs the field and its new value.")
    code = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))
    code = f"{code[:4]}-{code[4:]}"
    # The code is shown to the customer once, in the reply; the record step
    # stores only its hash. Neither it nor the new value enters the audit.
    return ToolOutput(
        data={
            "status": "awaiting_confirmation",
            "field": arguments["field"],
            "new_value": arguments["new_value"].strip(),
            "confirmation_code": code,
            "request_id": None,
        },
        status="needs_confirmation",
        detail=f"Recorded only after the customer confirms within {CONFIRMATION_MINUTES} min.",
    )


CONTACT_UPDATE = tool_register(
    Tool(
        name="contact.update_request",
        description=(
            "Draft a request to change the contact details on this conversation's policy "
            "(email, phone, postal address). The customer must confirm it with a one-time code "
            "in a second message before it is recorded for staff."
        ),
        input_schema=_object(
            {
                "field": {
                    "type": ["string", "null"],
                    "enum": ["email", "phone", "postal_address", None],
                },
                "new_value": {"type": ["string", "null"], "minLength": 3, "maxLength": 200},
                "confirmation_code": {"type": ["string", "null"], "pattern": CODE_PATTERN},
            }
        ),
        output_schema=_object(
            {
                "status": {"enum": ["awaiting_confirmation", "confirmed"]},
                "field": {"enum": ["email", "phone", "postal_address"]},
                "new_value": {"type": ["string", "null"]},
                "confirmation_code": {"type": ["string", "null"], "pattern": CODE_PATTERN},
                "request_id": {"type": ["integer", "null"]},
            }
        ),
        auth_policy="conversation_policy",
        data_scope="the conversation's own policy",
        risk=Risk.L3,
        audit_type="customer_change_request",
        timeout_ms=2000,
        fallback="The reply asks the customer to send the change again.",
        handler=_contact_update,
    )
)


def confirmation_expiry(now: datetime) -> datetime:
    return now + timedelta(minutes=CONFIRMATION_MINUTES)


# --- L4: never executed ----------------------------------------------------------

L4_TOOLS = {
    "policy.cancel": (
        "Cancel the customer's policy.",
        "A policy can only be cancelled by our staff, in writing or by phone with the "
        "policyholder: I can't cancel it in this chat.",
    ),
    "payment_details.change": (
        "Change the bank account or card the premium is paid from.",
        "Bank account and card details are changed by the policyholder in My Northwind under "
        "Payments, or by our customer team after an identity check: I can't change them in "
        "this chat.",
    ),
    "claim.lodge": (
        "Lodge a new claim.",
        "A claim is lodged by the policyholder with our claims team, who take the details "
        "and documents: I can't lodge it in this chat.",
    ),
    "claim.settle": (
        "Settle or pay out a claim.",
        "Only our claims team can settle a claim: I can't settle it in this chat.",
    ),
}

for _name, (_description, _path) in L4_TOOLS.items():
    tool_register(
        Tool(
            name=_name,
            description=_description,
            input_schema=_object({"policy_number": _POLICY_ARG}),
            output_schema=_object({"path": {"type": "string"}}),
            auth_policy="conversation_client",
            data_scope="the conversation's own policy",
            risk=Risk.L4,
            audit_type="transaction_request",
            timeout_ms=0,
            fallback="Never executed: the reply gives the path and queues the request.",
            handler=None,
            path=_path,
        )
    )
