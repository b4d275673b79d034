"""Real customers' questions from a TSV, with optional labels, for ``evaluate --questions``.

The questions file is research data that stays outside the repository
(``settings.REAL_QUESTIONS_PATH``, by default
``<repo>/../shared/data/insuranceqa-dev/questions.tsv``); the labels file in
the repository holds ids and expected clause ids only.

Questions: tab-separated, one header line naming at least ``id``, ``line`` and
``question`` (other columns, such as ``domain``, are ignored). ``line`` is
``motor``, ``home``, ``contents`` or ``offtopic`` (any case; ``auto`` / ``car``,
``homeowners`` / ``house``, ``renters`` and ``off-topic`` / ``other`` are read as those).

Labels: tab-separated, one header line naming ``id`` and ``expected`` (and
optionally ``line``, the line whose policy the question is asked on, and
``split``, ``tune`` or ``test``). ``expected`` is one of:

* clause ids, any of which answers the question, separated by spaces, commas,
  semicolons or ``|`` (any case: ``mtr-cov-01`` is ``MTR-COV-01``);
* ``none``: no clause answers it; nothing may be cited, and it is queued;
* ``decision``: it asks for a decision on one claim; queued as ``needs_decision``;
* ``decision:<clause id>``: the same, and the clause says something about it.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from claims.evaluation.inventory import Inventory, Question

# The demo policy each line's questions are asked on.
LINE_POLICIES = {
    "motor": "NW-MTR-204518",
    "home": "NW-HOM-310042",
    "contents": "NW-CNT-410815",
}
OFFTOPIC = "offtopic"
QUESTION_LINES = (*LINE_POLICIES, OFFTOPIC)
SPLITS = ("tune", "test")
_CLAUSE_ID = re.compile(r"^[A-Z]{3}-[A-Z]{2,3}-\d{2}$")
_ID_SEPARATORS = re.compile(r"[\s,;|]+")
# How another labelling tool may name a line.
_LINE_NAMES = {
    "auto": "motor",
    "car": "motor",
    "homeowners": "home",
    "house": "home",
    "renters": "contents",
    "off-topic": OFFTOPIC,
    "off_topic": OFFTOPIC,
    "other": OFFTOPIC,
}


def _line(value: str) -> str:
    value = value.strip().lower()
    return _LINE_NAMES.get(value, value)


def _ids(value: str) -> tuple[str, ...]:
    return tuple(i.upper() for i in _ID_SEPARATORS.split(value.strip()) if i)


class RealQuestionsError(ValueError):
    """A questions or labels file that cannot be read; the message names the line."""


@dataclass(frozen=True)
class Label:
    id: str
    kind: str  # "clauses", "none" or "decision"
    expected: tuple[str, ...]
    line: str = ""
    split: str = ""


def _unquoted(value: str | None) -> str:
    """A field as written, or, if a tool wrapped it in double quotes CSV-style
    (``"Does it cover a ""burst"" pipe?"``), what is inside them."""
    value = (value or "").strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace('""', '"').strip()
    return value


def _rows(path: Path, required: tuple[str, ...], what: str) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise RealQuestionsError(f"No such {what} file: {path}")
    try:
        # utf-8-sig: a file saved by a spreadsheet starts with a byte-order mark
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RealQuestionsError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    reader = csv.DictReader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in required if c not in header]
    if missing:
        raise RealQuestionsError(
            f"{path}: line 1: the header must name the columns {', '.join(required)} "
            f"(tab-separated); missing {', '.join(missing)}"
        )
    out = []
    for number, row in enumerate(reader, start=2):
        row = {(k or "").strip(): _unquoted(v) for k, v in row.items() if k is not None}
        if not any(row.values()):
            continue
        out.append((number, row))
    return out


def labels_load(path: Path) -> dict[str, Label]:
    """The labels by question id; RealQuestionsError names the first bad line."""
    labels: dict[str, Label] = {}
    for number, row in _rows(path, ("id", "expected"), "labels"):
        qid, raw = row["id"], row["expected"]
        where = f"{path}: line {number}"
        if not qid:
            raise RealQuestionsError(f"{where}: empty id")
        if qid in labels:
            raise RealQuestionsError(f"{where}: {qid} is labelled twice")
        split = row.get("split", "")
        if split and split not in SPLITS:
            raise RealQuestionsError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
        line = _line(row.get("line", ""))
        if line and line not in QUESTION_LINES:
            raise RealQuestionsError(f"{where}: line {line!r} is not one of {QUESTION_LINES}")
        keyword = raw.lower()
        if keyword == "none":
            kind, expected = "none", ()
        elif keyword == "decision" or keyword.startswith("decision:"):
            kind = "decision"
            expected = _ids(raw.split(":", 1)[1]) if ":" in raw else ()
        else:
            kind, expected = "clauses", _ids(raw)
        bad = [e for e in expected if not _CLAUSE_ID.match(e)]
        if bad or (kind == "clauses" and not expected):
            raise RealQuestionsError(
                f"{where}: expected {raw!r} must be clause ids, none, decision "
                "or decision:<clause id>"
            )
        labels[qid] = Label(qid, kind, expected, line=line, split=split)
    return labels


def questions_load(
    path: Path,
    *,
    labels: dict[str, Label] | None = None,
    split: str | None = None,
    lines: tuple[str, ...] | None = None,
    limit: int | None = None,
) -> list[Inventory]:
    """The questions as one inventory per line asked on, labelled where labels say.

    Off-topic questions are asked on the line the label names, or else in turn
    on the motor, home and contents policies. An off-topic question is
    expected to select nothing even without a label; an unlabelled question
    of a line counts only towards the must-be-zero figures. With ``split``,
    only labelled questions of that half are asked.
    """
    labels = labels or {}
    by_line: dict[str, list[Question]] = {line: [] for line in LINE_POLICIES}
    seen: set[str] = set()
    rotation = 0
    for number, row in _rows(path, ("id", "line", "question"), "questions"):
        qid, line, text = row["id"], _line(row["line"]), row["question"]
        where = f"{path}: line {number}"
        if not qid or not text:
            raise RealQuestionsError(f"{where}: a question needs an id and a text")
        if qid in seen:
            raise RealQuestionsError(f"{where}: {qid} appears twice")
        seen.add(qid)
        if line not in QUESTION_LINES:
            raise RealQuestionsError(f"{where}: line {line!r} is not one of {QUESTION_LINES}")
        label = labels.get(qid)
        if split and (label is None or label.split != split):
            continue
        asked_on = (label.line if label and label.line in LINE_POLICIES else "") or line
        if asked_on == OFFTOPIC:
            asked_on = tuple(LINE_POLICIES)[rotation % len(LINE_POLICIES)]
            rotation += 1
        if label is not None:
            coverage = {"none": "no_clause", "decision": "decision"}.get(label.kind, "clause")
            expected = label.expected
        elif line == OFFTOPIC:
            coverage, expected = "no_clause", ()
        else:
            coverage, expected = "unlabelled", ()
        by_line[asked_on].append(
            Question(
                id=qid,
                line=asked_on,
                text=text,
                expected=expected,
                coverage=coverage,
                after=None,
                source_line=line,
            )
        )
    wanted = lines or tuple(LINE_POLICIES)
    return [
        Inventory(
            line=line,
            policy_number=LINE_POLICIES[line],
            questions=tuple(qs[:limit] if limit else qs),
        )
        for line, qs in by_line.items()
        if line in wanted and qs
    ]
