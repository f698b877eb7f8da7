"""pooling.growth and pooling.stats: hand-computed values and properties."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.growth import mean_growth, pool_growth, power_law_fit
from pooling.pools import Contribution, pool_compute
from pooling.stats import mann_whitney_less, mean_ci, wilcoxon_less


def C(docids, source="system", weight=1):
    return Contribution("t", source, weight, np.asarray(docids, dtype=np.int64))


def test_pool_growth_hand_computed():
    cs = [C([1, 2, 3]), C([2, 4, 5]), C([1, 2, 6])]
    assert pool_growth(cs, [0, 1, 2], depth=2).tolist() == [2, 3, 3]  # {1,2} +{4} +{}
    assert pool_growth(cs, [2, 0, 1], depth=3).tolist() == [3, 4, 6]  # {1,2,6} +{3} +{4,5}
    assert pool_growth(cs, [1, 1], depth=1).tolist() == [1, 1]  # one query, two answers
    with pytest.raises(ValueError, match="outside"):
        pool_growth(cs, [3], depth=1)
    with pytest.raises(ValueError, match="depth"):
        pool_growth(cs, [0], depth=0)


def test_mean_growth_hand_computed():
    cs = [C([1, 2]), C([2, 3])]
    # either order: the first adds 2, the second 1
    assert mean_growth(cs, [[0, 1], [1, 0]], 2).tolist() == [2.0, 3.0]
    # a query typed by two people is two answers: orders (0,0,1), (0,1,0), (1,0,0)
    us = [C([1], "user", 2), C([2], "user", 1)]
    m = mean_growth(us, [[0, 0, 1], [0, 1, 0], [1, 0, 0]], 1)
    assert m.tolist() == pytest.approx([1.0, 1 + 2 / 3, 2.0])
    with pytest.raises(ValueError, match="one length"):
        mean_growth(cs, [[0, 1], [0]], 2)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True), min_size=1,
             max_size=8),
    st.integers(1, 10),
    st.integers(0, 1000),
)
def test_growth_ends_at_pool_size(rankings, depth, seed):
    cs = [C(r) for r in rankings]
    rng = np.random.default_rng(seed)
    m = mean_growth(cs, [rng.permutation(len(cs)) for _ in range(5)], depth)
    size = len(pool_compute(cs, depth=depth)["t"])
    assert m[-1] == size
    assert np.all(np.diff(m) >= 0)


def test_power_law_fit_recovers_a_power_law():
    n = np.arange(1, 101)
    fit = power_law_fit(n, 0.8 * 100 * n**0.7, 100)
    assert fit.c == pytest.approx(0.8, rel=1e-10)
    assert fit.x == pytest.approx(0.7, rel=1e-10)
    assert fit.r2 == pytest.approx(1.0, abs=1e-12) and fit.points == 100
    with pytest.raises(ValueError, match="two distinct n"):
        power_law_fit(np.array([1.0]), np.array([3.0]), 10)


def test_power_law_fit_r2_hand_computed():
    # log2 n = 0, 1, 2 and log2 v = 1, 2, 2: slope 1/2, intercept 7/6 (in log2 units);
    # residuals -1/6, 1/3, -1/6: SS_res = 1/6, SS_tot = 2/3, R² = 1 - 1/4
    fit = power_law_fit([1, 2, 4], [2, 4, 4], 1)
    assert fit.x == pytest.approx(0.5, rel=1e-12)
    assert fit.c == pytest.approx(2 ** (7 / 6), rel=1e-12)
    assert fit.r2 == pytest.approx(0.75, rel=1e-12)
    # a flat curve: exponent 0, fitted exactly
    flat = power_law_fit([1, 2, 3], [5, 5, 5], 5)
    assert (flat.x, flat.c, flat.r2) == (pytest.approx(0.0, abs=1e-12), pytest.approx(1.0), 1.0)
    # points with size 0 are left out
    assert power_law_fit([1, 2, 4, 8], [0, 2, 4, 4], 1).points == 3


def test_mean_ci_hand_computed():
    # 1, 2, 3: mean 2, s = 1. With 2 degrees of freedom Student's t has the closed-form
    # quantile t_a = (2a - 1) sqrt(2 / (4 a (1 - a))): t_0.975 = 4.3026527... (tables: 4.303)
    ci = mean_ci([1.0, 2.0, 3.0])
    t = 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))
    assert t == pytest.approx(4.303, abs=5e-4)
    half = t / math.sqrt(3)
    assert (ci.mean, ci.n) == (2.0, 3)
    assert ci.low == pytest.approx(2 - half, rel=1e-12)
    assert ci.high == pytest.approx(2 + half, rel=1e-12)
    assert mean_ci([0.4]) == (0.4, None, None, 1)
    with pytest.raises(ValueError, match="at least one"):
        mean_ci([])


def test_wilcoxon_less_exact():
    # every difference negative: W+ = 0, P = 1 / 2^5 under the exact null
    r = wilcoxon_less([1, 2, 3, 4, 5], [2, 4, 6, 8, 10])
    assert (r.statistic, r.n, r.n_nonzero) == (0.0, 5, 5)
    assert r.pvalue == pytest.approx(1 / 32)
    # differences -1, -2, -3, -4, +5: W+ = 5; subsets of {1..5} with sum <= 5 number 10
    r = wilcoxon_less([0, 0, 0, 0, 5], [1, 2, 3, 4, 0])
    assert r.statistic == 5.0 and r.pvalue == pytest.approx(10 / 32)
    # a zero difference is dropped: 4 pairs remain, all negative, P = 1 / 16
    r = wilcoxon_less([1, 1, 2, 3, 4], [1, 2, 3, 4, 5])
    assert r.n_nonzero == 4 and r.pvalue == pytest.approx(1 / 16)
    with pytest.raises(ValueError, match="non-zero difference"):
        wilcoxon_less([1, 2], [1, 2])
    with pytest.raises(ValueError, match="paired"):
        wilcoxon_less([1, 2], [1])


def test_mann_whitney_less_exact():
    r = mann_whitney_less([1, 2, 3], [4, 5, 6])
    assert r.statistic == 0.0
    assert r.pvalue == pytest.approx(1 / 20)  # one of C(6,3) = 20 equally likely splits
    r = mann_whitney_less([4, 5, 6], [1, 2, 3])
    assert r.statistic == 9.0 and r.pvalue == pytest.approx(1.0)
    assert (r.n_x, r.n_y) == (3, 3)
    with pytest.raises(ValueError, match="non-empty"):
        mann_whitney_less([], [1])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 40), min_size=0, max_size=12, unique=True), min_size=1,
             max_size=7),
    st.integers(1, 12),
    st.data(),
)
def test_pool_growth_matches_set_union(rankings, depth, data):
    cs = [C(r) for r in rankings]
    order = data.draw(st.lists(st.integers(0, len(cs) - 1), min_size=1, max_size=10))
    seen: set = set()
    expect = []
    for i in order:
        seen |= set(rankings[i][:depth])
        expect.append(len(seen))
    assert pool_growth(cs, order, depth).tolist() == expect
