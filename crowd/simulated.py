"""Simulated query variants for the demo: a documented, seeded procedure (no Django).

A simulated worker writes a query for an information-need statement like this:

1. the statement is lower-cased and split into words (letters and digits); words of the
   fixed :data:`STOPWORDS` list, words of one character and repeats are dropped, leaving
   the statement's content words in their order;
2. the worker keeps ``k`` of them, ``k`` drawn uniformly from 2..5 (all of them when
   there are fewer), chosen uniformly without replacement;
3. with probability 1/2 the kept words stay in the statement's order, otherwise they are
   shuffled.

Every draw comes from ``random.Random`` seeded with ``"{seed}:{worker}:{topic}:{attempt}"``,
so the same seed, worker, topic and attempt always give the same query. ``attempt``
counts retries when a study refuses an answer (for instance one that repeats the
worker's earlier answer).
"""
from __future__ import annotations

import random
import re

STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be because been before being
between both but by can could did do does doing done each either else etc even ever
every few for from further had has have having he her here hers him his how i if in into
is it its itself just like may me might more most much must my no nor not now of off on
once one only or other others our out over own please per same she should so some such
than that the their them then there these they this those through to too under until up
upon us very was we were what when where which while who whom why will with within
without would you your yours
interested interest articles article papers paper information documents document
something anything want wanted wish looking find deal deals dealing exist exists
""".split())

_WORD = re.compile(r"[a-z0-9]+")


def content_words(statement: str) -> list[str]:
    """The statement's content words, in order, each once (step 1 of the procedure)."""
    out: list[str] = []
    for w in _WORD.findall(statement.lower()):
        if len(w) > 1 and w not in STOPWORDS and w not in out:
            out.append(w)
    return out


def simulated_query(statement: str, *, seed: int, worker: str, topic: str,
                    attempt: int = 0) -> str:
    """One simulated worker's query for ``statement`` (see the module docstring).

    Raises ``ValueError`` when the statement has no content word."""
    words = content_words(statement)
    if not words:
        raise ValueError(f"topic {topic}: the statement has no content word to build a query from")
    rng = random.Random(f"{seed}:{worker}:{topic}:{attempt}")
    k = min(len(words), rng.randint(2, 5))
    picked = sorted(rng.sample(range(len(words)), k))
    chosen = [words[i] for i in picked]
    if rng.random() >= 0.5:
        rng.shuffle(chosen)
    return " ".join(chosen)
