"""Drafting a new wording version from the serving one with one clause added or changed.

The draft is an ordinary version: ``wording_version_create`` stores its
source and queues ingestion, which validates it (line-numbered errors on the
version page if it fails); an editor then requests its release and an
approver approves it, as for any upload. Nothing here skips a rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from django.utils import timezone

from knowledge.models import DOCUMENT_LINES, LINE_PREFIXES, Clause, WordingVersion
from knowledge.selectors import release_approved_for_date
from knowledge.services.ingestion import WordingError, wording_version_create
from knowledge.storage import object_read
from knowledge.wording_format import CLAUSE_ID_RE, HEADING_RE, SEGMENTS
from northwind.errors import PermissionDenied


@dataclass(frozen=True)
class ClauseDraft:
    clause_id: str
    title: str
    kind: str
    body: str
    schedule_section: str = ""


def serving_version(*, line: str, on: date | None = None) -> WordingVersion | None:
    """The approved, ingested version of ``line`` in force today (the one customers get)."""
    lookup = release_approved_for_date(line=line, on=on or timezone.localdate())
    if lookup.kind != "found":
        return None
    return WordingVersion.objects.select_related("document").get(pk=lookup.window.version_id)


def clause_id_next(*, line: str, segment: str) -> str:
    """The next id of a segment: above every id the document ever used (ids are never reused)."""
    if segment not in SEGMENTS:
        raise WordingError(f"A segment is one of {', '.join(SEGMENTS)}.")
    prefix = LINE_PREFIXES[line]
    ids = Clause.objects.filter(clause_id__startswith=f"{prefix}-{segment}-").values_list(
        "clause_id", flat=True
    )
    numbers = [int(m.group("nn")) for m in map(CLAUSE_ID_RE.match, ids) if m]
    return f"{prefix}-{segment}-{(max(numbers, default=0) + 1):02d}"


def _section(draft: ClauseDraft) -> str:
    lines = [f"## {draft.clause_id} - {draft.title.strip()}", f"Kind: {draft.kind}"]
    if draft.schedule_section.strip():
        lines.append(f"Schedule section: {draft.schedule_section.strip()}")
    return "\n".join(lines) + "\n\n" + draft.body.strip() + "\n"


def wording_source_clause_put(source: str, draft: ClauseDraft) -> tuple[str, str]:
    """The source with ``draft`` replacing the clause of the same id, or appended.

    Returns the new source and ``"changed"`` or ``"added"``.
    """
    lines = source.splitlines(keepends=True)
    start = end = None
    for index, line in enumerate(lines):
        match = HEADING_RE.match(line.rstrip("\n"))
        if match and start is not None:
            end = index
            break
        if match and match.group("id") == draft.clause_id:
            start = index
    if start is None:
        text = source.rstrip("\n") + "\n\n" + _section(draft)
        return text, "added"
    end = len(lines) if end is None else end
    replaced = "".join(lines[:start]) + _section(draft) + "\n" + "".join(lines[end:])
    return re.sub(r"\n{3,}", "\n\n", replaced).rstrip("\n") + "\n", "changed"


def _label_next(base: WordingVersion) -> str:
    root = base.label
    existing = set(
        WordingVersion.objects.filter(document=base.document).values_list("label", flat=True)
    )
    n = 1
    while f"{root}.{n}" in existing:
        n += 1
    return f"{root}.{n}"


def wording_version_draft_with_clause(
    *,
    base_version_id: int,
    draft: ClauseDraft,
    acting_user,
    effective_from: date | None = None,
    note: str = "",
) -> tuple[WordingVersion, str]:
    """A new version of the base's document: its source with ``draft`` put in.

    The new version starts the day after today (or after the base starts,
    if later) unless told otherwise, so that approving it supersedes the
    base's open window through the normal release rules.
    """
    if not acting_user.has_perm("knowledge.add_wordingversion"):
        raise PermissionDenied("You do not have permission to draft wording versions.")
    base = WordingVersion.objects.select_related("document").get(pk=base_version_id)
    match = CLAUSE_ID_RE.match(draft.clause_id)
    if (
        match is None
        or match.group("prefix") != LINE_PREFIXES[DOCUMENT_LINES[base.document.document_id]]
    ):
        raise WordingError(
            f"{draft.clause_id!r} is not a {base.document.document_id} clause id "
            f"(like {LINE_PREFIXES[base.document.line]}-GEN-07)."
        )
    if not base.source.name:
        raise WordingError(f"{base} has no stored source to draft from.")
    source = object_read(base.source.name).decode("utf-8")
    text, how = wording_source_clause_put(source, draft)
    start = effective_from or max(
        timezone.localdate() + timedelta(days=1), base.effective_from + timedelta(days=1)
    )
    label = _label_next(base)
    version = wording_version_create(
        document_id=base.document.document_id,
        label=label,
        source_bytes=text.encode("utf-8"),
        filename=f"{label}.md ({draft.clause_id} {how}{': ' + note if note else ''})",
        effective_from=start,
        effective_to=None,
        channels=list(base.channels),
        acting_user=acting_user,
    )
    return version, how
