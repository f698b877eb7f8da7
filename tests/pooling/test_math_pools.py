"""pooling.pools: hand-computed pools, properties, agreement with trectools."""
from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.pools import (
    Contribution,
    pool_compute,
    rbp_weights,
    round_weights,
    validate_pool_params,
)


pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # pandas warnings inside trectools


def C(topic, docids, source="system", weight=1):
    return Contribution(topic, source, weight, np.asarray(docids, dtype=np.int64))


# --- hand-computed values ------------------------------------------------------------


def test_rbp_weights_hand_computed():
    # p = 1/2: unit weights (1-p) p^(r-1) = 1/2, 1/4, 1/8
    docs, w = rbp_weights([np.array([1, 2, 3]), np.array([2, 3, 4])], 0.5, 3)
    # 1: 1/2; 2: 1/4 + 1/2; 3: 1/8 + 1/4; 4: 1/8
    assert docs.tolist() == [2, 1, 3, 4]
    assert w.tolist() == [0.75, 0.5, 0.375, 0.125]


def test_rbp_weights_repeats_and_depth():
    # depth 2 drops rank 3; doc 7 typed by three people
    docs, w = rbp_weights([np.array([7, 8, 9]), np.array([8, 7])], 0.5, 2, repeats=[3, 1])
    # 7: 3 * 1/2 + 1/4 = 1.75; 8: 3 * 1/4 + 1/2 = 1.25
    assert docs.tolist() == [7, 8]
    assert w.tolist() == [1.75, 1.25]


def test_rbp_weights_p_095_formula():
    p = 0.95
    docs, w = rbp_weights([np.array([10, 20]), np.array([20, 30])], p, 5)
    expect = {10: 0.05, 20: 0.05 * 0.95 + 0.05, 30: 0.05 * 0.95}
    assert docs.tolist() == [20, 10, 30]
    for d, x in zip(docs.tolist(), w.tolist()):
        assert x == pytest.approx(expect[d], rel=1e-12)


def test_ties_broken_by_docid():
    # every document seen once at rank 1 by one ranking: all weights equal
    pools = pool_compute([C("t", [9]), C("t", [3]), C("t", [5])], depth=1, p=0.8)
    assert pools["t"].docids.tolist() == [3, 5, 9]
    assert np.all(pools["t"].weights == pytest.approx(0.2))


def test_depth_pool_hand_computed():
    cs = [
        C("1", [5, 3, 9], source="user", weight=2),
        C("1", [3, 7]),
        C("2", [1]),
    ]
    pools = pool_compute(cs, strategy="depth", depth=2, p=0.5)
    assert list(pools) == ["1", "2"]
    t1 = pools["1"]
    # 5: 2 * 1/2 = 1; 3: 2 * 1/4 + 1/2 = 1; 7: 1/4 -> (1, 3), (1, 5), (1/4, 7)
    assert t1.docids.tolist() == [3, 5, 7]
    assert t1.weights.tolist() == [1.0, 1.0, 0.25]
    assert t1.min_rank.tolist() == [1, 1, 2]
    assert t1.users.tolist() == [2, 2, 0]
    assert t1.systems.tolist() == [1, 0, 1]
    assert t1.docids.dtype == np.int64 and t1.weights.dtype == np.float64
    assert t1.min_rank.dtype == np.int32 and t1.users.dtype == np.int32
    assert pools["2"].docids.tolist() == [1]


def test_budget_topic_scope():
    cs = [C("a", [1, 2, 3, 4]), C("a", [2, 1, 5])]
    pools = pool_compute(cs, strategy="rbp", depth=4, p=0.5, budget=2)
    # 1: 1/2 + 1/4; 2: 1/4 + 1/2 -> tie, docid order; then 3 and 5 (1/8) ...
    assert pools["a"].docids.tolist() == [1, 2]
    full = pool_compute(cs, strategy="rbp", depth=4, p=0.5)["a"]
    assert full.docids.tolist() == [1, 2, 3, 5, 4]
    assert full.weights.tolist() == [0.75, 0.75, 0.125, 0.125, 0.0625]


def test_budget_global_scope():
    cs = [
        C("x", [1, 2, 3]),  # 1/2, 1/4, 1/8
        C("y", [4, 5]),
        C("y", [4, 6]),  # 4: 1; 5, 6: 1/4
        C("z", [7]),  # 1/2
    ]
    pools = pool_compute(cs, strategy="rbp", depth=3, p=0.5, budget=4, budget_scope="global")
    # global order: (1, y, 4), (1/2, x, 1), (1/2, z, 7), (1/4, x, 2), (1/4, y, 5), ...
    assert {t: p.docids.tolist() for t, p in pools.items()} == {"x": [1, 2], "y": [4], "z": [7]}
    pools = pool_compute(cs, strategy="rbp", depth=3, p=0.5, budget=1, budget_scope="global")
    assert {t: p.docids.tolist() for t, p in pools.items()} == {"x": [], "y": [4], "z": []}


def test_global_budget_ties_go_to_topics_in_natural_order():
    # one document each, the same weight and rank: the budget goes by topic id as people
    # read it (9 before 10), not as strings ("10" before "9")
    cs = [C("10", [1]), C("9", [2]), C("UQV100.10", [3]), C("UQV100.9", [4])]
    for strategy in ("rbp", "depth"):
        pools = pool_compute(cs, strategy=strategy, depth=1, p=0.5, budget=2,
                             budget_scope="global")
        assert list(pools) == ["9", "10", "UQV100.9", "UQV100.10"]
        assert {t: p.docids.tolist() for t, p in pools.items()} == {
            "9": [2], "10": [1], "UQV100.9": [], "UQV100.10": []}


def test_strategies_order_the_same_documents_differently():
    cs = [C("a", [1, 2, 3]), C("a", [4, 1]), C("a", [5, 6], "user", 3), C("b", [7, 8])]
    # p = 1/2. weights: 1: 1/2 + 1/4; 2: 1/4; 3: 1/8; 4: 1/2; 5: 3 * 1/2; 6: 3 * 1/4
    # shallowest ranks: 1, 4, 5 at rank 1; 2, 6 at rank 2; 3 at rank 3
    depth = pool_compute(cs, strategy="depth", depth=3, p=0.5)
    rbp = pool_compute(cs, strategy="rbp", depth=3, p=0.5)
    assert depth["a"].docids.tolist() == [5, 1, 4, 6, 2, 3]  # (min_rank, -weight, docid)
    assert rbp["a"].docids.tolist() == [5, 1, 6, 4, 2, 3]  # (-weight, docid)
    assert depth["a"].min_rank.tolist() == [1, 1, 1, 2, 2, 3]
    assert rbp["a"].weights.tolist() == [1.5, 0.75, 0.75, 0.5, 0.25, 0.125]
    # a budget cuts either order
    assert pool_compute(cs, strategy="depth", depth=3, p=0.5, budget=3)["a"].docids.tolist() == [
        5, 1, 4]
    assert pool_compute(cs, strategy="rbp", depth=3, p=0.5, budget=3)["a"].docids.tolist() == [
        5, 1, 6]
    # over all topics: rank-1 documents of a (5, 1, 4) and b (7) come before any rank 2
    glob = pool_compute(cs, strategy="depth", depth=3, p=0.5, budget=4, budget_scope="global")
    assert {t: tp.docids.tolist() for t, tp in glob.items()} == {"a": [5, 1, 4], "b": [7]}
    glob = pool_compute(cs, strategy="depth", depth=3, p=0.5, budget=5, budget_scope="global")
    assert {t: tp.docids.tolist() for t, tp in glob.items()} == {"a": [5, 1, 4, 6], "b": [7]}
    glob = pool_compute(cs, strategy="rbp", depth=3, p=0.5, budget=4, budget_scope="global")
    # 4 (topic a) and 7 (topic b) tie at 1/2: the topic id decides
    assert {t: tp.docids.tolist() for t, tp in glob.items()} == {"a": [5, 1, 6, 4], "b": []}


def test_validation_messages():
    ok = [C("t", [1])]
    with pytest.raises(ValueError, match="0 < p < 1"):
        pool_compute(ok, depth=1, p=1.0)
    with pytest.raises(ValueError, match="0 < p < 1"):
        pool_compute(ok, depth=1, p=0.0)
    with pytest.raises(ValueError, match="depth must be between 1 and 10000"):
        pool_compute(ok, depth=0)
    with pytest.raises(ValueError, match="budget"):
        pool_compute(ok, depth=1, budget=0)
    with pytest.raises(ValueError, match="strategy"):
        pool_compute(ok, depth=1, strategy="rrf")
    with pytest.raises(ValueError, match="budget_scope"):
        pool_compute(ok, depth=1, budget=1, budget_scope="run")
    with pytest.raises(ValueError, match="more than once within depth 3"):
        pool_compute([C("t", [5, 6]), C("t", [1, 2, 1])], depth=3)
    # beyond the depth a repeat does not matter
    assert pool_compute([C("t", [1, 2, 1])], depth=2)["t"].docids.tolist() == [1, 2]
    with pytest.raises(ValueError, match="more than once"):
        rbp_weights([np.array([3, 3])], 0.5, 2)
    with pytest.raises(ValueError, match="non-negative"):
        C("t", [1, -2])
    with pytest.raises(ValueError, match="source"):
        Contribution("t", "robot", 1, np.array([1]))
    with pytest.raises(ValueError, match="weight"):
        Contribution("t", "user", 0, np.array([1]))
    with pytest.raises(TypeError, match="topic_id"):
        Contribution(1, "user", 1, np.array([1]))
    validate_pool_params("rbp", 10, 0.95, 5, "global")


def test_empty_and_short_rankings():
    pools = pool_compute([C("t", []), C("t", [4, 2])], depth=5, p=0.5)
    assert pools["t"].docids.tolist() == [4, 2]
    assert pool_compute([], depth=3) == {}


def test_large_ids_use_the_sorting_path():
    big = 10**15
    cs = [C("t", [big + 5, 7, big]), C("t", [7, big + 5])]
    pool = pool_compute(cs, depth=3, p=0.5)["t"]
    assert pool.docids.tolist() == [7, big + 5, big]
    assert pool.weights.tolist() == [0.75, 0.75, 0.125]
    assert pool.min_rank.tolist() == [1, 1, 3]
    with pytest.raises(ValueError, match="more than once"):
        pool_compute([C("t", [big, 1, big])], depth=3)


def test_round_weights():
    x = np.array([0.1 + 0.2, 0.3, 1e-20 * (0.1 + 0.2), 0.0, 123456789.123456789, 2.0 - 2**-45])
    r = round_weights(x)
    assert r[0] == r[1]  # 0.30000000000000004 and 0.3 agree to 40 bits
    assert r[2] == pytest.approx(3e-21, rel=1e-12)
    assert r[3] == 0.0
    assert r[4] == pytest.approx(123456789.123456789, rel=2**-40)
    assert r[5] == 2.0  # rounding carries into the exponent
    y = np.random.default_rng(0).random(1000) * 10.0 ** np.random.default_rng(1).integers(-30, 5, 1000)
    ry = round_weights(y)
    assert np.all(np.abs(ry - y) <= y * 2.0**-40)
    assert np.all(np.diff(ry[np.argsort(y)]) >= 0)  # monotone


# --- properties ------------------------------------------------------------------------

rankings_st = st.lists(
    st.tuples(
        st.lists(st.integers(0, 40), min_size=0, max_size=15, unique=True),
        st.sampled_from(["user", "system"]),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=8,
)


def _contribs(spec, topic="t"):
    return [C(topic, d, s, w if s == "user" else 1) for d, s, w in spec]


def _naive(spec, depth, p):
    w = defaultdict(float)
    users = defaultdict(int)
    systems = defaultdict(int)
    minr = {}
    for docs, s, k in spec:
        k = k if s == "user" else 1
        for r, d in enumerate(docs[:depth], start=1):
            w[d] += k * (1 - p) * p ** (r - 1)
            minr[d] = min(minr.get(d, r), r)
            if s == "user":
                users[d] += k
            else:
                systems[d] += 1
    return w, users, systems, minr


@settings(max_examples=150, deadline=None)
@given(rankings_st, st.integers(1, 16), st.floats(0.05, 0.99), st.sampled_from(["depth", "rbp"]))
def test_pool_matches_naive_definition(spec, depth, p, strategy):
    pool = pool_compute(_contribs(spec), strategy=strategy, depth=depth, p=p).get("t")
    w, users, systems, minr = _naive(spec, depth, p)
    if pool is None:
        assert not w
        return
    assert set(pool.docids.tolist()) == set(w)
    for i, d in enumerate(pool.docids.tolist()):
        assert pool.weights[i] == pytest.approx(w[d], rel=1e-11)
        assert pool.users[i] == users[d]
        assert pool.systems[i] == systems[d]
        assert pool.min_rank[i] == minr[d]
    key = [(-x, d) for x, d in zip(pool.weights.tolist(), pool.docids.tolist())]
    if strategy == "depth":  # shallowest rank first, then weight, then docid
        key = [(int(m), *k) for m, k in zip(pool.min_rank.tolist(), key)]
    assert key == sorted(key)


@settings(max_examples=60, deadline=None)
@given(rankings_st, st.integers(1, 16), st.floats(0.05, 0.99))
def test_sorting_fallback_gives_the_same_pool(spec, depth, p):
    """Ids beyond the scratch-table bound are grouped by sorting: same result."""
    from unittest import mock

    from pooling import idtables

    a = pool_compute(_contribs(spec), depth=depth, p=p).get("t")
    with mock.patch.object(idtables, "TABLE_MAX", 0):
        b = pool_compute(_contribs(spec), depth=depth, p=p).get("t")
    if a is None:
        assert b is None
        return
    for f in ("docids", "weights", "min_rank", "users", "systems"):
        assert getattr(a, f).tobytes() == getattr(b, f).tobytes(), f


@settings(max_examples=100, deadline=None)
@given(rankings_st, st.integers(1, 15), st.floats(0.05, 0.99))
def test_depth_pools_nest(spec, depth, p):
    a = pool_compute(_contribs(spec), depth=depth, p=p).get("t")
    b = pool_compute(_contribs(spec), depth=depth + 1, p=p).get("t")
    sa = set(a.docids.tolist()) if a else set()
    sb = set(b.docids.tolist()) if b else set()
    assert sa <= sb


@settings(max_examples=100, deadline=None)
@given(rankings_st, st.integers(1, 15), st.floats(0.05, 0.99), st.integers(1, 30))
def test_budget_pool_is_the_top(spec, depth, p, budget):
    cs = _contribs(spec)
    full = pool_compute(cs, strategy="rbp", depth=depth, p=p).get("t")
    cut = pool_compute(cs, strategy="rbp", depth=depth, p=p, budget=budget).get("t")
    if full is None:
        return
    n = min(budget, len(full))
    assert cut.docids.tolist() == full.docids.tolist()[:n]
    if n < len(full):
        # nothing left out is heavier than anything kept
        assert full.weights[n:].max() <= cut.weights.min()


@settings(max_examples=60, deadline=None)
@given(rankings_st, rankings_st, st.integers(1, 10), st.integers(1, 25))
def test_global_budget_takes_heaviest_overall(spec1, spec2, depth, budget):
    cs = _contribs(spec1, "A") + _contribs(spec2, "B")
    full = pool_compute(cs, strategy="rbp", depth=depth, p=0.7)
    cut = pool_compute(cs, strategy="rbp", depth=depth, p=0.7, budget=budget, budget_scope="global")
    allw = sorted(
        ((-w, t, d) for t, tp in full.items() for w, d in zip(tp.weights.tolist(), tp.docids.tolist()))
    )
    chosen = {(t, d) for _, t, d in allw[:budget]}
    got = {(t, d) for t, tp in cut.items() for d in tp.docids.tolist()}
    assert got == chosen


@settings(max_examples=60, deadline=None)
@given(rankings_st, rankings_st, st.integers(1, 10), st.integers(1, 25))
def test_global_budget_of_a_depth_pool_takes_the_shallowest_overall(spec1, spec2, depth, budget):
    cs = _contribs(spec1, "A") + _contribs(spec2, "B")
    full = pool_compute(cs, strategy="depth", depth=depth, p=0.7)
    cut = pool_compute(cs, strategy="depth", depth=depth, p=0.7, budget=budget,
                       budget_scope="global")
    every = sorted((m, -w, t, d) for t, tp in full.items() for m, w, d in zip(
        tp.min_rank.tolist(), tp.weights.tolist(), tp.docids.tolist()))
    chosen = {(t, d) for _, _, t, d in every[:budget]}
    got = {(t, d) for t, tp in cut.items() for d in tp.docids.tolist()}
    assert got == chosen
    for t, tp in cut.items():  # each topic keeps the start of its own order
        assert tp.docids.tolist() == full[t].docids.tolist()[: len(tp)]


@settings(max_examples=60, deadline=None)
@given(rankings_st, st.integers(1, 16), st.floats(0.05, 0.99), st.randoms(use_true_random=False))
def test_bit_identical_under_reordering(spec, depth, p, rnd):
    a = pool_compute(_contribs(spec), depth=depth, p=p).get("t")
    shuffled = list(spec)
    rnd.shuffle(shuffled)
    b = pool_compute(_contribs(shuffled), depth=depth, p=p).get("t")
    if a is None:
        assert b is None
        return
    assert a.docids.tobytes() == b.docids.tobytes()
    assert a.weights.tobytes() == b.weights.tobytes()


def test_mathematically_equal_weights_tie_exactly():
    # Latin square: every document is seen once at each of ranks 1..4, by different
    # rankings, so all four weights are mathematically equal.
    p = 0.9
    cs = [C("t", [1, 2, 3, 4]), C("t", [2, 3, 4, 1]), C("t", [3, 4, 1, 2]), C("t", [4, 1, 2, 3])]
    pool = pool_compute(cs, depth=4, p=p)["t"]
    assert np.all(pool.weights == pool.weights[0])
    assert pool.weights[0] == pytest.approx(1 - p**4, rel=1e-12)
    assert pool.docids.tolist() == [1, 2, 3, 4]
    # the same with user weights spread differently over the rankings
    cs = [C("t", [1, 2], "user", 2), C("t", [2, 1], "user", 1), C("t", [2, 1], "user", 1)]
    pool = pool_compute(cs, depth=2, p=p)["t"]
    assert pool.weights[0] == pool.weights[1]
    assert pool.docids.tolist() == [1, 2]


# --- agreement with trectools on real runs ----------------------------------------------


def _read_results(path):
    """topic -> list of (docid, score, rank) from a TREC run file."""
    runs = defaultdict(list)
    with open(path) as fh:
        for line in fh:
            f = line.split()
            runs[f[0]].append((f[2], float(f[4]), int(f[3])))
    return runs


def _make_runs(shared_data):
    """Several system runs derived from trec_eval's results.test (3 topics x 500 docs):
    ordered by score, ordered by the file's rank column, and seeded noisy re-scorings
    of random subsets (so runs differ in depth too)."""
    base = _read_results(shared_data / "runs" / "trec_eval-testdata" / "results.test")
    rng = random.Random(20240607)
    runs = []
    for variant in range(6):
        run = {}
        for topic, rows in base.items():
            if variant == 0:
                scored = [(d, s) for d, s, _ in rows]
            elif variant == 1:
                scored = [(d, -float(r)) for d, _, r in rows]
            else:
                keep = [row for row in rows if rng.random() < 0.8]
                scored = [(d, s + rng.gauss(0, 0.15)) for d, s, _ in keep]
            scored.sort(key=lambda x: (-x[1], x[0]))
            run[topic] = [d for d, _ in scored]
        runs.append(run)
    return runs


def _write_run(path, run):
    with open(path, "w") as fh:
        for topic, docs in run.items():
            for r, d in enumerate(docs, start=1):
                fh.write(f"{topic} Q0 {d} {r} {1000 - r} tag\n")


@pytest.fixture(scope="module")
def real_runs(shared_data, tmp_path_factory):
    runs = _make_runs(shared_data)
    tmp = tmp_path_factory.mktemp("runs")
    paths = []
    for i, run in enumerate(runs):
        p = tmp / f"run{i}.txt"
        _write_run(p, run)
        paths.append(str(p))
    alldocs = sorted({d for run in runs for docs in run.values() for d in docs})
    remap = {d: i for i, d in enumerate(alldocs)}
    contribs = [
        C(topic, [remap[d] for d in docs]) for run in runs for topic, docs in run.items()
    ]
    return runs, paths, alldocs, contribs


@pytest.mark.parametrize("depth", [1, 10, 37, 100, 500])
def test_depth_pool_equals_trectools(real_runs, depth):
    from trectools import TrecPoolMaker, TrecRun

    runs, paths, alldocs, contribs = real_runs
    theirs = TrecPoolMaker().make_pool([TrecRun(p) for p in paths], strategy="topX", topX=depth).pool
    ours = pool_compute(contribs, strategy="depth", depth=depth, p=0.8)
    theirs = {str(t): v for t, v in theirs.items()}  # keys are str here, int() in its rbp path
    assert sorted(theirs) == sorted(ours)
    for t, tp in ours.items():
        assert {alldocs[i] for i in tp.docids.tolist()} == set(theirs[t])


@pytest.mark.parametrize("budget,p", [(10, 0.8), (50, 0.8), (100, 0.95), (300, 0.5)])
def test_rbp_pool_equals_trectools(real_runs, budget, p):
    """trectools' rbp pool sums (1-p) p^(rank-1) over every rank of every run and keeps
    the topX heaviest (unordered, ties cut arbitrarily): our rbp pool with depth = the
    longest run and the same budget, compared where the cut does not split a tie."""
    from trectools import TrecPoolMaker, TrecRun

    runs, paths, alldocs, contribs = real_runs
    theirs = TrecPoolMaker().make_pool(
        [TrecRun(p_) for p_ in paths], strategy="rbp", topX=budget, rbp_p=p
    ).pool
    full = pool_compute(contribs, strategy="rbp", depth=500, p=p)
    ours = pool_compute(contribs, strategy="rbp", depth=500, p=p, budget=budget)
    for t, tp in ours.items():
        mine = {alldocs[i] for i in tp.docids.tolist()}
        got = set(theirs[int(t)])  # trectools int()s topic ids here
        assert len(got) == len(mine)
        if budget >= len(full[t]):
            assert got == mine
            continue
        # a tie at the cut may be split either way: compare what is strictly above it
        w_cut = full[t].weights[budget - 1]
        tied = {
            alldocs[d]
            for d, w in zip(full[t].docids.tolist(), full[t].weights.tolist())
            if math.isclose(w, w_cut, rel_tol=1e-9)
        }
        assert mine - tied == got - tied
        assert got <= mine | tied


def test_rbp_weights_equal_pandas_sums_over_trectools_runs(real_runs):
    """Weights themselves. trectools computes them inside TrecPoolMaker and returns only
    the pooled sets (compared in test_rbp_pool_equals_trectools), so the weights are
    summed here with pandas from the run files as trectools reads them (TrecRun.run_data,
    its rank column) with trectools' own per-row formula (1 - p) p^(rank - 1)."""
    import pandas as pd
    from trectools import TrecRun

    runs, paths, alldocs, contribs = real_runs
    p = 0.8
    frames = []
    for path in paths:
        df = TrecRun(path).run_data[["query", "docid", "rank"]].copy()
        df["rbp"] = (1.0 - p) * p ** (df["rank"] - 1)
        frames.append(df)
    df = pd.concat(frames).groupby(["query", "docid"])["rbp"].sum()
    ours = pool_compute(contribs, strategy="rbp", depth=500, p=p)
    n = 0
    for t, tp in ours.items():
        for d, w in zip(tp.docids.tolist(), tp.weights.tolist()):
            assert w == pytest.approx(df[(t, alldocs[d])], rel=1e-11, abs=1e-300)
            n += 1
    assert n == len(df) == len({(t, d) for run in runs for t, docs in run.items() for d in docs})
