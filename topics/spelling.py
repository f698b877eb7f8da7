"""Optional spell-correction of normalised queries. No Django here.

Conservative by design, because a "correction" that changes what a person meant is worse
than a typo left alone. A dictionary alone is not enough: on Robust04's variations a
one-edit English corrector turned "usa" into "us", "fda" into "fa", "vitro" into "nitro"
and "fibre" into "fire". So corrections stay inside the topic: a word is replaced only when

- it is made of letters only, at least 4 of them (acronyms and codes are left alone);
- it is neither in the English word list shipped with pyspellchecker nor in the topic's
  own vocabulary (its title, description, narrative, statements and intents, and the
  words other people used in their queries for it);
- a word one edit away (insertion, deletion, substitution, adjacent swap) is in that
  topic vocabulary with support: it appears in the topic's texts or in at least two
  answers, and more often than the word itself.

Among such words the best supported wins, ties broken by the word itself, so the result
never depends on set order. The caller keeps the uncorrected text beside the corrected one.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable, Mapping

MIN_LETTERS = 4
MAX_LETTERS = 30
TEXT_SUPPORT = 1_000_000  # a word of the topic's own texts always counts as supported
MIN_SUPPORT = 2


@lru_cache(maxsize=1)
def _checker():
    from spellchecker import SpellChecker  # the English list loads once per process (~0.3 s)

    return SpellChecker(language="en", distance=1, case_sensitive=False)


def topic_vocabulary(texts: Iterable[str], answers: Iterable[tuple[str, int]] = ()) -> Counter:
    """Support of each word of a topic: its normalised texts (title, statements, ...) and
    its normalised answers with their counts."""
    support: Counter = Counter()
    for t in texts:
        for w in set(t.split()):
            support[w] = TEXT_SUPPORT
    for text, count in answers:
        for w in set(text.split()):
            if support[w] < TEXT_SUPPORT:
                support[w] += int(count)
    return support


def correct_word(word: str, support: Mapping[str, int]) -> str:
    """``word`` or its correction within the topic (see the module docstring)."""
    if not (MIN_LETTERS <= len(word) <= MAX_LETTERS and word.isalpha()):
        return word
    own = support.get(word, 0)
    if own >= TEXT_SUPPORT or word in _checker():
        return word
    candidates = [c for c in _checker().edit_distance_1(word)
                  if len(c) >= MIN_LETTERS and support.get(c, 0) >= max(MIN_SUPPORT, own + 1)]
    return min(candidates, key=lambda c: (-support[c], c), default=word)


def spell_correct(normalised: str, support: Mapping[str, int]) -> str:
    """A normalised query with its unknown words corrected within the topic."""
    return " ".join(correct_word(w, support) for w in normalised.split())
