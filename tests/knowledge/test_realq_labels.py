"""The hand labels for the InsuranceQA development questions (knowledge/content/realq/).

The labels file holds ids and labels only. The questions themselves are research-only data that
stay outside the repository; the checks that need them skip, with a reason, when they are absent.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from tests.knowledge.test_content import DOCUMENTS, parsed

REALQ = Path(__file__).resolve().parents[2] / "knowledge" / "content" / "realq"
LABELS = REALQ / "insuranceqa-dev-labels.tsv"
README = REALQ / "README.md"
HEADER = ["id", "line", "expected", "split"]
LINES = ("motor", "home", "contents", "offtopic")
ID = re.compile(r"^IQA-[1-9]\d*$")
CLAUSE_ID = re.compile(r"^(MTR|HOM|CNT)-[A-Z]{2,3}-\d{2}$")
PREFIX_LINE = {"MTR": "motor", "HOM": "home", "CNT": "contents"}


def questions_path() -> Path:
    """Where the research-only questions live: the setting, else <repo>/../shared/...."""
    configured = getattr(settings, "REAL_QUESTIONS_PATH", None)
    if configured:
        return Path(configured)
    return Path(settings.BASE_DIR).parent / "shared" / "data" / "insuranceqa-dev" / "questions.tsv"


def closest_real_overlaps(texts: list[str]) -> list[float]:
    """Per text, its highest word-set overlap (Jaccard) with a research-only real question.

    Skips the calling test, with a reason, when the questions are not beside
    the repository.
    """
    path = questions_path()
    if not path.exists():
        pytest.skip(f"the research-only questions are not beside the repository ({path})")

    def words(text: str) -> set[str]:
        return set(re.findall(r"[a-z0-9']+", text.lower()))

    with path.open(encoding="utf-8", newline="") as handle:
        real = [words(r["question"]) for r in csv.DictReader(handle, delimiter="\t")]
    overlaps = []
    for text in texts:
        mine = words(text)
        overlaps.append(max(len(mine & r) / len(mine | r) for r in real))
    return overlaps


def split_for(question_id: str) -> str:
    return "test" if int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2 == 1 else "tune"


def label_rows() -> list[list[str]]:
    text = LABELS.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\r" not in text
    return [line.split("\t") for line in text.splitlines()]


def customer_clauses() -> dict[str, set[str]]:
    return {
        line: {c.clause_id for c in parsed(line, "2026.2").clauses if c.visibility == "customer"}
        for line in DOCUMENTS
    }


def expected_clause_ids(expected: str) -> list[str]:
    if expected == "none" or expected == "decision":
        return []
    if expected.startswith("decision:"):
        return [expected.removeprefix("decision:")]
    return expected.split(" ")


def label_kind(expected: str) -> str:
    if expected == "none":
        return "none"
    return "decision" if expected.split(":")[0] == "decision" else "clauses"


def test_the_header_and_every_row_have_the_four_columns():
    rows = label_rows()
    assert rows[0] == HEADER
    for number, row in enumerate(rows[1:], start=2):
        assert len(row) == 4, (number, len(row))
        question_id, line, expected, split = row
        assert ID.match(question_id), (number, question_id)
        assert line in LINES, (number, line)
        assert split in ("tune", "test"), (number, split)
        assert expected == expected.strip() and "  " not in expected, (number, expected)


def test_every_id_is_unique():
    ids = [row[0] for row in label_rows()[1:]]
    duplicates = [i for i, n in Counter(ids).items() if n > 1]
    assert not duplicates


def test_every_expected_clause_is_a_customer_clause_of_the_rows_line_in_2026_2():
    clauses = customer_clauses()
    any_line = set().union(*clauses.values())
    for question_id, line, expected, _ in label_rows()[1:]:
        ids = expected_clause_ids(expected)
        if expected not in ("none", "decision"):
            assert 1 <= len(ids) <= 3, (question_id, expected)
            assert len(set(ids)) == len(ids), (question_id, expected)
        for clause_id in ids:
            assert CLAUSE_ID.match(clause_id), (question_id, clause_id)
            # An off-topic row may be answered by any line's clause (a mislabelled car question).
            allowed = any_line if line == "offtopic" else clauses[line]
            assert clause_id in allowed, (question_id, line, clause_id)


def test_the_split_follows_the_hash_rule_and_both_halves_are_used():
    rows = label_rows()[1:]
    for question_id, _, _, split in rows:
        assert split == split_for(question_id), question_id
    for line in LINES:
        splits = Counter(split for _, row_line, _, split in rows if row_line == line)
        assert splits["tune"] and splits["test"], (line, splits)


def test_at_least_a_hundred_questions_per_line_and_every_label_kind_occurs():
    rows = label_rows()[1:]
    per_line = Counter(line for _, line, _, _ in rows)
    for line in ("motor", "home", "contents"):
        assert per_line[line] >= 100, (line, per_line[line])
    kinds = Counter(label_kind(e) for _, _, e, _ in rows)
    assert kinds["none"] and kinds["decision"] and kinds["clauses"], kinds


def test_the_ids_and_lines_match_the_questions_file_and_no_question_text_is_kept():
    path = questions_path()
    if not path.is_file():
        pytest.skip(f"the research-only questions file is not here: {path}")
    with path.open(encoding="utf-8", newline="") as handle:
        source = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    lines = {row["id"]: row["line"] for row in source}
    rows = label_rows()[1:]
    for question_id, line, _, _ in rows:
        assert question_id in lines, question_id
        assert lines[question_id] == line, (question_id, line, lines[question_id])
    labelled = {row[0] for row in rows}
    offtopic = {i for i, line in lines.items() if line == "offtopic"}
    assert offtopic <= labelled, f"off-topic questions without a label: {len(offtopic - labelled)}"

    def words(text: str) -> str:
        return " ".join(re.findall(r"[a-z0-9]+", text.lower()))

    for kept in (LABELS, README):
        kept_words = f" {words(kept.read_text(encoding='utf-8'))} "
        for row in source:
            question = words(row["question"])
            if len(question.split()) >= 4:
                assert f" {question} " not in kept_words, (kept.name, row["id"])


def test_the_readme_counts_match_the_file():
    rows = label_rows()[1:]
    readme = README.read_text(encoding="utf-8")
    counts = Counter((line, label_kind(expected)) for _, line, expected, _ in rows)
    for line in LINES:
        cells = [counts[(line, k)] for k in ("clauses", "none", "decision")]
        assert f"| {line} | {' | '.join(map(str, cells))} | {sum(cells)} |" in readme, (line, cells)
    for split in ("tune", "test"):
        mine = Counter((line, label_kind(e)) for _, line, e, s in rows if s == split)
        cells = [
            " / ".join(str(mine[(line, k)]) for k in ("clauses", "none", "decision"))
            for line in ("motor", "home", "contents")
        ]
        total = sum(mine.values())
        row = f"| {split} | {' | '.join(cells)} | {mine[('offtopic', 'none')]} | {total} |"
        assert row in readme, row
