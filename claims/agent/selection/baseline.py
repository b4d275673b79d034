"""The seed's original keyword ranker (seed 000, P2), kept as a named baseline.

It is here to be measured against, never as the default: it only finds a
clause that repeats the customer's own words. Its rules, exactly as the seed
describes them: drop words of two letters or fewer, the stop words and the
line nouns; strip only a final "s"; score = title hits x 4 + body hits; the
top three with a score above zero.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from claims.agent.types import MAX_CLAUSES, SelectionContext

if TYPE_CHECKING:
    from claims.agent.selection.index import IndexSource
    from knowledge.selectors import ClauseDirectory

_WORD_RE = re.compile(r"[a-z0-9']+")

# The seed names "policy, claim, what, how, much, ..." and its worked
# example ("Will my policy pay for a rental car while mine is repaired?" ->
# will, pay, rental, mine, repaired) fixes what else it drops.
BASELINE_STOP_WORDS = frozenset(
    """
    policy claim what how much the and for while are you your yours our ours this
    that these those there their they them with from about any does did can could
    would should was were has have had get got who whom when where which why its
    it's i'm into then than been being also just not but all
    """.split()
)
BASELINE_LINE_NOUNS = frozenset("car vehicle motor home house contents auto insurance".split())

TITLE_WEIGHT = 4


def _strip_final_s(word: str) -> str:
    return word[:-1] if word.endswith("s") else word


def baseline_terms(text: str, *, for_query: bool = True) -> list[str]:
    """The seed's terms: ≤2-letter words, stop words and line nouns dropped."""
    out = []
    for raw in _WORD_RE.findall(text.lower()):
        word = raw.strip("'")
        if len(word) <= 2:
            continue
        stripped = _strip_final_s(word)
        if for_query and (
            word in BASELINE_STOP_WORDS
            or stripped in BASELINE_STOP_WORDS
            or word in BASELINE_LINE_NOUNS
            or stripped in BASELINE_LINE_NOUNS
        ):
            continue
        out.append(stripped)
    return out


class KeywordBaselineModel:
    """Title hits x 4 + body hits over the version's clauses; top 3 above zero."""

    name = "baseline"

    def __init__(self, *, index_source: IndexSource | None = None) -> None:
        from claims.agent.selection.index import default_index_source

        self._source = index_source or default_index_source

    def scores(self, *, message: str, directory: ClauseDirectory) -> dict[str, float]:
        from claims.agent.selection.index import INDEXES

        index = INDEXES.get(directory, self._source)
        terms = baseline_terms(message)
        scores: dict[str, float] = {}
        for i, clause_id in enumerate(index.ids):
            title, body = index.baseline_titles[i], index.baseline_bodies[i]
            scores[clause_id] = float(
                sum(title[t] for t in terms) * TITLE_WEIGHT + sum(body[t] for t in terms)
            )
        return scores

    def choose(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> list[str]:
        scores = self.scores(message=message, directory=directory)
        order = {cid: i for i, cid in enumerate(scores)}
        ranked = sorted(
            (cid for cid, s in scores.items() if s > 0), key=lambda c: (-scores[c], order[c])
        )
        return ranked[:MAX_CLAUSES]
