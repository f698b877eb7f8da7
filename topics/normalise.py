"""Normalisation of typed queries. No Django here.

``normalise_query`` folds case (Unicode NFKC + lower case), drops apostrophes inside words,
turns other punctuation into spaces and collapses whitespace (``punctuation``, the
default); ``case`` only folds case and collapses whitespace; ``none`` keeps the text as
given (for files whose texts are already normalised, such as UQV100's). The raw text is
always kept beside the normalised one, so provenance is never lost.
"""
from __future__ import annotations

import re
import unicodedata

_PUNCT = re.compile(r"[^\w\s]|_", re.UNICODE)
_SPACE = re.compile(r"\s+", re.UNICODE)


NORMALISATIONS = ("punctuation", "case", "none")


def normalise_query(text: str, mode: str = "punctuation") -> str:
    """Lower-case, punctuation to spaces, single spaces, trimmed (``punctuation``).

    Apostrophes inside words are dropped rather than spaced ("don't" -> "dont") so that
    contractions stay one token. ``case``: Unicode NFKC, lower case, single spaces,
    trimmed. ``none``: the text unchanged.

    >>> normalise_query("  What's   the COST of-living?? ")
    'whats the cost of living'
    >>> normalise_query("  What's   the COST of-living?? ", "case")
    "what's the cost of-living??"
    """
    if mode == "none":
        return text
    t = unicodedata.normalize("NFKC", text).lower()
    if mode == "case":
        return _SPACE.sub(" ", t).strip()
    if mode != "punctuation":
        raise ValueError(f"unknown normalisation {mode!r}; one of {', '.join(NORMALISATIONS)}")
    t = re.sub(r"(?<=\w)['\u2019](?=\w)", "", t)
    t = _PUNCT.sub(" ", t)
    return _SPACE.sub(" ", t).strip()
