"""pooling.rbo: hand-computed RBO, tie variants, properties, agreement with the rbo package."""
from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.rbo import RBOResult, rbo, rbo_batch, tie_groups

LN2 = math.log(2)


# --- hand-computed -----------------------------------------------------------------------


def test_even_lists_hand_computed():
    # a = 1 2 3, b = 1 3 2, p = 1/2: X = 1, 1, 3; A = 1, 1/2, 1
    r = rbo([1, 2, 3], [1, 3, 2], 0.5)
    # min = (1-p)/p (sum A_d p^d + X_3 (ln 2 - (1/2 + 1/8 + 1/24)))
    expect_min = 0.5 + 0.125 + 0.125 + 3 * (LN2 - (0.5 + 0.125 + 1 / 24))
    # max: f = 3 + 3 - 3 = 3, so only p^(f+1)/(1-p) = 1/8 is added
    expect_max = 0.75 + 0.125
    # ext = (1-p)/p sum A_d p^d + A_3 p^3 (WMZ eq. 30)
    expect_ext = 0.75 + 0.125
    assert r.min == pytest.approx(expect_min, abs=1e-15)
    assert r.max == pytest.approx(expect_max, abs=1e-15)
    assert r.res == pytest.approx(expect_max - expect_min, abs=1e-15)
    assert r.ext == pytest.approx(expect_ext, abs=1e-15)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 0.98])
def test_disjoint_singletons(p):
    # nothing shared: min = ext = 0; the best case is b's first item following a's, so
    # max = (1-p)/p (p^2 + p^3/(1-p)) = p
    r = rbo([1], [2], p)
    assert r.min == 0.0 and r.ext == 0.0
    assert r.max == pytest.approx(p, abs=1e-15)


@pytest.mark.parametrize("p", [0.3, 0.5, 0.9])
def test_uneven_lists_hand_computed(p):
    # S = [1], L = [1, 2]: X_1 = X_2 = 1, s = 1, l = 2
    r = rbo([1, 2], [1], p)
    # WMZ eq. 32: (1-p)/p (p + p^2/2 + 1 * (2-1)/(1*2) p^2) + ((1-1)/2 + 1/1) p^2 = 1
    assert r.ext == pytest.approx(1.0, abs=1e-15)
    # min: (1-p)/p (p + p^2/2 + ln(1/(1-p)) - p - p^2/2) = (1-p)/p ln(1/(1-p))
    assert r.min == pytest.approx((1 - p) / p * math.log(1 / (1 - p)), abs=1e-15)
    # max: the unseen S position 2 holds item 2 -> identical from depth 2 on -> 1
    assert r.max == pytest.approx(1.0, abs=1e-15)
    assert rbo([1], [1, 2], p) == r


def test_ties_hand_computed():
    # a and b both rank items 1 and 2 as a tie; p = 1/2
    a = b = [1, 2]
    s = [1.0, 1.0]
    # RBO^a: X_1 = 1/2 * 1/2 + 1/2 * 1/2 = 1/2, X_2 = 2 -> A = 1/2, 1
    # ext = (1-p)/p (A_1 p + A_2 p^2) + A_2 p^2 = (1/4 + 1/4) + 1/4
    ra = rbo(a, b, 0.5, a_scores=s, b_scores=s, ties="a")
    assert ra.ext == pytest.approx(0.75, abs=1e-15)
    # ... which is the mean of classic RBO_ext over the four tie orderings: (1 + p + p + 1)/4
    assert ra.ext == pytest.approx((1 + 0.5 + 0.5 + 1) / 4, abs=1e-15)
    # RBO^w: the tie counts whole at depth 1: A_1 = 2 * 2 / (2 + 2) = 1 -> ext = 1
    assert rbo(a, b, 0.5, a_scores=s, b_scores=s, ties="w").ext == pytest.approx(1.0, abs=1e-15)
    # RBO^b: A_1 = (1/2) / sqrt(1/2 * 1/2) = 1 -> ext = 1
    assert rbo(a, b, 0.5, a_scores=s, b_scores=s, ties="b").ext == pytest.approx(1.0, abs=1e-15)


def test_tie_groups_flatten_by_score_then_id():
    ids, t, b = tie_groups([5, 3, 9, 1], [0.5, 2.0, 0.5, 0.5])
    assert ids.tolist() == [3, 1, 5, 9]
    assert t.tolist() == [0, 1, 1, 1]
    assert b.tolist() == [0, 3, 3, 3]


def test_validation():
    with pytest.raises(ValueError, match="0 < p < 1"):
        rbo([1], [1], 1.0)
    with pytest.raises(ValueError, match="0 < p < 1"):
        rbo_batch([1], [[1]], 0.0)
    with pytest.raises(ValueError, match="more than once"):
        rbo([1, 1], [1], 0.5)
    with pytest.raises(ValueError, match="ties"):
        rbo([1], [1], 0.5, ties="x")
    with pytest.raises(ValueError, match="shape"):
        rbo([1, 2], [1], 0.5, a_scores=[1.0])


def test_empty():
    assert rbo([], [1, 2], 0.9) == RBOResult(0.0, 1.0, 0.0)
    assert rbo([], [], 0.9) == RBOResult(0.0, 1.0, 1.0)
    b = rbo_batch([1, 2], [[], [1]], 0.9)
    assert b.min[0] == 0.0 and b.res[0] == 1.0 and b.ext[0] == 0.0


# --- properties ----------------------------------------------------------------------------

ranking = st.lists(st.integers(0, 25), min_size=1, max_size=14, unique=True)
scores = st.lists(st.integers(0, 3), min_size=14, max_size=14)
pp = st.floats(0.05, 0.99)


@settings(max_examples=300, deadline=None)
@given(ranking, ranking, pp)
def test_classic_properties(a, b, p):
    r = rbo(a, b, p)
    eps = 1e-12
    assert rbo(b, a, p) == pytest.approx(r, abs=1e-15)
    assert -eps <= r.min <= r.ext + eps
    assert r.ext <= r.max + eps
    assert r.max <= 1 + eps and r.res >= -eps
    # the tie variants coincide without ties
    assert rbo(a, b, p, ties="w") == pytest.approx(r, abs=1e-14)
    assert rbo(a, b, p, ties="b") == pytest.approx(r, abs=1e-14)


@settings(max_examples=200, deadline=None)
@given(ranking, pp)
def test_identical_is_one(a, p):
    r = rbo(a, a, p)
    assert r.ext == pytest.approx(1.0, abs=1e-12)
    assert r.max == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(ranking, ranking, scores, scores, pp, st.sampled_from(["a", "b", "w"]))
def test_tie_variant_properties(a, b, sa, sb, p, ties):
    sa, sb = sa[: len(a)], sb[: len(b)]
    r = rbo(a, b, p, a_scores=sa, b_scores=sb, ties=ties)
    eps = 1e-12
    assert rbo(b, a, p, a_scores=sb, b_scores=sa, ties=ties) == pytest.approx(r, abs=1e-14)
    assert -eps <= r.min <= r.ext + eps
    assert r.ext <= r.max + eps <= 1 + 2 * eps


def _orderings(ids, t, b):
    """Every ordering of the tie groups of a flattened ranking."""
    groups = []
    i = 0
    while i < len(ids):
        g = int(b[i] - t[i] + 1)
        groups.append(list(ids[i : i + g]))
        i += g
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [x for g in choice for x in g]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True),
    st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True),
    st.lists(st.integers(0, 2), min_size=6, max_size=6),
    st.lists(st.integers(0, 2), min_size=6, max_size=6),
    pp,
)
def test_rbo_a_is_mean_over_tie_orderings(a, b, sa, sb, p):
    """RBO^a_min (and RBO^a_ext for equal lengths) is linear in the expected overlaps, so it
    equals the mean of classic RBO over every ordering of the ties (brute force)."""
    sa, sb = sa[: len(a)], sb[: len(b)]
    r = rbo(a, b, p, a_scores=sa, b_scores=sb, ties="a")
    oa = list(_orderings(*tie_groups(a, sa)))
    ob = list(_orderings(*tie_groups(b, sb)))
    classic = [rbo(x, y, p) for x in oa for y in ob]
    assert r.min == pytest.approx(np.mean([c.min for c in classic]), abs=1e-12)
    if len(a) == len(b):
        assert r.ext == pytest.approx(np.mean([c.ext for c in classic]), abs=1e-12)


def test_distinct_scores_equal_classic():
    rng = np.random.default_rng(3)
    a = rng.permutation(50)[:30]
    b = rng.permutation(50)[:20]
    sa = rng.random(30)
    sb = rng.random(20)
    ordered_a = a[np.argsort(-sa)]
    ordered_b = b[np.argsort(-sb)]
    for ties in "abw":
        got = rbo(a, b, 0.9, a_scores=sa, b_scores=sb, ties=ties)
        assert got == pytest.approx(rbo(ordered_a, ordered_b, 0.9), abs=1e-14)


@settings(max_examples=200, deadline=None)
@given(ranking, st.lists(ranking, min_size=1, max_size=6), pp)
def test_batch_equals_single(ref, others, p):
    got = rbo_batch(ref, [np.array(o) for o in others], p)
    for j, o in enumerate(others):
        one = rbo(o, ref, p)
        assert got.min[j] == pytest.approx(one.min, abs=1e-12)
        assert got.res[j] == pytest.approx(one.res, abs=1e-12)
        assert got.ext[j] == pytest.approx(one.ext, abs=1e-12)


def test_batch_packed_and_sparse_ids():
    rng = np.random.default_rng(7)
    ref = rng.choice(10**12, 300, replace=False)  # ids too large for a dense table
    pool = np.concatenate([ref, rng.choice(10**12, 300, replace=False)])
    rankings = [rng.permutation(pool)[: rng.integers(1, 400)] for _ in range(20)]
    flat = np.concatenate(rankings)
    offsets = np.concatenate([[0], np.cumsum([r.size for r in rankings])])
    packed = rbo_batch(ref, flat, 0.95, offsets=offsets)
    listed = rbo_batch(ref, rankings, 0.95)
    for j, r in enumerate(rankings):
        one = rbo(r, ref, 0.95)
        assert packed.ext[j] == listed.ext[j]
        assert packed.ext[j] == pytest.approx(one.ext, abs=1e-12)
        assert packed.min[j] == pytest.approx(one.min, abs=1e-12)
        assert packed.res[j] == pytest.approx(one.res, abs=1e-12)
    with pytest.raises(ValueError, match="offsets"):
        rbo_batch(ref, flat, 0.9, offsets=offsets[:-1])


# --- agreement with the rbo package on real rankings ------------------------------------


def _real_rankings(shared_data):
    """Per topic of trec_eval's results.test: the ranking by score and the ranking by the
    file's (unrelated) rank column, plus seeded noisy re-scorings; ids are strings."""
    rows = defaultdict(list)
    with open(shared_data / "runs" / "trec_eval-testdata" / "results.test") as fh:
        for line in fh:
            f = line.split()
            rows[f[0]].append((f[2], float(f[4]), int(f[3])))
    rng = random.Random(11)
    out = {}
    for topic, rs in rows.items():
        by_score = [d for d, s, _ in sorted(rs, key=lambda x: (-x[1], x[0]))]
        by_rank = [d for d, _, r in sorted(rs, key=lambda x: (x[2], x[0]))]
        noisy = [
            [d for d, _ in sorted(((d, s + rng.gauss(0, sd)) for d, s, _ in rs), key=lambda x: (-x[1], x[0]))]
            for sd in (0.01, 0.05, 0.2)
        ]
        out[topic] = [by_score, by_rank] + noisy
    return out


@pytest.mark.parametrize("p", [0.5, 0.8, 0.9, 0.98])
def test_equals_rbo_package_rbo_ext(shared_data, p):
    """``rbo.RankingSimilarity(a, b).rbo_ext(p)`` handles unequal lengths correctly (its
    ``rbo(p, ext=True)`` truncates both lists to the shorter one, so it is not used)."""
    from rbo import RankingSimilarity

    rng = random.Random(5)
    n = 0
    for topic, lists in _real_rankings(shared_data).items():
        for x, y in itertools.combinations(lists, 2):
            for dx, dy in [(500, 500), (10, 10), (100, 37), (5, 250), (1, 20)]:
                a, b = x[:dx], y[:dy]
                ours = rbo(a, b, p)
                theirs = RankingSimilarity(a, b).rbo_ext(p)
                assert ours.ext == pytest.approx(theirs, abs=1e-12), (topic, dx, dy)
                n += 1
        # and against a ranking of another topic's documents mixed in
        a = lists[0][:50]
        b = rng.sample(lists[2][:80], 40) + ["XX-%d" % i for i in range(30)]
        assert rbo(a, b, p).ext == pytest.approx(RankingSimilarity(a, b).rbo_ext(p), abs=1e-12)
    assert n == 3 * 10 * 5


def test_batch_on_real_rankings(shared_data):
    lists = _real_rankings(shared_data)["301"]
    names = sorted({d for l in lists for d in l})
    ix = {d: i for i, d in enumerate(names)}
    ref = np.array([ix[d] for d in lists[0]])
    others = [np.array([ix[d] for d in l[:k]]) for l in lists[1:] for k in (10, 100, 500)]
    got = rbo_batch(ref, others, 0.9)
    for j, o in enumerate(others):
        one = rbo([names[i] for i in o], lists[0], 0.9)
        assert got.ext[j] == pytest.approx(one.ext, abs=1e-12)
        assert got.min[j] == pytest.approx(one.min, abs=1e-12)
        assert got.res[j] == pytest.approx(one.res, abs=1e-12)
