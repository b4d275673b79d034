"""Data scope per API client: which policies a client's conversations may reach.

An ``internal`` client (a contact-centre tool acting for staff) may bind any
policy to a conversation; every binding and every schedule read is written
to the audit trail (``PolicyAccess``). A ``customer`` client (a self-service
channel) binds a policy only after the customer proves it: the policy number
plus one fact from the schedule, the holder's date of birth or postcode.

A failed proof never says why: an unknown number, a wrong date of birth and
a wrong postcode get the same answer, so the endpoint cannot be used to find
out which numbers exist. Failures are counted per client and per policy
number (whether or not it exists); past the limit every attempt is refused
for the rest of the window, a right one too, so guessing does not pay.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from simple_history.utils import update_change_reason

from claims.models import ApiClient, ClientScope, Conversation, PolicyAccess, VerificationMethod
from claims.services import conversation_line_confirm
from northwind.errors import PermissionDenied, ServiceError, ServiceThrottled
from schedules.lookup import schedule_holder_facts
from schedules.validators import policy_number_normalize

NOT_VERIFIED = "We could not verify that policy with the details given."
LOCKED = "Too many failed attempts to verify a policy; try again later."


class VerificationFailed(PermissionDenied):
    """The policy number and the second fact do not match a schedule (or no number does).

    A refusal, not bad input: the API answers 403, like any other refusal.
    """

    code = "verification_failed"


class VerificationLocked(ServiceThrottled):
    """Too many failures for this client or this policy number: wait."""

    code = "verification_locked"


class VerificationRequired(ServiceError):
    """A customer client named a policy without the fact that proves it."""

    code = "verification_required"


@dataclass(frozen=True)
class Limit:
    failures: int
    window_seconds: int


def _limits() -> tuple[Limit, Limit]:
    """(per client, per policy number); settings read when asked, not at import."""
    per_client = getattr(settings, "VERIFY_FAILURES_PER_CLIENT", (5, 15 * 60))
    per_policy = getattr(settings, "VERIFY_FAILURES_PER_POLICY", (5, 60 * 60))
    return Limit(*per_client), Limit(*per_policy)


def client_scope(user: User) -> ClientScope:
    """The scope of an API client; a client without a row is a customer client."""
    scope = ApiClient.objects.filter(user_id=user.pk).values_list("scope", flat=True).first()
    return ClientScope(scope) if scope else ClientScope.CUSTOMER


def api_client_ensure(*, user: User, scope: ClientScope, description: str = "") -> ApiClient:
    """Give ``user`` the API client scope ``scope`` (idempotent)."""
    client, created = ApiClient.objects.get_or_create(
        user=user, defaults={"scope": scope, "description": description}
    )
    if not created and (client.scope != scope or client.description != description):
        client.scope = scope
        client.description = description
        client.save(update_fields=["scope", "description"])
        update_change_reason(client, f"Scope set to {scope}")
    return client


def _audit(
    *,
    client: User,
    scope: str,
    event: str,
    policy_number: str,
    conversation: Conversation | None = None,
    method: str = "",
    trace_id: str = "",
) -> None:
    PolicyAccess.objects.create(
        client=client,
        conversation=conversation,
        scope=scope,
        event=event,
        policy_number=policy_number[:32],
        method=method,
        trace_id=trace_id,
    )


# --- failure counting (the cache: locmem, or Redis shared by every web process)


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode()).hexdigest()[:32]
    return f"verify-failures:{kind}:{digest}"


def _window_key(kind: str, value: str, limit: Limit) -> str:
    return f"{_key(kind, value)}:{int(time.time() // limit.window_seconds)}"


def _locked(client_id: int, policy_number: str) -> bool:
    per_client, per_policy = _limits()
    return (
        cache.get(_window_key("client", str(client_id), per_client), 0) >= per_client.failures
        or cache.get(_window_key("policy", policy_number, per_policy), 0) >= per_policy.failures
    )


def _count_failure(client_id: int, policy_number: str) -> None:
    per_client, per_policy = _limits()
    for kind, value, limit in (
        ("client", str(client_id), per_client),
        ("policy", policy_number, per_policy),
    ):
        key = _window_key(kind, value, limit)
        cache.add(key, 0, timeout=limit.window_seconds)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=limit.window_seconds)


def _retry_after() -> int:
    per_client, per_policy = _limits()
    return max(per_client.window_seconds, per_policy.window_seconds)


# --- the services -------------------------------------------------------------


def _proof_matches(
    policy_number: str, *, birth_date: date | None, postcode: str
) -> VerificationMethod | None:
    """The method that proved the policy, or None. Asks the source even for a bad guess."""
    facts = schedule_holder_facts(policy_number)
    if facts is None:
        return None
    if birth_date is not None and facts.birth_date is not None and facts.birth_date == birth_date:
        return VerificationMethod.BIRTH_DATE
    given = postcode.strip()
    if given and facts.postcode and given == facts.postcode.strip():
        return VerificationMethod.POSTCODE
    return None


def _bind(
    conversation: Conversation, policy_number: str, method: VerificationMethod
) -> Conversation:
    conversation.policy_number = policy_number
    conversation.line = ""
    conversation.verified_by = method
    conversation.verified_at = timezone.now()
    conversation.save(
        update_fields=["policy_number", "line", "verified_by", "verified_at", "updated_at"]
    )
    return conversation_line_confirm(conversation=conversation)


def _policy_prove(
    *,
    scope: str,
    acting_client: User,
    number: str,
    birth_date: date | None,
    postcode: str,
    conversation: Conversation | None,
) -> VerificationMethod:
    """How the client may bind ``number``; a refusal is audited, then raised.

    Runs outside any transaction, so the audit row of a failure stays.
    """
    if scope == ClientScope.INTERNAL:
        return VerificationMethod.INTERNAL
    if birth_date is None and not postcode.strip():
        raise VerificationRequired(
            "Send the policy number with the holder's date of birth or postcode to verify it."
        )
    audit: dict[str, Any] = {
        "client": acting_client,
        "scope": scope,
        "policy_number": number,
        "conversation": conversation,
    }
    if _locked(acting_client.pk, number):
        _audit(**audit, event=PolicyAccess.Event.VERIFICATION_LOCKED)
        raise VerificationLocked(LOCKED, retry_after=_retry_after())
    method = _proof_matches(number, birth_date=birth_date, postcode=postcode)
    if method is None:
        _count_failure(acting_client.pk, number)
        _audit(**audit, event=PolicyAccess.Event.VERIFICATION_FAILED)
        raise VerificationFailed(NOT_VERIFIED)
    return method


def _bind_audited(
    conversation: Conversation,
    *,
    acting_client: User,
    number: str,
    method: VerificationMethod,
) -> Conversation:
    with transaction.atomic():
        _bind(conversation, number, method)
        _audit(
            client=acting_client,
            scope=conversation.client_scope,
            event=PolicyAccess.Event.BOUND,
            policy_number=number,
            conversation=conversation,
            method=method,
        )
    return conversation


def conversation_policy_verify(
    *,
    conversation: Conversation,
    acting_client: User,
    policy_number: str,
    birth_date: date | None = None,
    postcode: str = "",
) -> Conversation:
    """Bind ``policy_number`` to the conversation, after proof for a customer client.

    Raises ``VerificationRequired`` when a customer client gives no second
    fact, ``VerificationLocked`` past the failure limits and
    ``VerificationFailed`` (one message for every cause) when the proof does
    not match. Every outcome is in the audit trail.
    """
    number = policy_number_normalize(policy_number)
    method = _policy_prove(
        scope=conversation.client_scope,
        acting_client=acting_client,
        number=number,
        birth_date=birth_date,
        postcode=postcode or "",
        conversation=conversation,
    )
    return _bind_audited(conversation, acting_client=acting_client, number=number, method=method)


def conversation_start(
    *,
    client: User,
    channel: str = "web",
    policy_number: str = "",
    birth_date: date | None = None,
    postcode: str = "",
) -> Conversation:
    """Start a conversation in the client's scope, bound to a policy if one is given.

    A customer client that names a policy proves it in the same request; if
    the proof fails, no conversation is created (the failure is audited).
    """
    scope = client_scope(client)
    number = policy_number_normalize(policy_number or "")
    method = None
    if number:
        method = _policy_prove(
            scope=scope,
            acting_client=client,
            number=number,
            birth_date=birth_date,
            postcode=postcode or "",
            conversation=None,
        )
    conversation = Conversation.objects.create(client=client, channel=channel, client_scope=scope)
    if method is not None:
        _bind_audited(conversation, acting_client=client, number=number, method=method)
    return conversation


def turn_policy_allowed(
    *, conversation: Conversation, acting_client: User, policy_number: str | None
) -> None:
    """Refuse a customer turn that names a policy this conversation has not verified."""
    if conversation.client_scope != ClientScope.CUSTOMER or not policy_number:
        return
    number = policy_number_normalize(policy_number)
    if conversation.verified_by and number == conversation.policy_number:
        return
    _audit(
        client=acting_client,
        scope=conversation.client_scope,
        event=PolicyAccess.Event.REFUSED,
        policy_number=number,
        conversation=conversation,
    )
    raise PermissionDenied(
        "This policy is not verified in this conversation; verify it first "
        "(POST /api/v1/conversations/{id}/verification/)."
    )


def turn_schedule_read_record(
    *,
    conversation: Conversation,
    acting_client: User,
    policy_number: str,
    trace_id: str,
) -> None:
    """Audit a turn that looked up a policy's schedule."""
    if not policy_number:
        return
    _audit(
        client=acting_client,
        scope=conversation.client_scope,
        event=PolicyAccess.Event.SCHEDULE_READ,
        policy_number=policy_number,
        conversation=conversation,
        method=conversation.verified_by,
        trace_id=trace_id,
    )
