"""pooling.pools.pool_compute with ``string_order``: rankings given in vocabulary ids (in
insertion order, as stored), only the pooled documents mapped to string order, give the
pools of rankings remapped beforehand, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.pools import Contribution, pool_compute

FIELDS = ("docids", "weights", "min_rank", "users", "systems")

# A ranking: distinct dense ids (docid string order), source, people who typed it.
ranking_st = st.tuples(
    st.lists(st.integers(0, 40), min_size=0, max_size=15, unique=True),
    st.sampled_from(["user", "system"]),
    st.integers(1, 3),
)
spec_st = st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3"]), ranking_st),
                   min_size=1, max_size=12)


def _contributions(spec, ids=lambda d: d):
    return [Contribution(t, s, w if s == "user" else 1, np.asarray(ids(np.asarray(d, np.int64))))
            for t, (d, s, w) in spec]


def _assert_same(a: dict, b: dict):
    assert list(a) == list(b)
    for t in a:
        for f in FIELDS:
            assert getattr(a[t], f).tobytes() == getattr(b[t], f).tobytes(), (t, f)


@settings(max_examples=150, deadline=None)
@given(spec_st, st.integers(1, 16), st.floats(0.05, 0.99), st.sampled_from(["depth", "rbp"]),
       st.one_of(st.none(), st.integers(1, 30)), st.sampled_from(["topic", "global"]),
       st.randoms(use_true_random=False))
def test_ordering_after_pooling_gives_the_same_pools(spec, depth, p, strategy, budget, scope,
                                                      rnd):
    # vocabulary ids: the dense ids shuffled and spread out, as insertion order leaves them
    vocab_of_dense = np.array(rnd.sample(range(1000, 5000), 41), dtype=np.int64)
    dense_of = dict(zip(vocab_of_dense.tolist(), range(41)))
    calls = []

    def string_order(arrays):
        calls.append(sum(a.size for a in arrays))
        return [np.array([dense_of[int(v)] for v in a], dtype=np.int64) for a in arrays]

    kwargs = dict(strategy=strategy, depth=depth, p=p, budget=budget, budget_scope=scope)
    expected = pool_compute(_contributions(spec), **kwargs)
    got = pool_compute(_contributions(spec, lambda d: vocab_of_dense[d]),
                       string_order=string_order, **kwargs)
    _assert_same(expected, got)
    # called once, with the distinct documents of each topic's top-depth only
    pooled = {t: set() for t, _ in spec}
    for t, (d, _, _) in spec:
        pooled[t] |= set(d[:depth])
    assert calls == [sum(len(s) for s in pooled.values())]


def test_rankings_told_apart_only_by_their_ids_add_equal_terms():
    # Two people's rankings of equal weight and length: their canonical order follows the
    # bytes of their ids, which the two id spaces reverse; the sums are the same bits.
    spec = [("t", ([0, 1, 2, 3], "user", 2)), ("t", ([3, 2, 1, 0], "user", 2)),
            ("t", ([1, 3], "user", 1)), ("t", ([2, 0], "user", 1))]
    vocab_of_dense = np.array([70, 50, 60, 40])
    dense_of = {70: 0, 50: 1, 60: 2, 40: 3}
    for strategy in ("depth", "rbp"):
        expected = pool_compute(_contributions(spec), strategy=strategy, depth=4, p=0.9)
        got = pool_compute(
            _contributions(spec, lambda d: vocab_of_dense[d]), strategy=strategy, depth=4,
            p=0.9, string_order=lambda arrays: [np.array([dense_of[int(v)] for v in a])
                                                for a in arrays])
        _assert_same(expected, got)


@pytest.mark.parametrize("bad, message", [
    (lambda arrays: arrays[:-1], "returned 1 arrays for 2 topics"),
    (lambda arrays: [a[:-1] for a in arrays], "ids for the 2 documents of topic a"),
    (lambda arrays: [a.astype(float) for a in arrays], "ids for the 2 documents of topic a"),
    (lambda arrays: [-a for a in arrays], "negative ids for topic a"),
])
def test_a_string_order_that_does_not_fit_is_refused(bad, message):
    cs = [Contribution("a", "system", 1, np.array([5, 6])),
          Contribution("b", "system", 1, np.array([7]))]
    with pytest.raises(ValueError, match=message):
        pool_compute(cs, depth=2, string_order=bad)
