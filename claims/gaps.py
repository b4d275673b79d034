"""Content gaps: questions the agent could not answer well, grouped for knowledge editors.

A question becomes a candidate when its turn opened a ``no_clause`` pending
question (the wording had nothing), when staff proposed content while
answering or dismissing it, or when the customer rated the reply not
helpful. Candidates are grouped per line by the offline sentence embedding
(``knowledge.embedding``, the one the clause selector uses); an editor
accepts a gap into a draft clause of the next wording version or into a
draft answer card, or rejects it with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from claims.models import ContentGap, ContentGapQuestion, PendingQuestion, ReplyRating, Turn
from northwind.errors import PermissionDenied, ServiceError

# Cosine similarity of all-MiniLM-L6-v2 above which two questions ask the same
# thing: paraphrases score 0.7 to 0.8, different covers under 0.35.
SIMILARITY_THRESHOLD = 0.6


class ContentGapError(ServiceError):
    code = "content_gap_refused"


def _candidates():
    """Turns whose question is a candidate and that are in no gap yet."""
    not_helpful = ReplyRating.objects.filter(turn=OuterRef("pk"), rating="not_helpful")
    return (
        Turn.objects.exclude(line="")
        .filter(content_gap_entry__isnull=True)
        .filter(
            Q(pending_question__reason=PendingQuestion.Reason.NO_CLAUSE)
            | ~Q(pending_question__proposed_content="") & Q(pending_question__isnull=False)
            | Exists(not_helpful)
        )
        .order_by("created_at", "pk")
    )


def _embed(texts: list[str]) -> np.ndarray | None:
    try:
        from knowledge.embedding import default_embedder

        return default_embedder().encode(texts)
    except RuntimeError:
        return None  # no embedder installed: questions group only when the same words


def _vector(raw) -> np.ndarray | None:
    return np.frombuffer(bytes(raw), dtype=np.float32) if raw else None


def _normalised(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm else vector.astype(np.float32)


def content_gaps_refresh() -> int:
    """Put every new candidate question into a gap; returns how many were placed."""
    turns = list(_candidates()[:500])
    if not turns:
        return 0
    vectors = _embed([t.message for t in turns])
    placed = 0
    with transaction.atomic():
        gaps = {
            gap.pk: gap
            for gap in ContentGap.objects.select_for_update().filter(status=ContentGap.Status.OPEN)
        }
        for index, turn in enumerate(turns):
            vector = vectors[index] if vectors is not None else None
            best, best_score = None, SIMILARITY_THRESHOLD
            for gap in gaps.values():
                if gap.line != turn.line:
                    continue
                centroid = _vector(gap.centroid)
                if vector is not None and centroid is not None:
                    score = float(centroid @ vector)
                else:
                    score = 1.0 if gap.title.strip().lower() == turn.message.strip().lower() else 0
                if score >= best_score:
                    best, best_score = gap, score
            if best is None:
                best = ContentGap(line=turn.line, title=turn.message[:300])
                best._change_reason = "Opened by the gap finder"
                best.save()
                gaps[best.pk] = best
            ContentGapQuestion.objects.create(
                gap=best,
                turn=turn,
                embedding=vector.astype(np.float32).tobytes() if vector is not None else None,
            )
            if vector is not None:
                members = [
                    _vector(raw)
                    for raw in best.questions.exclude(embedding=None).values_list(
                        "embedding", flat=True
                    )
                ]
                best.centroid = _normalised(np.mean(members, axis=0)).tobytes()
                best.save(update_fields=["centroid", "updated_at"])
            placed += 1
    return placed


@dataclass(frozen=True)
class GapQuestion:
    turn_id: int
    asked_at: object
    question: str
    reference: str
    status: str
    staff_answer: str
    proposed_content: str
    rating: str
    rating_comment: str


def content_gaps_listed(queryset=None):
    """Gaps worth an editor's time: asked by two customers or more, or with
    proposed content, or rated not helpful; most customers first."""
    queryset = ContentGap.objects.all() if queryset is None else queryset
    proposal = PendingQuestion.objects.filter(turn__content_gap_entry__gap=OuterRef("pk")).exclude(
        proposed_content=""
    )
    not_helpful = ReplyRating.objects.filter(
        turn__content_gap_entry__gap=OuterRef("pk"), rating="not_helpful"
    )
    return (
        queryset.annotate(
            customers=Count("questions__turn__conversation", distinct=True),
            asked=Count("questions", distinct=True),
            has_proposal=Exists(proposal),
            not_helpful=Exists(not_helpful),
        )
        .filter(Q(customers__gte=2) | Q(has_proposal=True) | Q(not_helpful=True))
        .order_by("-customers", "-asked", "-updated_at")
    )


def content_gap_questions(gap: ContentGap) -> list[GapQuestion]:
    rows = []
    members = gap.questions.select_related("turn__pending_question", "turn__rating")
    for member in members.order_by("turn__created_at"):
        turn = member.turn
        entry = turn.pending_question
        rating = getattr(turn, "rating", None)
        rows.append(
            GapQuestion(
                turn_id=turn.pk,
                asked_at=turn.created_at,
                question=turn.message,
                reference=entry.reference if entry else "",
                status=entry.status if entry else "",
                staff_answer=entry.staff_answer if entry else "",
                proposed_content=entry.proposed_content if entry else "",
                rating=rating.get_rating_display() if rating else "",
                rating_comment=rating.comment if rating else "",
            )
        )
    return rows


def _locked_open_gap(gap_id: int) -> ContentGap:
    gap = ContentGap.objects.select_for_update().filter(pk=gap_id).first()
    if gap is None:
        raise ContentGapError(f"There is no content gap {gap_id}.")
    if gap.status != ContentGap.Status.OPEN:
        raise ContentGapError(f"Gap {gap.pk} is {gap.status}; only open gaps are decided.")
    return gap


def _require_editor(user) -> None:
    if not user.has_perm("claims.change_contentgap"):
        raise PermissionDenied("You do not have permission to decide content gaps.")


def content_gap_accept(
    *,
    gap_id: int,
    acting_user,
    clause_id: str,
    title: str,
    kind: str,
    body: str,
    schedule_section: str = "",
):
    """Draft the next wording version of the gap's line with this clause added or changed.

    The version is stored and its ingestion queued (validation happens
    there, as for any upload); releasing it is the normal request and
    approval. The gap records the draft and is closed as accepted.
    """
    from knowledge.services.drafts import (
        ClauseDraft,
        serving_version,
        wording_version_draft_with_clause,
    )

    _require_editor(acting_user)
    if not body.strip() or not title.strip():
        raise ContentGapError("A draft clause needs a title and its text.")
    gap = ContentGap.objects.filter(pk=gap_id).first()
    if gap is None or gap.status != ContentGap.Status.OPEN:
        _locked_open_gap(gap_id)  # raises with the reason
    base = serving_version(line=gap.line)
    if base is None:
        raise ContentGapError(f"No {gap.line} wording version is in force to draft from.")
    clause_id = clause_id.strip().upper()
    # Reading the base's source and storing the draft's happen outside any
    # transaction; the gap is locked only to record the decision.
    version, how = wording_version_draft_with_clause(
        base_version_id=base.pk,
        draft=ClauseDraft(
            clause_id=clause_id,
            title=title,
            kind=kind,
            body=body,
            schedule_section=schedule_section,
        ),
        acting_user=acting_user,
        note=f"content gap {gap.pk}",
    )
    with transaction.atomic():
        gap = _locked_open_gap(gap_id)
        gap.status = ContentGap.Status.ACCEPTED
        gap.decided_by = acting_user
        gap.decided_at = timezone.now()
        gap.draft_version = version
        gap.draft_clause_id = clause_id
        gap._change_reason = f"Accepted by {acting_user}: {clause_id} {how} in draft {version}"
        gap.save(
            update_fields=[
                "status",
                "decided_by",
                "decided_at",
                "draft_version",
                "draft_clause_id",
                "updated_at",
            ]
        )
    return gap


def content_gap_card_content(gap: ContentGap, *, question: str = "", conclusion: str = ""):
    """What a draft card from this gap holds: the customers' (masked) questions
    as its question and aliases, the staff answers as its answer."""
    from knowledge.models import Card
    from knowledge.services.cards import ALIASES_MAX, CONCLUSION_MAX, QUESTION_MAX, CardContent

    rows = content_gap_questions(gap)
    asked: list[str] = []
    for row in rows:
        text = " ".join(row.question.split())
        if text and text.lower() not in {a.lower() for a in asked}:
            asked.append(text)
    answers: list[str] = []
    for row in rows:
        text = row.staff_answer.strip()
        if text and text not in answers:
            answers.append(text)
    if not answers:  # no staff answer yet: what staff proposed is the best answer there is
        answers = list(
            dict.fromkeys(r.proposed_content.strip() for r in rows if r.proposed_content)
        )
    if not answers:
        raise ContentGapError(
            f"Gap {gap.pk} has no staff answer or proposed text to draft a card from."
        )
    first = asked[0] if asked else " ".join(gap.title.split())
    first_sentence = re.split(r"(?<=[.!?])\s+", answers[0], maxsplit=1)[0]
    references = [r.reference for r in rows if r.reference]
    return CardContent(
        line=gap.line,
        topic=(question or first)[:60],
        question=(question or first)[:QUESTION_MAX],
        aliases=asked[:ALIASES_MAX],
        conclusion=(conclusion or first_sentence)[:CONCLUSION_MAX],
        detail="\n\n".join(answers),
        source_reference=(
            f"Staff answers to content gap {gap.pk} ({', '.join(references)})"
            if references
            else f"Proposed text of content gap {gap.pk}"
        ),
        confidence_hint=Card.Confidence.LOW,
        next_review_on=timezone.localdate() + timedelta(days=90),
    )


def content_gap_accept_card(*, gap_id: int, acting_user, question: str = "", conclusion: str = ""):
    """Draft an answer card from the gap and close the gap as accepted into it.

    The card is an ordinary draft (low confidence, owned by the editor): it
    is completed in the card admin, passes the card gates and is activated
    by someone else (maker-checker), like any other card.
    """
    from knowledge.services.cards import card_create

    _require_editor(acting_user)
    with transaction.atomic():
        gap = _locked_open_gap(gap_id)
        content = content_gap_card_content(gap, question=question, conclusion=conclusion)
        content.owner_id = acting_user.pk
        card = card_create(
            acting_user=acting_user, content=content, reason=f"Drafted from content gap {gap.pk}"
        )
        gap.status = ContentGap.Status.ACCEPTED
        gap.decided_by = acting_user
        gap.decided_at = timezone.now()
        gap.draft_card = card
        gap._change_reason = f"Accepted by {acting_user} into draft card {card.card_id}"
        gap.save(update_fields=["status", "decided_by", "decided_at", "draft_card", "updated_at"])
    return gap


@transaction.atomic
def content_gap_reject(*, gap_id: int, acting_user, reason: str) -> ContentGap:
    _require_editor(acting_user)
    if not reason.strip():
        raise ContentGapError("Say why the gap is rejected.")
    gap = _locked_open_gap(gap_id)
    gap.status = ContentGap.Status.REJECTED
    gap.decided_by = acting_user
    gap.decided_at = timezone.now()
    gap.reject_reason = reason.strip()
    gap._change_reason = f"Rejected by {acting_user}: {reason.strip()}"
    gap.save(update_fields=["status", "decided_by", "decided_at", "reject_reason", "updated_at"])
    return gap
