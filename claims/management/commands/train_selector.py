"""python manage.py train_selector: train the hybrid's reranker and "fits" classifier.

Training data, and nothing else:

* the tuning inventories (``knowledge/content/inventory/<line>.yaml``; not the
  held-out folder), standalone questions only;
* for the reranker only, the answerable *tune* rows of our own labelled
  examples (``knowledge/content/fits/fits-examples.tsv``: questions in our own
  words that use a line's vocabulary; their ``none`` rows and their ``test``
  rows are never read here);
* the *tune* half of the real-question labels
  (``knowledge/content/realq/insuranceqa-dev-labels.tsv``), whose text is read
  at run time from the research-only questions file (``--questions``; by
  default ``<repo>/../shared/data/insuranceqa-dev/questions.tsv``). The test
  half is never read. Requests for a decision are left out (the turn queues
  them whatever is selected).

Features come from the hybrid itself on the approved wording of each line (the
demo data is loaded if missing), so training and serving compute them with
the same code. The cut-offs are chosen on 5-fold cross-validated predictions,
folds fixed by a hash of the question id. The result is written to
``claims/agent/selection/trained.json``: coefficients, cut-offs, the training
set's size and the labels file's sha256 -- no question text. Deterministic:
the same inputs give the same file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from claims.agent.selection import learned as L
from claims.evaluation import realq
from claims.evaluation.inventory import LINES, inventories_load
from claims.management.commands.evaluate import (
    REAL_LABELS_RELPATH,
    demo_ensure,
    real_questions_default,
)

EXAMPLES_RELPATH = Path("knowledge") / "content" / "fits" / "fits-examples.tsv"
FOLDS = 5
PAIR_L2 = 1.0
FIT_L2 = 30.0  # on the message's embedding (384 numbers: easy to overfit)
FIT_SCALAR_L2 = 1.0  # on FIT_SCALARS: a few general signals, each allowed its weight


def fit_penalty(width: int) -> np.ndarray:
    penalty = np.full(width, FIT_L2)
    penalty[-len(L.FIT_SCALARS) :] = FIT_SCALAR_L2
    return penalty


def _fold(qid: str) -> int:
    return int(hashlib.sha256(qid.encode()).hexdigest(), 16) % FOLDS


class Command(BaseCommand):
    help = "Train the hybrid selector's reranker and 'fits' classifier on the tune half."

    def add_arguments(self, parser):
        parser.add_argument("--questions", help="The questions TSV (id, line, question).")
        parser.add_argument("--labels", help=f"The labels TSV (default {REAL_LABELS_RELPATH}).")
        parser.add_argument(
            "--examples",
            help=f"Our own labelled examples (default {EXAMPLES_RELPATH}; 'none' to leave out).",
        )
        parser.add_argument(
            "--output", default=str(L.MODEL_PATH), help="Where to write the trained model."
        )

    def handle(self, *args, **options):
        from claims.agent.selection.models import HybridModel, HybridParams
        from claims.agent.wording import version_speller
        from knowledge.models import Release
        from knowledge.selectors import clause_directory

        demo_ensure(self.stdout)
        questions_path = Path(options["questions"]) if options["questions"] else None
        questions_path = questions_path or real_questions_default()
        labels_path = Path(options["labels"] or Path(settings.BASE_DIR) / REAL_LABELS_RELPATH)
        examples_option = options["examples"] or ""
        examples_path = (
            None
            if examples_option == "none"
            else Path(examples_option or Path(settings.BASE_DIR) / EXAMPLES_RELPATH)
        )
        try:
            labels = realq.labels_load(labels_path)
            real = realq.questions_load(questions_path, labels=labels, split="tune")
            own = []
            if examples_path is not None:
                own = realq.questions_load(
                    examples_path, labels=realq.labels_load(examples_path), split="tune"
                )
        except realq.RealQuestionsError as exc:
            raise CommandError(str(exc)) from exc

        directories = {}
        spellers = {}  # each question is read as the turn reads it (slips of the keyboard)
        for release in Release.objects.filter(status=Release.Status.APPROVED).select_related(
            "version__document"
        ):
            line = release.version.document.line
            directories[line] = clause_directory(version_id=release.version_id)
            spellers[line] = version_speller(
                version_id=release.version_id, ingested_at=release.version.ingested_at
            )
        missing = [line for line in LINES if line not in directories]
        if missing:
            raise CommandError(f"No approved wording for {', '.join(missing)}.")

        examples = []  # (id, line, text, expected ids or () for none, for "fits" too)
        for inventory in inventories_load():
            for q in inventory.questions:
                if q.after or q.decision:
                    continue
                # A question an answer card answers needs no clause: for the
                # clause selector, nothing fits.
                none = q.no_clause or q.card
                examples.append((q.id, inventory.line, q.text, () if none else q.expected, True))
        for inventory in real:
            for q in inventory.questions:
                if q.decision or q.coverage == "unlabelled":
                    continue
                expected = () if q.no_clause else q.expected
                examples.append((q.id, inventory.line, q.text, expected, True))
        # Our own examples teach the reranker which clause answers (their
        # answerable rows), never the "fits" classifier: their 'nothing fits'
        # rows are long in-domain stories, and trained on them the classifier
        # learnt the style -- it refused four of the held-out inventory's
        # answerable stories ("new kitten has shredded the arm of our leather
        # sofa") that it answers without them (docs/evaluation.md).
        for inventory in own:
            for q in inventory.questions:
                if q.coverage == "clause":
                    examples.append((q.id, inventory.line, q.text, q.expected, False))
        self.stdout.write(f"train_selector: {len(examples)} questions")

        model = HybridModel(params=HybridParams(learned=False))
        embedder = model._get_embedder()
        if embedder is None:
            raise CommandError("The embedding model cannot be loaded; nothing to train.")
        computed = []
        for_fits: set[str] = set()
        for qid, line, text, expected, fits_too in examples:
            index, signals = model.training_signals(
                message=spellers[line].read(text).text, directory=directories[line], reranker=None
            )
            computed.append((qid, index, signals, expected))
            if fits_too:
                for_fits.add(qid)

        # 1. the reranker, on answerable questions: one row per (question, clause)
        def pairs_of(rows):
            xs, ys = [], []
            for _, index, signals, expected in rows:
                if not expected:
                    continue
                xs.append(signals.pairs)
                ys.append(np.array([cid in expected for cid in index.ids], dtype=np.float64))
            return np.vstack(xs), np.concatenate(ys)

        x, y = pairs_of(computed)
        reranker = L.Logistic(*L.logistic_fit(x, y, l2=PAIR_L2))

        # 2. "something fits", with the reranker's best score as a feature;
        # cross-validated so the cut-offs are chosen on unseen predictions.
        def fit_rows(rows, rr):
            xs, ys = [], []
            for _, _index, signals, expected in rows:
                best = float(rr.score(signals.pairs).max())
                row = signals.fit.copy()
                row[-len(L.FIT_SCALARS)] = best
                xs.append(row)
                ys.append(1.0 if expected else 0.0)
            return np.vstack(xs), np.array(ys)

        fits_rows = [c for c in computed if c[0] in for_fits]
        cv_by_id: dict[str, float] = {}
        cv_rank: list[tuple[np.ndarray, tuple[str, ...], tuple[str, ...]]] = []
        for fold in range(FOLDS):
            train = [c for c in computed if _fold(c[0]) != fold]
            held = [c for c in computed if _fold(c[0]) == fold]
            rr = L.Logistic(*L.logistic_fit(*pairs_of(train), l2=PAIR_L2))
            fx, fy = fit_rows([c for c in train if c[0] in for_fits], rr)
            fit_model = L.Logistic(*L.logistic_fit(fx, fy, l2=fit_penalty(fx.shape[1])))
            held_fits = [c for c in held if c[0] in for_fits]
            hx, _ = fit_rows(held_fits, rr)
            probs = fit_model.probability(hx)
            for (qid, *_), prob in zip(held_fits, probs, strict=True):
                cv_by_id[qid] = float(prob)
            for _qid, index, signals, expected in held:
                if expected:
                    cv_rank.append((rr.probability(signals.pairs), index.ids, expected))

        cv_fit = np.array([cv_by_id[c[0]] for c in fits_rows])
        fx, fy = fit_rows(fits_rows, reranker)
        fits = L.Logistic(*L.logistic_fit(fx, fy, l2=fit_penalty(fx.shape[1])))

        # The cut-off: the one with the best sum of "answerable kept" and
        # "nothing fits recognised" (Youden's J, cross-validated; the lowest
        # such cut-off on a tie). The worse of the two rates is reported too.
        answerable = fy == 1
        best_threshold, best_sum, best_floor = 0.5, -1.0, -1.0
        for t in np.linspace(0.05, 0.95, 91):
            kept = float((cv_fit[answerable] >= t).mean())
            refused = float((cv_fit[~answerable] < t).mean())
            if kept + refused > best_sum + 1e-9:
                best_threshold, best_sum, best_floor = float(t), kept + refused, min(kept, refused)
        # A further clause is kept from this probability on: the lowest that
        # still returns the expected clause no less often than three ids would.
        keep = 0.0
        full = np.mean([any(e in ids_top(p, ids, 3) for e in exp) for p, ids, exp in cv_rank])
        for k in np.linspace(0.02, 0.5, 49):
            hit = np.mean([any(e in kept_ids(p, ids, k) for e in exp) for p, ids, exp in cv_rank])
            if hit >= full - 0.005:
                keep = float(k)
        at1 = np.mean([any(e in ids_top(p, ids, 1) for e in exp) for p, ids, exp in cv_rank])

        data = {
            "embedder": embedder.name,
            "pair_features": list(L.PAIR_FEATURES),
            "fit_scalars": list(L.FIT_SCALARS),
            "reranker": reranker.as_dict(),
            "fits": fits.as_dict(),
            "fits_threshold": round(best_threshold, 4),
            "keep_probability": round(keep, 4),
            "meta": {
                "questions": len(computed),
                "answerable": int(answerable.sum()),
                "nothing_fits": int((~answerable).sum()),
                "labels_sha256": hashlib.sha256(labels_path.read_bytes()).hexdigest(),
                "examples_sha256": (
                    hashlib.sha256(examples_path.read_bytes()).hexdigest()
                    if examples_path is not None
                    else ""
                ),
                "split": "tune",
                "reranker_only_examples": len(computed) - len(fits_rows),
                "cv_recall_at_1": round(float(at1), 4),
                "cv_recall_at_3": round(float(full), 4),
                "cv_fits_balanced_floor": round(best_floor, 4),
                "cv_fits_kept": round(float((cv_fit[answerable] >= best_threshold).mean()), 4),
                "cv_fits_refused": round(float((cv_fit[~answerable] < best_threshold).mean()), 4),
            },
        }
        output = Path(options["output"])
        output.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        L.trained_selector.cache_clear()
        self.stdout.write(
            f"wrote {output}: {data['meta']} threshold {data['fits_threshold']} "
            f"keep {data['keep_probability']}"
        )


def ids_top(prob: np.ndarray, ids: tuple[str, ...], k: int) -> list[str]:
    return [ids[i] for i in np.argsort(-prob, kind="stable")[:k]]


def kept_ids(prob: np.ndarray, ids: tuple[str, ...], keep: float) -> list[str]:
    order = np.argsort(-prob, kind="stable")
    return [ids[i] for n, i in enumerate(order[:3]) if n == 0 or prob[i] >= keep]
