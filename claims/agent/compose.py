"""The grounded composer: a reply draft built only from what the turn fetched.

It leads with what was asked (the limit, the exclusion, whether the schedule
lists the cover) and quotes the clause's own terms word for word, so the
customer reads the wording and not a paraphrase. It never decides a claim:
the most it says is that the policy includes a benefit, subject to the claim
being accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from claims.agent import text as T
from claims.agent.intents import asks_for_decision as asks_for_decision  # re-exported
from claims.agent.types import (
    Assessment,
    ComposeInputs,
    CustomerIntent,
    Draft,
    Facts,
    GuidanceStatus,
    PendingReason,
    ToolResult,
    WordingChoice,
)
from knowledge.clause_parts import clause_parts

if TYPE_CHECKING:
    from knowledge.clause_store import ClauseFetch, FetchedClause

# --- words ----------------------------------------------------------------------
# One text toolkit (claims.agent.text) for stems, stop words and the glossary;
# the sets below only name which of its stems mean "money", "time" or nothing
# in particular.

_MONEY_WORDS = frozenset(
    T.stem(w)
    for w in "pay paid pays cost costs much limit covered cover covers reimburse refund money max"
    " maximum amount price dollars nzd".split()
)
_TIME_WORDS = frozenset(
    T.stem(w) for w in "long start starts end ends until days weeks when time".split()
)
# Words every clause of a line uses: naming them picks no particular part.
_COMMON = frozenset(T.stem(w) for w in "car home house contents damage loss belongings".split())
# Words that say "does it pay" without naming what: they rank no part.
_GENERIC = frozenset(
    T.stem(w)
    for w in "pay paid cover covered covers claim claims policy insured get help happen"
    " happens need know someone somebody anyone anybody something anything everything"
    " thing things stuff another".split()
)


# Words for insurance, for what each line insures, and the verbs every kind of claim
# question uses: a clause's similar questions sharing one of them with the message says
# nothing about whether the clause answers it.
_LINE_WORDS = frozenset(
    T.stem(w)
    for w in [
        *(n for nouns in T.LINE_NOUNS.values() for n in nouns),
        *"insurance insurer fix fixed repair repaired replace replaced".split(),
    ]
    if "'" not in w
)


def terms(text: str) -> frozenset[str]:
    """A customer's content stems with the wording's words for them (the toolkit's)."""
    return T.terms(text, customer=True)


_SENTENCE_RE = re.compile(r"[^.?!\n]+[.?!]*")
_ASKING = re.compile(
    r"^\W*(?:and|so|but|also|then)?\W*(?:who|whose|what|what's|whats|which|why|how|is|isn't|"
    r"was|are|am|were|will|would|can|could|should|does|do|did|has|have|any)\b",
    re.IGNORECASE,
)


def focus_terms(message: str) -> frozenset[str]:
    """What the customer asks about: the terms of the sentences that ask.

    "What will insurance pay if my car is stolen? I paid by card." asks
    about a stolen car; the card is context. A message with no asking
    sentence, or whose asking sentence names nothing ("is that covered?"),
    is read whole.
    """
    sentences = _SENTENCE_RE.findall(message)
    asking = [s for s in sentences if s.strip().endswith("?") or _ASKING.search(s.strip())]
    if not asking or len(asking) == len(sentences):
        return terms(message)
    found = terms(" ".join(asking))
    if not (found - _GENERIC - _COMMON):
        return terms(message)
    return found


# --- the clause's parts ------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """A part parsed at ingestion (knowledge.clause_parts), with its stems."""

    text: str  # verbatim from the clause
    lead_in: str  # the "We do not cover:" line a bullet hangs from, verbatim, or ""
    negative: bool
    has_amount: bool
    has_duration: bool
    terms: frozenset[str]


def _parts(clause: FetchedClause) -> list[Part]:
    """The clause's stored parts; a row stored without them is parsed here."""
    stored = clause.parts or clause_parts(clause.text)
    return [
        Part(
            text=p["text"],
            lead_in=p["lead_in"],
            negative=p["negative"],
            has_amount=p["amount"],
            has_duration=p["duration"],
            terms=T.terms(f"{p['lead_in']} {p['text']}"),
        )
        for p in stored
    ]


# --- intents -------------------------------------------------------------------


def has_content(message: str) -> bool:
    """Whether a message says anything beyond greetings and filler ("hi", "ok thanks")."""
    return bool(T.terms(message))


# --- the reply -----------------------------------------------------------------

# What the customer reads when no wording version can be chosen; the router's
# own reason (windows, channels) stays in the run record.
NOT_ROUTABLE_DEFAULT = (
    "I can't tell which version of the policy wording applies to your policy's current term, "
    "so I can't quote any clause."
)
NOT_ROUTABLE_REPLIES = {
    "channel_not_served": (
        "Your policy was arranged through a channel whose wording I can't check here, so I "
        "can't quote any clause."
    ),
    "channel_missing": (
        "Your policy's schedule does not say how it was arranged, so I can't tell which "
        "wording applies and can't quote any clause."
    ),
    "term_start_missing": (
        "Your policy's schedule has no start date, so I can't tell which wording applies and "
        "can't quote any clause."
    ),
    "term_start_after_question_date": (
        "Your policy's current term has not started yet, so I can't tell which wording applies "
        "and can't quote any clause."
    ),
}


PERSON_REPLIES = {
    GuidanceStatus.COMPLAINT: (
        "I'm sorry you have reason to complain. Complaints are handled by a person, not by "
        "this assistant."
    ),
    GuidanceStatus.WANTS_PERSON: "You have asked for a person, not this assistant.",
}


def person_queue_sentence(status: GuidanceStatus, reference: str | None) -> str:
    """The queue sentence for a complaint or a request for a person: a person will
    respond, and nothing about when (the guard checks it like queue_sentence)."""
    what = "complaint" if status is GuidanceStatus.COMPLAINT else "request"
    return (
        f"I have recorded your {what} in our pending-answers queue (reference {reference}) "
        "and a person will respond to it."
    )


def queue_sentence(reference: str) -> str:
    """The one sentence about an action the agent may write (the guard checks it)."""
    return (
        f"I have added your question to our pending-answers queue (reference {reference}) "
        "so that a member of our staff can answer it."
    )


def _quote(text: str) -> str:
    return f"\u201c{text}\u201d"


def _quoted(part: Part) -> str:
    """A part as quoted: a list item with the sentence that introduces it."""
    return f"{part.lead_in} {part.text}" if part.lead_in else part.text


def _coverage_label(line: str, code: str) -> str:
    from knowledge.coverage import COVERAGE_SECTIONS

    label = COVERAGE_SECTIONS.get(line, {}).get(code, code.replace("_", " "))
    return label[0].lower() + label[1:] if label else code


def _schedule_statement(inputs: ComposeInputs, clause: FetchedClause) -> tuple[str, bool]:
    """Whether this policy's schedule switches the clause on, in words.

    Returns the sentence and whether the clause applies to this policy.
    """
    section = clause.schedule_section
    schedule = inputs.facts.schedule
    if not section or schedule is None:
        return "", True
    label = _coverage_label(inputs.facts.line or "", section)
    if section in schedule.coverage_sections:
        return (
            f"Your schedule ({schedule.policy_number}) lists {label}, so your policy includes "
            f"this benefit, subject to the claim being accepted.",
            True,
        )
    return (
        f"{clause.clause_id} applies only if your schedule lists {label}, and your schedule "
        f"({schedule.policy_number}) does not list it, so this benefit is not part of your "
        "policy as it stands.",
        False,
    )


_PROVISION = ("what we pay", "what we provide", "what we do", "we cover", "we pay")


_STEP = re.compile(r"^\d+\.\s")


def _general_parts(
    parts: list[Part],
    asked: set[str] | frozenset[str],
    wants_time: bool,
    title_asked: frozenset[str] = frozenset(),
    title_meant: frozenset[str] = frozenset(),
    title: str = "",
) -> list[Part]:
    """What a clause provides: its trigger, what it gives, and its limit.

    ``title_asked``: title words the customer used; ``title_meant``: title words the
    glossary gave for theirs ("break-in" -> theft), which only choose among the bullets of
    the first part's list, when that part names nothing the customer said.

    A limit is quoted when the clause states one ("Limit: ...") or when an
    amount speaks to what was asked; an amount about something else (the tree
    removal cap, to a question about a flood) is left out.
    """
    chosen = [parts[0]]

    def opening(part: Part) -> str:
        return (part.lead_in or part.text).lower()

    if _STEP.match(parts[0].text):
        # A list of steps ("1. Stop, help anyone injured..."): the first two, then the first
        # later part that says by when (to tell us), else the next step.
        chosen += [p for p in parts[1:2] if _STEP.match(p.text)]
        by_when = next((p for p in parts[len(chosen) :] if p.has_duration), None)
        nxt = by_when or next(iter(parts[len(chosen) :]), None)
        if nxt is not None:
            chosen.append(nxt)
        return chosen
    # What the clause provides, said apart from the first part: not another bullet of the
    # same "We cover ... This includes:" list (a theft question is not answered with fire).
    provision = next(
        (
            p
            for p in parts[1:]
            if opening(p).startswith(_PROVISION)
            and not (p.lead_in and p.lead_in == parts[0].lead_in)
        ),
        None,
    )
    if provision is not None:
        chosen.append(provision)
    limit = next(
        (
            p
            for p in parts[1:]
            if p not in chosen
            and not p.negative
            and (p.text.lower().startswith("limit") or (p.has_amount and asked & p.terms))
        ),
        None,
    )
    if limit is not None:
        chosen.append(limit)
    if wants_time:
        chosen += [p for p in parts if p.has_duration and p not in chosen][:1]
    chosen = chosen[:3]
    # A word of the title the customer used ("flood", of a clause on accidental
    # damage, theft, fire, flood and storm) is answered by the part naming it.
    quoted = set().union(*(p.terms for p in chosen))
    for term in sorted(title_asked - quoted):
        naming = next((p for p in parts if term in p.terms and p not in chosen), None)
        if naming is None and term not in quoted:  # no part names it
            naming = _part_for_title_phrase(parts, title, term, chosen)
        if naming is not None:
            if naming.lead_in and naming.lead_in == chosen[0].lead_in:
                # another bullet of the first part's list: it takes the first's place
                # ("fire?" is answered with the fire bullet, not the theft one)
                chosen = [naming, *chosen[1:]]
                quoted = set().union(*(p.terms for p in chosen))
                continue
            chosen = [*chosen[:2], naming] if len(chosen) == 3 else [*chosen, naming]
            quoted |= naming.terms
    if not (chosen[0].terms & title_asked):
        for term in sorted(title_meant - quoted):
            naming = next(
                (
                    p
                    for p in parts
                    if term in p.terms and p.lead_in and p.lead_in == chosen[0].lead_in
                ),
                None,
            )
            if naming is not None and naming not in chosen:
                chosen = [naming, *chosen[1:]]
                break
    return chosen


def _excludes_what_was_asked(matching: list[Part], known: frozenset[str]) -> bool:
    """Whether the best-matching part is an exclusion of what the question is about.

    ``known`` is what the customer named that the clause speaks of at all. An
    exclusion that shares one incidental word with a longer question (the
    gift-cards line, for a car theft that mentions a card) does not make the
    answer "not included": it must cover at least half of what was named,
    and no part that includes something may match more.
    """
    best = matching[0]
    if not best.negative or not known:
        return False
    hits = len(best.terms & known)
    positive = max((len(p.terms & known) for p in matching if not p.negative), default=0)
    return hits >= positive and 2 * hits >= len(known)


_COVER_KINDS = frozenset({"cover", "benefit"})


def _cover_includes(clauses: tuple[FetchedClause, ...], asked: frozenset[str]) -> bool:
    """Whether a returned cover clause names what was asked in a part that includes it.

    A benefit's "Not covered by this benefit: hit-and-run accidents" speaks for that benefit
    only; when a cover clause includes the event ("a collision or rollover"), the reply must
    not open "That is not included".
    """
    wanted = asked - _GENERIC - _COMMON
    return any(
        part.terms & wanted
        for clause in clauses
        if clause.kind == "cover"
        for part in _parts(clause)
        if not part.negative
    )


def _cover_first(
    clauses: tuple[FetchedClause, ...],
    asked: frozenset[str],
    focus: frozenset[str],
    asks_cover: bool,
) -> tuple[FetchedClause, ...]:
    """The clauses in the order they are quoted: the selector's, with one exception.

    "Is a hit and run covered?" may bring MTR-BEN-08 first, whose only part naming it is
    "Not covered by this benefit: hit-and-run accidents..."; the cover clause that includes
    the event ("a collision or rollover") is then quoted first, so the reply opens with what
    the policy covers and the benefit's limit follows.
    """
    if not asks_cover or len(clauses) < 2 or clauses[0].kind != "benefit":
        return clauses
    first = clauses[0]
    specific = asked - T.terms(first.title) - _GENERIC - _COMMON
    matching = _matching_parts(_parts(first), specific, focus)
    if not matching or not matching[0].negative:
        return clauses
    for position, clause in enumerate(clauses):
        if clause.kind == "cover" and _cover_includes((clause,), asked):
            return (clause, *clauses[:position], *clauses[position + 1 :])
    return clauses


def _part_for_title_phrase(
    parts: list[Part], title: str, term: str, chosen: list[Part]
) -> Part | None:
    """The part that says what the title's phrase naming ``term`` is about.

    CNT-EXC-02's title names "work laptops owned by your employer" and its
    bullet says "items owned by your employer": asked "Is my laptop covered?",
    that bullet answers, not the first one ("cars, motorcycles, vans ...").
    Only another bullet of the first quoted part's list, and only when that part
    says none of the phrase's words: it then takes the first's place. The part
    must share two of the phrase's other words.
    """
    phrase = next((p for p in re.split(r"[,;:]| and | or ", title) if term in T.terms(p)), "")
    words = T.terms(phrase) - {term} - _GENERIC - _COMMON
    first = chosen[0]
    if len(words) < 2 or not first.lead_in or words & first.terms:
        return None
    scored = [
        (len(words & p.terms), -i, p)
        for i, p in enumerate(parts)
        if p not in chosen and p.lead_in == first.lead_in
    ]
    best = max(scored, key=lambda t: t[:2], default=None)
    return best[2] if best is not None and best[0] >= 2 else None


def _matching_parts(
    parts: list[Part], specific: frozenset[str], focus: frozenset[str]
) -> list[Part]:
    """The parts that speak to the question, best first: one, or two nearly as good.

    A part is scored on the words asked about that it names. An exclusion is
    matched only on what the customer asks about, and not on a word every
    clause of the line uses ("damage", "car"): a card mentioned in passing does
    not make the gift-cards line the answer to a car-theft question.
    """
    excluding = (specific & focus) - _COMMON

    def score(part: Part) -> int:
        return len((excluding if part.negative else specific) & part.terms)

    # Best match first; on a tie, what the clause includes before what it
    # excludes, then clause order (sorted is stable).
    matching = sorted(
        (p for p in parts if score(p)), key=lambda p: (score(p), not p.negative), reverse=True
    )
    if not matching:
        return []
    # the best, and a second one only if it matches on two words or more, nearly as well
    top = score(matching[0])
    return [matching[0]] + [p for p in matching[1:2] if score(p) >= 2 and score(p) >= top - 1]


def _answer_from_clauses(inputs: ComposeInputs) -> tuple[list[str], list[str]]:
    """Sentences answering from the returned clauses, and the ids they cite.

    A question that names something the clause's title does not ("and the
    petrol?") is answered with the parts that name it; a general question
    ("will my policy pay for a rental car?") with what the clause provides,
    its limit and when it starts. A further clause is quoted only when it
    speaks to what was named (any of the three returned: the cover clause a
    question asks about often comes third), and only what is quoted is cited.
    """
    assert inputs.fetch is not None
    message = inputs.message
    asked = terms(message)
    focus = focus_terms(message)
    said = T.terms(message)
    wants_money = bool(asked & _MONEY_WORDS) or "how much" in message.lower()
    wants_time = bool(asked & _TIME_WORDS) and not wants_money
    lines: list[str] = []
    cited: list[str] = []
    answered: set[str] = set()  # what the reply has quoted so far: parts quoted, their titles
    asks_cover = T.asks_about_cover(message)
    # "What does my car insurance cover?": each principal cover returned is quoted
    # by its opening part, so the reply names all of them, not only the first.
    whole_policy = T.whole_policy_question(message, inputs.facts.line or "")
    quoted_kinds: set[str] = set()
    ordered = _cover_first(inputs.fetch.returned, asked, focus, asks_cover)
    speak = [T.terms(f"{c.title} {c.text} {' '.join(c.questions)}") for c in ordered]
    others_speak = [
        frozenset().union(*(t for j, t in enumerate(speak) if j != i)) for i in range(len(speak))
    ]
    for index, clause in enumerate(ordered):
        parts = _parts(clause)
        if not parts:
            continue
        own = T.terms(f"{clause.title} {clause.text}")
        # "Is my car covered if it is stolen?" asks whether it is covered: the first cover
        # clause returned is quoted even when another clause (how to report a theft)
        # already named what was asked about.
        cover_owed = (
            asks_cover and clause.kind in _COVER_KINDS and not (quoted_kinds & _COVER_KINDS)
        )
        # (a clause the schedule may switch off is quoted the usual way, with what the
        # schedule says about it)
        summary = (
            whole_policy is not None and clause.kind == whole_policy and not clause.schedule_section
        )
        if index > 0 and summary:
            lines.append(f"{clause.clause_id} ({clause.title}) also says:")
            lines.append(f"- {_quote(_quoted(parts[0]))}")
            cited.append(clause.clause_id)
            continue
        # "Does renters insurance cover vehicle theft?": an exclusion whose title names what
        # was asked is quoted even after a cover clause spoke of the same words, because it
        # says what that cover leaves out.
        exclusion_owed = (
            asks_cover
            and clause.kind == "exclusion"
            and bool((asked - _GENERIC - _COMMON) & T.terms(clause.title))
        )
        # A clause also speaks to what its similar questions ask, on a word no other returned
        # clause's text or questions has: "Europe" in MTR-GEN-01's "Can I drive in Europe or
        # Canada on my car policy?"; not "renters", "flat" or "crash", which many share.
        asked_of_questions = (
            (
                (asked - _GENERIC - _COMMON - _LINE_WORDS - answered)
                & T.terms(" ".join(clause.questions))
            )
            - others_speak[index]
            if clause.questions
            else frozenset()
        )
        if (
            index > 0
            and not ((asked - _GENERIC - answered) & own)
            and not asked_of_questions
            and not cover_owed
            and not exclusion_owed
        ):
            continue  # a further clause that adds nothing to what was asked
        quoted_kinds.add(clause.kind)
        title_terms = T.terms(clause.title)
        specific = asked - title_terms - _GENERIC - _COMMON - answered
        if cover_owed and index > 0:
            # quoted for whether it covers what was asked: the part that names it
            specific = asked - _GENERIC - _COMMON
        matching = _matching_parts(parts, specific, focus)
        if cover_owed and index == 0 and matching and not matching[0].negative:
            # "Is my car covered if it is stolen?": what the title names (theft) is what was
            # asked about, so the part that says it is covered answers, not only a part that
            # repeats the customer's word ("...or it is stolen and not found...")
            specific = asked - _GENERIC - _COMMON
            matching = _matching_parts(parts, specific, focus)
        # the customer's own words only: the glossary's additions name no part
        title_asked = frozenset(said & title_terms - _GENERIC - _COMMON)
        title_meant = frozenset(asked & title_terms - _GENERIC - _COMMON) - title_asked
        chosen = (
            matching[:2]
            if matching
            else _general_parts(parts, asked, wants_time, title_asked, title_meant, clause.title)
        )
        if matching and wants_money:
            chosen += [p for p in parts if p.has_amount and p not in chosen][:1]
        schedule_line, applies = _schedule_statement(inputs, clause)
        heading = f"{clause.clause_id} ({clause.title})"
        if index == 0 and not applies:
            lines.append(schedule_line)
            lines.append(f"For reference, {heading} says:")
        elif matching and _excludes_what_was_asked(matching, ((specific & focus) - _COMMON) & own):
            # Leading, the exclusion answers the question; after another clause it says what
            # this one leaves out, not that the whole question is "not included" (hitting a
            # deer is covered by MTR-COV-01; MTR-BEN-08's no-excess benefit leaves it out).
            if index == 0 and not (
                clause.kind == "benefit" and _cover_includes(inputs.fetch.returned, asked)
            ):
                lines.append(f"That is not included. {heading} says:")
            elif clause.kind == "exclusion":
                lines.append(f"{heading} excludes:")
            else:
                lines.append(f"What {heading} does not include:")
        elif index == 0:
            lines.append(f"Here is what your wording says in {heading}:")
        else:
            lines.append(f"{heading} also says:")
        for part in chosen[:3]:
            lines.append(f"- {_quote(_quoted(part))}")
            answered |= part.terms
        answered |= title_terms
        if applies and schedule_line:
            lines.append(schedule_line)
        cited.append(clause.clause_id)
    return lines, cited


_SCHEDULE_ITEM_WORDS = frozenset(T.stem(w) for w in ("specified", "item"))


def _schedule_fact_lines(inputs: ComposeInputs) -> list[str]:
    """What the schedule itself says about what was asked: the excess, a sum insured."""
    schedule = inputs.facts.schedule
    if schedule is None:
        return []
    lines = []
    text = inputs.message.lower()
    if any(word in text for word in ("excess", "deductible", "deductable")):
        lines.append(f"Your schedule shows a basic excess of NZD {schedule.excess:,.0f}.")
    asked = terms(inputs.message)
    for item, amount in (schedule.sums_insured or {}).items():
        if asked & (T.terms(item.replace("_", " ")) - _GENERIC - _SCHEDULE_ITEM_WORDS):
            label = item.replace("_", " ")
            lines.append(f"Your schedule shows a sum insured of NZD {amount:,.0f} for {label}.")
    return lines


def reply_compose(inputs: ComposeInputs) -> Draft:
    """Write the reply for a turn from its facts, wording choice and clauses."""
    facts, wording = inputs.facts, inputs.wording
    status, reason = inputs.assessment.status, inputs.assessment.pending_reason
    pending_reference = inputs.pending_reference
    from claims.agent.tool_replies import tool_answered, tool_lines

    if status not in (GuidanceStatus.COMPLAINT, GuidanceStatus.WANTS_PERSON) and tool_answered(
        inputs.tool_results
    ):
        return _tool_reply(
            inputs, tool_lines(inputs.tool_results, policy_number=facts.policy_number)
        )
    limitations: list[str] = []
    lines: list[str] = []
    cited: list[str] = []
    cited_cards: list[str] = []
    schedule = facts.schedule

    if status in (GuidanceStatus.COMPLAINT, GuidanceStatus.WANTS_PERSON):
        # The queue sentence below names the entry; nothing is said about when.
        lines.append(PERSON_REPLIES[status])
        limitations.append("A person handles this; the agent does not answer it.")
        return Draft(
            text="\n".join([*lines, person_queue_sentence(status, pending_reference)]),
            cited_ids=(),
            status=status,
            pending_reason=reason,
            limitations=tuple(limitations),
        )
    if not inputs.has_content and status is GuidanceStatus.NO_CLAUSE_SELECTED:
        lines.append(
            "I'm here to help with questions about your policy and what its wording covers. "
            "What would you like to know?"
        )
    elif facts.schedule_kind == "unavailable":
        lines.append(
            "I can't look up your policy schedule right now because the policy system is "
            "unavailable, so I can't check what your policy includes. I have not guessed."
        )
        limitations.append("The policy system is unavailable; no schedule could be read.")
    elif status is GuidanceStatus.SCHEDULE_NOT_FOUND:
        lines.append(
            f"I can't find a policy schedule for {facts.policy_number}. Please check the policy "
            "number on your schedule or renewal notice (it looks like NW-MTR-123456) and send it "
            "again. I have not guessed at which policy or wording applies."
        )
        limitations.append("No policy schedule was found for that policy number.")
    elif status is GuidanceStatus.LINE_UNCONFIRMED:
        lines.append(
            "To answer from your policy wording I need your policy number. It is on your policy "
            "schedule and looks like NW-MTR-123456. Once I have it, I can check the wording that "
            "applies to your policy."
        )
        limitations.append("The product line is not confirmed: no policy number yet.")
    elif status is GuidanceStatus.NO_APPROVED_VERSION:
        lines.append(
            f"I can't check the {facts.line} wording right now: no version of it is approved "
            "for use, so I can't quote any clause."
        )
        limitations.append(f"No approved wording version for the {facts.line} line.")
    elif status is GuidanceStatus.WORDING_NOT_ROUTABLE:
        lines.append(NOT_ROUTABLE_REPLIES.get(wording.reason_code, NOT_ROUTABLE_DEFAULT))
        limitations.append(f"No wording version can be chosen ({wording.reason_code}).")
    elif status is GuidanceStatus.KNOWLEDGE_UNAVAILABLE:
        lines.append(
            "I can't read the policy wording right now because the wording store is "
            "unavailable, so I can't quote the clauses that apply. Your policy details "
            "are unchanged and are shown with this reply."
        )
        limitations.append("The policy wording store is unavailable; no clause could be read.")
    elif status is GuidanceStatus.NO_CLAUSE_SELECTED:
        document = f"{wording.document_id} {wording.label}".strip()
        missing = inputs.selection.not_in_directory if inputs.selection is not None else ()
        if missing:
            # The ids themselves are in the response's clauses.not_found; the
            # reply names no clause it did not return (the guard's rule).
            lines.append(
                f"Your policy wording ({document}) has no clause with the id you gave, so "
                "there is nothing I can quote for it. I have not looked up another clause "
                "in its place."
            )
            limitations.append("The clause id named in the question is not in this wording.")
        else:
            lines.append(
                f"I couldn't find a clause in your policy wording ({document}) that answers "
                "this question, so I won't guess."
            )
        if inputs.selection is not None and inputs.selection.rejected:
            limitations.append(f"The clause request was rejected: {inputs.selection.rejected}")
        limitations.append("No clause of the wording answers this question.")
    else:
        card_lines, cited_cards = _answer_from_cards(inputs)
        answer_lines: list[str] = []
        if inputs.fetch is not None and inputs.fetch.returned:
            answer_lines, cited = _answer_from_clauses(inputs)
        # A card answers its own question first, unless the customer asks whether something
        # is covered and no card's question does ("Do I need a Police report for a stolen
        # car?" beside "Is my car covered if it is stolen?"): then the wording comes first.
        if (
            answer_lines
            and T.asks_about_cover(inputs.message)
            and not any(c.asks_cover for c in inputs.cards)
        ):
            lines.extend(answer_lines + card_lines)
        else:
            lines.extend(card_lines + answer_lines)
        lines.extend(_schedule_fact_lines(inputs))

    if schedule is not None and schedule.status != "active":
        limitations.append(f"This policy's status is {schedule.status}.")
        lines.append(f"Please note that your policy's status is {schedule.status}.")
    if reason is PendingReason.NEEDS_DECISION:
        lines.append(
            "I can't decide whether a claim is accepted or paid; that is decided by our claims "
            "staff once a claim is made."
        )
    if pending_reference:
        lines.append(queue_sentence(pending_reference))
    return Draft(
        text="\n".join(line for line in lines if line),
        cited_ids=tuple(cited),
        status=status,
        pending_reason=reason,
        limitations=tuple(limitations),
        cited_cards=tuple(cited_cards),
    )


def _answer_from_cards(inputs: ComposeInputs) -> tuple[list[str], list[str]]:
    """A returned card's conclusion first, then its detail, then where it comes from.

    The card is a staff answer, written to be sent as it is (seed 001 §2.2);
    the clauses it rests on are named only when this turn returned them.
    """
    returned = {c.clause_id for c in inputs.fetch.returned} if inputs.fetch else set()
    lines: list[str] = []
    cited: list[str] = []
    for card in inputs.cards:
        lines.append(card.conclusion)
        if card.detail:
            lines.append(card.detail)
        rests_on = [cid for cid in card.source_clause_ids if cid in returned]
        source = f", which rests on {', '.join(rests_on)}" if rests_on else ""
        lines.append(f"(From our answer card {card.card_id}{source}.)")
        cited.append(card.card_id)
    return lines, cited


def _tool_reply(inputs: ComposeInputs, lines: list[str]) -> Draft:
    """The reply of a turn a tool answered: the tool's sentences, the queue sentence."""
    reason = inputs.assessment.pending_reason
    limitations: list[str] = []
    if inputs.assessment.status is GuidanceStatus.KNOWLEDGE_UNAVAILABLE:
        limitations.append("The claims system is unavailable; no claim could be read.")
    if reason is PendingReason.NEEDS_DECISION:
        lines.append(
            "I can't decide whether a claim is accepted or paid; that is decided by our claims "
            "staff once a claim is made."
        )
    if inputs.pending_reference:
        lines.append(queue_sentence(inputs.pending_reference))
    return Draft(
        text="\n".join(line for line in lines if line),
        cited_ids=(),
        status=inputs.assessment.status,
        pending_reason=reason,
        limitations=tuple(limitations),
    )


def turn_assess(
    *,
    facts: Facts,
    wording: WordingChoice,
    fetch: ClauseFetch | None,
    has_content: bool,
    asks_for_decision: bool,
    intent: CustomerIntent | None = None,
    cards_returned: bool = False,
    tool_results: tuple[ToolResult, ...] = (),
) -> Assessment:
    """The turn's guidance status and, if staff must take over, why.

    A staff answer card returned this turn answers the question even when
    no clause does (seed 001); a request for a decision still goes to staff.
    A tool that answered (a claim's status, a change request, an L4 request)
    answers whatever the wording says.
    """
    from claims.agent.tool_replies import queue_requested, tool_answered

    if intent is not None:
        # A complaint or a request for a person goes to a person, whatever
        # the schedule or the wording says.
        return Assessment(
            status=GuidanceStatus(intent.value), pending_reason=PendingReason(intent.value)
        )
    if tool_answered(tool_results):
        # A tool of this turn answered (a claim's status, a change request, an
        # L4 request never executed): its result is the reply, whatever the wording.
        if any(r.name == "claim.status" and r.status in ("error", "timeout") for r in tool_results):
            return Assessment(
                GuidanceStatus.KNOWLEDGE_UNAVAILABLE, PendingReason.KNOWLEDGE_UNAVAILABLE
            )
        requested = queue_requested(tool_results)
        reason = PendingReason(requested) if requested else None
        if reason is None and asks_for_decision:
            reason = PendingReason.NEEDS_DECISION
        return Assessment(GuidanceStatus.ANSWERED, reason)
    status, reason = _assess(facts, wording, fetch, has_content, asks_for_decision)
    if cards_returned and status is GuidanceStatus.NO_CLAUSE_SELECTED and has_content:
        if asks_for_decision:
            return Assessment(GuidanceStatus.ANSWERED, PendingReason.NEEDS_DECISION)
        return Assessment(GuidanceStatus.ANSWERED, None)
    return Assessment(status=status, pending_reason=reason)


def _assess(
    facts: Facts,
    wording: WordingChoice,
    fetch: ClauseFetch | None,
    has_content: bool,
    asks_for_decision: bool,
) -> tuple[GuidanceStatus, PendingReason | None]:
    if facts.schedule_kind == "unavailable":
        return GuidanceStatus.SCHEDULE_NOT_FOUND, PendingReason.KNOWLEDGE_UNAVAILABLE
    if facts.schedule_kind in ("no_evidence", "invalid_number"):
        return GuidanceStatus.SCHEDULE_NOT_FOUND, None
    if wording.kind == "line_unconfirmed":
        return GuidanceStatus.LINE_UNCONFIRMED, None
    if wording.kind == "no_approved_version":
        return GuidanceStatus.NO_APPROVED_VERSION, PendingReason.NO_APPROVED_VERSION
    if wording.kind == "not_routable":
        return GuidanceStatus.WORDING_NOT_ROUTABLE, PendingReason.OUT_OF_SCOPE
    if fetch is not None and fetch.status == "unavailable":
        return GuidanceStatus.KNOWLEDGE_UNAVAILABLE, PendingReason.KNOWLEDGE_UNAVAILABLE
    if fetch is None or not fetch.returned:
        if not has_content:
            return GuidanceStatus.NO_CLAUSE_SELECTED, None  # "hi", "ok thanks": no question
        reason = PendingReason.NEEDS_DECISION if asks_for_decision else None
        return GuidanceStatus.NO_CLAUSE_SELECTED, reason or PendingReason.NO_CLAUSE
    if asks_for_decision:
        return GuidanceStatus.ANSWERED, PendingReason.NEEDS_DECISION
    return GuidanceStatus.ANSWERED, None


def fallback_reply(pending_reference: str | None) -> str:
    """What is sent when the guard leaves nothing of a draft."""
    text = "I can't answer that from your policy wording."
    if pending_reference:
        text += " " + queue_sentence(pending_reference)
    return text


class GroundedComposer:
    """The default ``DraftWriter``: quotes only what the turn fetched."""

    name = "grounded-composer"

    def write(self, *, inputs: ComposeInputs) -> Draft:
        return reply_compose(inputs)


def model_draft(inputs: ComposeInputs, text: str | None, *, writer: str) -> Draft:
    """A model's text as the turn's draft, on the grounded draft's assessment.

    A model writes only for an answered turn and only with text; otherwise
    the grounded composer's draft stands. The draft cites what the text
    names (the guard keeps only what was returned) and ends with the queue
    sentence when the turn opens a pending question.
    """
    from claims.agent.tool_replies import tool_answered

    grounded = reply_compose(inputs)
    if inputs.assessment.status is not GuidanceStatus.ANSWERED or not (text or "").strip():
        return grounded
    if tool_answered(inputs.tool_results):
        return grounded  # what a tool returned is stated by code, word for word
    from claims.agent.guard import card_ids_in, clause_ids_in

    assert text is not None  # an empty text returned the grounded draft above
    named = tuple(clause_ids_in(text))
    cards = tuple(card_ids_in(text))
    if inputs.pending_reference:
        text = f"{text}\n{queue_sentence(inputs.pending_reference)}"
    return replace(grounded, text=text, cited_ids=named, cited_cards=cards, writer=writer)
