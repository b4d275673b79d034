"""The shipped wording 2026.2 and MVP-2026.1, and the customer-question inventories."""

from pathlib import Path

import pytest

from claims.evaluation.inventory import inventories_load
from knowledge.wording_format import MAX_QUESTIONS, MIN_QUESTIONS, IdHistory, wording_parse

WORDING = Path(__file__).resolve().parents[2] / "knowledge" / "content" / "wording"
DOCUMENTS = {"motor": "NW-MOTOR", "home": "NW-HOME", "contents": "NW-CONTENTS"}


def parsed(line: str, label: str, history: IdHistory | None = None):
    source = (WORDING / f"{DOCUMENTS[line]}-{label}.md").read_text(encoding="utf-8")
    return wording_parse(source, line=line, history=history)


@pytest.mark.parametrize("line", DOCUMENTS)
def test_both_versions_pass_the_validator_with_ids_only_appended(line):
    mvp = parsed(line, "MVP-2026.1")
    assert mvp.ok, [str(e) for e in mvp.errors]
    ids = frozenset(c.clause_id for c in mvp.clauses)
    current = parsed(line, "2026.2", IdHistory(ever=ids, latest=ids, latest_label="MVP-2026.1"))
    assert current.ok, [str(e) for e in current.errors]
    assert ids <= {c.clause_id for c in current.clauses}
    assert 18 <= len(current.clauses) <= 30


@pytest.mark.parametrize("line", DOCUMENTS)
def test_every_clause_fits_in_1500_characters(line):
    for label in ("MVP-2026.1", "2026.2"):
        for clause in parsed(line, label).clauses:
            assert clause.char_count <= 1500, (clause.clause_id, clause.char_count)


@pytest.mark.parametrize("line", DOCUMENTS)
def test_the_wording_is_headed_as_synthetic(line):
    for label in ("MVP-2026.1", "2026.2"):
        head = (WORDING / f"{DOCUMENTS[line]}-{label}.md").read_text(encoding="utf-8")[:600]
        assert "not a real insurance contract" in head
        assert "MVP demo" not in head


def test_mtr_ben_03_carries_the_seed_terms():
    clause = next(c for c in parsed("motor", "2026.2").clauses if c.clause_id == "MTR-BEN-03")
    assert clause.schedule_section == "alternative_transport"
    for term in (
        "NZD 60 a day",
        "21 days",
        "7 days after",
        "fuel",
        "tolls",
        "parking",
        "No excess",
        "MTR-COV-01",
        "only if your schedule lists alternative transport",
    ):
        assert term in clause.text, term
    mvp_ids = {c.clause_id for c in parsed("motor", "MVP-2026.1").clauses}
    assert "MTR-BEN-03" not in mvp_ids  # the legacy motor wording had no hire-car clause


def _demo_card_ids() -> set[str]:
    import csv

    from knowledge.card_demo import DEMO_CARDS

    with DEMO_CARDS.open(encoding="utf-8", newline="") as handle:
        return {row["card_id"] for row in csv.DictReader(handle)}


DEMO_CARD_IDS = _demo_card_ids()


@pytest.mark.parametrize("inventory", inventories_load(), ids=lambda i: i.line)
def test_every_inventory_row_maps_to_a_customer_clause_of_2026_2(inventory):
    clauses = {c.clause_id: c for c in parsed(inventory.line, "2026.2").clauses}
    assert len(inventory.questions) >= 40
    ids = {q.id for q in inventory.questions}
    for question in inventory.questions:
        assert question.coverage in {"covered", "partial", "not_included", "no_clause", "card"}
        if question.coverage == "no_clause":
            assert question.expected == (), question
        else:
            assert question.expected, question
        if question.card:  # answered by a demo answer card, not by a clause
            assert set(question.expected) <= DEMO_CARD_IDS, question
            continue
        for clause_id in question.expected:
            assert clause_id in clauses, (question.id, clause_id)
            assert clauses[clause_id].visibility == "customer", (question.id, clause_id)
        if question.after:
            assert question.after in ids, question
    expected = {cid for q in inventory.questions for cid in q.expected}
    customer = {cid for cid, c in clauses.items() if c.visibility == "customer"}
    assert customer <= expected, f"clauses no question asks about: {sorted(customer - expected)}"
    assert sum(q.no_clause for q in inventory.questions) >= 2
    assert sum(q.card for q in inventory.questions) >= 8
    assert sum(bool(q.after) for q in inventory.questions) >= 4


HELDOUT = Path(__file__).resolve().parents[2] / "knowledge" / "content" / "inventory" / "heldout"


@pytest.mark.parametrize(
    "inventory", inventories_load(directory=HELDOUT), ids=lambda i: f"heldout-{i.line}"
)
def test_the_held_out_questions_map_to_customer_clauses_too(inventory):
    clauses = {c.clause_id: c for c in parsed(inventory.line, "2026.2").clauses}
    assert len(inventory.questions) >= 20
    for question in inventory.questions:
        assert question.coverage in {"covered", "partial", "not_included", "no_clause"}, question
        assert (question.coverage == "no_clause") == (question.expected == ()), question
        for clause_id in question.expected:
            assert clauses[clause_id].visibility == "customer", (question.id, clause_id)


@pytest.mark.parametrize("line", DOCUMENTS)
def test_every_customer_clause_carries_similar_questions(line):
    for label in ("MVP-2026.1", "2026.2"):
        for clause in parsed(line, label).clauses:
            if clause.visibility == "internal":
                assert clause.questions == ()
            else:
                assert MIN_QUESTIONS <= len(clause.questions) <= MAX_QUESTIONS, (
                    label,
                    clause.clause_id,
                )


def test_the_main_cover_clauses_take_the_generic_cover_questions():
    def questions(line, clause_id):
        clauses = parsed(line, "2026.2").clauses
        return " ".join(next(c for c in clauses if c.clause_id == clause_id).questions).lower()

    assert "stolen" in questions("motor", "MTR-COV-01")
    assert "what does comprehensive car insurance cover" in questions("motor", "MTR-COV-01")
    assert "what does homeowners insurance cover" in questions("home", "HOM-COV-01")
    assert "what does renters insurance cover" in questions("contents", "CNT-COV-01")
    assert "loss of use" in questions("home", "HOM-BEN-01")
