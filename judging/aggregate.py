"""Turning the K labels of an item into one grade. Plain Python; no Django.

An item is a (topic, intent, docid) key; its labels are the current grades of its
assessors (one per assessor; labels the assessor could not judge are left out before).
Every rule returns one integer grade per item; tie rules are part of the definition:

``majority``
    The most frequent grade; a tie goes to the highest of the tied grades.
``max``
    The highest grade.
``mean``
    The arithmetic mean rounded to the nearest integer, halves rounded up
    (``floor(mean + 0.5)``: 0.5 → 1, −0.5 → 0, −1.5 → −1).
``median``
    The middle grade; with an even number of labels the higher of the two middle grades.
``assessor:NAME``
    That assessor's grade; items NAME did not label are left out.
``dawid-skene``
    Dawid & Skene (1979) through crowd-kit's :class:`crowdkit.aggregation.DawidSkene`
    (EM from majority-vote initialisation, at most 100 iterations, tolerance 1e-5), each
    grade a class. Items with a single label get that label's class like any other.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Iterable, Mapping, Sequence

AGGREGATES = ("majority", "max", "mean", "median", "dawid-skene")


def majority(grades: Sequence[int]) -> int:
    counts = Counter(grades)
    top = max(counts.values())
    return max(g for g, c in counts.items() if c == top)


def maximum(grades: Sequence[int]) -> int:
    return max(grades)


def mean(grades: Sequence[int]) -> int:
    return math.floor(sum(grades) / len(grades) + 0.5)


def median(grades: Sequence[int]) -> int:
    s = sorted(grades)
    return s[len(s) // 2]


_SIMPLE = {"majority": majority, "max": maximum, "mean": mean, "median": median}


def check_rule(rule: str) -> str:
    if rule in AGGREGATES or (rule.startswith("assessor:") and len(rule) > len("assessor:")):
        return rule
    raise ValueError(
        f"aggregate must be one of {', '.join(AGGREGATES)} or assessor:NAME, not {rule!r}")


def aggregate(
    labels: Mapping[Hashable, Iterable[tuple[str, int]]], rule: str
) -> dict[Hashable, int]:
    """One grade per item key from ``{key: [(assessor, grade), ...]}`` under ``rule``.
    Keys keep the order of ``labels``."""
    check_rule(rule)
    if rule.startswith("assessor:"):
        name = rule.split(":", 1)[1]
        out = {}
        for key, pairs in labels.items():
            for assessor, grade in pairs:
                if assessor == name:
                    out[key] = grade
        return out
    if rule == "dawid-skene":
        return dawid_skene(labels)
    fn = _SIMPLE[rule]
    out = {}
    for key, pairs in labels.items():
        grades = [g for _, g in pairs]
        if grades:
            out[key] = fn(grades)
    return out


def dawid_skene(labels: Mapping[Hashable, Iterable[tuple[str, int]]]) -> dict[Hashable, int]:
    """Dawid–Skene estimates through crowd-kit (see the module docstring)."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    keys = list(labels)
    rows = [(k, assessor, int(grade)) for k, key in enumerate(keys)
            for assessor, grade in labels[key]]
    if not rows:
        return {}
    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    result = DawidSkene(n_iter=100, tol=1e-5).fit_predict(df)
    return {keys[int(task)]: int(label) for task, label in result.items()}
