"""Text handling shared by the selectors: words, stems, clause bodies, ids.

Pure functions with no Django or database access, so the selectors can be
tested on synthetic directories.
"""

from __future__ import annotations

import functools
import re

WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# Clause ids as the wording writes them (MTR-BEN-03) and as customers type
# them ("mtr ben 3", "MTR_BEN_03", "clause BEN-03"). Segment names are the
# wording format's (knowledge.wording_format.SEGMENTS).
_SEGMENTS = "cov|ben|exc|con|xs|clm|def|gen"
FULL_ID_RE = re.compile(
    rf"\b(?P<prefix>[a-z]{{3}})[\s_\-]*(?P<seg>{_SEGMENTS})[\s_\-]*(?P<nn>\d{{1,2}})\b",
    re.IGNORECASE,
)
SEGMENT_ID_RE = re.compile(
    rf"(?P<clause>\b(?:clause|section|part)\s+)?\b(?P<seg>{_SEGMENTS})(?P<sep>[\s_\-]*)(?P<nn>\d{{1,2}})\b",
    re.IGNORECASE,
)
# "clause 3 of the motor policy": the third clause of the wording.
NUMBERED_CLAUSE_RE = re.compile(r"\b(?:clause|section)\s+(?:no\.?\s*|number\s+)?(\d{1,2})\b", re.I)

_METADATA_LINE_RE = re.compile(r"^(kind|schedule section|visibility)\s*:", re.IGNORECASE)

# English function words for the BM25 and embedding paths (the baseline has
# its own list, below, taken from the seed). Kept small and explicit: words
# such as "not", "no" and "without" carry meaning in a wording.
STOP_WORDS = frozenset(
    """
    a about above after again am an and any are as at be because been before being
    between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i i'm
    if in into is it it's its itself just me more most my myself now of off on once
    only or other our ours ourselves out over own same she should so some such than
    that that's the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves u ur pls please
    hi hello thanks thank guys ok okay tho though
    """.split()
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens ("it's" stays one token)."""
    return WORD_RE.findall(text.lower().replace("\u2019", "'"))


@functools.cache
def _stemmer():
    import Stemmer  # PyStemmer: Snowball stemmers in C

    return Stemmer.Stemmer("english")


def stems(text: str) -> list[str]:
    """Content-word stems: stop words dropped, Snowball English stemming."""
    tokens = [w for w in words(text) if w not in STOP_WORDS and not w.isdigit()]
    return _stemmer().stemWords(tokens)


def clause_body(text: str) -> str:
    """The body of a stored clause: its ``##`` heading and metadata lines removed."""
    lines = text.splitlines()
    out: list[str] = []
    in_header = True
    for line in lines:
        stripped = line.strip()
        if in_header and (stripped.startswith("## ") or _METADATA_LINE_RE.match(stripped)):
            continue
        if in_header and not stripped:
            continue
        in_header = False
        out.append(line)
    return "\n".join(out).strip()


def ids_in_message(message: str, directory_ids: tuple[str, ...]) -> list[str]:
    """Clause ids of this directory that the message names, in order of mention.

    Understands "MTR-BEN-03", "mtr ben 3", "MTR_BEN_3", "clause BEN-03" (the
    line's prefix is taken from the directory) and "clause 3" (the third
    clause of the wording, in directory order). Ids outside the directory are
    ignored: the selector only names what it may fetch.
    """
    known = set(directory_ids)
    prefixes = sorted({cid.split("-", 1)[0] for cid in directory_ids})
    found: list[tuple[int, str]] = []
    full_spans: list[tuple[int, int]] = []
    for m in FULL_ID_RE.finditer(message):
        full_spans.append(m.span())
        cid = f"{m['prefix'].upper()}-{m['seg'].upper()}-{int(m['nn']):02d}"
        if cid in known:
            found.append((m.start(), cid))
    if len(prefixes) == 1:
        for m in SEGMENT_ID_RE.finditer(message):
            if any(a <= m.start("seg") < b for a, b in full_spans):
                continue  # part of a full id, e.g. another line's HOM-COV-01
            # "ben 3" alone could be a name; ask for a clause word, a hyphen
            # or underscore, or a two-digit number before reading it as an id.
            if not (m["clause"] or m["sep"].strip(" ") or len(m["nn"]) == 2):
                continue
            cid = f"{prefixes[0]}-{m['seg'].upper()}-{int(m['nn']):02d}"
            if cid in known:
                found.append((m.start("seg"), cid))
    if not found:
        for m in NUMBERED_CLAUSE_RE.finditer(message):
            n = int(m[1])
            if 1 <= n <= len(directory_ids):
                found.append((m.start(), directory_ids[n - 1]))
    ordered: list[str] = []
    for _, cid in sorted(found):
        if cid not in ordered:
            ordered.append(cid)
    return ordered
