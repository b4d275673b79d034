"""The wording source format: parse a Markdown version into clauses and check it.

``docs/wording-format.md`` describes the format and every rule. Parsing is
pure: it takes the text, the line and the ids of the document's earlier
versions, and returns clauses plus errors that name the source line.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from knowledge.models import LINE_PREFIXES, Clause

MAX_CLAUSE_CHARS = 1500
MIN_TITLE_WORDS = 5
SCHEDULE_PHRASE = "only if your schedule lists"
SEGMENTS = ("COV", "BEN", "EXC", "CON", "XS", "CLM", "DEF", "GEN")

CLAUSE_ID_RE = re.compile(r"^(?P<prefix>[A-Z]{3})-(?P<seg>[A-Z]{2,3})-(?P<nn>\d{2})$")
CLAUSE_REF_RE = re.compile(r"\b(?:MTR|HOM|CNT)-(?:COV|BEN|EXC|CON|XS|CLM|DEF|GEN)-\d{2}\b")
HEADING_RE = re.compile(r"^## +(?P<id>\S+) +- +(?P<title>\S.*?)\s*$")
METADATA_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<value>.*?)\s*$")
WORD_RE = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
METADATA_KEYS = {
    "kind": "Kind",
    "schedule section": "Schedule section",
    "visibility": "Visibility",
    "questions": "Questions",
}
# Similar questions: how customers ask about the clause's topic, in their own
# words (seed 001's "similar questions"). Optional; when given, 3 to 12.
QUESTIONS_KEY = "questions"
MIN_QUESTIONS = 3
MAX_QUESTIONS = 12
MIN_QUESTION_WORDS = 3
MAX_QUESTION_CHARS = 200
QUESTION_ITEM_RE = re.compile(r"^\s*[-*]\s+(?P<text>\S.*?)\s*$")

# Titles that only name a topic. Most are caught by the word count; these are
# here so that a long label ("Alternative transport (hire car) after an
# accepted claim" as a coverage label) is refused too.
BARE_LABELS = {
    "alternative transport",
    "hire car",
    "exclusions",
    "general exclusions",
    "conditions",
    "general conditions",
    "definitions",
    "excess",
    "excesses",
    "claims",
    "making a claim",
    "benefits",
    "optional benefits",
    "cover",
    "what we cover",
    "what is covered",
    "what is not covered",
}


@dataclass(frozen=True)
class WordingProblem:
    line: int | None
    message: str

    def as_dict(self) -> dict:
        return {"line": self.line, "message": self.message}

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True)
class ParsedClause:
    clause_id: str
    title: str
    kind: str
    schedule_section: str
    visibility: str
    text: str  # heading, metadata and body, as stored
    body: str
    refers_to: tuple[str, ...]
    heading_line: int
    position: int
    # Similar questions (the "Questions:" block), with their source lines. Not
    # part of ``text``: customers and the model never read them as wording.
    questions: tuple[str, ...] = ()
    question_lines: tuple[int, ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def char_count(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class IdHistory:
    """The clause ids of a document's earlier ingested versions.

    ``ever`` holds every id any earlier version had; ``latest`` the ids of the
    most recently ingested one, whose label is ``latest_label``.
    """

    ever: frozenset[str] = frozenset()
    latest: frozenset[str] = frozenset()
    latest_label: str = ""


@dataclass
class ParsedWording:
    title: str
    clauses: list[ParsedClause] = field(default_factory=list)
    errors: list[WordingProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def title_problem(title: str) -> str | None:
    """Say why a clause title is not a plain-words title, or None if it is."""
    normalised = re.sub(r"\s+", " ", title).strip().lower().rstrip(".:")
    if normalised in BARE_LABELS:
        return f"title {title!r} is a bare label; say in plain words what the clause covers"
    words = WORD_RE.findall(title)
    if len(words) < MIN_TITLE_WORDS:
        return (
            f"title {title!r} is a bare label; say in plain words what the clause covers "
            f"(at least {MIN_TITLE_WORDS} words)"
        )
    return None


def _coverage_sections(line: str) -> dict[str, str]:
    from knowledge.coverage import COVERAGE_SECTIONS

    return COVERAGE_SECTIONS.get(line, {})


def wording_parse(source: str, *, line: str, history: IdHistory | None = None) -> ParsedWording:
    """Parse and validate a wording source for ``line``; collect every error."""
    history = history or IdHistory()
    prefix = LINE_PREFIXES[line]
    sections = _coverage_sections(line)
    lines = source.splitlines()
    errors: list[WordingProblem] = []

    title = ""
    starts: list[int] = []  # 0-based indexes of "## " lines
    for index, text in enumerate(lines):
        if text.startswith("## "):
            starts.append(index)
        elif not starts and text.startswith("# ") and not title:
            title = text[2:].strip()
    if not starts:
        return ParsedWording(
            title=title,
            errors=[
                WordingProblem(None, "no clauses: a clause starts with '## <CLAUSE-ID> - <title>'")
            ],
        )

    clauses: list[ParsedClause] = []
    first_seen: dict[str, int] = {}
    for position, start in enumerate(starts, start=1):
        end = starts[position] if position < len(starts) else len(lines)
        clause = _clause_parse(lines, start, end, position, prefix, sections, errors)
        if clause is None:
            continue
        if clause.clause_id in first_seen:
            errors.append(
                WordingProblem(
                    clause.heading_line,
                    f"duplicate clause id {clause.clause_id} "
                    f"(first used at line {first_seen[clause.clause_id]})",
                )
            )
            continue
        first_seen[clause.clause_id] = clause.heading_line
        clauses.append(clause)

    ids = set(first_seen)
    for clause in clauses:
        for ref in clause.refers_to:
            if ref not in ids:
                errors.append(
                    WordingProblem(
                        _line_of(lines, clause, ref),
                        f"{clause.clause_id} refers to {ref}, which is not in this version",
                    )
                )
    errors.extend(_question_duplicates(clauses))
    errors.extend(_append_only_errors(clauses, history))
    errors.sort(key=lambda e: (e.line is None, e.line or 0))
    return ParsedWording(title=title, clauses=clauses, errors=errors)


def _line_of(lines: list[str], clause: ParsedClause, needle: str) -> int:
    for offset, text in enumerate(lines[clause.heading_line - 1 :]):
        if needle in text:
            return clause.heading_line + offset
    return clause.heading_line


def _clause_parse(
    lines: list[str],
    start: int,
    end: int,
    position: int,
    prefix: str,
    sections: dict[str, str],
    errors: list[WordingProblem],
) -> ParsedClause | None:
    heading_no = start + 1
    heading = HEADING_RE.match(lines[start])
    if heading is None:
        errors.append(
            WordingProblem(heading_no, "a clause heading must read '## <CLAUSE-ID> - <title>'")
        )
        return None
    clause_id, title = heading["id"], heading["title"]
    match = CLAUSE_ID_RE.match(clause_id)
    if match is None or match["seg"] not in SEGMENTS:
        errors.append(
            WordingProblem(
                heading_no,
                f"clause id {clause_id!r} does not match {prefix}-<SEG>-<NN> "
                f"(SEG one of {', '.join(SEGMENTS)}; NN two digits)",
            )
        )
    elif match["prefix"] != prefix:
        errors.append(
            WordingProblem(
                heading_no,
                f"clause id {clause_id} has prefix {match['prefix']}; "
                f"this line's prefix is {prefix}",
            )
        )
    problem = title_problem(title)
    if problem:
        errors.append(WordingProblem(heading_no, problem))

    metadata: dict[str, tuple[str, int]] = {}
    questions: list[tuple[str, int]] = []
    question_block: set[int] = set()  # 0-based lines of the Questions block
    in_questions = False
    index = start + 1
    while index < end and lines[index].strip():
        item = QUESTION_ITEM_RE.match(lines[index])
        if item is not None:
            if in_questions:
                questions.append((item["text"], index + 1))
                question_block.add(index)
            else:
                errors.append(
                    WordingProblem(
                        index + 1,
                        "a '- ' item among the metadata lines must follow a 'Questions:' line "
                        "(similar questions, one per line)",
                    )
                )
            index += 1
            continue
        meta = METADATA_RE.match(lines[index])
        key = meta["key"].strip().lower() if meta else None
        in_questions = False
        if key == QUESTIONS_KEY and key not in metadata:
            metadata[key] = ("", index + 1)
            question_block.add(index)
            in_questions = True
            if meta["value"]:
                errors.append(
                    WordingProblem(
                        index + 1,
                        "list the similar questions on the lines below 'Questions:', "
                        "one '- <question>' per line",
                    )
                )
        elif key not in METADATA_KEYS:
            errors.append(
                WordingProblem(
                    index + 1,
                    "metadata lines come right after the heading as 'Key: value' "
                    f"({', '.join(METADATA_KEYS.values())}) and end with a blank line; "
                    f"got {lines[index].strip()[:60]!r}",
                )
            )
        elif key in metadata:
            errors.append(WordingProblem(index + 1, f"{METADATA_KEYS[key]} is given twice"))
        else:
            metadata[key] = (meta["value"], index + 1)
        index += 1

    kind, kind_line = metadata.get("kind", ("", heading_no))
    if not kind:
        errors.append(WordingProblem(heading_no, f"{clause_id} has no 'Kind:' line"))
    elif kind not in Clause.Kind.values:
        errors.append(
            WordingProblem(
                kind_line, f"unknown Kind {kind!r}; one of {', '.join(Clause.Kind.values)}"
            )
        )
    visibility, visibility_line = metadata.get("visibility", (Clause.Visibility.CUSTOMER, 0))
    if visibility not in Clause.Visibility.values:
        errors.append(
            WordingProblem(
                visibility_line, f"unknown Visibility {visibility!r}; customer or internal"
            )
        )
    if QUESTIONS_KEY in metadata:
        _questions_check(clause_id, questions, metadata[QUESTIONS_KEY][1], visibility, errors)
    section, section_line = metadata.get("schedule section", ("", 0))
    if "schedule section" in metadata and section not in sections:
        known = ", ".join(sections) or "none for this line"
        errors.append(
            WordingProblem(section_line, f"unknown Schedule section {section!r}; known: {known}")
        )

    body_lines = lines[index:end]
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    body = "\n".join(body_lines).strip()
    last = index + len(body_lines)  # exclusive, 0-based
    if not body:
        errors.append(WordingProblem(heading_no, f"{clause_id} has no text"))

    flat = re.sub(r"\s+", " ", body).lower()
    says_schedule = SCHEDULE_PHRASE in flat
    if says_schedule and not section:
        errors.append(
            WordingProblem(
                _phrase_line(lines, index, last) or heading_no,
                f"{clause_id} says '{SCHEDULE_PHRASE}' but has no 'Schedule section:' line",
            )
        )
    if section and not says_schedule:
        errors.append(
            WordingProblem(
                section_line or heading_no,
                f"{clause_id} has 'Schedule section: {section}' but its text does not say "
                f"'{SCHEDULE_PHRASE} ...'",
            )
        )

    # The stored text leaves the Questions block out (see ParsedClause.questions).
    text = "\n".join(lines[i] for i in range(start, last) if i not in question_block).rstrip()
    if len(text) > MAX_CLAUSE_CHARS:
        errors.append(
            WordingProblem(
                heading_no,
                f"{clause_id} is {len(text)} characters long; the most is {MAX_CLAUSE_CHARS} "
                "(split it into clauses)",
            )
        )

    refs = []
    for ref in CLAUSE_REF_RE.findall(body):
        if ref != clause_id and ref not in refs:
            refs.append(ref)
    if match is None:
        return None
    return ParsedClause(
        clause_id=clause_id,
        title=title,
        kind=kind,
        schedule_section=section,
        visibility=visibility,
        text=text,
        body=body,
        refers_to=tuple(refs),
        heading_line=heading_no,
        position=position,
        questions=tuple(q for q, _ in questions),
        question_lines=tuple(n for _, n in questions),
    )


def question_key(question: str) -> str:
    """A question as compared for duplicates: lower case, words only."""
    return " ".join(WORD_RE.findall(question.lower()))


def _questions_check(
    clause_id: str,
    questions: list[tuple[str, int]],
    block_line: int,
    visibility: str,
    errors: list[WordingProblem],
) -> None:
    if visibility == Clause.Visibility.INTERNAL:
        errors.append(
            WordingProblem(
                block_line,
                f"{clause_id} is internal: it is never selected for a customer, so it takes "
                "no similar questions",
            )
        )
    if not MIN_QUESTIONS <= len(questions) <= MAX_QUESTIONS:
        errors.append(
            WordingProblem(
                block_line,
                f"{clause_id} has {len(questions)} similar question(s) under 'Questions:'; "
                f"give {MIN_QUESTIONS} to {MAX_QUESTIONS}, one '- <question>' per line",
            )
        )
    seen: dict[str, int] = {}
    for question, line_no in questions:
        if len(question) > MAX_QUESTION_CHARS:
            errors.append(
                WordingProblem(
                    line_no,
                    f"a similar question is {len(question)} characters long; "
                    f"the most is {MAX_QUESTION_CHARS}",
                )
            )
        if len(WORD_RE.findall(question)) < MIN_QUESTION_WORDS:
            errors.append(
                WordingProblem(
                    line_no,
                    f"similar question {question!r} is too short; write it as a customer "
                    f"would ask it (at least {MIN_QUESTION_WORDS} words)",
                )
            )
        if CLAUSE_REF_RE.search(question):
            errors.append(
                WordingProblem(
                    line_no,
                    "a similar question names a clause id; write it in the customer's words",
                )
            )
        key = question_key(question)
        if key in seen:
            errors.append(
                WordingProblem(line_no, f"similar question repeated (first at line {seen[key]})")
            )
        else:
            seen[key] = line_no


def _question_duplicates(clauses: list[ParsedClause]) -> list[WordingProblem]:
    """The same similar question under two clauses: it cannot point to both."""
    errors = []
    first: dict[str, tuple[str, int]] = {}
    for clause in clauses:
        for question, line_no in zip(clause.questions, clause.question_lines, strict=True):
            key = question_key(question)
            owner = first.get(key)
            if owner is None:
                first[key] = (clause.clause_id, line_no)
            elif owner[0] != clause.clause_id:
                errors.append(
                    WordingProblem(
                        line_no,
                        f"similar question is also under {owner[0]} (line {owner[1]}); "
                        "a question belongs to one clause",
                    )
                )
    return errors


def _phrase_line(lines: list[str], start: int, end: int) -> int | None:
    first_word = SCHEDULE_PHRASE.split()[0]
    for index in range(start, end):
        window = re.sub(r"\s+", " ", " ".join(lines[index : index + 2])).lower()
        if SCHEDULE_PHRASE in window and first_word in lines[index].lower():
            return index + 1
    return None


def _append_only_errors(clauses: list[ParsedClause], history: IdHistory) -> list[WordingProblem]:
    """Ids are only appended: never reused after a drop, new ones numbered past the old."""
    errors = []
    highest: dict[tuple[str, str], int] = {}
    for old in history.ever:
        match = CLAUSE_ID_RE.match(old)
        if match:
            key = (match["prefix"], match["seg"])
            highest[key] = max(highest.get(key, 0), int(match["nn"]))
    for clause in clauses:
        if clause.clause_id in history.latest:
            continue
        if clause.clause_id in history.ever:
            errors.append(
                WordingProblem(
                    clause.heading_line,
                    f"{clause.clause_id} was dropped before (it is not in "
                    f"{history.latest_label or 'the latest version'}); a dropped id is never "
                    "reused; give this clause a new id",
                )
            )
            continue
        match = CLAUSE_ID_RE.match(clause.clause_id)
        if not match:
            continue
        top = highest.get((match["prefix"], match["seg"]), 0)
        if int(match["nn"]) <= top:
            errors.append(
                WordingProblem(
                    clause.heading_line,
                    f"{clause.clause_id} is a new id but earlier versions already went up to "
                    f"{match['prefix']}-{match['seg']}-{top:02d}; new ids are only appended "
                    f"(use {match['prefix']}-{match['seg']}-{top + 1:02d} or higher)",
                )
            )
    return errors
