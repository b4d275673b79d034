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
# Our own examples: questions and labels in one file (fits-examples.tsv's shape).
EXAMPLES = (
    "id\tline\texpected\tsplit\tquestion\n"
    "E-1\tmotor\tnone\ttune\tCan my parrot sit in the front of the tow truck?\n"
    "E-2\thome\tHOM-EXC-02\ttune\tThe dog chewed the skirting boards, is that covered?\n"
    "E-3\tcontents\tnone\ttest\tWhat is the best brand of deadbolt?\n"
)


def train(questions, labels, examples, output) -> None:
    call_command(
        "train_selector",
        *("--questions", str(questions), "--labels", str(labels)),
        *("--examples", str(examples), "--output", str(output)),
        stdout=StringIO(),
    )


def test_training_is_deterministic_and_never_reads_the_test_half(demo, tmp_path):
    questions, labels = tmp_path / "q.tsv", tmp_path / "l.tsv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    labels.write_text(LABELS, encoding="utf-8")
    examples = tmp_path / "examples.tsv"
    examples.write_text(EXAMPLES, encoding="utf-8")
    outputs = []
    for n in (1, 2):
        out = tmp_path / f"trained-{n}.json"
        train(questions, labels, examples, out)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    from claims.evaluation.inventory import inventories_load

    standalone = sum(1 for i in inventories_load() for q in i.questions if not q.after)
    assert data["meta"]["split"] == "tune"
    # the inventories, the 4 tune rows and the answerable tune example (E-2,
    # for the reranker only); E-1 ('none') trains nothing, and T-5 and E-3
    # (test half) are never used
    assert data["meta"]["questions"] == standalone + 4 + 1
    assert data["meta"]["reranker_only_examples"] == 1
    assert data["meta"]["answerable"] + data["meta"]["nothing_fits"] == standalone + 4
    assert "Does my insurance pay" not in outputs[0].decode()
    assert "parrot" not in outputs[0].decode()
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


def test_a_missing_examples_file_is_a_clear_error(demo, tmp_path):
    questions, labels = tmp_path / "q.tsv", tmp_path / "l.tsv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    labels.write_text(LABELS, encoding="utf-8")
    out = tmp_path / "x.json"
    with pytest.raises(CommandError, match=r"No such \w+ file: .*missing\.tsv"):
        train(questions, labels, tmp_path / "missing.tsv", out)
    assert not out.exists()


def test_the_shipped_model_was_trained_on_the_labels_and_examples_in_the_repository():
    """A label or example changed without running train_selector shows here."""
    import hashlib

    from django.conf import settings

    from claims.agent.selection.learned import MODEL_PATH
    from claims.management.commands.evaluate import REAL_LABELS_RELPATH
    from claims.management.commands.train_selector import EXAMPLES_RELPATH

    meta = json.loads(MODEL_PATH.read_text(encoding="utf-8"))["meta"]
    base = settings.BASE_DIR
    for key, relpath in (
        ("labels_sha256", REAL_LABELS_RELPATH),
        ("examples_sha256", EXAMPLES_RELPATH),
    ):
        digest = hashlib.sha256((base / relpath).read_bytes()).hexdigest()
        assert meta[key] == digest, f"{relpath} changed: run python manage.py train_selector"
