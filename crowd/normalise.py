"""Normalisation of typed queries. No Django here.

``normalise_query`` folds case (Unicode NFKC + lower case), turns punctuation into spaces
and collapses whitespace, as UQV100 did before counting unique variants. The raw text is
always kept beside the normalised one, so provenance is never lost.
"""
from __future__ import annotations

import re
import unicodedata

_PUNCT = re.compile(r"[^\w\s]|_", re.UNICODE)
_SPACE = re.compile(r"\s+", re.UNICODE)


def normalise_query(text: str) -> str:
    """Lower-case, punctuation to spaces, single spaces, trimmed.

    Apostrophes inside words are dropped rather than spaced ("don't" -> "dont") so that
    contractions stay one token.

    >>> normalise_query("  What's   the COST of-living?? ")
    'whats the cost of living'
    """
    t = unicodedata.normalize("NFKC", text).lower()
    t = re.sub(r"(?<=\w)['\u2019](?=\w)", "", t)
    t = _PUNCT.sub(" ", t)
    return _SPACE.sub(" ", t).strip()
