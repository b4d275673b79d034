"""Answer cards: draft → (gates, a second person) → active → deprecated.

Knowledge editors (``knowledge.add_card`` / ``change_card``) draft and edit
cards; a person with ``knowledge.activate_card`` who did not draft the card
activates it, after the gates of seed 001 §3.4 pass:

* completeness — every required field, question and conclusion at most 50
  characters, the answer at least 20, 3 to 8 aliases, each part readable on
  its own (no "see above");
* near-duplicate — no question or alias closer than cosine 0.92 to one of
  another active card, unless the card says why it stays apart;
* answerability — the card's question and each alias, replayed through the
  card retrieval the turn uses, find this card first;
* sources — clause ids named as sources exist in an approved version.

Every change that alters which cards are served bumps ``CardIndexVersion``
in the same transaction; turns then switch to an index built for it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from knowledge.models import (
    CARD_ALL_LINES_PREFIX,
    LINE_PREFIXES,
    Card,
    CardIndexVersion,
    CardSequence,
    Channel,
    Clause,
    Line,
    Release,
    WordingVersion,
)
from northwind.errors import PermissionDenied, ServiceError

QUESTION_MAX = 50
CONCLUSION_MAX = 50
ANSWER_MIN = 20
ALIASES_MIN, ALIASES_MAX = 3, 8
NEAR_DUPLICATE_COSINE = 0.92
STALE_AFTER_DAYS = 90
POLICY_STATUSES = ("active", "lapsed", "cancelled")
OPTIONAL_CONDITION_NAMES = ("channels", "policy_statuses", "schedule_sections")

# Words that send the reader elsewhere: a card is read alone (seed 001 §2.2).
_NOT_SELF_CONTAINED = re.compile(
    r"\b(see|as|mentioned|described|explained|shown) (above|below|earlier|before)\b"
    r"|\b(previous|other|next|last) (answer|card|section|message)\b"
    r"|\brefer to the (above|previous|following)\b|\bthe above\b|详见|上文|如上",
    re.IGNORECASE,
)


class CardError(ServiceError):
    """A card change was refused; the message says why."""

    code = "card_refused"


def _require(user: AbstractBaseUser | None, perm: str, doing: str) -> None:
    if user is None or not user.is_active or not user.has_perm(perm):
        raise PermissionDenied(f"You do not have permission to {doing}.")


def _index_bump() -> None:
    """Say, inside the caller's transaction, that the served cards changed."""
    CardIndexVersion.objects.get_or_create(pk=1)
    CardIndexVersion.objects.filter(pk=1).update(number=F("number") + 1, stamp=uuid.uuid4().hex)


def card_prefix(line: str) -> str:
    return LINE_PREFIXES.get(line, CARD_ALL_LINES_PREFIX) if line else CARD_ALL_LINES_PREFIX


def _card_id_take(line: str) -> str:
    """The next card id of a line, under a row lock: numbers are never reused."""
    prefix = card_prefix(line)
    CardSequence.objects.get_or_create(prefix=prefix)
    sequence = CardSequence.objects.select_for_update().get(prefix=prefix)
    sequence.last_number += 1
    sequence.save(update_fields=["last_number"])
    return f"QA-{prefix}-{sequence.last_number:04d}"


# --- the content a card is made of ------------------------------------------------


@dataclass
class CardContent:
    """The fields a person writes; what create, update and import take."""

    line: str = ""
    kind: str = Card.Kind.ANSWER
    topic: str = ""
    priority: int = 10
    question: str = ""
    aliases: list[str] = field(default_factory=list)
    conclusion: str = ""
    detail: str = ""
    required_channels: list[str] = field(default_factory=list)
    required_policy_statuses: list[str] = field(default_factory=list)
    required_schedule_sections: list[str] = field(default_factory=list)
    optional_conditions: dict[str, list[str]] = field(default_factory=dict)
    source_version_id: int | None = None
    source_clause_ids: list[str] = field(default_factory=list)
    source_reference: str = ""
    confidence_hint: str = Card.Confidence.MEDIUM
    owner_id: int | None = None
    next_review_on: date | None = None
    duplicate_justification: str = ""

    @classmethod
    def of(cls, card: Card) -> CardContent:
        return cls(**{name: getattr(card, name) for name in cls.__dataclass_fields__})


def _clean_list(values: Any) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        text = " ".join(str(value).split())
        if text and text.lower() not in {v.lower() for v in out}:
            out.append(text)
    return out


def card_content_clean(content: CardContent) -> CardContent:
    """Normalise the content and refuse what no card can hold (CardError).

    What only the gates decide (lengths, how many aliases) is left for them,
    so a draft can be saved half-written.
    """
    errors: list[str] = _characters_errors(content)
    line = (content.line or "").strip().lower()
    if line and line not in Line.values:
        errors.append(f"Line {line!r} is not one of {', '.join(Line.values)} (or empty for all).")
    kind = (content.kind or Card.Kind.ANSWER).strip()
    if kind not in Card.Kind.values:
        errors.append(f"Kind {kind!r} is not one of {', '.join(Card.Kind.values)}.")
    confidence = (content.confidence_hint or Card.Confidence.MEDIUM).strip().lower()
    if confidence not in Card.Confidence.values:
        errors.append(
            f"Confidence {confidence!r} is not one of {', '.join(Card.Confidence.values)}."
        )
    try:
        priority = int(content.priority)
        if not 1 <= priority <= 1000:
            raise ValueError
    except (TypeError, ValueError):
        errors.append(f"Priority {content.priority!r} is not a whole number from 1 to 1000.")
        priority = 10
    channels = [c.lower() for c in _clean_list(content.required_channels)]
    bad = [c for c in channels if c not in Channel.values]
    if bad:
        errors.append(f"Unknown channel(s) {', '.join(bad)}; use {', '.join(Channel.values)}.")
    statuses = [s.lower() for s in _clean_list(content.required_policy_statuses)]
    bad = [s for s in statuses if s not in POLICY_STATUSES]
    if bad:
        errors.append(
            f"Unknown policy status(es) {', '.join(bad)}; use {', '.join(POLICY_STATUSES)}."
        )
    sections = _clean_list(content.required_schedule_sections)
    errors += _sections_errors(sections, line)
    optional: dict[str, list[str]] = {}
    for name, values in (content.optional_conditions or {}).items():
        if name not in OPTIONAL_CONDITION_NAMES:
            errors.append(
                f"Optional condition {name!r} is not one of {', '.join(OPTIONAL_CONDITION_NAMES)}."
            )
            continue
        cleaned = _clean_list(values)
        if cleaned:
            optional[name] = cleaned
    clause_ids = [c.upper() for c in _clean_list(content.source_clause_ids)]
    if clause_ids and content.source_version_id is None:
        errors.append("Name the wording version the source clauses come from.")
    if line and clause_ids:
        prefix = LINE_PREFIXES[line]
        foreign = [c for c in clause_ids if not c.startswith(f"{prefix}-")]
        if foreign:
            errors.append(f"Source clause(s) {', '.join(foreign)} are not {line} clauses.")
    if errors:
        raise CardError(" ".join(errors))
    return CardContent(
        line=line,
        kind=kind,
        topic=" ".join((content.topic or "").split())[:60],
        priority=priority,
        question=" ".join((content.question or "").split()),
        aliases=_clean_list(content.aliases),
        conclusion=" ".join((content.conclusion or "").split()),
        detail=(content.detail or "").strip(),
        required_channels=channels,
        required_policy_statuses=statuses,
        required_schedule_sections=sections,
        optional_conditions=optional,
        source_version_id=content.source_version_id,
        source_clause_ids=clause_ids,
        source_reference=(content.source_reference or "").strip()[:200],
        confidence_hint=confidence,
        owner_id=content.owner_id,
        next_review_on=content.next_review_on,
        duplicate_justification=(content.duplicate_justification or "").strip(),
    )


_TEXT_FIELDS = (
    "topic",
    "question",
    "aliases",
    "conclusion",
    "detail",
    "source_reference",
    "duplicate_justification",
)


def _characters_errors(content: CardContent) -> list[str]:
    """A NUL or another control character (a file saved as UTF-16, a PDF paste) is refused."""
    from knowledge.services.ingestion import character_name, text_disallowed_characters

    errors = []
    for name in _TEXT_FIELDS:
        value = getattr(content, name) or ""
        text = "\n".join(value) if isinstance(value, list) else str(value)
        bad = text_disallowed_characters(text)
        if bad:
            errors.append(
                f"The {name.replace('_', ' ')} holds the character {character_name(bad[0][1])}, "
                "which a card cannot hold; save the file as plain UTF-8 text."
            )
    return errors


def _sections_errors(sections: list[str], line: str) -> list[str]:
    from knowledge.coverage import COVERAGE_SECTIONS

    known = (
        set(COVERAGE_SECTIONS.get(line, {}))
        if line
        else {code for codes in COVERAGE_SECTIONS.values() for code in codes}
    )
    bad = [s for s in sections if s not in known]
    if bad:
        return [f"Unknown schedule section(s) {', '.join(bad)} for {line or 'any line'}."]
    return []


def _card_embedding(content: CardContent | Card) -> tuple[bytes | None, str]:
    """The question's and aliases' rows (never the answer), or None without a model."""
    try:
        from knowledge.embedding import default_embedder

        embedder = default_embedder()
    except Exception:
        return None, ""
    import numpy as np

    texts = [content.question, *content.aliases]
    rows = np.asarray(embedder.encode(texts), dtype=np.float32)
    return rows.tobytes(), embedder.name


def _apply(card: Card, content: CardContent) -> None:
    for name in CardContent.__dataclass_fields__:
        setattr(card, name, getattr(content, name))
    card.embedding, card.embedding_model = _card_embedding(content)


@transaction.atomic
def card_create(
    *,
    acting_user: AbstractBaseUser,
    content: CardContent,
    from_pending_reference: str = "",
    reason: str = "",
) -> Card:
    """A new draft card with the next id of its line (or QA-GEN- for all lines)."""
    _require(acting_user, "knowledge.add_card", "draft answer cards")
    content = card_content_clean(content)
    card = Card(card_id=_card_id_take(content.line), drafted_by=acting_user)
    _apply(card, content)
    card.from_pending_reference = from_pending_reference
    card._change_reason = reason or (
        f"Drafted from {from_pending_reference}" if from_pending_reference else "Drafted"
    )
    card.save()
    return card


@transaction.atomic
def card_update(
    *, card_id: str, acting_user: AbstractBaseUser, content: CardContent, reason: str = ""
) -> Card:
    """Change a card's content; the editor becomes its drafter.

    An active card that changes is a draft again, out of the index until a
    second person activates the new content; a deprecated card is kept as
    it was (draft a new one).
    """
    _require(acting_user, "knowledge.change_card", "edit answer cards")
    content = card_content_clean(content)
    card = Card.objects.select_for_update().get(card_id=card_id)
    if card.status == Card.Status.DEPRECATED:
        raise CardError(f"{card.card_id} is deprecated and kept as it was; draft a new card.")
    if card.line != content.line:
        raise CardError(
            f"{card.card_id} belongs to {card.line or 'all lines'}; its id carries the line, "
            "so draft a new card for another line."
        )
    if CardContent.of(card) == content:
        return card
    was_active = card.status == Card.Status.ACTIVE
    _apply(card, content)
    card.drafted_by = acting_user
    card.activated_by = None
    card.activated_at = None
    card.status = Card.Status.DRAFT
    card.gate_results = []
    card.gates_checked_at = None
    note = f": {reason}" if reason else ""
    card._change_reason = (
        f"Edited while active; a draft again until activated{note}"
        if was_active
        else f"Edited{note}"
    )
    card.save()
    if was_active:
        _index_bump()
    return card


# --- gates --------------------------------------------------------------------------


@dataclass(frozen=True)
class GateResult:
    gate: str
    passed: bool
    detail: str
    justified: bool = False  # passed only because the card says why

    def as_dict(self) -> dict:
        return asdict(self)


def _gate_completeness(card: Card) -> GateResult:
    problems: list[str] = []
    if not card.question:
        problems.append("no question")
    elif len(card.question) > QUESTION_MAX:
        problems.append(f"question is {len(card.question)} characters (at most {QUESTION_MAX})")
    count = len(card.aliases or [])
    if not ALIASES_MIN <= count <= ALIASES_MAX:
        problems.append(f"{count} aliases ({ALIASES_MIN} to {ALIASES_MAX})")
    if not card.conclusion:
        problems.append("no conclusion")
    elif len(card.conclusion) > CONCLUSION_MAX:
        problems.append(
            f"conclusion is {len(card.conclusion)} characters (at most {CONCLUSION_MAX})"
        )
    if len(card.answer) < ANSWER_MIN:
        problems.append(f"answer is {len(card.answer)} characters (at least {ANSWER_MIN})")
    if not card.topic:
        problems.append("no topic")
    if card.owner_id is None:
        problems.append("no owner")
    if card.next_review_on is None:
        problems.append("no next review date")
    if not card.source_clause_ids and not card.source_reference:
        problems.append("no source (clause ids or an internal reference)")
    for name in ("conclusion", "detail"):
        match = _NOT_SELF_CONTAINED.search(getattr(card, name))
        if match:
            problems.append(f"{name} is not self-contained ({match.group(0)!r})")
    from claims.agent.guard import DECISION_RE, TIME_RE, matches_any

    if matches_any(DECISION_RE, card.answer):
        problems.append("the answer decides a claim (the agent never does)")
    if card.kind == Card.Kind.NOT_HERE and matches_any(TIME_RE, card.answer):
        problems.append("a 'we do not answer this here' card promises a time")
    if problems:
        return GateResult("completeness", False, "; ".join(problems) + ".")
    return GateResult("completeness", True, "Every required field is there.")


def _rows(card: Card):
    import numpy as np

    if card.embedding:
        rows = np.frombuffer(bytes(card.embedding), dtype=np.float32)
        count = 1 + len(card.aliases or [])
        if rows.size and rows.size % count == 0:
            return rows.reshape(count, -1)
    raw, _ = _card_embedding(card)
    if raw is None:
        return None
    return np.frombuffer(raw, dtype=np.float32).reshape(1 + len(card.aliases or []), -1)


def _gate_near_duplicate(card: Card) -> GateResult:
    mine = _rows(card)
    if mine is None:
        return GateResult("near_duplicate", False, "The embedding model is not available.")
    texts = [card.question, *card.aliases]
    worst: tuple[float, str, str, str] | None = None
    others = Card.objects.filter(status=Card.Status.ACTIVE).exclude(pk=card.pk)
    for other in others:
        theirs = _rows(other)
        if theirs is None or theirs.shape[1] != mine.shape[1]:
            continue
        sims = mine @ theirs.T
        i, j = divmod(int(sims.argmax()), sims.shape[1])
        value = float(sims[i, j])
        if worst is None or value > worst[0]:
            their_texts = [other.question, *other.aliases]
            worst = (value, other.card_id, texts[i], their_texts[j])
    if worst is None or worst[0] <= NEAR_DUPLICATE_COSINE:
        closest = f" (closest: {worst[1]}, cosine {worst[0]:.2f})" if worst else ""
        return GateResult("near_duplicate", True, f"No active card is that close{closest}.")
    value, other_id, text, their = worst
    detail = (
        f"{text!r} is a near-duplicate of {other_id}'s {their!r} (cosine {value:.3f} > "
        f"{NEAR_DUPLICATE_COSINE}): merge the cards or say why this one stays apart."
    )
    if card.duplicate_justification:
        return GateResult(
            "near_duplicate", True, f"{detail} Justified: {card.duplicate_justification}", True
        )
    return GateResult("near_duplicate", False, detail)


def _gate_answerability(card: Card) -> GateResult:
    from claims.agent.cards import (
        card_index_build,
        cards_choose,
        cards_score,
        cards_servable,
        indexed_card,
    )
    from knowledge.embedding import default_embedder

    try:
        embedder = default_embedder()
    except Exception as exc:
        return GateResult("answerability", False, f"The embedding model is not available: {exc}")
    import numpy as np

    served = [(c, rows) for c, rows in cards_servable() if c.card_id != card.card_id]
    candidate = indexed_card(card)
    index = card_index_build(
        [*served, (candidate, bytes(card.embedding) if card.embedding else None)],
        number="replay",
        embedder=embedder,
    )
    failures: list[str] = []
    for text in candidate.texts:
        vector = np.asarray(embedder.encode([text]), dtype=np.float32)[0]
        chosen = cards_choose(cards_score(index, text, vector), None)
        first = chosen.requested[0] if chosen.requested else "nothing"
        if first != card.card_id:
            failures.append(f"{text!r} finds {first}")
    if failures:
        return GateResult(
            "answerability", False, "Replayed through card retrieval: " + "; ".join(failures) + "."
        )
    return GateResult(
        "answerability",
        True,
        f"The question and {len(candidate.aliases)} aliases each find {card.card_id} first.",
    )


def _approved(version: WordingVersion) -> bool:
    return version.releases.filter(status=Release.Status.APPROVED).exists()


def _gate_sources(card: Card) -> GateResult:
    ids = list(card.source_clause_ids or [])
    if not ids:
        if card.source_reference:
            return GateResult("sources", True, f"Internal reference: {card.source_reference}.")
        return GateResult("sources", False, "No source: name clause ids or an internal reference.")
    version = card.source_version
    if version is None:
        return GateResult("sources", False, "Clause ids are named without a wording version.")
    if version.status != WordingVersion.Status.INGESTED or not _approved(version):
        return GateResult(
            "sources", False, f"{version} is not an approved, ingested version of the wording."
        )
    present = set(
        Clause.objects.filter(version=version, clause_id__in=ids).values_list(
            "clause_id", flat=True
        )
    )
    missing = [c for c in ids if c not in present]
    if missing:
        return GateResult("sources", False, f"{version} has no clause {', '.join(missing)}.")
    return GateResult("sources", True, f"{', '.join(ids)} exist in approved {version}.")


def card_gates_check(*, card: Card) -> list[GateResult]:
    """The four gates of seed 001 §3.4 for ``card`` as it is now (no writes)."""
    return [
        _gate_completeness(card),
        _gate_near_duplicate(card),
        _gate_answerability(card),
        _gate_sources(card),
    ]


# --- activation and after ------------------------------------------------------------


def _locked(card_id: str) -> Card:
    card = Card.objects.select_for_update().filter(card_id=card_id).first()
    if card is None:
        raise CardError(f"There is no card {card_id}.")
    return card


class _GatesFailed(Exception):
    def __init__(self, card: Card, failed: list[GateResult]) -> None:
        self.card, self.failed = card, failed


def card_activate(*, card_id: str, acting_user: AbstractBaseUser, reason: str = "") -> Card:
    """Serve a draft card from the next turn on, if its gates pass.

    Maker-checker: whoever drafted (or last edited) the card cannot activate
    it. The gates run under the card's row lock; their results are kept on
    the card whether they pass or not.
    """
    try:
        return _card_activate(card_id=card_id, acting_user=acting_user, reason=reason)
    except _GatesFailed as refused:
        card = refused.card
        Card.objects.filter(pk=card.pk).update(
            gate_results=card.gate_results, gates_checked_at=card.gates_checked_at
        )
        raise CardError(
            f"{card.card_id} cannot be activated: "
            + " ".join(f"{r.gate}: {r.detail}" for r in refused.failed),
            code="gates_failed",
        ) from None


@transaction.atomic
def _card_activate(*, card_id: str, acting_user: AbstractBaseUser, reason: str) -> Card:
    _require(acting_user, "knowledge.activate_card", "activate answer cards")
    card = _locked(card_id)
    if card.status != Card.Status.DRAFT:
        raise CardError(f"Only a draft card can be activated; {card.card_id} is {card.status}.")
    if card.drafted_by_id == acting_user.pk:
        raise CardError("The person who drafted a card cannot activate it.", code="maker_checker")
    results = card_gates_check(card=card)
    card.gate_results = [r.as_dict() for r in results]
    card.gates_checked_at = timezone.now()
    failed = [r for r in results if not r.passed]
    if failed:
        raise _GatesFailed(card, failed)
    card.source_clause_hashes = dict(
        Clause.objects.filter(
            version_id=card.source_version_id, clause_id__in=card.source_clause_ids
        ).values_list("clause_id", "sha256")
    )
    card.status = Card.Status.ACTIVE
    card.activated_by = acting_user
    card.activated_at = timezone.now()
    card.source_changed = False
    card.source_change_note = ""
    card._change_reason = f"Activated: {reason}" if reason else "Activated"
    card.save(
        update_fields=[
            "gate_results",
            "gates_checked_at",
            "source_clause_hashes",
            "status",
            "activated_by",
            "activated_at",
            "source_changed",
            "source_change_note",
        ]
    )
    _index_bump()
    return card


@transaction.atomic
def card_deprecate(*, card_id: str, acting_user: AbstractBaseUser, reason: str) -> Card:
    """Take a card out of service for good; it is kept, out of the index."""
    _require(acting_user, "knowledge.activate_card", "deprecate answer cards")
    if not reason.strip():
        raise CardError("Say why the card is deprecated.")
    card = _locked(card_id)
    if card.status == Card.Status.DEPRECATED:
        raise CardError(f"{card.card_id} is already deprecated.")
    was_active = card.status == Card.Status.ACTIVE
    card.status = Card.Status.DEPRECATED
    card.deprecated_by = acting_user
    card.deprecated_at = timezone.now()
    card.deprecate_reason = reason.strip()
    card._change_reason = f"Deprecated: {reason.strip()}"
    card.save(update_fields=["status", "deprecated_by", "deprecated_at", "deprecate_reason"])
    if was_active:
        _index_bump()
    return card


@transaction.atomic
def card_sources_review(
    *, card_id: str, acting_user: AbstractBaseUser, version_id: int, reason: str
) -> Card:
    """Confirm a card whose source changed still holds against ``version_id``.

    The card's sources are pinned to that version (which must be approved
    and hold every cited clause) and it is served again.
    """
    _require(acting_user, "knowledge.activate_card", "review answer cards")
    if not reason.strip():
        raise CardError("Say what was checked.")
    card = _locked(card_id)
    if not card.source_changed:
        raise CardError(f"{card.card_id} has no changed source to review.")
    version = WordingVersion.objects.select_related("document").get(pk=version_id)
    card.source_version = version
    result = _gate_sources(card)
    if not result.passed:
        raise CardError(f"{card.card_id}: {result.detail}")
    card.source_clause_hashes = dict(
        Clause.objects.filter(version=version, clause_id__in=card.source_clause_ids).values_list(
            "clause_id", "sha256"
        )
    )
    card.source_changed = False
    card.source_change_note = ""
    card.source_pending = {
        k: v for k, v in (card.source_pending or {}).items() if k != str(version.pk)
    }
    card._change_reason = f"Sources reviewed against {version}: {reason.strip()}"
    card.save(
        update_fields=[
            "source_version",
            "source_clause_hashes",
            "source_changed",
            "source_change_note",
            "source_pending",
        ]
    )
    if card.status == Card.Status.ACTIVE:
        _index_bump()
    return card


def _source_changes(version: WordingVersion, *, lock: bool = True):
    """(card, removed, changed) for each draft or active card of ``version``'s
    document, pinned to another version, whose cited clauses it drops or changes."""
    current = dict(Clause.objects.filter(version=version).values_list("clause_id", "sha256"))
    cards = (
        Card.objects.filter(
            source_version__document=version.document,
            status__in=[Card.Status.DRAFT, Card.Status.ACTIVE],
        )
        .exclude(source_version=version)
        .order_by("pk")
    )
    if lock:
        cards = cards.select_for_update()
    for card in cards:
        pinned = card.source_clause_hashes or dict(
            Clause.objects.filter(
                version_id=card.source_version_id, clause_id__in=card.source_clause_ids
            ).values_list("clause_id", "sha256")
        )
        removed = [c for c in card.source_clause_ids if c not in current]
        changed = [
            c for c in card.source_clause_ids if c in current and pinned.get(c) != current[c]
        ]
        yield card, removed, changed


@transaction.atomic
def cards_sources_warn(*, version_id: int) -> list[str]:
    """Warn on cards whose cited clauses an ingested, unreleased version drops or changes.

    Called when a version is ingested (and when its release is requested
    again). Nothing is taken out of the index: the version is not served
    until its release is approved, so the card still rests on the served
    wording. The warning ("MTR-CLM-02 changes in NW-MOTOR 2027.1 (not yet
    released).") shows on the card's health for an early look. Returns the ids.
    """
    version = WordingVersion.objects.select_related("document").get(pk=version_id)
    key = str(version.pk)
    warned: list[str] = []
    for card, removed, changed in _source_changes(version):
        pending = dict(card.source_pending or {})
        note = ""
        if removed or changed:
            parts = []
            if removed:
                parts.append(f"{', '.join(removed)} not in {version}")
            if changed:
                parts.append(f"{', '.join(changed)} changes in {version}")
            note = "; ".join(parts) + " (not yet released)."
            pending[key] = note
            warned.append(card.card_id)
        else:
            pending.pop(key, None)
        if pending != (card.source_pending or {}):
            card.source_pending = pending
            card._change_reason = f"Source changes pending: {note}" if note else "Warning cleared"
            card.save(update_fields=["source_pending"])
    return warned


@transaction.atomic
def cards_sources_warning_clear(*, version_id: int, why: str) -> list[str]:
    """Drop the warnings of a version that will not be released (discarded, rejected)."""
    key = str(version_id)
    cleared: list[str] = []
    for card in Card.objects.select_for_update().filter(source_pending__has_key=key).order_by("pk"):
        card.source_pending = {k: v for k, v in card.source_pending.items() if k != key}
        card._change_reason = f"Source warning cleared: {why}"[:100]
        card.save(update_fields=["source_pending"])
        cleared.append(card.card_id)
    return cleared


@transaction.atomic
def cards_sources_check(*, version_id: int) -> list[str]:
    """Flag cards whose cited clauses a newly released version drops or changes.

    Called in the transaction that approves the version's release. A flagged
    card is out of the index until someone reviews it
    (``card_sources_review``); the index stamp moves. Returns the ids.
    """
    version = WordingVersion.objects.select_related("document").get(pk=version_id)
    key = str(version.pk)
    flagged: list[str] = []
    bump = False
    for card, removed, changed in _source_changes(version):
        pending = {k: v for k, v in (card.source_pending or {}).items() if k != key}
        fields = ["source_pending"] if pending != (card.source_pending or {}) else []
        card.source_pending = pending
        card._change_reason = f"{version} released"
        if (removed or changed) and not card.source_changed:
            parts = []
            if removed:
                parts.append(f"{', '.join(removed)} no longer in {version}")
            if changed:
                parts.append(f"{', '.join(changed)} changed in {version}")
            card.source_changed = True
            card.source_change_note = "; ".join(parts) + "."
            card._change_reason = f"Source changed: {card.source_change_note}"
            fields += ["source_changed", "source_change_note"]
            flagged.append(card.card_id)
            bump = bump or card.status == Card.Status.ACTIVE
        if fields:
            card.save(update_fields=fields)
    if bump:
        _index_bump()
    return flagged


def _flagged_by(note: str, version: WordingVersion) -> bool:
    """Whether a card's source-change note was written by ``version``'s release."""
    return f" in {version};" in note or note.endswith(f" in {version}.")


@transaction.atomic
def cards_sources_withdrawn(*, version_id: int) -> list[str]:
    """Lift the flags a withdrawn version's release put on cards.

    Called in the transaction that withdraws the release. A card flagged only
    because that version dropped or changed its clauses rests on the served
    wording again, so it goes back in the index. If another version still
    approved for the document drops or changes the same clauses, the card
    stays flagged and its note names that version (versions whose window has
    closed are not compared: they serve no policy date from now on). Returns
    the ids lifted.
    """
    version = WordingVersion.objects.select_related("document").get(pk=version_id)
    flagged = [
        card
        for card in Card.objects.select_for_update()
        .filter(source_version__document=version.document, source_changed=True)
        .order_by("pk")
        if _flagged_by(card.source_change_note, version)
    ]
    if not flagged:
        return []
    still: dict[int, str] = {}
    others = (
        WordingVersion.objects.select_related("document")
        .filter(document=version.document, releases__status=Release.Status.APPROVED)
        .filter(Q(effective_to__isnull=True) | Q(effective_to__gt=timezone.localdate()))
        .exclude(pk=version.pk)
        .distinct()
        .order_by("pk")
    )
    wanted = {card.pk for card in flagged}
    for other in others:
        for card, removed, changed in _source_changes(other, lock=False):
            if card.pk in wanted and card.pk not in still and (removed or changed):
                parts = []
                if removed:
                    parts.append(f"{', '.join(removed)} no longer in {other}")
                if changed:
                    parts.append(f"{', '.join(changed)} changed in {other}")
                still[card.pk] = "; ".join(parts) + "."
    lifted: list[str] = []
    bump = False
    for card in flagged:
        if card.pk in still:
            card.source_change_note = still[card.pk]
            card._change_reason = f"{version} withdrawn; still changed: {still[card.pk]}"[:100]
            card.save(update_fields=["source_change_note"])
            continue
        card.source_changed = False
        card.source_change_note = ""
        card._change_reason = f"Source flag lifted: {version} withdrawn"[:100]
        card.save(update_fields=["source_changed", "source_change_note"])
        lifted.append(card.card_id)
        bump = bump or card.status == Card.Status.ACTIVE
    if bump:
        _index_bump()
    return lifted


# --- health -------------------------------------------------------------------------


def cards_turn_count(
    *, returned: list[str], cited: list[str], conflict_losers: list[str], at
) -> None:
    """Count one turn's use of cards (no history rows: plain counters)."""
    if returned:  # one statement: a turn's queries stay few
        Card.objects.filter(card_id__in=returned).update(
            recall_count=F("recall_count") + 1,
            last_returned_at=at,
            cited_count=F("cited_count")
            + Case(When(card_id__in=cited or [""], then=Value(1)), default=Value(0)),
        )
    if conflict_losers:
        Card.objects.filter(card_id__in=conflict_losers).update(
            conflict_count=F("conflict_count") + 1
        )


def cards_rating_count(*, card_ids: list[str], helpful: bool, previous: bool | None) -> None:
    """Count a reply's rating on the cards it cited; the latest rating counts.

    ``previous`` is the rating it replaces (None for a first rating): that
    one is taken back, so a card counts each rated reply once.
    """
    if not card_ids or previous is helpful:
        return
    counter = "helpful_count" if helpful else "not_helpful_count"
    changes = {counter: F(counter) + 1}
    if previous is not None:
        old = "helpful_count" if previous else "not_helpful_count"
        changes[old] = F(old) - 1
    Card.objects.filter(card_id__in=card_ids).update(**changes)


def card_health_flags(card: Card, *, today: date | None = None) -> list[str]:
    """What a maintainer should look at (seed 001 §6): plain words, empty when healthy."""
    today = today or timezone.localdate()
    flags: list[str] = []
    if card.source_changed:
        flags.append(f"Source changed: {card.source_change_note}")
    for note in (card.source_pending or {}).values():
        flags.append(f"Source changes pending: {note}")
    if card.status == Card.Status.ACTIVE:
        since = card.last_returned_at or card.activated_at
        if since is not None and (today - timezone.localdate(since)).days >= STALE_AFTER_DAYS:
            flags.append(f"No recall for {STALE_AFTER_DAYS} days: review or deprecate.")
    if card.next_review_on and card.next_review_on < today and card.status != "deprecated":
        flags.append(f"Review overdue since {card.next_review_on.isoformat()}.")
    return flags


# --- from the queue ------------------------------------------------------------------


def card_draft_from_pending(
    *,
    entry_id: int,
    acting_user: AbstractBaseUser,
    question: str = "",
    conclusion: str = "",
    aliases: list[str] | None = None,
) -> Card:
    """Propose a staff answer from the pending-answers queue as a draft card.

    The customer's (masked) question becomes the first alias and, shortened
    to a sentence, the question unless one is given; the staff answer is the
    detail and its first sentence the conclusion unless one is given. The
    draft is low confidence and goes through the gates like any other.
    """
    from claims.models import PendingQuestion

    entry = PendingQuestion.objects.filter(pk=entry_id).first()
    if entry is None:
        raise CardError(f"There is no pending question PQ-{entry_id}.")
    if not entry.staff_answer.strip():
        raise CardError(f"{entry.reference} has no staff answer to propose as a card.")
    already = (
        Card.objects.filter(from_pending_reference=entry.reference)
        .exclude(status=Card.Status.DEPRECATED)
        .first()
    )
    if already is not None:
        raise CardError(f"{entry.reference} is already proposed as card {already.card_id}.")
    asked = " ".join(entry.question.split())
    answer = entry.staff_answer.strip()
    first_sentence = re.split(r"(?<=[.!?])\s+", answer, maxsplit=1)[0]
    content = CardContent(
        line=entry.line,
        topic=(question or asked)[:60],
        question=question or asked[:QUESTION_MAX],
        aliases=[*(aliases or []), asked],
        conclusion=conclusion or first_sentence[:CONCLUSION_MAX],
        detail=answer,
        source_reference=f"Staff answer to {entry.reference}",
        confidence_hint=Card.Confidence.LOW,
        owner_id=acting_user.pk,
        next_review_on=timezone.localdate() + timedelta(days=90),
    )
    return card_create(
        acting_user=acting_user, content=content, from_pending_reference=entry.reference
    )


# --- CSV import and export -----------------------------------------------------------

CSV_COLUMNS = [
    "card_id",
    "status",
    "line",
    "kind",
    "topic",
    "priority",
    "question",
    "aliases",
    "conclusion",
    "detail",
    "required_channels",
    "required_policy_statuses",
    "required_schedule_sections",
    "optional_conditions",
    "source_document",
    "source_version",
    "source_clause_ids",
    "source_reference",
    "confidence_hint",
    "owner",
    "next_review_on",
    "duplicate_justification",
]
_LIST_SEP = "|"


def cards_csv_export(cards) -> str:
    """The cards as CSV: lists joined with ``|``, optional conditions as JSON."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for card in cards.select_related("source_version__document", "owner"):
        version = card.source_version
        writer.writerow(
            {
                "card_id": card.card_id,
                "status": card.status,
                "line": card.line,
                "kind": card.kind,
                "topic": card.topic,
                "priority": card.priority,
                "question": card.question,
                "aliases": _LIST_SEP.join(card.aliases),
                "conclusion": card.conclusion,
                "detail": card.detail,
                "required_channels": _LIST_SEP.join(card.required_channels),
                "required_policy_statuses": _LIST_SEP.join(card.required_policy_statuses),
                "required_schedule_sections": _LIST_SEP.join(card.required_schedule_sections),
                "optional_conditions": json.dumps(card.optional_conditions)
                if card.optional_conditions
                else "",
                "source_document": version.document.document_id if version else "",
                "source_version": version.label if version else "",
                "source_clause_ids": _LIST_SEP.join(card.source_clause_ids),
                "source_reference": card.source_reference,
                "confidence_hint": card.confidence_hint,
                "owner": card.owner.get_username() if card.owner else "",
                "next_review_on": card.next_review_on.isoformat() if card.next_review_on else "",
                "duplicate_justification": card.duplicate_justification,
            }
        )
    return out.getvalue()


@dataclass
class CardImport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


MAX_IMPORT_BYTES = 1024 * 1024


def _split(value: str) -> list[str]:
    return [v.strip() for v in (value or "").split(_LIST_SEP) if v.strip()]


def _row_content(row: dict, number: int) -> CardContent:
    """One CSV row as card content; CardError names the row."""

    def fail(message: str) -> CardError:
        return CardError(f"Row {number}: {message}")

    version_id = None
    document, label = (
        (row.get("source_document") or "").strip(),
        (row.get("source_version") or "").strip(),
    )
    if document or label:
        version = WordingVersion.objects.filter(document__document_id=document, label=label).first()
        if version is None:
            raise fail(f"there is no wording version {document} {label}.")
        version_id = version.pk
    owner_id = None
    owner_name = (row.get("owner") or "").strip()
    if owner_name:
        owner = get_user_model().objects.filter(username=owner_name, is_staff=True).first()
        if owner is None:
            raise fail(f"there is no staff user {owner_name!r}.")
        owner_id = owner.pk
    review = None
    if (row.get("next_review_on") or "").strip():
        try:
            review = date.fromisoformat(row["next_review_on"].strip())
        except ValueError as exc:
            raise fail(f"next_review_on {row['next_review_on']!r} is not YYYY-MM-DD.") from exc
    optional: dict = {}
    if (row.get("optional_conditions") or "").strip():
        try:
            optional = json.loads(row["optional_conditions"])
        except json.JSONDecodeError as exc:
            raise fail(f"optional_conditions is not JSON ({exc.msg}).") from exc
        if not isinstance(optional, dict) or not all(
            isinstance(v, list) for v in optional.values()
        ):
            raise fail('optional_conditions must look like {"channels": ["broker"]}.')
    try:
        return card_content_clean(
            CardContent(
                line=row.get("line") or "",
                kind=row.get("kind") or Card.Kind.ANSWER,
                topic=row.get("topic") or "",
                priority=row.get("priority") or 10,
                question=row.get("question") or "",
                aliases=_split(row.get("aliases", "")),
                conclusion=row.get("conclusion") or "",
                detail=row.get("detail") or "",
                required_channels=_split(row.get("required_channels", "")),
                required_policy_statuses=_split(row.get("required_policy_statuses", "")),
                required_schedule_sections=_split(row.get("required_schedule_sections", "")),
                optional_conditions=optional,
                source_version_id=version_id,
                source_clause_ids=_split(row.get("source_clause_ids", "")),
                source_reference=row.get("source_reference") or "",
                confidence_hint=row.get("confidence_hint") or Card.Confidence.MEDIUM,
                owner_id=owner_id,
                next_review_on=review,
                duplicate_justification=row.get("duplicate_justification") or "",
            )
        )
    except CardError as exc:
        raise fail(str(exc)) from exc


def cards_csv_import(*, data: bytes, acting_user: AbstractBaseUser) -> CardImport:
    """Create or update cards from CSV, all or nothing.

    A row without ``card_id`` drafts a new card; a row with one changes that
    card through ``card_update`` (unchanged rows are skipped, so importing
    an export changes nothing). ``status`` is ignored: activation is never
    imported. Any bad row stops the import and every error is reported with
    its row number; nothing is written then.
    """
    _require(acting_user, "knowledge.add_card", "import answer cards")
    result = CardImport()
    if len(data) > MAX_IMPORT_BYTES:
        result.errors.append(f"The file is {len(data) // 1024} KB; at most 1024 KB.")
        return result
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        result.errors.append("The file is not UTF-8 text (save the spreadsheet as CSV UTF-8).")
        return result
    reader = csv.DictReader(io.StringIO(text))
    missing = {"question", "conclusion"} - set(reader.fieldnames or [])
    if missing:
        result.errors.append(
            f"The header lacks {', '.join(sorted(missing))}; export cards to see every column."
        )
        return result
    planned: list[tuple[str | None, CardContent]] = []
    try:
        for number, row in enumerate(reader, start=2):
            try:
                content = _row_content(row, number)
            except CardError as exc:
                result.errors.append(str(exc))
                continue
            card_id = (row.get("card_id") or "").strip().upper() or None
            if card_id and not Card.objects.filter(card_id=card_id).exists():
                result.errors.append(f"Row {number}: there is no card {card_id} to update.")
                continue
            planned.append((card_id, content))
    except csv.Error as exc:
        result.errors.append(f"The CSV cannot be read: {exc}.")
    if result.errors:
        return result
    try:
        with transaction.atomic():
            for card_id, content in planned:
                if card_id is None:
                    card = card_create(acting_user=acting_user, content=content)
                    result.created.append(card.card_id)
                    continue
                before = Card.objects.get(card_id=card_id)
                if CardContent.of(before) == content:
                    result.unchanged.append(card_id)
                    continue
                card_update(
                    card_id=card_id, acting_user=acting_user, content=content, reason="CSV import"
                )
                result.updated.append(card_id)
    except CardError as exc:
        return CardImport(errors=[str(exc)])
    return result
