"""``manage.py train_selector``: reproducible training on labelled questions only."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db

QUESTIONS = (
    "id\tline\tquestion\n"
    "T-1\tmotor\tDoes my insurance pay for a hire car after a crash?\n"
    "T-2\tofftopic\tHow do whole life policies build cash value?\n"
    "T-3\thome\tIs storm damage to the roof covered?\n"
    "T-4\tofftopic\tWhen can I draw down my pension savings?\n"
    "T-5\tcontents\tWhat is the most you pay for my jewellery?\n"
)
LABELS = (
    "id\tline\texpected\tsplit\n"
    "T-1\tmotor\tMTR-BEN-03\ttune\n"
    "T-2\tofftopic\tnone\ttune\n"
    "T-3\thome\tHOM-COV-02\ttune\n"
    "T-4\tofftopic\tnone\ttune\n"
    "T-5\tcontents\tCNT-BEN-02\ttest\n"
)


def test_training_is_deterministic_and_never_reads_the_test_half(demo, tmp_path):
    questions, labels = tmp_path / "q.tsv", tmp_path / "l.tsv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    labels.write_text(LABELS, encoding="utf-8")
    outputs = []
    for n in (1, 2):
        out = tmp_path / f"trained-{n}.json"
        call_command(
            "train_selector",
            "--questions",
            str(questions),
            "--labels",
            str(labels),
            "--output",
            str(out),
            stdout=StringIO(),
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    from claims.evaluation.inventory import inventories_load

    standalone = sum(1 for i in inventories_load() for q in i.questions if not q.after)
    assert data["meta"]["split"] == "tune"
    # the inventories and the 4 tune rows; T-5 (test half) is never used
    assert data["meta"]["questions"] == standalone + 4
    assert "Does my insurance pay" not in outputs[0].decode()
    assert 0 < data["fits_threshold"] < 1 and len(data["reranker"]["coef"]) == 21


def test_a_missing_questions_file_is_a_clear_error(demo, tmp_path):
    with pytest.raises(CommandError, match="No such questions file"):
        call_command(
            "train_selector",
            "--questions",
            str(tmp_path / "none.tsv"),
            "--output",
            str(tmp_path / "x.json"),
            stdout=StringIO(),
        )
