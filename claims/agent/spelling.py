"""Reading a slip of the keyboard as the wording's word it missed.

"my windsreen got cracked", "is my lapotp covered": one slip turns a word the
wording uses into one that neither BM25 nor the glossary knows, and that the
embedding model splits into pieces (measured: one slip in every seventh long
word takes the inventories from 100/100/100% to 90/85/95% returned;
docs/evaluation.md, "Slips of the keyboard").

The rule is narrow on purpose, so that it never changes what a customer meant:

* only a word of at least ``MIN_LENGTH`` letters that is *not a word*: not in
  an English word list (pyspellchecker's, US spelling, read with the British
  and New Zealand spellings it lacks: "neighbours", "mould", "organised",
  "metres", "tyres"), not one of the embedding model's whole-word tokens, not
  in ``spelling-words.txt`` ("admin", "rego"), not in the wording, not a
  contraction written without its apostrophe ("theyre", "wasnt");
* only into a word of the wording's own vocabulary (``vocabulary``: the routed
  version's clause titles, texts and similar questions, and the toolkit's
  words) of at least ``MEANT_LENGTH`` letters, one edit away (a letter
  dropped, added, changed, or two swapped);
  where several are, the most common English word, then the first in
  alphabetical order (deterministic).

So "Picton", "Hilux" and "sunnies" stay as they are (no wording word is one
edit away), and "Humana" is not read as "human". Pure functions; the English
word list is loaded once per process.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MIN_LENGTH = 4  # a word typed with fewer letters is read as it is
MEANT_LENGTH = 5  # ...and so is one whose nearest wording word is shorter
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# A word as the reading sees it: letters, and an apostrophe inside ("it's").
_TOKEN_RE = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)*")

# Contractions typed without their apostrophe: words, not slips.
_BARE_CONTRACTIONS = frozenset(
    "arent cant couldnt didnt doesnt dont hadnt hasnt havent hes isnt ive lets "
    "mightnt mustnt neednt shes shouldnt thats theres theyd theyll theyre theyve "
    "wasnt werent weve whats wheres whos wont wouldnt youd youll youre youve".split()
)

# British and New Zealand spellings read as the US word list spells them:
# (ending or part, its US form). A word is known when one of these makes it a
# known word ("neighbours" -> "neighbors", "unliveable" -> "unlivable").
_BRITISH = (
    ("our", "or"),
    ("ise", "ize"),
    ("ised", "ized"),
    ("ising", "izing"),
    ("isation", "ization"),
    ("yse", "yze"),
    ("tre", "ter"),
    ("tres", "ters"),
    ("lled", "led"),
    ("lling", "ling"),
    ("ller", "ler"),
    ("ould", "old"),
    ("eable", "able"),
    ("ogue", "og"),
    ("ence", "ense"),
    ("yre", "ire"),
    ("yres", "ires"),
    ("llery", "lry"),
    ("ae", "e"),
    ("oe", "e"),
    ("mme", "m"),
)


WORDS_PATH = Path(__file__).with_name("spelling-words.txt")


@functools.cache
def _english() -> dict[str, int]:
    """pyspellchecker's English word list: word -> how often it is used."""
    from spellchecker import SpellChecker

    return dict(SpellChecker(language="en", distance=1).word_frequency.dictionary)


@functools.cache
def _other_words() -> frozenset[str]:
    """Words the English list lacks: the embedding model's whole-word tokens (a word
    the model has as one token is one it knows: "apps", "smartphone", "uber") and
    ours (``spelling-words.txt``: "admin", "rego", "sleepout")."""
    from knowledge.embedding import TOKENIZER_PATH

    vocab = json.loads(TOKENIZER_PATH.read_text())["model"]["vocab"]
    model_words = {w for w in vocab if w.isalpha() and w.isascii()}
    lines = WORDS_PATH.read_text().splitlines()
    ours = {w.strip() for w in lines if w.strip() and not w.startswith("#")}
    return frozenset(model_words | ours)


# Endings that make a word of a word ("seater", "podcasts", "staffy"): the list
# has most such forms, not all.
_ENDINGS = ("s", "es", "ed", "er", "ers", "ing", "y", "ly")


def english_word(word: str) -> bool:
    """Whether lower-case ``word`` is an English word, in US or British spelling."""
    english = _english()
    if word in english or word in _BARE_CONTRACTIONS or word in _other_words():
        return True
    for ending in _ENDINGS:
        stem = word[: -len(ending)]
        # ...once: "exess" is not "exes" + s
        if (
            word.endswith(ending)
            and len(stem) >= 3
            and not stem.endswith(ending[-1])
            and (stem in english or stem + "e" in english)
        ):
            return True
    for british, us in _BRITISH:
        start = word.find(british)
        while start >= 0:
            if word[:start] + us + word[start + len(british) :] in english:
                return True
            start = word.find(british, start + 1)
    return False


def _one_edit(word: str) -> set[str]:
    """Every string one edit from ``word`` (delete, swap, change, insert a letter)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return {
        *(a + b[1:] for a, b in splits if b),
        *(a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1),
        *(a + c + b[1:] for a, b in splits if b for c in _LETTERS),
        *(a + c + b for a, b in splits for c in _LETTERS),
    }


def vocabulary_of(texts: Iterable[str]) -> frozenset[str]:
    """The lower-case words of ``texts`` (a wording's titles, texts, questions)."""
    return frozenset(w.lower() for text in texts for w in _TOKEN_RE.findall(text))


@dataclass(frozen=True)
class Reading:
    """The message as the turn reads it, and each word it read otherwise."""

    text: str
    corrections: tuple[tuple[str, str], ...] = ()


class Speller:
    """Reads slips of the keyboard in a message as words of one vocabulary."""

    def __init__(self, vocabulary: frozenset[str]) -> None:
        self.vocabulary = vocabulary
        self.read = functools.lru_cache(maxsize=4096)(self._read)

    def word(self, token: str) -> str | None:
        """The vocabulary's word that lower-case ``token`` is a slip for, or None."""
        if len(token) < MIN_LENGTH or token in self.vocabulary or english_word(token):
            return None
        candidates = {c for c in _one_edit(token) & self.vocabulary if len(c) >= MEANT_LENGTH}
        if not candidates:
            return None
        english = _english()
        return min(candidates, key=lambda c: (-english.get(c, 0), c))

    def _read(self, message: str) -> Reading:
        corrections: list[tuple[str, str]] = []

        def replace(match: re.Match[str]) -> str:
            token = match.group(0)
            if "'" in token or "\u2019" in token:
                return token
            meant = self.word(token.lower())
            if meant is None:
                return token
            corrections.append((token, meant))
            if token.isupper() and len(token) > 1:
                return meant.upper()
            return meant.capitalize() if token[0].isupper() else meant

        text = _TOKEN_RE.sub(replace, message)
        return Reading(text=text, corrections=tuple(corrections))
