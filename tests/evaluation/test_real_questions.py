"""``evaluate --questions``: any TSV of real questions through the claim endpoint."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db

QUESTIONS = (
    "id\tline\tdomain\tquestion\n"
    "Q-1\tmotor\tauto\tWill my policy pay for a rental car while mine is repaired?\n"
    "Q-2\tofftopic\tlife\tWhat is the cash value of a whole life policy?\n"
    "Q-3\tmotor\tauto\tWas the decline of my claim justified?\n"
    "Q-4\thome\thome\tIs my house covered if a storm damages the roof?\n"
    "Q-5\tcontents\trenters\tIs my laptop covered if someone steals it?\n"
)
LABELS = (
    "id\tline\texpected\tsplit\n"
    "Q-1\tmotor\tMTR-BEN-03\ttest\n"
    "Q-2\tofftopic\tnone\ttest\n"
    "Q-3\tmotor\tdecision\ttest\n"
    "Q-4\thome\tHOM-COV-01\ttune\n"
)


@pytest.fixture
def files(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    questions = tmp_path / "questions.tsv"
    labels = tmp_path / "labels.tsv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    labels.write_text(LABELS, encoding="utf-8")
    return questions, labels, tmp_path / "reports"


def _report(reports):
    [path] = reports.glob("evaluation-*.json")
    return json.loads(path.read_text())


def _evaluate(questions, labels, *options: str) -> str:
    """``evaluate --questions … --labels …`` with ``options``; what it printed."""
    out = StringIO()
    call_command(
        "evaluate",
        "--questions",
        str(questions),
        "--labels",
        str(labels),
        "--no-scenarios",
        *options,
        stdout=out,
    )
    return out.getvalue()


def test_labelled_questions_of_one_half_are_scored_per_line(demo, files):
    questions, labels, reports = files
    printed = _evaluate(questions, labels, "--split", "test", "--selector", "hybrid")
    report = _report(reports)
    assert report["source"]["split"] == "test" and report["source"]["asked"] == 3
    [hybrid] = report["selectors"]
    # Q-4 is in the tune half and Q-5 unlabelled: neither is asked
    assert set(hybrid["lines"]) <= {"motor", "home", "contents"}
    asked = sum(
        f["questions"] + f["no_clause_questions"] + f["decision_questions"] + f["unlabelled"]
        for f in hybrid["lines"].values()
    )
    assert asked == 3
    motor = hybrid["lines"]["motor"]
    assert motor["questions"] == 1 and motor["returned"] == 1.0
    assert motor["decision_questions"] == 1
    assert hybrid["must_be_zero"]["server_error"] == 0
    assert "Real questions: 3" in printed


def test_without_labels_offtopic_questions_must_select_nothing(demo, files):
    questions, _, reports = files
    _evaluate(questions, "", "--selector", "bm25")
    [run] = _report(reports)["selectors"]
    lines = run["lines"]
    assert sum(f["no_clause_questions"] for f in lines.values()) == 1
    assert sum(f["unlabelled"] for f in lines.values()) == 4
    assert sum(f["questions"] for f in lines.values()) == 0


def test_a_no_clause_question_a_card_answers_is_counted_apart(demo, files, tmp_path):
    questions = tmp_path / "card-questions.tsv"
    labels = tmp_path / "card-labels.tsv"
    questions.write_text("id\tline\tquestion\nQ-9\tmotor\tWhat is your phone number?\n")
    labels.write_text("id\tline\texpected\tsplit\nQ-9\tmotor\tnone\ttest\n")
    printed = _evaluate(questions, labels, "--selector", "hybrid")
    [hybrid] = _report(files[2])["selectors"]
    motor = hybrid["lines"]["motor"]
    # not queued, so not "nothing fits" right; but shown apart from a wrong clause
    assert motor["nothing_fits"] == 0.0
    assert motor["nothing_fits_card_answered"] == 1
    assert "(+1 answered by a card)" in printed


@pytest.mark.parametrize(
    ("questions", "labels", "message"),
    [
        ("id\tquestion\nQ-1\thello\n", None, "line 1: the header must name the columns"),
        ("id\tline\tquestion\nQ-1\tboats\tIs my boat covered?\n", None, "line 2: line 'boats'"),
        ("id\tline\tquestion\nQ-1\tmotor\tA?\nQ-1\tmotor\tB?\n", None, "line 3: Q-1 appears twice"),
        (QUESTIONS, "id\texpected\nQ-1\tMTR-BEN-3\n", "line 2: expected 'MTR-BEN-3'"),
        (QUESTIONS, "id\texpected\tsplit\nQ-1\tnone\tdev\n", "line 2: split 'dev'"),
    ],
)
def test_a_bad_file_is_refused_with_the_line(demo, files, questions, labels, message):
    qpath, lpath, _ = files
    qpath.write_text(questions, encoding="utf-8")
    args = ["--questions", str(qpath), "--no-scenarios"]
    if labels is not None:
        lpath.write_text(labels, encoding="utf-8")
        args += ["--labels", str(lpath)]
    with pytest.raises(CommandError, match=message):
        call_command("evaluate", *args, stdout=StringIO())


def test_a_missing_questions_file_is_named(demo, files, tmp_path):
    with pytest.raises(CommandError, match="No such questions file"):
        call_command(
            "evaluate",
            "--questions",
            str(tmp_path / "nope.tsv"),
            "--no-scenarios",
            stdout=StringIO(),
        )


def test_split_needs_labels(demo, files):
    questions, _, _ = files
    with pytest.raises(CommandError, match="--split needs labels"):
        call_command(
            "evaluate",
            "--questions",
            str(questions),
            "--labels",
            "",
            "--split",
            "tune",
            "--no-scenarios",
            stdout=StringIO(),
        )


def test_bench_concurrent_refuses_an_unknown_selector(demo):
    with pytest.raises(CommandError, match="Unknown selector"):
        call_command("bench_turns", "--concurrent", "--selector", "hybrid,nope", stdout=StringIO())


def test_a_file_saved_by_a_spreadsheet_reads_the_same(tmp_path):
    """A byte-order mark, Windows line ends, a blank line and a CSV-quoted field."""
    from claims.evaluation import realq

    plain = tmp_path / "plain.tsv"
    plain.write_text(
        'id\tline\tquestion\nS-1\tmotor\tIs a "courtesy" car covered?\nS-2\thome\tFlood?\n',
        encoding="utf-8",
    )
    saved = tmp_path / "saved.tsv"
    saved.write_bytes(
        b"\xef\xbb\xbfid\tline\tquestion\r\n"
        b'S-1\tmotor\t"Is a ""courtesy"" car covered?"\r\n\r\nS-2\thome\tFlood?\r\n'
    )
    labels = tmp_path / "labels.tsv"
    labels.write_bytes(b"\xef\xbb\xbfid\texpected\r\nS-1\tMTR-BEN-03\r\nS-2\tHOM-COV-05\r\n")

    def asked(path):
        loaded = realq.questions_load(path, labels=realq.labels_load(labels))
        return [(inv.line, q.id, q.text, q.expected) for inv in loaded for q in inv.questions]

    assert asked(saved) == asked(plain)
    assert ("motor", "S-1", 'Is a "courtesy" car covered?', ("MTR-BEN-03",)) in asked(saved)


def test_labels_written_by_another_tool_read_the_same(tmp_path):
    """Ids in any case and separated by commas or bars; keywords and lines in any case."""
    from claims.evaluation import realq

    questions = tmp_path / "q.tsv"
    questions.write_text(
        "id\tline\tquestion\nT-1\tAuto\tIs my car covered if stolen?\n"
        "T-2\tRenters\tIs my bike covered?\nT-3\tOther\tWhat is term life?\n"
        "T-4\tmotor\tWas the decline fair?\n",
        encoding="utf-8",
    )
    labels = tmp_path / "l.tsv"
    labels.write_text(
        "id\texpected\tline\nT-1\tmtr-cov-01, MTR-COV-02\tauto\nT-2\tCNT-COV-01|CNT-COV-02\t\n"
        "T-3\tNone\t\nT-4\tDecision:mtr-clm-01\t\n",
        encoding="utf-8",
    )
    loaded = realq.questions_load(questions, labels=realq.labels_load(labels))
    asked = {q.id: (inv.line, q.coverage, q.expected) for inv in loaded for q in inv.questions}
    assert asked["T-1"] == ("motor", "clause", ("MTR-COV-01", "MTR-COV-02"))
    assert asked["T-2"] == ("contents", "clause", ("CNT-COV-01", "CNT-COV-02"))
    assert asked["T-3"][1:] == ("no_clause", ())
    assert asked["T-4"] == ("motor", "decision", ("MTR-CLM-01",))
    # what is not a clause id is still refused, with the line
    labels.write_text("id\texpected\nT-1\tMTR-COV-01, the cover clause\n", encoding="utf-8")
    with pytest.raises(realq.RealQuestionsError, match="line 2"):
        realq.labels_load(labels)
