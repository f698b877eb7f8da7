"""pooling.growth and pooling.stats."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.growth import (
    loglog_fit,
    pool_growth,
    pool_growth_mean,
    system_pool_growth,
    user_pool_growth,
)
from pooling.pools import Contribution, pool_build
from pooling.stats import mann_whitney_less


def C(docids, source="system", weight=1):
    return Contribution("t", source, weight, np.asarray(docids, dtype=np.int64))


def test_pool_growth_hand_computed():
    cs = [C([1, 2, 3]), C([2, 4, 5]), C([1, 2, 6])]
    assert pool_growth(cs, [0, 1, 2], depth=2).tolist() == [2, 3, 3]  # {1,2} +{4} +{}
    assert pool_growth(cs, [2, 0, 1], depth=3).tolist() == [3, 4, 6]  # {1,2,6} +{3} +{4,5}
    assert pool_growth(cs, [1, 1], depth=1).tolist() == [1, 1]
    with pytest.raises(ValueError, match="outside"):
        pool_growth(cs, [3], depth=1)
    with pytest.raises(ValueError, match="depth"):
        pool_growth(cs, [0], depth=0)


def test_growth_mean_hand_computed():
    # two rankings: first adds 2 either way; the second adds 1 -> mean [2, 3]
    cs = [C([1, 2]), C([2, 3])]
    assert pool_growth_mean(cs, 2, n_orders=10, seed=1).tolist() == [2.0, 3.0]
    # a user query typed by two people counts twice: [1, 1, 2] or [1, 2, 2] or [1, 1, 2] ...
    us = [C([1], "user", 2), C([2], "user", 1)]
    m = user_pool_growth(us, 1, n_orders=3000, seed=0)
    assert m.size == 3
    assert m[0] == 1 and m[2] == 2
    # P(second person brings a new doc) = P(orders 1,2,x or 2,1,x ...) = 2/3
    assert m[1] == pytest.approx(1 + 2 / 3, abs=0.03)
    assert system_pool_growth(us, 1).size == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True), min_size=1, max_size=8),
    st.integers(1, 10),
    st.integers(0, 1000),
)
def test_growth_ends_at_pool_size(rankings, depth, seed):
    cs = [C(r) for r in rankings]
    m = pool_growth_mean(cs, depth, n_orders=5, seed=seed)
    size = len(pool_build(cs, depth=depth)["t"])
    assert m[-1] == size
    assert np.all(np.diff(m) >= 0)
    # seeded: same seed, same curve
    assert np.array_equal(m, pool_growth_mean(cs, depth, n_orders=5, seed=seed))


def test_loglog_fit_recovers_power_law():
    n = np.arange(1, 101)
    v = 0.8 * 100 * n**0.7
    c, x = loglog_fit(n, v, 100)
    assert c == pytest.approx(0.8, rel=1e-10)
    assert x == pytest.approx(0.7, rel=1e-10)
    with pytest.raises(ValueError, match="two points"):
        loglog_fit(np.array([1.0]), np.array([3.0]), 10)


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
    st.lists(st.lists(st.integers(0, 40), min_size=0, max_size=12, unique=True), min_size=1, max_size=7),
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
