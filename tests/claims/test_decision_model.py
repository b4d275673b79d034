"""The decision-request classifier (`claims.agent.decision_model`) beside the rules.

It reads the turn's embedding of the message, adds hits only where a decision
word or a past event is in the message, and is retrained reproducibly by
``train_decisions``.
"""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claims.agent import decision_model as DM
from claims.agent.intents import asks_for_decision, decision_reason, decision_rule
from claims.management.commands.evaluate import real_questions_default

# Written for this test, after the model was trained: no rule meets them.
ASKS_US_TO_JUDGE = [
    "you guys turned down my hail claim, bit rough don't you reckon?",
    "The Adjuster Decided My Water Damage Was Gradual. Honestly I Think He Got It Wrong?",
    "my policy got cancelled after the claim for the fence, surely that can't be on?",
]
GENERAL = [
    "how do you tell whether damage happened suddenly or over time?",
    "Does Home Insurance Cover A Leaking Roof?",
    "what does my policy say about hail?",
]


def test_the_shipped_model_is_for_the_served_embedder():
    from knowledge.embedding import default_embedder

    model = DM.decision_model()
    assert model is not None
    assert model.embedder == default_embedder().name
    assert 0 < model.threshold < 1
    assert model.meta["decisions"] > 100 and model.meta["rows"] > 500


@pytest.mark.parametrize("message", ASKS_US_TO_JUDGE)
def test_the_model_finds_a_decision_request_no_rule_meets(message):
    assert decision_rule(message) is None
    assert not asks_for_decision(message)  # the rules alone
    vector = DM.message_vector(message)
    assert decision_reason(message, vector=vector) == "model"


@pytest.mark.parametrize("message", GENERAL)
def test_a_general_question_stays_a_question(message):
    assert not asks_for_decision(message, vector=DM.message_vector(message))


def test_the_model_never_speaks_without_a_decision_word_or_a_past_event(monkeypatch):
    # Even a model that says "decision" to everything adds nothing to a message
    # with neither: the rules' own preconditions bound it.
    model = DM.decision_model()
    assert model is not None
    always = DM.DecisionModel(model.embedder, model.logistic, -1.0, model.meta)
    monkeypatch.setattr(DM, "decision_model", lambda path=None: always)
    vector = DM.message_vector(GENERAL[0])
    assert DM.model_probability(GENERAL[0], vector) is None
    assert not asks_for_decision(GENERAL[0], vector=vector)
    told = "the assessor came round on Monday, what happens next?"
    assert asks_for_decision(told, vector=DM.message_vector(told))


def test_a_missing_or_foreign_model_leaves_the_rules(tmp_path, caplog):
    DM.decision_model.cache_clear()
    try:
        assert DM.decision_model(tmp_path / "absent.json") is None
        foreign = tmp_path / "foreign.json"
        foreign.write_text(json.dumps({"features": "something else"}), encoding="utf-8")
        assert DM.decision_model(foreign) is None
        assert "run train_decisions again" in caplog.text
        # a vector of another size (another embedder) is not read
        message = ASKS_US_TO_JUDGE[0]
        assert DM.model_probability(message, np.zeros(7, dtype=np.float32)) is None
    finally:
        DM.decision_model.cache_clear()


@pytest.mark.django_db
def test_train_decisions_rewrites_the_shipped_model(tmp_path):
    if not real_questions_default().exists():
        pytest.skip("the research-only questions are not beside the repository")
    output = tmp_path / "decisions.json"
    out = StringIO()
    call_command("train_decisions", "--output", str(output), stdout=out)
    assert "wrote" in out.getvalue()
    fresh = json.loads(output.read_text(encoding="utf-8"))
    shipped = json.loads(DM.MODEL_PATH.read_text(encoding="utf-8"))
    assert fresh["meta"] == shipped["meta"]
    assert fresh["threshold"] == shipped["threshold"]
    # float kernels differ between CPUs in the last digits, not more
    np.testing.assert_allclose(fresh["model"]["coef"], shipped["model"]["coef"], atol=1e-5)
    assert "question" not in output.read_text(encoding="utf-8").lower()


def test_train_decisions_names_bad_input(tmp_path):
    bad = tmp_path / "examples.tsv"
    bad.write_text("id\tlabel\tlocale\tsplit\ttext\nX-1\tmaybe\tnz\tdev\thello\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 2"):
        call_command("train_decisions", "--examples", str(bad), "--output", str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()
