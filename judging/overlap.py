"""Agreement so far between the assessors of a task, over the documents two of them both
graded. Plain Python.

For each pair of assessors (a, b), over the n units (topic, intent, docid) both graded:

- ``agreed`` / n: the fraction with the same grade;
- ``binary``: the fraction that agree on relevant (grade > 0) or not;
- Cohen's kappa on the grades: κ = (p_o − p_e) / (1 − p_e), with p_o the fraction agreed
  and p_e = Σ_g p_a(g) · p_b(g) from each assessor's own grade frequencies over the shared
  units; None when p_e = 1 (both gave one and the same grade throughout: no chance
  correction is possible).

This is the quick view the organiser follows while judging goes on; the evaluation stage
has the full agreement statistics (Krippendorff's α, per-topic κ, …).
"""
from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Hashable, Mapping

Unit = Hashable


def cohen_kappa(a: list[int], b: list[int]) -> float | None:
    """Cohen's κ of two equally long grade lists (None when undefined, see above)."""
    if len(a) != len(b):
        raise ValueError(f"grade lists differ in length: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[g] * cb[g] for g in ca) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def pairwise_agreement(grades: Mapping[str, Mapping[Unit, int]]) -> list[dict]:
    """``{assessor: {unit: grade}}`` → one row per pair of assessors with at least one
    shared unit, ``{"a", "b", "shared", "agreed", "fraction", "binary", "kappa"}``, pairs in
    order of their names."""
    rows = []
    for a, b in combinations(sorted(grades), 2):
        shared = sorted(set(grades[a]) & set(grades[b]), key=repr)
        if not shared:
            continue
        ga = [grades[a][u] for u in shared]
        gb = [grades[b][u] for u in shared]
        agreed = sum(x == y for x, y in zip(ga, gb))
        binary = sum((x > 0) == (y > 0) for x, y in zip(ga, gb))
        rows.append({"a": a, "b": b, "shared": len(shared), "agreed": agreed,
                     "fraction": agreed / len(shared), "binary": binary / len(shared),
                     "kappa": cohen_kappa(ga, gb)})
    return rows
