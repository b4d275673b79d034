"""Steps 2 and 3 of a turn: the confirmed line and the wording version.

The version is chosen by deterministic code (``schedules.routing``), never by
the model, and there is no constant fallback anywhere.
"""

from __future__ import annotations

from datetime import datetime

from claims.agent.spelling import Speller, vocabulary_of
from claims.agent.types import Facts, WordingChoice


def turn_wording_choose(facts: Facts, *, pinned_version_id: int | None = None) -> WordingChoice:
    if facts.schedule is None or not facts.line:
        return WordingChoice(kind="line_unconfirmed", reason="The product line is not confirmed.")
    if pinned_version_id is not None:
        return _pinned(facts, pinned_version_id)
    from knowledge.selectors import approved_release_windows
    from schedules.routing import WordingRouteError, wording_route

    releases = approved_release_windows(line=facts.line)
    if not releases:
        return WordingChoice(
            kind="no_approved_version",
            reason_code="no_approved_version",
            reason=f"No version of the {facts.line} wording is approved for use.",
        )
    try:
        route = wording_route(
            line=facts.line,
            term_start=facts.schedule.term_start,
            sales_channel=facts.schedule.sales_channel,
            question_date=facts.question_date,
            releases=releases,
        )
    except WordingRouteError as exc:
        # Two approved windows that overlap (which approval prevents) or a
        # schedule with a malformed date: never a silent pick, never a 500.
        return WordingChoice(kind="not_routable", reason_code="route_error", reason=str(exc))
    if route.kind != "routed":
        return WordingChoice(
            kind="not_routable", reason_code=route.reason_code, reason=route.reason
        )
    window = next((r for r in releases if r.version_id == route.version_id), None)
    return WordingChoice(
        kind="routed",
        version_id=route.version_id,
        document_id=route.document_id,
        label=route.label,
        ingested_at=window.ingested_at if window is not None else None,
    )


def _pinned(facts: Facts, version_id: int) -> WordingChoice:
    """A version named by the caller (the release gate's candidate), with the line checks.

    It must be an ingested version of the confirmed line's document; its
    window and channels are not checked, since a candidate is not yet released.
    """
    from knowledge.models import WordingVersion

    version = WordingVersion.objects.select_related("document").filter(pk=version_id).first()
    if version is None or version.status != WordingVersion.Status.INGESTED:
        return WordingChoice(
            kind="not_routable",
            reason_code="pinned_version_unusable",
            reason=f"The pinned wording version {version_id} is not an ingested version.",
        )
    if version.document.line != facts.line:
        return WordingChoice(
            kind="not_routable",
            reason_code="pinned_version_other_line",
            reason=(
                f"The pinned wording version {version.document.document_id} {version.label} "
                f"is for the {version.document.line} line, not {facts.line}."
            ),
        )
    return WordingChoice(
        kind="routed",
        version_id=version.pk,
        document_id=version.document.document_id,
        label=version.label,
        reason_code="pinned",
        reason="Pinned by the caller.",
        ingested_at=version.ingested_at,
    )


_SPELLERS: dict[tuple[int, float], Speller] = {}
_SPELLERS_MAX = 64


def wording_speller(wording: WordingChoice) -> Speller | None:
    """What a slip of the keyboard may be read as on the routed version (or None)."""
    if wording.kind != "routed" or wording.version_id is None or wording.ingested_at is None:
        return None
    return version_speller(version_id=wording.version_id, ingested_at=wording.ingested_at)


def version_speller(*, version_id: int, ingested_at: datetime) -> Speller:
    """A version's clause titles, texts and similar questions and the toolkit's
    words (``claims.agent.spelling``); built once per version and ingestion time.
    ``train_selector`` reads its questions through the same speller as the turn."""
    key = (version_id, ingested_at.timestamp())
    speller = _SPELLERS.get(key)
    if speller is None:
        from claims.agent import text as T
        from knowledge.selectors import clause_index

        # The clauses the hybrid indexes too (cached in-process: one read for both).
        clauses = clause_index(version_id=version_id)
        texts = [t for c in clauses for t in (c.title, c.text, *c.questions)]
        speller = Speller(vocabulary_of(texts) | T.toolkit_words())
        if len(_SPELLERS) >= _SPELLERS_MAX:
            _SPELLERS.pop(next(iter(_SPELLERS)))
        _SPELLERS[key] = speller
    return speller


def spellers_forget() -> None:
    """Forget the built spellers (tests: a rolled-back database reuses version ids)."""
    _SPELLERS.clear()
