"""The customer-question inventories (knowledge/content/inventory/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from django.conf import settings

LINES = ("motor", "home", "contents")


@dataclass(frozen=True)
class Question:
    id: str
    line: str
    text: str
    expected: tuple[str, ...]
    coverage: str  # "clause", "no_clause", "decision", or "unlabelled" (real questions)
    after: str | None
    source_line: str = ""  # a real question's own line ("offtopic" too); "" for inventories

    @property
    def no_clause(self) -> bool:
        return self.coverage == "no_clause"

    @property
    def card(self) -> bool:
        """Answered by a staff answer card (``expected`` holds card ids)."""
        return self.coverage == "card"

    @property
    def decision(self) -> bool:
        """It asks for a decision on one claim: queued as ``needs_decision``."""
        return self.coverage == "decision"

    @property
    def answerable(self) -> bool:
        return self.coverage not in ("no_clause", "decision", "unlabelled", "card")


@dataclass(frozen=True)
class Inventory:
    line: str
    policy_number: str
    questions: tuple[Question, ...]


def inventory_dir() -> Path:
    """Where the inventories live (read when asked, never at import)."""
    return Path(settings.BASE_DIR) / "knowledge" / "content" / "inventory"


def inventories_load(
    *, lines: tuple[str, ...] = LINES, directory: Path | None = None
) -> list[Inventory]:
    """Every line's inventory, questions in file order (parents before follow-ups)."""
    directory = directory or inventory_dir()
    out = []
    for line in lines:
        data = yaml.safe_load((directory / f"{line}.yaml").read_text(encoding="utf-8"))
        questions = tuple(
            Question(
                id=str(q["id"]),
                line=line,
                text=str(q["question"]),
                expected=tuple(q.get("expected") or ()),
                coverage=str(q.get("coverage", "")),
                after=q.get("after"),
            )
            for q in data["questions"]
        )
        out.append(Inventory(line=line, policy_number=data["policy"], questions=questions))
    return out


def questions_subset(inventory: Inventory, limit: int | None) -> tuple[Question, ...]:
    """The first ``limit`` questions plus the parents their follow-ups need."""
    if not limit:
        return inventory.questions
    by_id = {q.id: q for q in inventory.questions}
    keep: dict[str, Question] = {}
    for question in inventory.questions[:limit]:
        chain = []
        node = question
        while node is not None and node.id not in keep:
            chain.append(node)
            node = by_id.get(node.after) if node.after else None
        for q in reversed(chain):
            keep[q.id] = q
    no_clause = [q for q in inventory.questions if q.no_clause and q.id not in keep][:2]
    picked = list(keep.values()) + no_clause
    order = {q.id: i for i, q in enumerate(inventory.questions)}
    return tuple(sorted(picked, key=lambda q: order[q.id]))
