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
METADATA_KEYS = {"kind": "Kind", "schedule section": "Schedule section", "visibility": "Visibility"}

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
    index = start + 1
    while index < end and lines[index].strip():
        meta = METADATA_RE.match(lines[index])
        key = meta["key"].strip().lower() if meta else None
        if key not in METADATA_KEYS:
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

    text = "\n".join(lines[start:last]).rstrip()
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
    )


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
