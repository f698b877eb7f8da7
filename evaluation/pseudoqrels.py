"""Pseudo-qrels from subtopic strings (Sakai, Dou & Clarke, SIGIR 2013, Figure 2).

Plain Python; nothing here imports Django.

For each topic and each of its subtopic strings:

1. the *reduced* subtopic is the subtopic string with the topic string removed (both
   case-folded, punctuation read as spaces, whitespace collapsed; every whole-word
   occurrence of the topic string is removed), e.g. topic ``harry potter``, subtopic
   ``harry potter movies`` → ``movies``;
2. every pooled document's text (normalised the same way) is searched for exact,
   whole-word, non-overlapping occurrences of the reduced subtopic: ``matchcount``;
3. the document's level for that intent is ``max(0, ⌊ln(matchcount) + 1⌋)`` (0 when it
   never matches): 1 match → 1, 3 → 2, 8 → 3, 21 → 4.

A subtopic whose reduced string is empty (it was the topic string) gives level 0
throughout and is reported. The truncated variant keeps, per topic, only the k most
probable intents (ties by intent id), k being the number of intents another intent set
has for that topic, so that the two sets have the same counts. Output: diversity qrels
``topic intent docid level``, every pooled document listed for every kept intent.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Iterable, Mapping, NamedTuple

from common.naturalsort import natural_key

__all__ = ["PseudoQrel", "level", "match_count", "normalise", "pseudo_qrels", "reduced_subtopic",
           "truncate_intents"]

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


class PseudoQrel(NamedTuple):
    topic: str
    intent: str
    docid: str
    level: int


def normalise(text: str) -> str:
    """Case-folded words separated by single spaces (punctuation counts as a space)."""
    return " ".join(_NON_WORD.sub(" ", text.casefold()).split())


def _phrase(phrase: str) -> re.Pattern:
    return re.compile(r"(?<!\S)" + re.escape(phrase) + r"(?!\S)")


def reduced_subtopic(topic: str, subtopic: str) -> str:
    """The subtopic string without the topic string (see the module docstring)."""
    t, s = normalise(topic), normalise(subtopic)
    if t:
        s = _phrase(t).sub(" ", s)
    return " ".join(s.split())


def match_count(phrase: str, text: str) -> int:
    """Whole-word, non-overlapping occurrences of a normalised phrase in a text."""
    if not phrase:
        return 0
    return len(_phrase(phrase).findall(normalise(text)))


def level(matchcount: int) -> int:
    """``max(0, ⌊ln(matchcount) + 1⌋)``, 0 for no match."""
    if matchcount < 0:
        raise ValueError("a match count cannot be negative")
    if matchcount == 0:
        return 0
    return max(0, math.floor(math.log(matchcount) + 1))


def pseudo_qrels(topics: Mapping[str, str], subtopics: Mapping[str, Mapping[str, str]],
                 pool: Mapping[str, Iterable[str]],
                 text: Callable[[str], str]) -> tuple[list[PseudoQrel], list[str]]:
    """Diversity pseudo-qrels for every pooled document of every topic that has
    subtopics, and the notes of subtopics that reduce to nothing. ``text(docid)`` gives
    a document's text; each document is read once per topic."""
    qrels: list[PseudoQrel] = []
    notes: list[str] = []
    for topic in sorted(subtopics, key=natural_key):
        if topic not in topics:
            raise ValueError(f"topic {topic} has subtopics but no topic string")
        reduced = {}
        for intent, sub in sorted(subtopics[topic].items(), key=lambda kv: natural_key(kv[0])):
            reduced[intent] = reduced_subtopic(topics[topic], sub)
            if not reduced[intent]:
                notes.append(f"topic {topic} intent {intent}: the subtopic {sub!r} is only the topic string")
        docs = list(dict.fromkeys(pool.get(topic, ())))
        for docid in docs:
            body = normalise(text(docid))
            for intent, phrase in reduced.items():
                count = len(_phrase(phrase).findall(body)) if phrase else 0
                qrels.append(PseudoQrel(topic, intent, docid, level(count)))
    return qrels, notes


def truncate_intents(probabilities: Mapping[str, Mapping[str, float]],
                     counts: Mapping[str, int]) -> dict[str, list[str]]:
    """Per topic, the ``counts[topic]`` most probable intents (ties by intent id)."""
    out = {}
    for topic, probs in probabilities.items():
        if topic not in counts:
            continue
        ranked = sorted(probs, key=lambda i: (-probs[i], natural_key(i)))
        out[topic] = sorted(ranked[:counts[topic]], key=natural_key)
    return out
