"""The claims system, behind a replaceable source (like ``schedules.lookup``).

The agent's ``claim.status`` tool calls ``claims_for_policy``; where the
claims come from is a ``ClaimsSource``. The default reads the demo table
``ClaimRecord``; a deployment points ``CLAIMS_SOURCE`` at an adapter for its
claims system (``HttpClaimsSource`` is one). An outage raises
``ClaimsSourceError``: it is never reported as "no claim".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

DEFAULT_CLAIMS_SOURCE = "claims.claims_system.DatabaseClaimsSource"
CLAIM_STATUSES = ("lodged", "assessing", "awaiting_documents", "approved", "declined", "settled")


class ClaimsSourceError(RuntimeError):
    """The claims system could not be asked (an outage, an unreadable answer)."""


@dataclass(frozen=True)
class ClaimStatus:
    """What the agent may know of one claim: no amounts, no personal data."""

    claim_number: str
    policy_number: str
    status: str  # one of CLAIM_STATUSES
    lodged_on: date
    last_updated_on: date
    description: str
    awaiting: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "claim_number": self.claim_number,
            "policy_number": self.policy_number,
            "status": self.status,
            "lodged_on": self.lodged_on.isoformat(),
            "last_updated_on": self.last_updated_on.isoformat(),
            "description": self.description,
            "awaiting": self.awaiting,
        }


class ClaimsSource(Protocol):
    def claims_for_policy(self, policy_number: str, *, timeout: float) -> list[ClaimStatus]: ...


class DatabaseClaimsSource:
    """Claims kept in this app's database (the demo source)."""

    def claims_for_policy(self, policy_number: str, *, timeout: float) -> list[ClaimStatus]:
        from claims.models import ClaimRecord

        rows = ClaimRecord.objects.filter(policy_number=policy_number).order_by(
            "-last_updated_on", "-lodged_on", "claim_number"
        )
        return [
            ClaimStatus(
                claim_number=r.claim_number,
                policy_number=r.policy_number,
                status=r.status,
                lodged_on=r.lodged_on,
                last_updated_on=r.last_updated_on,
                description=r.description,
                awaiting=r.awaiting,
            )
            for r in rows
        ]


class HttpClaimsSource:
    """An adapter for a claims system that serves a policy's claims as JSON.

    ``GET <base_url>/policies/<number>/claims`` answers 200 with
    ``{"claims": [{claim_number, policy_number, status, lodged_on,
    last_updated_on, description, awaiting?}]}`` (dates ``YYYY-MM-DD``); 404
    means the system knows no claim for that policy. Anything else raises
    ``ClaimsSourceError``. The base URL comes from the argument or
    ``CLAIMS_SOURCE_URL``.
    """

    def __init__(self, base_url: str | None = None) -> None:
        self.base_url = (base_url or getattr(settings, "CLAIMS_SOURCE_URL", "")).rstrip("/")
        if not self.base_url:
            raise ClaimsSourceError("HttpClaimsSource needs a base URL (CLAIMS_SOURCE_URL).")

    def claims_for_policy(self, policy_number: str, *, timeout: float) -> list[ClaimStatus]:
        import httpx

        url = f"{self.base_url}/policies/{policy_number}/claims"
        try:
            response = httpx.get(url, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise TimeoutError(f"The claims system did not answer in {timeout:g} s.") from exc
        except httpx.HTTPError as exc:
            raise ClaimsSourceError(f"The claims system is unreachable: {exc}") from exc
        if response.status_code == 404:
            return []
        if response.status_code != 200:
            raise ClaimsSourceError(f"The claims system answered {response.status_code}.")
        try:
            claims = [_claim(item) for item in response.json()["claims"]]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ClaimsSourceError(f"The claims system sent an unreadable answer: {exc}") from exc
        if any(c.policy_number != policy_number for c in claims):
            raise ClaimsSourceError(
                f"The claims system answered claims of another policy when asked for "
                f"{policy_number}."
            )
        return claims


def _claim(item: dict) -> ClaimStatus:
    status = item["status"]
    if status not in CLAIM_STATUSES:
        raise ValueError(f"unknown claim status {status!r}")
    return ClaimStatus(
        claim_number=str(item["claim_number"]),
        policy_number=str(item["policy_number"]),
        status=status,
        lodged_on=date.fromisoformat(item["lodged_on"]),
        last_updated_on=date.fromisoformat(item["last_updated_on"]),
        description=str(item.get("description") or ""),
        awaiting=str(item.get("awaiting") or ""),
    )


def claims_source_default() -> ClaimsSource:
    """The source named by ``CLAIMS_SOURCE`` (a dotted path), read now."""
    target = import_string(getattr(settings, "CLAIMS_SOURCE", DEFAULT_CLAIMS_SOURCE))
    return target() if isinstance(target, type) else target


def claims_for_policy(
    policy_number: str, *, timeout: float, source: ClaimsSource | None = None
) -> list[ClaimStatus]:
    """The claims of ``policy_number``, most recently updated first."""
    return (source or claims_source_default()).claims_for_policy(policy_number, timeout=timeout)
