"""How well the decision-request recogniser (``claims.agent.intents``) does, off the endpoint.

``python manage.py evaluate_decisions`` reads:

* the labelled examples in ``knowledge/content/decisions/decision-examples.tsv``
  (written for this purpose, in our own words, New Zealand and US phrasing;
  ``split`` ``dev`` was used while writing the rules, ``heldout`` was not);
* every real question (``--questions``, default the research-only file beside
  the repository, read at run time), with its label from the real-question
  labels: a hit on a row not labelled ``decision`` is a false hit;
* the tuning and held-out inventories: a hit on a question not labelled
  ``decision`` is a false hit.

It prints recall and false hits per source and lists every false hit with the
rule that fired. The recogniser is pure text (no model, no query), so this
runs in seconds; the end-to-end figure (queued as ``needs_decision``) comes
from ``evaluate --questions``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from claims.agent.decision_model import message_vector, model_says_decision
from claims.agent.intents import decision_reason

EXAMPLES_RELPATH = Path("knowledge/content/decisions/decision-examples.tsv")
LABELS = ("decision", "other")


class DecisionExamplesError(ValueError):
    """The examples file is missing or malformed (the message says where)."""


@dataclass(frozen=True)
class Example:
    id: str
    label: str
    locale: str
    split: str
    text: str


@dataclass
class Tally:
    """Decision requests recognised, and hits on everything else."""

    decisions: int = 0
    recognised: int = 0
    others: int = 0
    false_hits: list[tuple[str, str, str]] = field(default_factory=list)  # id, rule, text
    missed: list[tuple[str, str]] = field(default_factory=list)  # id, text
    # the rules alone (no classifier), side by side
    rules_recognised: int = 0
    rules_false_hits: int = 0
    use_model: bool = True

    def add(self, qid: str, text: str, *, is_decision: bool) -> None:
        rules = decision_reason(text)
        reason = rules
        if reason is None and self.use_model and model_says_decision(text, message_vector(text)):
            reason = "model"
        hit = reason is not None
        if is_decision:
            self.decisions += 1
            self.recognised += hit
            self.rules_recognised += rules is not None
            if not hit:
                self.missed.append((qid, text))
        else:
            self.others += 1
            self.rules_false_hits += rules is not None
            if hit:
                self.false_hits.append((qid, reason or "", text))

    def line(self, name: str) -> str:
        recall = f"{self.recognised}/{self.decisions}" if self.decisions else "-"
        hits = f"{len(self.false_hits)}/{self.others}"
        if self.use_model:
            if self.decisions:
                recall += f" (rules alone {self.rules_recognised})"
            hits += f" (rules alone {self.rules_false_hits})"
        return f"{name}: decisions recognised {recall}, false hits {hits}"


def examples_load(path: Path | None = None) -> list[Example]:
    path = path or Path(settings.BASE_DIR) / EXAMPLES_RELPATH
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
    except OSError as exc:
        raise DecisionExamplesError(f"{path}: {exc.strerror or exc}") from exc
    out = []
    for number, row in enumerate(rows, start=2):
        if row.get("label") not in LABELS or not row.get("text") or not row.get("id"):
            raise DecisionExamplesError(
                f"{path}: line {number}: needs id, label ({'/'.join(LABELS)}) and text"
            )
        out.append(
            Example(row["id"], row["label"], row.get("locale", ""), row["split"], row["text"])
        )
    return out


def data_arguments_add(parser: Any, *, labels_default: Path) -> None:
    """The examples, real questions and labels options ``evaluate_decisions`` and
    ``train_decisions`` share."""
    parser.add_argument("--examples", help=f"Labelled examples (default {EXAMPLES_RELPATH}).")
    parser.add_argument("--questions", help="Real questions TSV (id, line, question).")
    parser.add_argument("--labels", help=f"Their labels (default {labels_default}).")
