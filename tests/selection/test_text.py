"""Words, clause bodies and clause ids written in a message."""

import pytest

from claims.agent.selection.baseline import baseline_terms
from claims.agent.text import clause_body, ids_in_message

IDS = ("MTR-COV-01", "MTR-COV-02", "MTR-BEN-03", "MTR-XS-01")


@pytest.mark.parametrize(
    "message, expected",
    [
        ("what does MTR-BEN-03 say about fuel", ["MTR-BEN-03"]),
        ("mtr ben 3 please", ["MTR-BEN-03"]),
        ("MTR_BEN_03?", ["MTR-BEN-03"]),
        ("clause BEN-03 of the motor policy", ["MTR-BEN-03"]),
        ("clause ben 3", ["MTR-BEN-03"]),
        ("compare MTR-COV-02 and mtr-cov-1", ["MTR-COV-02", "MTR-COV-01"]),
        ("clause 3 of the motor policy", ["MTR-BEN-03"]),
        ("my mate ben 3 doors down", []),
        ("what about HOM-COV-01", []),
        ("MTR-BEN-99", []),
    ],
)
def test_clause_ids_written_in_a_message_are_found(message, expected):
    assert ids_in_message(message, IDS) == expected


def test_clause_body_drops_heading_and_metadata():
    text = "## MTR-BEN-03 - Hire car\nKind: benefit\nVisibility: customer\n\nBody line.\n- a"
    assert clause_body(text) == "Body line.\n- a"


def test_baseline_terms_follow_the_seed_example():
    # seed 000, P2: only these five words survive the filter
    message = "Will my policy pay for a rental car while mine is repaired?"
    assert baseline_terms(message) == ["will", "pay", "rental", "mine", "repaired"]
    assert baseline_terms("Is my car covered?") == ["covered"]
