"""``validate_selector``: train on part of the tune half, score the rest, never the test half."""

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claims.agent.selection.learned import MODEL_PATH, model_served, trained_selector
from claims.management.commands.validate_selector import inner_labels

pytestmark = pytest.mark.django_db

QUESTIONS = "id\tline\tdomain\tquestion\n" + "".join(
    f"V-{n}\t{line}\tx\t{text}\n"
    for n, (line, text) in enumerate(
        [
            ("motor", "Will my policy pay for a rental car while mine is repaired?"),
            ("motor", "My windscreen cracked, am I covered?"),
            ("motor", "What is my excess if I claim?"),
            ("motor", "Is my car covered if it is stolen?"),
            ("offtopic", "What is the cash value of a whole life policy?"),
            ("offtopic", "Should I buy dental insurance?"),
            ("home", "Is my house covered if a storm damages the roof?"),
            ("home", "Does my home insurance cover a burst pipe?"),
            ("contents", "Is my laptop covered if someone steals it?"),
            ("contents", "Are my belongings covered when I move house?"),
            ("motor", "Never ask this parrot question of the test half"),
        ]
    )
)
LABELS = "id\tline\texpected\tsplit\n" + "".join(
    f"V-{n}\t{line}\t{expected}\t{split}\n"
    for n, (line, expected, split) in enumerate(
        [
            ("motor", "MTR-BEN-03", "tune"),
            ("motor", "MTR-COV-04 MTR-BEN-04", "tune"),
            ("motor", "MTR-XS-01", "tune"),
            ("motor", "MTR-COV-01", "tune"),
            ("offtopic", "none", "tune"),
            ("offtopic", "none", "tune"),
            ("home", "HOM-COV-01", "tune"),
            ("home", "HOM-COV-01", "tune"),
            ("contents", "CNT-COV-01", "tune"),
            ("contents", "CNT-COV-01", "tune"),
            ("motor", "MTR-COV-01", "test"),
        ]
    )
)


@pytest.fixture
def files(tmp_path):
    questions, labels = tmp_path / "q.tsv", tmp_path / "l.tsv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    labels.write_text(LABELS, encoding="utf-8")
    return questions, labels


def test_the_tune_half_is_split_in_two_and_the_test_half_blanked(files):
    _, labels = files
    rows = [r.split("\t") for r in inner_labels(labels, "inner-0").splitlines()[1:]]
    splits = {r[0]: r[3] for r in rows}
    assert splits["V-10"] == ""  # the test row: neither trained on nor asked
    assert {splits[f"V-{n}"] for n in range(10)} == {"tune", "test"}
    again = {
        r.split("\t")[0]: r.split("\t")[3] for r in inner_labels(labels, "inner-1").splitlines()[1:]
    }
    assert again != splits  # another salt, another split


def test_each_split_is_trained_apart_and_scored_through_the_endpoint(demo, files, monkeypatch):
    from claims.evaluation.client import EndpointClient

    questions, labels = files
    asked = []
    send = EndpointClient.message_send

    def recording(self, conversation, text, **kwargs):
        asked.append(text)
        return send(self, conversation, text, **kwargs)

    monkeypatch.setattr(EndpointClient, "message_send", recording)
    shipped = hashlib.sha256(MODEL_PATH.read_bytes()).hexdigest()
    out = StringIO()
    call_command(
        "validate_selector",
        *("--questions", str(questions), "--labels", str(labels), "--splits", "2"),
        *("--examples", "none", "--misses"),
        stdout=out,
    )
    text = out.getvalue()
    assert text.count("split inner-") == 2
    held = sum(
        r.split("\t")[3] == "test"
        for salt in ("inner-0", "inner-1")
        for r in inner_labels(labels, salt).splitlines()[1:]
    )
    assert len(asked) == held > 0  # each split asks its held-out part, once
    assert not any("parrot" in t for t in asked)  # never the test half
    summary = text.strip().splitlines()[-1]
    assert summary.startswith("Summed over 2 split(s): returned ")
    assert summary.endswith(f"of {held}")
    # --misses: one line per wrong answer, by id; the question text stays in ../shared
    right = int(summary.rsplit("right ", 1)[1].split(" of ")[0])
    misses = [row for row in text.splitlines() if row.startswith("  miss inner-")]
    assert len(misses) == held - right
    assert all(row.split("\t")[1].startswith("V-") for row in misses)
    assert not any(t in text for t in asked)
    assert hashlib.sha256(MODEL_PATH.read_bytes()).hexdigest() == shipped
    assert trained_selector() is not None and trained_selector().meta.get("split") == "tune"


def test_a_served_model_is_used_only_for_the_duration(tmp_path):
    import json

    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    data["fits_threshold"] = 0.123
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    shipped = trained_selector().fits_threshold
    with model_served(other):
        assert trained_selector().fits_threshold == 0.123
    assert trained_selector().fits_threshold == shipped


@pytest.mark.parametrize(
    "args, message",
    [
        (("--splits", "0"), "--splits must be between 1 and 12"),
        (("--labels", "/nonexistent/labels.tsv"), "No labels file at"),
        (("--questions", "/nonexistent/q.tsv"), "No questions file at"),
        (("--labels", "BAD"), "split 'middle' is not one of"),
    ],
)
def test_bad_arguments_are_clear_errors(files, args, message):
    questions, labels = files
    bad = labels.with_name("bad.tsv")
    bad.write_text(LABELS + "V-99\tmotor\tnone\tmiddle\n", encoding="utf-8")
    base = {"--questions": str(questions), "--labels": str(labels)}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = str(bad) if value == "BAD" else value
    with pytest.raises(CommandError, match=message):
        call_command("validate_selector", *[x for kv in base.items() for x in kv])


def test_a_model_the_hybrid_cannot_use_stops_the_run(demo, files, monkeypatch):
    """Measuring the hybrid's RRF fallback instead of the trained stages would be
    a silent wrong figure: a served file that does not load is an error."""
    from claims.agent.selection import learned

    def unusable(path=None):
        return None

    unusable.cache_clear = lambda: None
    monkeypatch.setattr(learned, "trained_selector", unusable)
    questions, labels = files
    with pytest.raises(CommandError, match="cannot be used"):
        call_command(
            "validate_selector",
            *("--questions", str(questions), "--labels", str(labels), "--splits", "1"),
            *("--examples", "none"),
            stdout=StringIO(),
        )
