"""The guard: deterministic checks on every reply draft, whoever wrote it.

1. Citations only of clauses the runtime returned in this turn.
2. No decision: nothing that pays, covers or approves a claim.
3. No status or action nobody recorded ("currently reviewing", "I have
   escalated this", "will contact you", "is being reviewed by a specialist"),
   unless this turn created the record that backs it (the pending question)
   or a tool result of this turn states it (a claim's status and dates from
   the claims system); never a time promise; never "ask your insurer" (the
   customer is talking to the insurer).
4. A turn whose clauses do not answer the question cites nothing.
5. Nothing of another policy: a policy number other than the conversation's,
   or a claim number no tool result of this turn returned.

What the guard removes is returned as findings and stored in the run record.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Literal

from claims.agent.types import CheckedDraft, GuardFinding, StatusBacking

# Any spelling of a clause id a draft could use: lower case, Unicode dashes
# (normalised first, see ``dashes_normalise``), one to three digits.
CLAUSE_ID_RE = re.compile(r"\b(?:MTR|HOM|CNT)-[A-Z]{2,3}-\d{1,3}\b", re.IGNORECASE)
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d]")


def dashes_normalise(text: str) -> str:
    return _DASHES.sub("-", text)


# Answer card ids (seed 001): QA-, a line's clause prefix or GEN, a number.
CARD_ID_RE = re.compile(r"\bQA-(?:MTR|HOM|CNT|GEN)-\d{1,6}\b", re.IGNORECASE)


def card_ids_in(text: str) -> list[str]:
    """The answer card ids a text names, upper-cased, in order, once each."""
    found = (m.upper() for m in CARD_ID_RE.findall(dashes_normalise(text)))
    return list(dict.fromkeys(found))


def card_statements(card_texts: list[str]) -> set[str]:
    """The sentences of returned cards, squashed: what a card itself states."""
    return {_squash(s).rstrip(".;:,") for text in card_texts for s in sentences(text)}


def clause_ids_in(text: str) -> list[str]:
    """The clause ids a text names, upper-cased, in order, once each."""
    found = (m.upper() for m in CLAUSE_ID_RE.findall(dashes_normalise(text)))
    return list(dict.fromkeys(found))


# Sentences that decide a claim. The allowed form is "your policy includes X,
# subject to the claim being accepted".
DECISION_PATTERNS = [
    r"\b(?:we|northwind|i|us)\b[^.!?\n]{0,40}\b(?:will|'ll|shall|are going to|am going to|"
    r"is going to|can|would) (?:definitely |certainly |happily |gladly |fully )?"
    r"(?:pay|cover|reimburse|refund|approve|accept|settle)\b",
    r"\b(?:happy|glad|able|willing|pleased) to (?:pay|cover|reimburse|refund|approve|accept)\b",
    r"\b(?:we|northwind|i)(?:'ve| have| has) (?:now |already )?(?:approved|accepted|authori[sz]ed|"
    r"agreed to pay|agreed to cover)\b",
    r"\byou(?:'re| are) (?:fully |definitely |totally |all |completely )?covered\b",
    r"\byour claim (?:is|has been|will be|was) (?:approved|accepted|paid|covered|successful)\b",
    r"\b(?:claim|payment|rental|hire|repair) (?:is |has been )?(?:approved|guaranteed)\b",
    r"\bguarantee(?:d)? (?:that )?(?:you|we|your)\b",
    r"\b(?:will|shall) be (?:paid|covered|reimbursed|refunded|approved|accepted)\b",
    r"\byou will (?:be paid|get paid|get the money|receive (?:a |the )?payment)\b",
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
    r"\b(?:reviewing|assessing|processing|handling|investigating|looking into) "
    r"(?:it|this|that|your)\b",
    r"\b(?:we|i)(?:'ve| have) (?:got|received|logged|lodged|registered|opened) your "
    r"(?:claim|request|case|question)\b",
    r"\bwill be (?:processed|reviewed|assessed|handled|looked at|investigated)\b",
    # Seed 002's unbacked statements: someone "will now review", a claim "is being
    # reviewed by a specialist".
    r"\b(?:human|representative|agent|specialist|adviser|advisor|assessor|handler|person|"
    r"colleague|staff|someone|somebody|member of (?:our|the) (?:team|staff))\b[^.!?\n]{0,30}"
    r"\b(?:will|'ll|shall|is going to|are going to|is about to)\b[^.!?\n]{0,12}"
    r"\b(?:review|look|check|contact|call|assess|handle|process|get back|verify|reach|"
    r"follow up|be in touch|respond|reply)\b",
    r"\b(?:is|are|has been|have been) (?:now )?being (?:reviewed|assessed|processed|handled|"
    r"looked at|looked into|investigated|checked|considered|escalated)\b",
    r"\b(?:is|are) (?:now )?(?:under|in) (?:review|assessment|investigation)\b",
    r"\bget back to you\b",
    # The customer is talking to the insurer: pointing them elsewhere is not an answer.
    r"\b(?:ask|contact|call|check with|speak to|talk to|reach out to) your "
    r"(?:insurance company|insurer|insurance provider|provider|broker)\b",
]

# A promise of time is never allowed, whatever was recorded.
TIME_PATTERNS = [
    r"\b(?:shortly|soon|right away|immediately|as soon as possible|asap|today|tomorrow)\b",
    r"\bwithin (?:the next )?(?:\d+|a|an|one|two|three|few|24|48) (?:minutes?|hours?|days?|"
    r"business days?|working days?|weeks?)\b",
    r"\bby (?:the )?(?:end of (?:the )?(?:day|week)|monday|tuesday|wednesday|thursday|friday)\b",
    r"\bin (?:the next )?(?:\d+|a few|a couple of) (?:minutes?|hours?|days?)\b",
    r"\b(?:next|this|later this) (?:week|month|morning|afternoon|evening|business day|"
    r"working day)\b",
    r"\blater today\b|\bovernight\b",
]

DECISION_RE = [re.compile(p, re.IGNORECASE) for p in DECISION_PATTERNS]
ACTION_RE = [re.compile(p, re.IGNORECASE) for p in ACTION_PATTERNS]
TIME_RE = [re.compile(p, re.IGNORECASE) for p in TIME_PATTERNS]

# The one sentence about an action the composer may write, and only when this
# turn creates the pending question it names (until the record step writes the
# entry, the draft names it by ``PENDING_REFERENCE``).
QUEUE_SENTENCE_RE = re.compile(
    r"\bpending-answers queue \(reference PQ-(?:\d+|NEW)\)", re.IGNORECASE
)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9•\u201c-])|\n+")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_SPLIT.split(text) if s.strip()]


def matches_any(patterns: list[re.Pattern[str]], text: str) -> bool:
    return any(p.search(text) for p in patterns)


_QUOTED = re.compile(r"\u201c([^\u201d]{8,})\u201d|\"([^\"]{8,})\"")
_SPACES = re.compile(r"\s+")


_BULLET = re.compile(r"^\s*[-*\u2022]\s+", re.MULTILINE)


def _squash(text: str) -> str:
    """Lower-case, bullet markers dropped, white space folded: a quotation may
    join a list's lead-in ("What we pay:") with one of its bullets."""
    return _SPACES.sub(" ", _BULLET.sub("", text)).strip().lower()


@functools.lru_cache(maxsize=1024)
def _units(clause_text: str) -> frozenset[str]:
    """The pieces of a clause a quotation may stand for: each line, and a lead-in
    line ("What we pay:") joined with each of its bullets.

    Kept per clause text: the guard asks for every line of a draft, and the
    same clauses come back turn after turn."""
    units: set[str] = set()
    lead_in = ""
    for raw in clause_text.splitlines():
        line = raw.strip()
        if not line:
            continue
        bullet = _BULLET.match(line) is not None
        body = _BULLET.sub("", line)
        units.add(_squash(body).rstrip(".;:,"))
        if bullet and lead_in:
            units.add(_squash(f"{lead_in} {body}").rstrip(".;:,"))
        if not bullet:
            lead_in = line if line.endswith(":") else ""
    return frozenset(units)


def verbatim_quotes_protect(line: str, clause_texts: list[str]) -> tuple[str, list[str]]:
    """Set aside quotations that are a whole line of a returned clause.

    Policy wording says "we will pay the reasonable cost of towing" and "tell
    us as soon as possible"; quoting a clause's own line is not the agent
    deciding or promising anything. Only a whole line (or a lead-in with one
    of its bullets) counts: a fragment such as \u201cwe accept a claim\u201d
    lifted into "Good news: ... like yours" is checked like any other text.
    Returns the line with placeholders and the quotations to put back.
    """
    units: frozenset[str] = frozenset().union(*(_units(t) for t in clause_texts))
    kept: list[str] = []

    def replace(match: re.Match[str]) -> str:
        whole: str = match.group(0)
        quoted = _squash(match.group(1) or match.group(2)).rstrip(".;:,")
        if quoted in units:
            kept.append(whole)
            return f"\x00{len(kept) - 1}\x00"
        return whole

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
    returned_cards: dict[str, str] | None = None,
    cited_cards: tuple[str, ...] = (),
    backings: tuple[StatusBacking, ...] = (),
    policy_number: str | None = None,
) -> CheckedDraft:
    """Check a draft; return the text that may be sent and what was removed.

    ``returned`` maps each clause id the runtime returned in this turn to its
    text. ``answers_question`` is false when no returned clause answers the
    question: such a reply cites nothing. ``pending_reference`` is the
    reference (``PQ-<id>``) of the pending question this turn created, if any.
    ``fallback`` replaces the reply when nothing of it survives.

    ``returned_cards`` maps each answer card returned this turn to its
    answer. Card ids are treated like clause ids: only a returned card may
    be cited or named. A card never decides; a time is allowed only in a
    sentence the card itself states, word for word.
    ``backings`` are the status and date statements this turn's tool results
    back: a sentence naming a backed claim may state them, and nothing else
    the rules strike. ``policy_number`` is the conversation's ("" when it has
    none; None leaves this rule out): a sentence naming any other policy, or a
    claim no backing names, is removed.
    """
    findings: list[GuardFinding] = []
    clause_texts = list(returned.values())
    returned_cards = returned_cards or {}
    stated = card_statements(list(returned_cards.values()))

    kept_cards: list[str] = []
    for card_id in cited_cards:
        if not answers_question:
            findings.append(GuardFinding("uncited_answer", "removed_citation", card_id))
        elif card_id not in returned_cards:
            findings.append(GuardFinding("citation", "removed_citation", card_id))
        elif card_id not in kept_cards:
            kept_cards.append(card_id)

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
            original = _restore(sentence, quotes).strip()
            # Another policy's data is struck even inside a quotation: no genuine
            # clause names a customer's policy or claim.
            rule = _foreign_data(original, policy_number, backings) or _sentence_violation(
                _unbacked_part(sentence, backings),
                set(returned) | set(returned_cards),
                answers_question,
                pending_reference,
                stated_by_card=_squash(sentence).rstrip(".;:,") in stated,
            )
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
        kept_cards = []
    return CheckedDraft(
        checked_text, tuple(kept_citations), tuple(findings), cited_cards=tuple(kept_cards)
    )


# The shape of a policy number, as the replies show it ("it looks like NW-MTR-123456").
EXAMPLE_POLICY_NUMBER = "NW-MTR-123456"
POLICY_NUMBER_RE = re.compile(r"\bNW[-\s]?(?:MTR|HOM|CNT)[-\s]?\d{4,8}\b", re.IGNORECASE)
CLAIM_NUMBER_RE = re.compile(r"\bCL[-\s]?\d{4,8}\b", re.IGNORECASE)


def _key(number: str) -> str:
    return re.sub(r"[-\s]", "", number).upper()


def foreign_numbers(
    text: str, policy_number: str | None, backings: tuple[StatusBacking, ...] = ()
) -> list[str]:
    """Policy numbers other than ``policy_number`` and claim numbers no backing names."""
    allowed = {_key(EXAMPLE_POLICY_NUMBER)} | ({_key(policy_number)} if policy_number else set())
    claims = {_key(b.subject) for b in backings}
    text = dashes_normalise(text)
    found = [m for m in POLICY_NUMBER_RE.findall(text) if _key(m) not in allowed]
    found += [m for m in CLAIM_NUMBER_RE.findall(text) if _key(m) not in claims]
    return found


# The rules a sentence can break (GuardFinding.rule, less the citation-only ones).
SentenceRule = Literal[
    "citation", "decision", "unbacked_action", "time_promise", "uncited_answer", "data_scope"
]


def _foreign_data(
    sentence: str, policy_number: str | None, backings: tuple[StatusBacking, ...]
) -> SentenceRule | None:
    if policy_number is None:
        return None
    return "data_scope" if foreign_numbers(sentence, policy_number, backings) else None


def _unbacked_part(sentence: str, backings: tuple[StatusBacking, ...]) -> str:
    """The sentence with what a tool result backs taken out (the rest is checked).

    Only in a sentence that names the backed subject (the claim number): its
    status words and dates are the claims system speaking, not the agent.
    """
    for backing in backings:
        if backing.subject.lower() not in sentence.lower():
            continue
        for phrase in sorted(backing.phrases, key=len, reverse=True):
            sentence = re.sub(re.escape(phrase), "\u2026", sentence, flags=re.IGNORECASE)
    return sentence


def _sentence_violation(
    sentence: str,
    returned: set[str],
    answers_question: bool,
    pending_reference: str | None,
    *,
    stated_by_card: bool = False,
) -> SentenceRule | None:
    """The rule a sentence breaks (verbatim clause quotations set aside), or None.

    ``returned`` holds the clause and card ids returned this turn;
    ``stated_by_card`` says the sentence is one a returned card states.
    """
    for item_id in [*clause_ids_in(sentence), *card_ids_in(sentence)]:
        if item_id not in returned or not answers_question:
            return "citation" if answers_question else "uncited_answer"
    if matches_any(DECISION_RE, sentence):
        return "decision"
    if matches_any(TIME_RE, sentence) and not stated_by_card:
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


def text_violations(
    text: str,
    clause_texts: Sequence[str] = (),
    card_texts: Sequence[str] = (),
    backings: tuple[StatusBacking, ...] = (),
) -> dict[str, int]:
    """Count decision, unbacked-action and time patterns in a final reply.

    Used by the evaluation to re-scan what the API returned: every count must
    be zero (a sanctioned queue sentence is not an unbacked action; a verbatim
    quotation of a returned clause is not the agent speaking; a claim's status
    from a tool result of the turn is the claims system speaking).
    """
    counts = {"decision": 0, "unbacked_action": 0, "time_promise": 0}
    protected = "\n".join(
        verbatim_quotes_protect(line, list(clause_texts))[0] for line in text.splitlines()
    )
    stated = card_statements(list(card_texts))
    for sentence in sentences(protected):
        sentence = _unbacked_part(sentence, backings)
        if matches_any(DECISION_RE, sentence):
            counts["decision"] += 1
        if matches_any(TIME_RE, sentence) and _squash(sentence).rstrip(".;:,") not in stated:
            counts["time_promise"] += 1
        if matches_any(ACTION_RE, sentence) and not QUEUE_SENTENCE_RE.search(sentence):
            counts["unbacked_action"] += 1
    return counts
