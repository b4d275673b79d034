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

import csv
import hashlib
import io
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from claims.agent.selection import learned as L
from claims.evaluation import harness, realq
from claims.evaluation.client import EndpointClient, measurement_client_ensure
from claims.evaluation.inventory import LINES
from claims.management.commands.evaluate import (
    REAL_LABELS_RELPATH,
    demo_ensure,
    measurement_records_delete,
    real_questions_default,
)

MAX_SPLITS = 12


def inner_labels(source: Path, salt: str) -> str:
    """The labels TSV with its tune rows split in two by ``salt`` and its test rows blanked."""
    text = source.read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or "split" not in rows[0] or "id" not in rows[0]:
        raise CommandError(f"{source}: a labels TSV with the columns id, …, split is needed.")
    qid, col = rows[0].index("id"), rows[0].index("split")
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE)
    writer.writerow(rows[0])
    for row in rows[1:]:
        if len(row) <= col:
            continue
        row = list(row)
        if row[col] == "tune":
            digest = hashlib.sha256(f"{salt}{row[qid]}".encode()).hexdigest()
            row[col] = "tune" if int(digest, 16) % 2 == 0 else "test"
        else:
            row[col] = ""
        writer.writerow(row)
    return out.getvalue()


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

    def handle(self, *args, **options):
        splits = options["splits"]
        if not 1 <= splits <= MAX_SPLITS:
            raise CommandError(f"--splits must be between 1 and {MAX_SPLITS}.")
        questions = Path(options["questions"]) if options["questions"] else real_questions_default()
        labels_path = Path(options["labels"] or Path(settings.BASE_DIR) / REAL_LABELS_RELPATH)
        for what, path in (("questions", questions), ("labels", labels_path)):
            if not path.is_file():
                raise CommandError(f"No {what} file at {path}.")
        if demo_ensure(self.stdout):
            self.stdout.write("Loaded the demo data (it was missing).")
        client = EndpointClient(username=measurement_client_ensure())
        totals = {"returned": [0, 0], "nothing_fits": [0, 0], "decision_queued": [0, 0]}
        per_line: dict[str, list[int]] = {line: [0, 0] for line in LINES}
        try:
            with tempfile.TemporaryDirectory(prefix="validate-selector-") as tmp:
                for k in range(splits):
                    salt = f"{options['salt']}-{k}"
                    labels = Path(tmp) / f"labels-{k}.tsv"
                    labels.write_text(inner_labels(labels_path, salt), encoding="utf-8")
                    model = Path(tmp) / f"trained-{k}.json"
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
                        if L.trained_selector() is None:  # the hybrid would fall back
                            raise CommandError(
                                f"train_selector wrote {model}, which cannot be used."
                            )
                        run = harness.inventory_run(client, inventories, selector="hybrid")
                    zero = (
                        ", ".join(f"{name}={n}" for name, n in run.must_be_zero.items() if n) or "0"
                    )
                    parts = []
                    for line, f in sorted(run.lines.items()):
                        counts = f["counts"]
                        if f["questions"]:
                            parts.append(f"{line} {counts['returned']}/{f['questions']}")
                        if line in per_line:
                            per_line[line][0] += counts["returned"]
                            per_line[line][1] += f["questions"]
                        for key, n in (
                            ("returned", f["questions"]),
                            ("nothing_fits", f["no_clause_questions"]),
                            ("decision_queued", f.get("decision_questions") or 0),
                        ):
                            totals[key][0] += counts[key]
                            totals[key][1] += n
                    nf = sum(f["counts"]["nothing_fits"] for f in run.lines.values())
                    nn = sum(f["no_clause_questions"] for f in run.lines.values())
                    self.stdout.write(
                        f"split {salt}: returned {', '.join(parts)}; nothing fits {nf}/{nn}; "
                        f"must be zero {zero}"
                    )
        finally:
            measurement_records_delete()
        r, nf, dq = totals["returned"], totals["nothing_fits"], totals["decision_queued"]
        lines = ", ".join(f"{line} {a}/{n}" for line, (a, n) in per_line.items() if n)
        self.stdout.write(
            f"Summed over {splits} split(s): returned {r[0]}/{r[1]} ({lines}); "
            f"nothing fits {nf[0]}/{nf[1]}; "
            + (f"decision requests queued {dq[0]}/{dq[1]}; " if dq[1] else "")
            + f"right {r[0] + nf[0] + dq[0]} of {r[1] + nf[1] + dq[1]}"
        )
