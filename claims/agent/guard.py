"""The guard: deterministic checks on every reply draft, whoever wrote it.

1. Citations only of clauses the runtime returned in this turn.
2. No decision: nothing that pays, covers or approves a claim.
3. No status or action nobody recorded ("currently reviewing", "I have
   escalated this", "will contact you"), unless this turn created the record
   that backs it (the pending question); and never a time promise.
4. A turn whose clauses do not answer the question cites nothing.

What the guard removes is returned as findings and stored in the run record.
"""

from __future__ import annotations

import re

from claims.agent.types import CheckedDraft, GuardFinding

CLAUSE_ID_RE = re.compile(r"\b(?:MTR|HOM|CNT)-[A-Z]{2,3}-\d{2}\b")

# Sentences that decide a claim. The allowed form is "your policy includes X,
# subject to the claim being accepted".
DECISION_PATTERNS = [
    r"\bwe(?:'ll| will| shall| are going to| can) (?:definitely |certainly )?"
    r"(?:pay|cover|reimburse|refund|approve|accept|settle)\b",
    r"\b(?:we|northwind) (?:have|has) (?:approved|accepted|agreed to pay)\b",
    r"\byou(?:'re| are) (?:fully |definitely )?covered for (?:this|your|the) "
    r"(?:claim|loss|damage|repair|rental|hire)",
    r"\byour claim (?:is|has been|will be) (?:approved|accepted|paid|covered|successful)\b",
    r"\b(?:claim|payment) (?:is )?(?:approved|guaranteed)\b",
    r"\bguarantee(?:d)? (?:that )?(?:you|we|your)\b",
    r"\byou will (?:be paid|get paid|receive (?:a |the )?payment)\b",
    r"\bthis (?:claim|loss|damage) is covered\b",
]

# Statements of an action, a status or a contact that someone must have done.
ACTION_PATTERNS = [
    r"\b(?:currently|now|already) (?:reviewing|assessing|processing|looking into|investigating)\b",
    r"\b(?:is|are) (?:reviewing|assessing|processing|looking into|investigating) your\b",
    r"\bI(?:'ve| have) (?:escalated|forwarded|passed|referred|sent|flagged|raised|logged|added)\b",
    r"\b(?:has|have) been (?:escalated|forwarded|referred|passed on)\b",
    r"\bescalat(?:ed|ing)\b",
    r"\b(?:will|'ll) (?:contact|call|email|get back to|be in touch with|reach out to) you\b",
    r"\b(?:someone|a (?:staff member|claims? (?:handler|assessor|specialist))|our team|the team)"
    r" (?:will|'ll|is going to)\b",
    r"\bwe(?:'ll| will) (?:look into|review|assess|process|follow up|arrange|send|update)\b",
]

# A promise of time is never allowed, whatever was recorded.
TIME_PATTERNS = [
    r"\b(?:shortly|soon|right away|immediately|as soon as possible|asap|today|tomorrow)\b",
    r"\bwithin (?:the next )?(?:\d+|a|an|one|two|three|few|24|48) (?:minutes?|hours?|days?|"
    r"business days?|working days?|weeks?)\b",
    r"\bby (?:the )?(?:end of (?:the )?(?:day|week)|monday|tuesday|wednesday|thursday|friday)\b",
    r"\bin (?:the next )?(?:\d+|a few|a couple of) (?:minutes?|hours?|days?)\b",
]

DECISION_RE = [re.compile(p, re.IGNORECASE) for p in DECISION_PATTERNS]
ACTION_RE = [re.compile(p, re.IGNORECASE) for p in ACTION_PATTERNS]
TIME_RE = [re.compile(p, re.IGNORECASE) for p in TIME_PATTERNS]

# The one sentence about an action the composer may write, and only when this
# turn created the pending question it names.
QUEUE_SENTENCE_RE = re.compile(r"\bpending-answers queue \(reference PQ-\d+\)", re.IGNORECASE)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9•\u201c-])|\n+")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_SPLIT.split(text) if s.strip()]


def matches_any(patterns: list[re.Pattern], text: str) -> bool:
    return any(p.search(text) for p in patterns)


_QUOTED = re.compile(r"\u201c([^\u201d]{8,})\u201d|\"([^\"]{8,})\"")
_SPACES = re.compile(r"\s+")


_BULLET = re.compile(r"^\s*[-*\u2022]\s+", re.MULTILINE)


def _squash(text: str) -> str:
    """Lower-case, bullet markers dropped, white space folded: a quotation may
    join a list's lead-in ("What we pay:") with one of its bullets."""
    return _SPACES.sub(" ", _BULLET.sub("", text)).strip().lower()


def verbatim_quotes_protect(line: str, clause_texts: list[str]) -> tuple[str, list[str]]:
    """Set aside quotations that stand word for word in a returned clause.

    Policy wording says "we will pay the reasonable cost of towing" and "tell
    us as soon as possible"; quoting the clause's own terms is not the agent
    deciding or promising anything. A quotation found in no returned clause
    stays in the text and is checked like the rest of it. Returns the line
    with placeholders and the quotations to put back.
    """
    squashed = [_squash(t) for t in clause_texts]
    kept: list[str] = []

    def replace(match: re.Match) -> str:
        quoted = _squash(match.group(1) or match.group(2)).rstrip(".;:,")
        if any(quoted in text for text in squashed):
            kept.append(match.group(0))
            return f"\x00{len(kept) - 1}\x00"
        return match.group(0)

    return _QUOTED.sub(replace, line), kept


def _restore(sentence: str, quotes: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: quotes[int(m.group(1))], sentence)


def draft_guard(
    *,
    text: str,
    cited_ids: tuple[str, ...],
    returned: dict[str, str],
    answers_question: bool,
    pending_reference: str | None,
    fallback: str,
) -> CheckedDraft:
    """Check a draft; return the text that may be sent and what was removed.

    ``returned`` maps each clause id the runtime returned in this turn to its
    text. ``answers_question`` is false when no returned clause answers the
    question: such a reply cites nothing. ``pending_reference`` is the
    reference (``PQ-<id>``) of the pending question this turn created, if any.
    ``fallback`` replaces the reply when nothing of it survives.
    """
    findings: list[GuardFinding] = []
    clause_texts = list(returned.values())

    kept_citations: list[str] = []
    for clause_id in cited_ids:
        if not answers_question:
            findings.append(GuardFinding("uncited_answer", "removed_citation", clause_id))
        elif clause_id not in returned:
            findings.append(GuardFinding("citation", "removed_citation", clause_id))
        elif clause_id not in kept_citations:
            kept_citations.append(clause_id)

    kept_lines: list[str] = []
    for line in text.splitlines():
        kept: list[str] = []
        protected, quotes = verbatim_quotes_protect(line, clause_texts)
        for sentence in sentences(protected):
            rule = _sentence_violation(sentence, set(returned), answers_question, pending_reference)
            original = _restore(sentence, quotes).strip()
            if rule is None:
                kept.append(original)
            else:
                findings.append(GuardFinding(rule, "removed_sentence", original[:200]))
        if kept:
            kept_lines.append(" ".join(kept))
    checked_text = "\n".join(kept_lines).strip()
    if not checked_text:
        findings.append(GuardFinding("decision", "replaced_reply", text.strip()[:200]))
        checked_text = fallback
        kept_citations = []
    return CheckedDraft(checked_text, tuple(kept_citations), tuple(findings))


def _sentence_violation(
    sentence: str, returned: set[str], answers_question: bool, pending_reference: str | None
) -> str | None:
    """The rule a sentence breaks (verbatim clause quotations set aside), or None."""
    for clause_id in CLAUSE_ID_RE.findall(sentence):
        if clause_id not in returned or not answers_question:
            return "citation" if answers_question else "uncited_answer"
    if matches_any(DECISION_RE, sentence):
        return "decision"
    if matches_any(TIME_RE, sentence):
        return "time_promise"
    if matches_any(ACTION_RE, sentence):
        backed = (
            pending_reference is not None
            and pending_reference in sentence
            and QUEUE_SENTENCE_RE.search(sentence) is not None
        )
        if not backed:
            return "unbacked_action"
    return None


def text_violations(text: str, clause_texts: list[str] = ()) -> dict[str, int]:
    """Count decision, unbacked-action and time patterns in a final reply.

    Used by the evaluation to re-scan what the API returned: every count must
    be zero (a sanctioned queue sentence is not an unbacked action; a verbatim
    quotation of a returned clause is not the agent speaking).
    """
    counts = {"decision": 0, "unbacked_action": 0, "time_promise": 0}
    protected = "\n".join(
        verbatim_quotes_protect(line, list(clause_texts))[0] for line in text.splitlines()
    )
    for sentence in sentences(protected):
        if matches_any(DECISION_RE, sentence):
            counts["decision"] += 1
        if matches_any(TIME_RE, sentence):
            counts["time_promise"] += 1
        if matches_any(ACTION_RE, sentence) and not QUEUE_SENTENCE_RE.search(sentence):
            counts["unbacked_action"] += 1
    return counts
