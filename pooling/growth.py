"""Pool growth: how the depth-D pool of a topic grows as rankings are added.

Plain Python and NumPy; nothing here imports Django.

For rankings ``R_1..R_n`` taken in a given order, the pool size after ``k``
rankings is ``v(k) = |U_{i<=k} top_D(R_i)|``.  Averaging ``v(k)`` over seeded
random orders gives the expected growth curve, which is fitted by the power law
``v ~= c * D * k ** x`` (least squares on ``log v = log(c D) + x log k``).

A user contribution typed by ``w`` people stands for ``w`` people with the same
ranking; with ``expand_repeats=True`` (default) it counts as ``w`` rankings in
the growth curve (the repeats add no documents, but they add people).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .pools import Contribution, _group, _Scratch

__all__ = [
    "loglog_fit",
    "pool_growth",
    "pool_growth_mean",
    "system_pool_growth",
    "user_pool_growth",
]


def _check_depth(depth: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")


def pool_growth(
    contributions_for_topic: Sequence[Contribution], order: Sequence[int], depth: int
) -> np.ndarray:
    """Pool size after adding the first ``k`` rankings of ``order``, ``k = 1..len(order)``.

    ``order`` lists indices into ``contributions_for_topic``; an index may repeat
    (e.g. a query typed by several people), and a repeat adds nothing.  Each
    document is counted at the first position ``k`` whose ranking holds it within
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
    reps, slot = _group(docs, _Scratch())
    first = np.full(reps.size, idx.size, dtype=np.int64)
    np.minimum.at(first, slot, kpos)
    return np.cumsum(np.bincount(first, minlength=idx.size)[: idx.size])


def pool_growth_mean(
    contributions_for_topic: Sequence[Contribution],
    depth: int,
    *,
    n_orders: int = 100,
    seed: int = 0,
    expand_repeats: bool = True,
) -> np.ndarray:
    """Mean pool size after ``k`` rankings over ``n_orders`` random orders (seeded).

    Order ``j`` is ``numpy.random.default_rng(seed).permutation`` drawn ``j``-th.
    With ``expand_repeats`` a contribution of weight ``w`` appears ``w`` times.
    """
    _check_depth(depth)
    if n_orders < 1:
        raise ValueError(f"n_orders must be >= 1, got {n_orders}")
    base = []
    for i, c in enumerate(contributions_for_topic):
        base.extend([i] * (c.weight if expand_repeats else 1))
    base_arr = np.asarray(base, dtype=np.int64)
    if base_arr.size == 0:
        return np.zeros(0, dtype=np.float64)
    rng = np.random.default_rng(seed)
    total = np.zeros(base_arr.size, dtype=np.float64)
    for _ in range(n_orders):
        perm = base_arr[rng.permutation(base_arr.size)]
        total += pool_growth(contributions_for_topic, perm, depth)
    return total / n_orders


def user_pool_growth(contributions_for_topic, depth, *, n_orders=100, seed=0, expand_repeats=True):
    """:func:`pool_growth_mean` over the ``source == "user"`` contributions only."""
    users = [c for c in contributions_for_topic if c.source == "user"]
    return pool_growth_mean(
        users, depth, n_orders=n_orders, seed=seed, expand_repeats=expand_repeats
    )


def system_pool_growth(contributions_for_topic, depth, *, n_orders=100, seed=0):
    """:func:`pool_growth_mean` over the ``source == "system"`` contributions only."""
    systems = [c for c in contributions_for_topic if c.source == "system"]
    return pool_growth_mean(systems, depth, n_orders=n_orders, seed=seed, expand_repeats=False)


def loglog_fit(n: np.ndarray, sizes: np.ndarray, depth: int) -> tuple[float, float]:
    """Fit ``v ~= c * depth * n ** x`` by least squares in log space.

    Minimises ``sum_k (log v_k - log(c depth) - x log n_k) ** 2`` over points
    with ``n_k > 0`` and ``v_k > 0``; returns ``(c, x)``.
    """
    _check_depth(depth)
    n = np.asarray(n, dtype=np.float64)
    v = np.asarray(sizes, dtype=np.float64)
    if n.shape != v.shape:
        raise ValueError(f"n and sizes differ in shape: {n.shape} vs {v.shape}")
    ok = (n > 0) & (v > 0)
    if ok.sum() < 2:
        raise ValueError("loglog_fit needs at least two points with n > 0 and size > 0")
    ln, lv = np.log(n[ok]), np.log(v[ok])
    x, intercept = np.polyfit(ln, lv, 1)
    c = float(np.exp(intercept) / depth)
    return c, float(x)
