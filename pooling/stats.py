"""Significance tests used in pool and overlap analysis.

Plain Python and SciPy; nothing here imports Django.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats as _st

__all__ = ["MannWhitneyResult", "mann_whitney_less"]


class MannWhitneyResult(NamedTuple):
    statistic: float  # U of the first sample
    pvalue: float
    n_x: int
    n_y: int


def mann_whitney_less(x: Sequence[float], y: Sequence[float]) -> MannWhitneyResult:
    """One-sided Mann-Whitney U test of H1: ``x`` tends to be smaller than ``y``.

    ``U_x = sum_{i,j} [x_i > y_j] + 0.5 [x_i == y_j]``; small ``U_x`` supports H1.
    Uses ``scipy.stats.mannwhitneyu(x, y, alternative="less")`` (its default
    ``method="auto"``: exact for small samples without ties, otherwise normal
    approximation with tie and continuity correction).
    """
    xa = np.asarray(x, dtype=np.float64).ravel()
    ya = np.asarray(y, dtype=np.float64).ravel()
    if xa.size == 0 or ya.size == 0:
        raise ValueError("mann_whitney_less needs two non-empty samples")
    if np.isnan(xa).any() or np.isnan(ya).any():
        raise ValueError("mann_whitney_less: samples contain NaN")
    res = _st.mannwhitneyu(xa, ya, alternative="less")
    return MannWhitneyResult(float(res.statistic), float(res.pvalue), int(xa.size), int(ya.size))
