"""python manage.py train_decisions: train the decision-request classifier.

Training data, and nothing else:

* the ``dev`` rows of our own labelled examples
  (``knowledge/content/decisions/decision-examples.tsv``); the ``heldout`` rows
  are never read here, they are what ``evaluate_decisions`` reports;
* the *tune* half of the real-question labels
  (``knowledge/content/realq/insuranceqa-dev-labels.tsv``), text read at run
  time from the research-only questions file (``--questions``): a row labelled
  ``decision`` is a positive, every other row a negative. The test half is
  never read;
* the tuning inventories (``knowledge/content/inventory/<line>.yaml``; not the
  held-out folder), standalone questions, with their ``decision`` flags.

Each text is embedded as the turn embeds it (``T.expand``, the served model),
and an L2-regularised logistic regression is fitted (the hybrid's own
``logistic_fit``; deterministic). The cut-off is the logistic's own 0.5, not
tuned. Written to ``claims/agent/decisions.json``: coefficients, cut-off,
counts and the inputs' sha256 -- no question text.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from claims.agent import decision_model as DM
from claims.agent import text as T
from claims.agent.selection.learned import Logistic, logistic_fit
from claims.evaluation import decisions as D
from claims.evaluation import realq
from claims.evaluation.inventory import inventories_load
from claims.management.commands.evaluate import REAL_LABELS_RELPATH, real_questions_default

L2 = 10.0
THRESHOLD = 0.5


def training_rows(
    examples_path: Path | None, questions_path: Path, labels_path: Path
) -> list[tuple[str, bool]]:
    """(text, is a decision request) for every training row, in a fixed order."""
    rows = [
        (ex.text, ex.label == "decision")
        for ex in D.examples_load(examples_path)
        if ex.split == "dev"
    ]
    labels = realq.labels_load(labels_path)
    for inventory in realq.questions_load(questions_path, labels=labels, split="tune"):
        rows.extend((q.text, q.decision) for q in inventory.questions)
    # The tuning inventories' stories ("We got burgled last night, the TV and the
    # PS5 are gone") are questions about cover, not requests to judge: without
    # them the classifier learnt "a told event is a decision request".
    for inventory in inventories_load():
        rows.extend((q.text, q.decision) for q in inventory.questions if not q.after)
    return rows


class Command(BaseCommand):
    help = "Train the decision-request classifier on our dev examples and the real tune half."

    def add_arguments(self, parser):
        D.data_arguments_add(parser, labels_default=REAL_LABELS_RELPATH)
        parser.add_argument(
            "--output", default=str(DM.MODEL_PATH), help="Where to write the trained model."
        )

    def handle(self, *args, **options):
        from knowledge.embedding import default_embedder

        examples_path = Path(options["examples"]) if options["examples"] else None
        questions_path = Path(options["questions"]) if options["questions"] else None
        questions_path = questions_path or real_questions_default()
        labels_path = Path(options["labels"] or Path(settings.BASE_DIR) / REAL_LABELS_RELPATH)
        try:
            rows = training_rows(examples_path, questions_path, labels_path)
        except (D.DecisionExamplesError, realq.RealQuestionsError) as exc:
            raise CommandError(str(exc)) from exc
        try:
            embedder = default_embedder()
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        x = np.vstack([embedder.encode([T.expand(text)]) for text, _ in rows]).astype(np.float64)
        y = np.array([label for _, label in rows], dtype=np.float64)
        if not 0 < y.sum() < len(y):
            raise CommandError("the training rows need both decision requests and others")
        model = Logistic(*logistic_fit(x, y, l2=L2))
        train_hits = model.probability(x) >= THRESHOLD
        examples_file = examples_path or Path(settings.BASE_DIR) / D.EXAMPLES_RELPATH
        data = {
            "embedder": embedder.name,
            "features": DM.FEATURES,
            "threshold": THRESHOLD,
            "model": model.as_dict(),
            "meta": {
                "rows": len(rows),
                "decisions": int(y.sum()),
                "l2": L2,
                "examples_sha256": hashlib.sha256(examples_file.read_bytes()).hexdigest(),
                "labels_sha256": hashlib.sha256(labels_path.read_bytes()).hexdigest(),
                "split": "examples dev + real tune",
                "train_recall": round(float(train_hits[y == 1].mean()), 4),
                "train_false_hits": int(train_hits[y == 0].sum()),
            },
        }
        output = Path(options["output"])
        output.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        DM.decision_model.cache_clear()
        self.stdout.write(f"wrote {output}: {data['meta']}")
