"""The release evaluation gate: the agent replayed on a candidate wording version.

``release_evaluation_run`` takes the line's inventory questions and the most
recent real customer questions of that line (from run records, already
masked; ``RELEASE_GATE_RECENT_QUESTIONS``, default 200) and sends each
through the claim agent's own turn pipeline (``claims.agent.turn.turn_run``)
twice: pinned to the version serving the line now, then pinned to the
candidate. It stores the figures of both, the must-be-zero counts and every
question whose returned clauses or reply changed, side by side, and judges:

- the candidate may not return the expected clause for more than
  ``GATE_MAX_RETURNED_DROP`` (2 points) fewer inventory questions than the
  serving version;
- no inventory question whose expected clause the serving version cited may
  lose that citation on the candidate (a clause that no longer says what
  customers ask about: the selector may still return it, but the reply can
  no longer quote it);
- every must-be-zero count of the candidate must be zero.

Its conversations (and so its run records and queue entries) belong to an
API client of its own and are removed when the run ends.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils import timezone

from claims.evaluation.client import MEASUREMENT_CLIENT, Reply
from claims.evaluation.harness import TurnResult, _line_figures, turn_violations
from claims.evaluation.inventory import Inventory, Question, inventories_load
from knowledge.models import EvaluationStatus, ReleaseEvaluation, WordingVersion

logger = logging.getLogger(__name__)

GATE_CLIENT = "release-gate-client"
GATE_MAX_RETURNED_DROP = 0.02
MUST_BE_ZERO = (
    "citation_not_returned",
    "decision",
    "unbacked_action",
    "time_promise",
    "citation_on_no_clause_question",
)
_REFERENCE = re.compile(r"\bPQ-\d+\b")


@dataclass(frozen=True)
class Replayed:
    """One question as one version answered it."""

    returned: tuple[str, ...]
    cited: tuple[str, ...]
    status: str
    reply: str
    violations: dict[str, int]

    def as_dict(self) -> dict:
        return {
            "returned": list(self.returned),
            "cited": list(self.cited),
            "status": self.status,
            "reply": self.reply,
        }


def _gate_client():
    from claims.client_scope import api_client_ensure
    from claims.models import ClientScope

    user, created = get_user_model().objects.get_or_create(
        username=GATE_CLIENT, defaults={"is_staff": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    # Like the measurement client, it plays a contact-centre tool: it names the
    # inventory's demo policy directly (each binding is in the audit trail).
    api_client_ensure(user=user, scope=ClientScope.INTERNAL, description="Release evaluation gate")
    return user


def gate_records_delete() -> int:
    from claims.models import Conversation

    deleted, _ = Conversation.objects.filter(client__username=GATE_CLIENT).delete()
    return deleted


def recent_questions(*, line: str, limit: int) -> list[tuple[str, str]]:
    """The ``limit`` most recent distinct customer messages of ``line`` (masked).

    As (key, text); measurement and gate traffic is left out.
    """
    from claims.models import Turn

    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    rows = (
        Turn.objects.filter(line=line)
        .exclude(conversation__client__username__in=[MEASUREMENT_CLIENT, GATE_CLIENT])
        .order_by("-pk")
        .values_list("pk", "message")
    )
    for pk, message in rows.iterator(chunk_size=500):
        text = (message or "").strip()
        if not text or text.lower() in seen:
            continue
        seen.add(text.lower())
        out.append((f"turn-{pk}", text))
        if len(out) >= limit:
            break
    return out


def serving_version(line: str) -> WordingVersion | None:
    """The approved version serving ``line`` today, else the latest approved one."""
    from knowledge.selectors import approved_release_windows, release_approved_for_date

    found = release_approved_for_date(line=line, on=timezone.localdate())
    if found.kind == "found":
        return WordingVersion.objects.get(pk=found.window.version_id)
    windows = approved_release_windows(line=line)
    return WordingVersion.objects.get(pk=windows[-1].version_id) if windows else None


class _Replayer:
    """Sends questions through ``turn_run`` pinned to one version."""

    def __init__(self, *, version: WordingVersion, policy_number: str) -> None:
        from claims.agent.registry import chooser, writer
        from claims.apis import clause_store

        self.version = version
        self.name = f"{version.document.document_id} {version.label}"
        self.policy_number = policy_number
        self.client = _gate_client()
        self.chooser = chooser()
        self.writer = writer(chooser_in_use=self.chooser)
        self.store = clause_store()
        self.conversations: dict[str, object] = {}

    def ask(self, key: str, text: str, *, after: str | None = None):
        from claims.agent.turn import turn_run
        from claims.agent.types import TurnRequest
        from claims.client_scope import conversation_start

        conversation = self.conversations.get(after) if after else None
        if conversation is None:
            conversation = conversation_start(
                client=self.client, channel="web", policy_number=self.policy_number
            )
        self.conversations[key] = conversation
        result = turn_run(
            TurnRequest(
                conversation_id=conversation.pk,
                message=text,
                policy_number=None,
                received_at=timezone.now(),
                trace_id=uuid.uuid4().hex,
                conversation_policy_number=conversation.policy_number,
                conversation_line=conversation.line,
                pinned_version_id=self.version.pk,
            ),
            chooser=self.chooser,
            writer=self.writer,
            store=self.store,
        )
        conversation.refresh_from_db(fields=["policy_number", "line"])
        turn = result.turn
        body = {"reply": turn.reply, "citations": [{"clause_id": c} for c in turn.cited_ids]}
        return turn, Replayed(
            returned=tuple(turn.returned_ids),
            cited=tuple(turn.cited_ids),
            status=turn.guidance_status,
            # Queue references and the version's own name differ between the
            # two passes by construction; they are not a change of the answer.
            reply=_REFERENCE.sub("PQ-…", turn.reply).replace(self.name, "<version>"),
            violations=turn_violations(turn, body),
        )


def _version_pass(
    version: WordingVersion, inventory: Inventory, recent: list[tuple[str, str]]
) -> tuple[dict, dict[str, Replayed]]:
    replayer = _Replayer(version=version, policy_number=inventory.policy_number)
    results: list[TurnResult] = []
    answers: dict[str, Replayed] = {}
    zero = dict.fromkeys(MUST_BE_ZERO, 0)
    for question in inventory.questions:
        turn, replayed = replayer.ask(question.id, question.text, after=question.after)
        results.append(TurnResult(question, turn, Reply(201, {"reply": turn.reply}, 0.0)))
        answers[question.id] = replayed
        for key, value in replayed.violations.items():
            zero[key] = zero.get(key, 0) + value
        if question.no_clause and replayed.cited:
            zero["citation_on_no_clause_question"] += 1
    for key, text in recent:
        _, replayed = replayer.ask(key, text)
        answers[key] = replayed
        for name, value in replayed.violations.items():
            zero[name] = zero.get(name, 0) + value
    figures = _line_figures(results)
    figures["recent_questions"] = len(recent)
    figures["must_be_zero"] = zero
    figures["version"] = str(version)
    figures["version_id"] = version.pk
    figures["selector"] = replayer.chooser.name
    return figures, answers


def _changes(
    inventory: Inventory,
    recent: list[tuple[str, str]],
    serving: dict[str, Replayed],
    candidate: dict[str, Replayed],
) -> list[dict]:
    by_id: dict[str, Question] = {q.id: q for q in inventory.questions}
    texts = {q.id: q.text for q in inventory.questions} | dict(recent)
    out = []
    for key, text in texts.items():
        before, after = serving.get(key), candidate.get(key)
        if before is None or after is None:
            continue
        if before.returned == after.returned and before.reply == after.reply:
            continue
        question = by_id.get(key)
        out.append(
            {
                "id": key,
                "source": "inventory" if question else "recent",
                "question": text,
                "expected": list(question.expected) if question else [],
                "serving": before.as_dict(),
                "candidate": after.as_dict(),
            }
        )
    return out


def lost_citations(
    inventory: Inventory, serving: dict[str, Replayed], candidate: dict[str, Replayed]
) -> list[str]:
    """Inventory questions that cited an expected clause on serving, not on the candidate."""
    lost = []
    for question in inventory.questions:
        before, after = serving.get(question.id), candidate.get(question.id)
        if not question.expected or before is None or after is None:
            continue
        if any(e in before.cited for e in question.expected) and not any(
            e in after.cited for e in question.expected
        ):
            lost.append(question.id)
    return lost


def gate_findings(serving: dict | None, candidate: dict, lost: list[str] = ()) -> list[str]:
    """Why the candidate fails the gate, one sentence each; empty when it passes."""
    findings = []
    if serving is not None and serving.get("returned") is not None:
        was, now = serving["returned"], candidate.get("returned") or 0.0
        if was - now > GATE_MAX_RETURNED_DROP + 1e-9:
            findings.append(
                f"Expected clause returned fell from {was:.1%} to {now:.1%} "
                f"({(now - was) * 100:+.1f} points; the gate allows "
                f"{GATE_MAX_RETURNED_DROP * 100:.0f})."
            )
    if lost:
        findings.append(
            f"{len(lost)} inventory question(s) no longer cite their expected clause, "
            f"which the serving version cited: {', '.join(lost)}."
        )
    for name, count in candidate["must_be_zero"].items():
        if count:
            findings.append(f"{name.replace('_', ' ')}: {count} (must be zero).")
    return findings


def release_evaluation_run(*, evaluation_id: int) -> ReleaseEvaluation:
    """Run the gate for one evaluation row and store what it found."""
    evaluation = ReleaseEvaluation.objects.select_related(
        "release", "candidate_version__document"
    ).get(pk=evaluation_id)
    if evaluation.status not in (EvaluationStatus.PENDING, EvaluationStatus.ERROR):
        return evaluation  # already ran (a retried or duplicated task)
    line = evaluation.release.line
    evaluation.status = EvaluationStatus.RUNNING
    evaluation.started_at = timezone.now()
    evaluation.save(update_fields=["status", "started_at"])
    try:
        inventory = next(i for i in inventories_load(lines=(line,)))
        recent = recent_questions(line=line, limit=evaluation.recent_limit)
        serving = serving_version(line)
        if serving is not None and serving.pk == evaluation.candidate_version_id:
            serving = None
        figures: dict = {}
        serving_answers: dict[str, Replayed] = {}
        if serving is not None:
            figures["serving"], serving_answers = _version_pass(serving, inventory, recent)
        figures["candidate"], candidate_answers = _version_pass(
            evaluation.candidate_version, inventory, recent
        )
        evaluation.serving_version = serving
        evaluation.figures = figures
        evaluation.changes = (
            _changes(inventory, recent, serving_answers, candidate_answers) if serving else []
        )
        lost = lost_citations(inventory, serving_answers, candidate_answers) if serving else []
        figures["candidate"]["lost_citations"] = lost
        evaluation.findings = gate_findings(figures.get("serving"), figures["candidate"], lost)
        evaluation.question_count = len(inventory.questions) + len(recent)
        evaluation.selector = figures["candidate"]["selector"]
        evaluation.status = (
            EvaluationStatus.FAILED if evaluation.findings else EvaluationStatus.PASSED
        )
        evaluation.detail = ""
    except Exception as exc:  # the gate says it did not finish; approval waits
        logger.exception("release evaluation %s failed", evaluation_id)
        evaluation.status = EvaluationStatus.ERROR
        evaluation.detail = f"{type(exc).__name__}: {exc}"[:2000]
    finally:
        gate_records_delete()
    evaluation.finished_at = timezone.now()
    evaluation.save()
    logger.info(
        "release evaluation %s of %s: %s %s",
        evaluation.pk,
        evaluation.candidate_version,
        evaluation.status,
        "; ".join(evaluation.findings),
    )
    return evaluation
