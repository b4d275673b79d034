"""Clause-level difference between two versions of a wording document.

Clauses are matched by id. Each is added, removed, changed or unchanged; a
changed clause lists the parts that differ (title, body, metadata, schedule
switch, references, similar questions), each with its word-level difference, so that a change
of the same length is as visible as any other.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from knowledge.models import Clause, WordingVersion

_TOKEN = re.compile(r"\s+|[^\s]+")


def words_diff(before: str, after: str) -> SafeString:
    """HTML of ``after`` with removed words in ``<del>`` and added ones in ``<ins>``."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if op in ("delete", "replace"):
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return mark_safe("".join(out))  # every piece was escaped above


def words_changed(before: str, after: str) -> tuple[list[str], list[str]]:
    """The words removed and the words added (for tests and summaries)."""
    a, b = before.split(), after.split()
    removed, added = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            removed.extend(a[i1:i2])
        if op in ("insert", "replace"):
            added.extend(b[j1:j2])
    return removed, added


# part name -> how to read it from a clause
PARTS: dict[str, str] = {
    "title": "Title",
    "body": "Body",
    "metadata": "Metadata (kind, visibility)",
    "schedule": "Schedule switch",
    "references": "References",
    "questions": "Similar questions",
}


def _parts(clause: Clause) -> dict[str, str]:
    return {
        "title": clause.title,
        "body": clause.text,
        "metadata": f"kind: {clause.kind}; visibility: {clause.visibility}",
        "schedule": clause.schedule_section or "(none: applies to every policy)",
        "references": ", ".join(clause.refers_to) or "(none)",
        "questions": "\n".join(clause.questions or ()) or "(none)",
    }


@dataclass(frozen=True)
class PartDiff:
    part: str
    label: str
    before: str
    after: str

    @property
    def html(self) -> SafeString:
        return words_diff(self.before, self.after)


@dataclass(frozen=True)
class ClauseDiff:
    clause_id: str
    kind: Literal["added", "removed", "changed", "unchanged"]
    title: str
    parts: tuple[PartDiff, ...] = ()
    text: str = ""  # whole text of an added or removed clause
    questions: tuple[str, ...] = ()  # similar questions of an added or removed clause


@dataclass(frozen=True)
class VersionDiff:
    old: WordingVersion | None
    new: WordingVersion
    clauses: tuple[ClauseDiff, ...]

    def count(self, kind: str) -> int:
        return sum(1 for c in self.clauses if c.kind == kind)

    @property
    def counts(self) -> dict[str, int]:
        return {k: self.count(k) for k in ("added", "removed", "changed", "unchanged")}

    @property
    def shown(self) -> tuple[ClauseDiff, ...]:
        return tuple(c for c in self.clauses if c.kind != "unchanged")

    @property
    def unchanged(self) -> tuple[ClauseDiff, ...]:
        return tuple(c for c in self.clauses if c.kind == "unchanged")


def version_diff(*, old: WordingVersion | None, new: WordingVersion) -> VersionDiff:
    """Clauses of ``new`` against ``old`` (``None``: every clause is added), in order."""
    new_clauses = list(new.clauses.order_by("position"))
    old_clauses = {c.clause_id: c for c in old.clauses.order_by("position")} if old else {}
    out: list[ClauseDiff] = []
    for clause in new_clauses:
        before = old_clauses.pop(clause.clause_id, None)
        if before is None:
            out.append(
                ClauseDiff(
                    clause.clause_id,
                    "added",
                    clause.title,
                    text=clause.text,
                    questions=tuple(clause.questions or ()),
                )
            )
            continue
        a, b = _parts(before), _parts(clause)
        parts = tuple(
            PartDiff(part, label, a[part], b[part])
            for part, label in PARTS.items()
            if a[part] != b[part]
        )
        out.append(
            ClauseDiff(clause.clause_id, "changed" if parts else "unchanged", clause.title, parts)
        )
    for clause in old_clauses.values():
        out.append(
            ClauseDiff(
                clause.clause_id,
                "removed",
                clause.title,
                text=clause.text,
                questions=tuple(clause.questions or ()),
            )
        )
    return VersionDiff(old=old, new=new, clauses=tuple(out))
