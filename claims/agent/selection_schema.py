"""The tool schema for clause selection: at most three ids, each from the directory."""

from __future__ import annotations

from collections.abc import Sequence

from claims.agent.types import MAX_CLAUSES, Selection
from knowledge.selectors import ClauseDirectory


def selection_validate(raw: Sequence[object], directory: ClauseDirectory) -> Selection:
    """Apply the schema to what the model named.

    More than three ids is refused as a whole (recorded, nothing fetched).
    Ids that are not in the directory are kept aside for ``not_found`` and are
    never replaced by another clause.
    """
    named = tuple(str(item).strip().upper() for item in raw)
    if len(named) > MAX_CLAUSES:
        return Selection(
            raw=named,
            requested=(),
            not_in_directory=(),
            rejected=f"{len(named)} clause ids named; the schema allows at most {MAX_CLAUSES}.",
        )
    known = {entry.clause_id for entry in directory.entries}
    requested = tuple(dict.fromkeys(i for i in named if i in known))
    missing = tuple(dict.fromkeys(i for i in named if i not in known))
    return Selection(raw=named, requested=requested, not_in_directory=missing)
