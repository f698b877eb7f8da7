"""Significance tests and intervals used in pool and overlap analysis.

Plain Python and SciPy; nothing here imports Django.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats as _st

__all__ = [
    "MannWhitneyResult",
    "MeanCI",
    "WilcoxonResult",
    "mann_whitney_less",
    "mean_ci",
    "wilcoxon_less",
]


class MannWhitneyResult(NamedTuple):
    statistic: float  # U of the first sample
    pvalue: float
    n_x: int
    n_y: int


class WilcoxonResult(NamedTuple):
    statistic: float  # W+: sum of the ranks of the positive differences x - y
    pvalue: float
    n: int  # pairs given
    n_nonzero: int  # pairs with a non-zero difference (the others are dropped)


class MeanCI(NamedTuple):
    mean: float
    low: float | None  # None with fewer than two values
    high: float | None
    n: int


def _sample(values, name: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).ravel()
    if np.isnan(a).any():
        raise ValueError(f"{name}: samples contain NaN")
    return a


def mann_whitney_less(x: Sequence[float], y: Sequence[float]) -> MannWhitneyResult:
    """One-sided Mann-Whitney U test of H1: ``x`` tends to be smaller than ``y``.

    ``U_x = sum_{i,j} [x_i > y_j] + 0.5 [x_i == y_j]``; small ``U_x`` supports H1.
    Uses ``scipy.stats.mannwhitneyu(x, y, alternative="less")`` (its default
    ``method="auto"``: exact for small samples without ties, otherwise normal
    approximation with tie and continuity correction). It assumes independent values.
    """
    xa, ya = _sample(x, "mann_whitney_less"), _sample(y, "mann_whitney_less")
    if xa.size == 0 or ya.size == 0:
        raise ValueError("mann_whitney_less needs two non-empty samples")
    res = _st.mannwhitneyu(xa, ya, alternative="less")
    return MannWhitneyResult(float(res.statistic), float(res.pvalue), int(xa.size), int(ya.size))


def wilcoxon_less(x: Sequence[float], y: Sequence[float]) -> WilcoxonResult:
    """One-sided Wilcoxon signed-rank test of H1: paired ``x`` tends to be smaller than ``y``.

    Differences ``d_i = x_i - y_i``; zero differences are dropped (Wilcoxon's convention,
    ``zero_method="wilcox"``); the others are ranked by ``|d_i|`` (mid-ranks for ties) and
    ``W+ = sum of the ranks of positive d_i``; small ``W+`` supports H1. Uses
    ``scipy.stats.wilcoxon(x, y, alternative="less")`` (exact distribution for small
    samples without ties, otherwise the normal approximation).
    """
    xa, ya = _sample(x, "wilcoxon_less"), _sample(y, "wilcoxon_less")
    if xa.shape != ya.shape:
        raise ValueError(f"wilcoxon_less needs paired samples, got {xa.size} and {ya.size}")
    nonzero = int(np.count_nonzero(xa != ya))
    if nonzero == 0:
        raise ValueError("wilcoxon_less needs at least one pair with a non-zero difference")
    res = _st.wilcoxon(xa, ya, alternative="less")
    return WilcoxonResult(float(res.statistic), float(res.pvalue), int(xa.size), nonzero)


def mean_ci(values: Sequence[float], level: float = 0.95) -> MeanCI:
    """The mean and its two-sided ``level`` confidence interval from Student's t:
    ``mean ± t_{(1+level)/2, n-1} · s / sqrt(n)`` with ``s`` the sample standard deviation
    (``ddof=1``). Fewer than two values give no interval."""
    a = _sample(values, "mean_ci")
    if a.size == 0:
        raise ValueError("mean_ci needs at least one value")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level}")
    mean = float(a.mean())
    if a.size < 2:
        return MeanCI(mean, None, None, 1)
    half = float(_st.t.ppf((1.0 + level) / 2.0, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return MeanCI(mean, mean - half, mean + half, int(a.size))
