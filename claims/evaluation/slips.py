"""Slips of the keyboard, made the same way every run (``evaluate --slips RATE``).

Customers type in a chat window, quickly. This asks the same questions with
slips in them, to measure what the turn's reading of them
(``claims.agent.spelling``) recovers: for each question, ``rate`` of its words
of at least five letters (at least one) get one slip each -- a letter dropped,
two letters swapped, a letter doubled, or a letter replaced by a neighbouring
key. Which words and which slip follow from a hash of the question's id and
text, so every run asks the same slipped questions.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import replace

from claims.evaluation.inventory import Inventory, Question

_WORD_RE = re.compile(r"[A-Za-z]{5,}")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbour(letter: str, rng: random.Random) -> str:
    lower = letter.lower()
    for row in _ROWS:
        at = row.find(lower)
        if at >= 0:
            keys = [row[i] for i in (at - 1, at + 1) if 0 <= i < len(row)]
            key = rng.choice(keys)
            return key.upper() if letter.isupper() else key
    return letter


def _slip(word: str, rng: random.Random) -> str:
    at = rng.randrange(1, len(word) - 1)  # never the first or last letter
    kind = rng.randrange(4)
    if kind == 0:
        return word[:at] + word[at + 1 :]
    if kind == 1:
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if kind == 2:
        return word[:at] + word[at] + word[at:]
    return word[:at] + _neighbour(word[at], rng) + word[at + 1 :]


def slipped(text: str, *, rate: float, seed: str) -> str:
    """``text`` with one slip in each of ``rate`` of its long words (at least one)."""
    words = list(_WORD_RE.finditer(text))
    if not words or rate <= 0:
        return text
    rng = random.Random(hashlib.sha256(f"{seed}\n{text}".encode()).hexdigest())
    count = min(len(words), max(1, round(len(words) * rate)))
    chosen = sorted(rng.sample(range(len(words)), count))
    out, last = [], 0
    for i in chosen:
        match = words[i]
        out += [text[last : match.start()], _slip(match.group(0), rng)]
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def inventories_slipped(inventories: list[Inventory], *, rate: float) -> list[Inventory]:
    """The same inventories with every question's text slipped (ids and labels kept)."""

    def question(q: Question) -> Question:
        return replace(q, text=slipped(q.text, rate=rate, seed=q.id))

    return [replace(i, questions=tuple(question(q) for q in i.questions)) for i in inventories]
