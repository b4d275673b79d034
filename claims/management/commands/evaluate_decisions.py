"""python manage.py evaluate_decisions: the decision-request recogniser, measured.

Recall on the labelled examples (``dev`` and ``heldout`` apart) and false hits
on every real question and inventory question, each listed with the rule that
fired. See ``claims.evaluation.decisions`` and docs/evaluation.md.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from claims.evaluation import decisions as D
from claims.evaluation import realq
from claims.evaluation.inventory import inventories_load, inventory_dir
from claims.management.commands.evaluate import REAL_LABELS_RELPATH, real_questions_default


class Command(BaseCommand):
    help = "Measure the decision-request recogniser: recall on examples, false hits everywhere."

    def add_arguments(self, parser):
        D.data_arguments_add(parser, labels_default=REAL_LABELS_RELPATH)
        parser.add_argument(
            "--rules-only",
            action="store_true",
            help="Leave the classifier out (claims/agent/decisions.json): the rules alone.",
        )

    def handle(self, *args, **options):
        try:
            examples = D.examples_load(Path(options["examples"]) if options["examples"] else None)
        except D.DecisionExamplesError as exc:
            raise CommandError(str(exc)) from exc
        tallies: list[tuple[str, D.Tally]] = []
        for split in ("dev", "heldout"):
            tally = D.Tally(use_model=not options["rules_only"])
            for ex in examples:
                if ex.split == split:
                    tally.add(ex.id, ex.text, is_decision=ex.label == "decision")
            tallies.append((f"examples ({split})", tally))

        questions = Path(options["questions"]) if options["questions"] else real_questions_default()
        labels_path = Path(options["labels"] or Path(settings.BASE_DIR) / REAL_LABELS_RELPATH)
        if questions.exists():
            try:
                labels = realq.labels_load(labels_path)
                real = realq.questions_load(questions, labels=labels)
            except realq.RealQuestionsError as exc:
                raise CommandError(str(exc)) from exc
            for split in ("tune", "test"):
                tally = D.Tally(use_model=not options["rules_only"])
                for inventory in real:
                    for q in inventory.questions:
                        label = labels.get(q.id)
                        if label is not None and label.split == split:
                            tally.add(q.id, q.text, is_decision=q.decision)
                tallies.append((f"real questions ({split})", tally))
        else:
            self.stdout.write(f"(no real questions at {questions}: skipped)")

        for name, directory in (
            ("inventories", None),
            ("held-out inventories", inventory_dir() / "heldout"),
        ):
            tally = D.Tally(use_model=not options["rules_only"])
            for inventory in inventories_load(directory=directory):
                for q in inventory.questions:
                    tally.add(q.id, q.text, is_decision=q.decision)
            tallies.append((name, tally))

        for name, tally in tallies:
            self.stdout.write(tally.line(name))
        for name, tally in tallies:
            for qid, rule, text in tally.false_hits:
                # Real questions are research-only: their ids are listed, not their text.
                shown = "" if name.startswith("real") else f": {text}"
                self.stdout.write(f"  false hit [{name}] {qid} ({rule}){shown}")
            if name.startswith("examples"):
                for qid, text in tally.missed:
                    self.stdout.write(f"  missed [{name}] {qid}: {text}")
