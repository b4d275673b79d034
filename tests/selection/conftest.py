"""A synthetic motor wording for the selector tests (no database).

The clauses are written here, not read from the content, so the tests say
what the selectors must do with any wording, not with today's text.
"""

from __future__ import annotations

import pytest

from claims.agent.selection import selection_cache_clear
from claims.agent.types import PriorTurn, SelectionContext
from knowledge.selectors import ClauseDirectory, DirectoryEntry, IndexedClause

CLAUSES = [
    (
        "SYN-COV-01",
        "Accidental damage, theft, fire, flood and storm damage to your car",
        "We cover sudden and accidental loss of or damage to your car, including collision, "
        "theft, vandalism, fire, storm, hail and flood.\n\nYour excess applies (SYN-XS-01).",
        (),
    ),
    (
        "SYN-COV-02",
        "Write-off or total loss: how we settle when your car is not worth repairing",
        "When repairs would cost more than the car is worth, we settle it as a total loss and "
        "pay the agreed value or market value in your schedule, less your excess.",
        ("SYN-COV-01",),
    ),
    (
        "SYN-COV-04",
        "Broken or chipped windscreen and window glass",
        "We repair or replace a broken or chipped windscreen, sunroof or window glass.",
        (),
    ),
    (
        "SYN-BEN-03",
        "Hire car and alternative transport while your car is repaired",
        "If we accept a claim under SYN-COV-01 and your car cannot be driven, we arrange a hire "
        "car or pay for taxis and public transport.\n\n- Limit: up to NZD 60 a day for up to 21 "
        "days.\n- Not included: fuel, petrol, tolls, parking and fines.\n- This benefit applies "
        "only if your schedule lists alternative transport.",
        ("SYN-COV-01",),
    ),
    (
        "SYN-BEN-05",
        "Lost or stolen car keys and replacing your locks",
        "We pay to replace lost or stolen keys and key fobs and to recode or replace the locks.",
        (),
    ),
    (
        "SYN-EXC-01",
        "Wear and tear, mechanical breakdown, rust and damage that happens gradually",
        "We do not cover wear and tear, mechanical or electrical breakdown, rust or corrosion.",
        (),
    ),
    (
        "SYN-XS-01",
        "Your excess: how much you pay towards a claim, and one excess per event",
        "Your excess is the amount you pay towards each claim. It is shown in your schedule.",
        (),
    ),
    (
        "SYN-CLM-01",
        "How to make a claim after an accident or crash",
        "Tell us as soon as you can. Do not admit fault. Take photos and get the other "
        "driver's details.",
        (),
    ),
    (
        "SYN-GEN-02",
        "Cancelling your car insurance, the cooling-off period and refunds",
        "You can cancel at any time. Within 21 days of the start you get a full refund.",
        (),
    ),
]


def _index(embedded: bool):
    from knowledge.embedding import default_embedder

    vectors = (
        default_embedder().encode([f"{title}\n\n{body}" for _, title, body, _ in CLAUSES])
        if embedded
        else None
    )
    return tuple(
        IndexedClause(
            clause_id=cid,
            title=title,
            kind="cover",
            text=f"## {cid} - {title}\nKind: cover\nVisibility: customer\n\n{body}",
            schedule_section="",
            refers_to=refs,
            embedding=vectors[i].tobytes() if vectors is not None else None,
        )
        for i, (cid, title, body, refs) in enumerate(CLAUSES)
    )


class FakeSource:
    """Index source that counts how often the selector reads a version."""

    def __init__(self, embedded: bool = True) -> None:
        self.calls = 0
        self.index = _index(embedded)

    def __call__(self, version_id: int):
        self.calls += 1
        return self.index


@pytest.fixture(autouse=True)
def _fresh_indexes():
    selection_cache_clear()
    yield
    selection_cache_clear()


@pytest.fixture(scope="session")
def embedded_index():
    return _index(True)


@pytest.fixture
def source():
    return FakeSource()


@pytest.fixture
def directory():
    return ClauseDirectory(
        version_id=9001,
        document_id="NW-SYN",
        label="2099.1",
        entries=tuple(DirectoryEntry(clause_id=c, title=t) for c, t, _, _ in CLAUSES),
    )


def context(*prior: tuple[str, tuple[str, ...]]) -> SelectionContext:
    history = tuple(PriorTurn(message=m, cited_ids=ids, returned_ids=ids) for m, ids in prior)
    return SelectionContext(line="motor", version_id=9001, history=history)
