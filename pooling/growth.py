"""Pool growth: how the depth-D pool of a topic grows as contributors are added.

Plain Python and NumPy; nothing here imports Django.

A contributor is one answer (a person's query; a variant typed by ``w`` people is ``w``
answers with the same ranking) or one system run. For contributors taken in a given
order, the pool size after ``k`` of them is ``v(k) = |U_{i<=k} top_D(R_i)|``.
Averaging ``v(k)`` over seeded random orders gives the expected growth curve, which is
fitted by the power law ``v ~= c * D * k ** x`` (least squares on
``log v = log(c D) + x log k``).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .idtables import Scratch, group
from .pools import Contribution

__all__ = ["PowerLawFit", "mean_growth", "pool_growth", "power_law_fit"]


def _check_depth(depth: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")


def pool_growth(
    contributions_for_topic: Sequence[Contribution], order: Sequence[int], depth: int
) -> np.ndarray:
    """Pool size after adding the first ``k`` rankings of ``order``, ``k = 1..len(order)``.

    ``order`` lists indices into ``contributions_for_topic``; an index may repeat
    (a query typed by several people: one answer each), and a repeat adds nothing.
    Each document is counted at the first position ``k`` whose ranking holds it within
    ``depth``: ``v(k) = sum_{j<=k} |{d : first(d) = j}|``.  O(entries), no sort.
    """
    _check_depth(depth)
    n = len(contributions_for_topic)
    idx = np.asarray(order, dtype=np.int64).reshape(-1)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    if idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"order holds an index outside 0..{n - 1}")
    pos = np.full(n, idx.size, dtype=np.int64)  # first position of each ranking in order
    np.minimum.at(pos, idx, np.arange(idx.size, dtype=np.int64))
    used = np.flatnonzero(pos < idx.size)
    tops = [contributions_for_topic[i].docids[:depth] for i in used]
    lens = np.fromiter((t.size for t in tops), dtype=np.int64, count=len(tops))
    if lens.sum() == 0:
        return np.zeros(idx.size, dtype=np.int64)
    docs = np.concatenate(tops)
    kpos = np.repeat(pos[used], lens)
    reps, slot = group(docs, Scratch())
    first = np.full(reps.size, idx.size, dtype=np.int64)
    np.minimum.at(first, slot, kpos)
    return np.cumsum(np.bincount(first, minlength=idx.size)[: idx.size])


def mean_growth(
    contributions_for_topic: Sequence[Contribution],
    orders: Sequence[Sequence[int]],
    depth: int,
) -> np.ndarray:
    """The mean of :func:`pool_growth` over ``orders`` (each of the same length)."""
    if not len(orders):
        raise ValueError("mean_growth needs at least one order")
    curves = [pool_growth(contributions_for_topic, o, depth) for o in orders]
    if len({c.size for c in curves}) != 1:
        raise ValueError("mean_growth needs orders of one length")
    return np.mean(np.asarray(curves, dtype=np.float64), axis=0)


class PowerLawFit(NamedTuple):
    c: float
    x: float
    r2: float  # coefficient of determination of the fit in log space
    points: int


def power_law_fit(n, sizes, depth: int) -> PowerLawFit:
    """Fit ``v ~= c * depth * n ** x`` by least squares in log space.

    Minimises ``SS_res = sum_k (log v_k - log(c depth) - x log n_k) ** 2`` over the points
    with ``n_k > 0`` and ``v_k > 0``. ``r2 = 1 - SS_res / SS_tot`` with
    ``SS_tot = sum_k (log v_k - mean log v) ** 2`` (1 when every ``v_k`` is equal: the
    flat line fits exactly).
    """
    _check_depth(depth)
    n = np.asarray(n, dtype=np.float64)
    v = np.asarray(sizes, dtype=np.float64)
    if n.shape != v.shape:
        raise ValueError(f"n and sizes differ in shape: {n.shape} vs {v.shape}")
    ok = (n > 0) & (v > 0)
    if np.count_nonzero(np.unique(n[ok])) < 2:
        raise ValueError("a power-law fit needs at least two distinct n with size > 0")
    ln, lv = np.log(n[ok]), np.log(v[ok])
    x, intercept = np.polyfit(ln, lv, 1)
    ss_res = float(np.sum((lv - (intercept + x * ln)) ** 2))
    ss_tot = float(np.sum((lv - lv.mean()) ** 2))
    r2 = 1.0 if np.ptp(lv) == 0.0 else 1.0 - ss_res / ss_tot
    return PowerLawFit(float(np.exp(intercept) / depth), float(x), r2, int(ok.sum()))
