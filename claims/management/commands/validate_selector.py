"""python manage.py validate_selector: measure a selector change on the tune half only.

The test half of the real-question labels is for reporting, once. To decide
between two versions of the hybrid (a feature, a rule, a cut-off) without
reading it, this command splits the **tune** half in two, several times over
(``--splits``; each split is fixed by a hash of a salt and the question id):
for each split it trains the learned stages with ``train_selector`` on the
inventories, our examples and one part, into a temporary file, serves the
hybrid from that file and asks the other part through the claim endpoint,
exactly as ``evaluate --questions … --split test`` does. It prints, per split
and summed, the expected clause returned, "nothing fits" right and decision
requests queued.

The test-half rows are blanked in the temporary labels, so neither training
nor scoring ever reads them; the shipped ``trained.json`` is not touched.
Summed over three splits the tune half is asked about 600 times; runs of the
same tree agree exactly (everything is deterministic), and differences of a
handful of questions are within what another salt moves.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from claims.agent.selection import learned as L
from claims.evaluation import harness, realq
from claims.evaluation.client import EndpointClient, measurement_client_ensure
from claims.management.commands.evaluate import (
    REAL_LABELS_RELPATH,
    demo_ensure,
    measurement_records_delete,
    real_questions_default,
)

MAX_SPLITS = 12
KINDS = (  # (count key, question-count key) of a run's per-line figures
    ("returned", "questions"),
    ("nothing_fits", "no_clause_questions"),
    ("decision_queued", "decision_questions"),
)


def inner_labels(source: Path, salt: str) -> str:
    """The labels TSV with its tune rows split in two by ``salt`` and its test rows blanked."""
    text = source.read_text(encoding="utf-8-sig")
    rows = list(csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or "split" not in rows[0] or "id" not in rows[0]:
        raise CommandError(f"{source}: a labels TSV with the columns id, …, split is needed.")
    qid, col = rows[0].index("id"), rows[0].index("split")
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE)
    writer.writerow(rows[0])
    for row in rows[1:]:
        row = list(row) + [""] * (col + 1 - len(row))  # no split given: neither half
        if row[col] == "tune":
            digest = hashlib.sha256(f"{salt}{row[qid]}".encode()).hexdigest()
            row[col] = "tune" if int(digest, 16) % 2 == 0 else "test"
        else:
            row[col] = ""
        writer.writerow(row)
    return out.getvalue()


@dataclass
class Tally:
    """Right / asked per kind and returned / asked per line, over one run or several."""

    kinds: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k, _ in KINDS})
    lines: dict[str, list[int]] = field(default_factory=dict)

    def add(self, run: harness.SelectorRun) -> None:
        for line, figures in sorted(run.lines.items()):
            for key, asked in KINDS:
                self.kinds[key][0] += figures["counts"][key]
                self.kinds[key][1] += figures.get(asked) or 0
            if figures["questions"]:
                got = self.lines.setdefault(line, [0, 0])
                got[0] += figures["counts"]["returned"]
                got[1] += figures["questions"]

    def describe(self) -> str:
        (r, rn), (nf, nn), (dq, dn) = (self.kinds[k] for k, _ in KINDS)
        lines = ", ".join(f"{line} {a}/{n}" for line, (a, n) in self.lines.items())
        return (
            f"returned {r}/{rn} ({lines}); nothing fits {nf}/{nn}; "
            + (f"decision requests queued {dq}/{dn}; " if dn else "")
            + f"right {r + nf + dq} of {rn + nn + dn}"
        )


def _miss_line(salt: str, miss: dict) -> str:
    """One wrong answer, by id (the question text stays in ../shared)."""
    return "\t".join(
        [
            f"  miss {salt}",
            miss["question_id"],
            miss["line"],
            miss["kind"],
            "expected=" + ",".join(miss["expected"]) if miss["expected"] else "expected=-",
            "returned=" + (",".join(miss["returned"]) or "-"),
            f"queued={miss['pending_reason'] or '-'}",
        ]
    )


@contextlib.contextmanager
def _quiet(verbosity: int):
    """Every turn logs its tool calls at INFO; below -v 2 only warnings reach the terminal."""
    root = logging.getLogger()
    before = root.level
    if verbosity < 2:
        root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.setLevel(before)


class Command(BaseCommand):
    help = (
        "Train on part of the tune half and score the rest through the claim endpoint, "
        "for several splits; never reads the test half."
    )

    def add_arguments(self, parser):
        parser.add_argument("--questions", help="The questions TSV (id, line, question).")
        parser.add_argument(
            "--labels",
            help=f"The labels TSV with a split column (default {REAL_LABELS_RELPATH}).",
        )
        parser.add_argument(
            "--examples",
            help="Passed to train_selector (default: its own; 'none' to leave ours out).",
        )
        parser.add_argument(
            "--splits", type=int, default=3, help=f"How many splits (1-{MAX_SPLITS}; default 3)."
        )
        parser.add_argument(
            "--salt", default="inner", help="Salt of the splits (another salt, other splits)."
        )
        parser.add_argument(
            "--misses",
            action="store_true",
            help="Also print each wrong answer: id, line, kind, expected, returned, queue reason.",
        )

    def handle(self, *args, **options):
        splits = options["splits"]
        if not 1 <= splits <= MAX_SPLITS:
            raise CommandError(f"--splits must be between 1 and {MAX_SPLITS}.")
        questions = Path(options["questions"]) if options["questions"] else real_questions_default()
        labels_path = Path(options["labels"] or Path(settings.BASE_DIR) / REAL_LABELS_RELPATH)
        for what, path in (("questions", questions), ("labels", labels_path)):
            if not path.is_file():
                raise CommandError(f"No {what} file at {path}.")
        try:
            realq.labels_load(labels_path)  # a malformed row is reported before any training
        except realq.RealQuestionsError as exc:
            raise CommandError(str(exc)) from exc
        if demo_ensure(self.stdout):
            self.stdout.write("Loaded the demo data (it was missing).")
        client = EndpointClient(username=measurement_client_ensure())
        total = Tally()
        try:
            with (
                _quiet(options["verbosity"]),
                tempfile.TemporaryDirectory(prefix="validate-selector-") as tmp,
            ):
                for k in range(splits):
                    salt = f"{options['salt']}-{k}"
                    run = self._split_run(client, Path(tmp) / salt, questions, labels_path, options)
                    one = Tally()
                    one.add(run)
                    total.add(run)
                    zero = ", ".join(f"{name}={n}" for name, n in run.must_be_zero.items() if n)
                    self.stdout.write(f"split {salt}: {one.describe()}; must be zero {zero or 0}")
                    if options["misses"]:
                        for miss in run.misses:
                            self.stdout.write(_miss_line(salt, miss))
        finally:
            measurement_records_delete()
        self.stdout.write(f"Summed over {splits} split(s): {total.describe()}")

    def _split_run(self, client, folder, questions, labels_path, options):
        """Train on the tune part of the split named ``folder.name``; ask its held-out part."""
        folder.mkdir()
        labels = folder / "labels.tsv"
        labels.write_text(inner_labels(labels_path, folder.name), encoding="utf-8")
        model = folder / "trained.json"
        train = {"questions": str(questions), "labels": str(labels)}
        if options["examples"]:
            train["examples"] = options["examples"]
        call_command("train_selector", output=str(model), stdout=io.StringIO(), **train)
        try:
            inventories = realq.questions_load(
                questions, labels=realq.labels_load(labels), split="test"
            )
        except realq.RealQuestionsError as exc:
            raise CommandError(str(exc)) from exc
        with L.model_served(model):
            if L.trained_selector() is None:  # the hybrid would fall back to its RRF rules
                raise CommandError(f"train_selector wrote {model}, which cannot be used.")
            return harness.inventory_run(client, inventories, selector="hybrid")
