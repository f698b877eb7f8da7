"""Quality-control rules for typed queries. Plain Python: no Django here.

Every rule works on the normalised text (``topics.normalise.normalise_query``), so case,
punctuation and spacing never decide the outcome. ``query_problems`` returns the reasons
an answer is refused (an empty list accepts it); the worker is asked to try again.

Rules, with the defaults a study starts from:

- ``empty``: nothing left after normalisation (blank, or punctuation only).
- ``too_long``: more than ``max_chars`` characters of raw text (default 200).
- ``copy``: the query copies a long passage of the statement. Only a query of at least
  ``copy_min_tokens`` tokens (default 6) can be a copy, so a short statement's own words
  typed as a query (CACM's "Parallel algorithms") are a plausible query. A long enough
  query is a copy when any of
    * the normalised query equals the normalised statement;
    * the query's tokens occur as one contiguous run inside the statement's tokens: a
      pasted sentence or clause, while a short phrase that happens to match ("cost of
      living") is fine;
    * token-set Jaccard |Q ∩ S| / |Q ∪ S| >= ``jaccard_threshold`` (default 0.8): the
      statement with words dropped, reordered or lightly edited.
- ``duplicate``: the same normalised query this worker already gave for another item.

``is_too_fast`` flags (does not refuse) answers given in under ``min_seconds`` from the
item's first display, and answers posted without the item ever being displayed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from topics.normalise import normalise_query

EMPTY = "empty"
TOO_LONG = "too_long"
COPY = "copy"
DUPLICATE = "duplicate"
ESTIMATE = "estimate"

MESSAGES = {
    EMPTY: "Please type a query.",
    TOO_LONG: "That query is too long.",
    COPY: "Please write the query you would type yourself, not a copy of the description.",
    DUPLICATE: "You have already given this query; please write one for this description.",
    ESTIMATE: "Please answer the question.",
}


def tokens(normalised: str) -> list[str]:
    return normalised.split()


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| over token sets; 0.0 when both are empty."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def contains_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """True when ``needle`` occurs as a contiguous run of tokens in ``haystack``."""
    n = len(needle)
    if n == 0 or n > len(haystack):
        return False
    first = needle[0]
    for i in range(len(haystack) - n + 1):
        if haystack[i] == first and list(haystack[i : i + n]) == list(needle):
            return True
    return False


def is_copy(query_norm: str, statement_norm: str, *, jaccard_threshold: float,
            copy_min_tokens: int) -> bool:
    """True when the query (at least ``copy_min_tokens`` tokens) copies the statement."""
    if not query_norm or not statement_norm:
        return False
    q, s = tokens(query_norm), tokens(statement_norm)
    if len(q) < copy_min_tokens:
        return False  # too short to be a copy of a passage
    if query_norm == statement_norm or contains_run(s, q):
        return True
    return jaccard(q, s) >= jaccard_threshold


def query_problems(raw: str, statement: str, *, max_chars: int, jaccard_threshold: float,
                   copy_min_tokens: int, previous: Iterable[str] = ()) -> list[str]:
    """Reasons to refuse ``raw`` as a query for ``statement``; empty when acceptable.

    ``previous``: the normalised queries this worker already gave in the study.
    ``statement`` may be empty (attention checks), which disables the copy rule.
    """
    norm = normalise_query(raw)
    if not norm:
        return [EMPTY]
    problems = []
    if len(raw) > max_chars:
        problems.append(TOO_LONG)
    if statement and is_copy(norm, normalise_query(statement),
                             jaccard_threshold=jaccard_threshold,
                             copy_min_tokens=copy_min_tokens):
        problems.append(COPY)
    if norm in set(previous):
        problems.append(DUPLICATE)
    return problems


def estimate_problems(estimate: str, *, question: str, choices: Sequence[str],
                      max_chars: int = 50) -> list[str]:
    """``[ESTIMATE]`` when the study asks ``question`` and ``estimate`` does not answer it:
    empty, not one of ``choices`` (when there are choices), or over ``max_chars``."""
    if not question:
        return []
    value = estimate.strip()
    if not value or len(value) > max_chars or (choices and value not in choices):
        return [ESTIMATE]
    return []


def is_too_fast(seconds: float | None, min_seconds: float) -> bool:
    """An answer is implausibly fast when it took less than ``min_seconds`` since the item
    was first shown, or when it was posted for an item never shown (``seconds`` None)."""
    return seconds is None or seconds < min_seconds


def attention_passed(raw: str, expected: str) -> bool:
    """An attention check passes when the normalised answer equals the expected text."""
    want = normalise_query(expected)
    return bool(want) and normalise_query(raw) == want


def gold_passed(raw: str, expected_lines: str, *, threshold: float = 0.5) -> bool:
    """A gold answer passes when its tokens overlap a known good query with Jaccard >= 0.5.

    ``expected_lines``: known good queries, one per line.
    """
    q = tokens(normalise_query(raw))
    return any(
        jaccard(q, tokens(normalise_query(line))) >= threshold
        for line in expected_lines.splitlines()
        if line.strip()
    )
