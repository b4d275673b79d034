"""The demo claims system's claims, loaded by ``manage.py load_demo``.

Idempotent: each claim is created, or reset to these values. One claim in
every state of the claims system, on the demo policies; NW-CNT-410815 has no
claim, so "where is my claim up to?" there says so and queues the question.
"""

from datetime import date
from typing import Any, TextIO

DEMO_CLAIMS: list[dict[str, Any]] = [
    {
        "claim_number": "CL-260417",
        "policy_number": "NW-MTR-204518",
        "status": "assessing",
        "lodged_on": date(2026, 11, 9),
        "last_updated_on": date(2026, 11, 24),
        "description": "rear-end collision damage",
        "awaiting": "",
    },
    {
        "claim_number": "CL-260452",
        "policy_number": "NW-MTR-204577",
        "status": "awaiting_documents",
        "lodged_on": date(2026, 11, 18),
        "last_updated_on": date(2026, 11, 20),
        "description": "windscreen cracked by a stone",
        "awaiting": "a photo of the windscreen and the repairer's quote",
    },
    {
        "claim_number": "CL-260388",
        "policy_number": "NW-HOM-310042",
        "status": "settled",
        "lodged_on": date(2026, 9, 30),
        "last_updated_on": date(2026, 10, 28),
        "description": "storm damage to the garage roof",
        "awaiting": "",
    },
    {
        "claim_number": "CL-260471",
        "policy_number": "NW-HOM-310042",
        "status": "lodged",
        "lodged_on": date(2026, 11, 27),
        "last_updated_on": date(2026, 11, 27),
        "description": "water damage under the kitchen sink",
        "awaiting": "",
    },
    {
        "claim_number": "CL-250932",
        "policy_number": "NW-MTR-198800",
        "status": "declined",
        "lodged_on": date(2025, 8, 12),
        "last_updated_on": date(2025, 8, 29),
        "description": "engine failure",
        "awaiting": "",
    },
    {
        "claim_number": "CL-260305",
        "policy_number": "NW-MTR-550001",
        "status": "approved",
        "lodged_on": date(2026, 10, 2),
        "last_updated_on": date(2026, 11, 30),
        "description": "hail damage to the bonnet",
        "awaiting": "",
    },
]


def demo_load(*, stdout: TextIO) -> None:
    """Create or reset the demo claims; print one line per claim."""
    from claims.models import ClaimRecord

    for fields in DEMO_CLAIMS:
        values = {k: v for k, v in fields.items() if k != "claim_number"}
        ClaimRecord.objects.update_or_create(claim_number=fields["claim_number"], defaults=values)
        stdout.write(
            f"  claim {fields['claim_number']} on {fields['policy_number']}: {fields['status']}, "
            f"last updated {fields['last_updated_on'].isoformat()}\n"
        )
