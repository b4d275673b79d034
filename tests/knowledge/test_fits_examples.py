"""Our own labelled examples for "does anything fit?" (knowledge/content/fits/).

Their answerable tune rows train the hybrid's reranker and their test rows
measure it, so they must be well formed, labelled against clauses that exist,
split by the hash of the id, and in our own words.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import Counter
from pathlib import Path

from claims.evaluation import realq
from tests.knowledge.test_content import parsed
from tests.knowledge.test_realq_labels import closest_real_overlaps

EXAMPLES = (
    Path(__file__).resolve().parents[2] / "knowledge" / "content" / "fits" / "fits-examples.tsv"
)
HEADER = ["id", "line", "expected", "split", "question"]
ID = re.compile(r"^FIT-\d{3}$")


def rows() -> list[dict[str, str]]:
    with EXAMPLES.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        assert reader.fieldnames == HEADER
        return list(reader)


def test_every_row_is_labelled_against_a_clause_of_its_line_and_split_by_its_id():
    customer = {
        line: {c.clause_id for c in parsed(line, "2026.2").clauses if c.visibility == "customer"}
        for line in ("motor", "home", "contents")
    }
    seen = Counter()
    for row in rows():
        assert ID.match(row["id"]), row["id"]
        seen[row["id"]] += 1
        assert row["question"].strip(), row["id"]
        ids = row["expected"].split()
        assert ids == ["none"] or (1 <= len(ids) <= 3 and set(ids) <= customer[row["line"]]), row
        odd = int(hashlib.sha256(row["id"].encode("utf-8")).hexdigest(), 16) % 2 == 1
        assert row["split"] == ("test" if odd else "tune"), row["id"]
    assert max(seen.values()) == 1
    # both kinds on every line, in both halves
    kinds = Counter((r["line"], r["split"], r["expected"] == "none") for r in rows())
    assert len(kinds) == 12 and min(kinds.values()) >= 10, kinds


def test_the_project_reads_the_file_as_questions_and_as_labels():
    labels = realq.labels_load(EXAMPLES)
    inventories = realq.questions_load(EXAMPLES, labels=labels, split="tune")
    asked = [q for inventory in inventories for q in inventory.questions]
    assert asked and all(labels[q.id].split == "tune" for q in asked)
    assert {q.coverage for q in asked} == {"clause", "no_clause"}


def test_no_example_copies_a_real_question():
    """Our own words: no row is (nearly) one of the research-only real questions."""
    examples = rows()
    overlaps = closest_real_overlaps([row["question"] for row in examples])
    for row, closest in zip(examples, overlaps, strict=True):
        assert closest < 0.5, row["id"]
