"""The agent's tool layer: a registry of tools with a contract, and one executor.

Every tool states the contract of seed 004 §5.3: name, description, input
and output JSON schema, auth policy, data scope, risk level (L0-L4), audit
type, timeout and fallback. Whoever asks for a call (the offline rules or a
model), ``tool_execute`` validates the arguments against the input schema,
refuses a tool above the caller's risk ceiling, authorises the call against
the conversation (its client and its own policy), runs it under the tool's
timeout, checks the output against the output schema, and returns a
``ToolResult`` that is the audit entry: the record step stores it with the
run record (trace id, conversation, tool call id, masked argument summary,
duration, status).

Nothing a tool does is written before the record step: an L2 queue entry
and an L3 change request are written there, in the record's transaction.
L4 tools are never executed: the result gives the path and the turn queues
the request for staff.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from jsonschema import Draft202012Validator

from claims.agent.types import Risk, ToolRequest, ToolResult
from claims.masking import personal_data_mask

logger = logging.getLogger(__name__)

# ToolResult.status: how a call ended.
ToolStatus = Literal[
    "ok", "invalid", "refused", "needs_confirmation", "not_executed", "timeout", "error"
]
# A tool's JSON arguments (checked against its input schema).
Arguments = dict[str, Any]


class ToolRefused(Exception):
    """The handler found the call outside what it may do (status ``refused``)."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool call may rely on: the turn's confirmed facts, never the model's word."""

    trace_id: str
    conversation_id: int
    policy_number: str | None  # confirmed by a found schedule, else None
    line: str | None
    version_id: int | None  # the routed (or pinned) wording version
    question_date: date
    max_risk: Risk  # the caller's ceiling
    store: Any = field(default=None, compare=False)  # the turn's clause store
    # The version's ingestion time as the route step read it (clause.fetch
    # then serves the clause rows from memory: ClauseStore.fetch).
    version_ingested_at: datetime | None = None


@dataclass(frozen=True)
class ToolOutput:
    """A handler's answer: JSON ``data`` (checked, audited) and the typed ``value``."""

    data: dict[str, Any]
    value: Any = None
    status: ToolStatus = "ok"  # "needs_confirmation" for an L3 draft
    detail: str = ""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    auth_policy: str  # a key of AUTH_POLICIES
    data_scope: str  # in words, for the admin and the docs
    risk: Risk
    audit_type: str
    timeout_ms: int
    fallback: str  # what the turn does when the call fails, in words
    handler: Callable[[dict[str, Any], ToolContext, float], ToolOutput] | None
    path: str = ""  # L4: how the customer gets it done instead
    _validators: dict[str, Draft202012Validator] = field(
        default_factory=dict, compare=False, repr=False
    )

    def validator(self, which: str) -> Draft202012Validator:
        found = self._validators.get(which)
        if found is None:
            schema = self.input_schema if which == "input" else self.output_schema
            found = self._validators.setdefault(which, Draft202012Validator(schema))
        return found

    def function_schema(self) -> dict[str, Any]:
        """The OpenAI function-calling form, strict."""
        return {
            "type": "function",
            "function": {
                "name": self.name.replace(".", "_"),
                "description": self.description,
                "parameters": self.input_schema,
                "strict": True,
            },
        }


def _conversation_client(arguments: Arguments, ctx: ToolContext) -> str | None:
    # The turn runs only for the API client that owns the conversation
    # (``access_conversation``); the tool may touch nothing outside it.
    return None


def _conversation_policy(arguments: Arguments, ctx: ToolContext) -> str | None:
    if not ctx.policy_number:
        return "no policy is confirmed for this conversation"
    asked = arguments.get("policy_number")
    if asked is not None and str(asked).strip().upper() != ctx.policy_number:
        return "the policy asked about is not this conversation's policy"
    return None


def _routed_wording(arguments: Arguments, ctx: ToolContext) -> str | None:
    return None if ctx.version_id else "no wording version is routed for this conversation"


AUTH_POLICIES: dict[str, Callable[[Arguments, ToolContext], str | None]] = {
    "conversation_client": _conversation_client,
    "conversation_policy": _conversation_policy,
    "routed_wording": _routed_wording,
}

TOOLS: dict[str, Tool] = {}


def tool_register(tool: Tool) -> Tool:
    if tool.auth_policy not in AUTH_POLICIES:
        raise ValueError(f"{tool.name}: unknown auth policy {tool.auth_policy!r}")
    Draft202012Validator.check_schema(tool.input_schema)
    Draft202012Validator.check_schema(tool.output_schema)
    TOOLS[tool.name] = tool
    return tool


def tool_get(name: str) -> Tool | None:
    from claims.agent import tool_set  # noqa: F401  (registers the tools)

    if not isinstance(name, str):
        return None
    # Models call tools by their function names ("claim_status").
    return TOOLS.get(name) or next(
        (t for t in TOOLS.values() if t.name.replace(".", "_") == name), None
    )


def tools_up_to(max_risk: Risk) -> list[Tool]:
    from claims.agent import tool_set  # noqa: F401

    return [t for t in TOOLS.values() if t.risk.level <= max_risk.level]


def arguments_summary(arguments: Any) -> str:
    """The arguments as stored in the audit: compact JSON, personal data masked."""
    try:
        text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(arguments)
    return personal_data_mask(text)[:500]


def tool_execute(request: ToolRequest, ctx: ToolContext) -> tuple[ToolResult, Any]:
    """Run one requested call under its contract; the audit entry and the typed value."""
    started = time.perf_counter()
    call_id = request.call_id or f"call_{uuid.uuid4().hex[:16]}"
    tool = tool_get(request.name)
    summary = arguments_summary(request.arguments)

    def result(
        status: ToolStatus,
        *,
        risk: Risk | None = None,
        output: dict[str, Any] | None = None,
        detail: str = "",
        value: Any = None,
    ) -> tuple[ToolResult, Any]:
        duration = round((time.perf_counter() - started) * 1000, 3)
        entry = ToolResult(
            call_id=call_id,
            name=tool.name if tool else str(request.name)[:64],
            risk=risk or (tool.risk if tool else Risk.L4),
            status=status,
            arguments_summary=summary,
            output=output or {},
            detail=detail,
            duration_ms=duration,
            requested_by=request.requested_by,
        )
        log = (
            logger.warning if status in ("refused", "invalid", "error", "timeout") else logger.info
        )
        log(
            "tool call %s %s trace=%s conversation=%s status=%s %.1f ms %s",
            entry.call_id,
            entry.name,
            ctx.trace_id,
            ctx.conversation_id,
            status,
            duration,
            detail,
        )
        return entry, value

    if tool is None:
        return result("refused", detail=f"There is no tool called {str(request.name)[:64]!r}.")
    if not isinstance(request.arguments, dict):
        return result("invalid", detail="The arguments are not a JSON object.")
    errors = sorted(tool.validator("input").iter_errors(request.arguments), key=str)
    if errors:
        return result("invalid", detail=f"The arguments break the schema: {errors[0].message}")
    if tool.risk.level > ctx.max_risk.level:
        return result(
            "refused",
            detail=f"{tool.name} is {tool.risk.value}; this caller may run up to "
            f"{ctx.max_risk.value}.",
        )
    if (
        tool.risk is Risk.L3
        and request.requested_by != "rules"
        and request.arguments.get("confirmation_code")
    ):
        return result(
            "refused",
            detail="Only the customer's own message confirms a change request; a model may "
            "only draft one.",
        )
    refusal = AUTH_POLICIES[tool.auth_policy](request.arguments, ctx)
    if refusal:
        return result("refused", detail=f"Not authorised: {refusal}.")
    if tool.risk is Risk.L4 or tool.handler is None:
        return result(
            "not_executed",
            output={"path": tool.path},
            detail="L4 actions are never executed by the agent; staff are asked instead.",
        )
    timeout = tool.timeout_ms / 1000
    try:
        output = tool.handler(request.arguments, ctx, timeout)
    except ToolRefused as exc:
        return result("refused", detail=str(exc))
    except TimeoutError as exc:
        return result("timeout", detail=f"{exc} Fallback: {tool.fallback}")
    except Exception as exc:  # a source's outage is the call's failure, never the turn's
        logger.exception("tool %s failed", tool.name)
        return result("error", detail=f"{type(exc).__name__}: {exc} Fallback: {tool.fallback}")
    if (time.perf_counter() - started) > timeout:
        return result("timeout", detail=f"No answer within {tool.timeout_ms} ms. {tool.fallback}")
    errors = sorted(tool.validator("output").iter_errors(output.data), key=str)
    if errors:
        return result("error", detail=f"The output breaks the schema: {errors[0].message}")
    return result(output.status, output=output.data, detail=output.detail, value=output.value)
