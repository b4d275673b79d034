"""``evaluate_decisions``: the decision-request recogniser, measured on labelled examples."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claims.evaluation.decisions import examples_load

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = StringIO()
    call_command("evaluate_decisions", *args, stdout=out)
    return out.getvalue()


def _figures(output: str, name: str) -> tuple[int, int, int, int]:
    line = next(x for x in output.splitlines() if x.startswith(f"{name}:"))
    line = re.sub(r" \(rules alone \d+\)", "", line)
    recognised = line.split("decisions recognised ")[1].split(",")[0]
    hits = line.split("false hits ")[1]
    got, of = recognised.split("/") if "/" in recognised else ("0", "0")
    fh, others = hits.split("/")
    return int(got), int(of), int(fh), int(others)


def test_the_held_out_examples_are_recognised_with_few_false_hits(tmp_path):
    output = _run("--questions", str(tmp_path / "absent.tsv"))
    got, of, false_hits, others = _figures(output, "examples (heldout)")
    assert of >= 40 and others >= 30  # enough to measure on
    assert got / of >= 0.95
    # the held-out "other" rows are hard negatives ("should I pay the excess to the
    # repairer or to you?"); the classifier may take a few of them
    assert false_hits / others <= 0.03
    # the rules alone, side by side: the classifier only adds hits
    line = next(x for x in output.splitlines() if x.startswith("examples (heldout):"))
    rules_alone = int(line.split("(rules alone ")[1].split(")")[0])
    assert rules_alone < got
    assert "rules alone" not in _run("--rules-only", "--questions", str(tmp_path / "absent.tsv"))
    # every false hit on the inventories is listed with the rule that fired
    _, _, inventory_hits, _ = _figures(output, "inventories")
    assert output.count("false hit [inventories]") == inventory_hits


def test_the_examples_are_labelled_both_ways_in_both_locales():
    examples = examples_load()
    assert {(e.label, e.locale) for e in examples} == {
        ("decision", "nz"),
        ("decision", "us"),
        ("other", "nz"),
        ("other", "us"),
    }
    assert len({e.id for e in examples}) == len(examples)
    assert {e.split for e in examples} == {"dev", "heldout"}


def test_real_questions_are_counted_by_id_never_by_text(tmp_path):
    questions = tmp_path / "q.tsv"
    labels = tmp_path / "l.tsv"
    questions.write_text(
        "id\tline\tquestion\n"
        "R-1\tmotor\tWho is at fault? A van reversed into me.\n"
        "R-2\tmotor\tWas the decline of my claim for the stolen car justified?\n"
        "R-3\tmotor\tIs my car covered if it is stolen?\n",
        encoding="utf-8",
    )
    labels.write_text(
        "id\tline\texpected\tsplit\nR-1\tmotor\tMTR-COV-01\ttest\n"
        "R-2\tmotor\tdecision\ttest\nR-3\tmotor\tMTR-COV-01\ttest\n",
        encoding="utf-8",
    )
    output = _run("--questions", str(questions), "--labels", str(labels))
    assert _figures(output, "real questions (test)") == (1, 1, 1, 2)
    assert "false hit [real questions (test)] R-1 (fault)" in output
    assert "A van reversed" not in output


def test_a_malformed_examples_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text(
        "id\tlabel\tlocale\tsplit\ttext\nX-1\tmaybe\tnz\tdev\tHello?\n", encoding="utf-8"
    )
    with pytest.raises(CommandError, match="line 2"):
        _run("--examples", str(bad))


def test_no_example_copies_a_real_question():
    """The examples are our own words: none is (nearly) a research-only real question."""
    from tests.knowledge.test_realq_labels import closest_real_overlaps

    examples = examples_load()
    overlaps = closest_real_overlaps([example.text for example in examples])
    for example, closest in zip(examples, overlaps, strict=True):
        assert closest < 0.67, example.id
