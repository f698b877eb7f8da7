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


def _rbo_prefix_sum(x, y, p, depth):
    """(1-p)/p sum_{d<=depth} |x_:d n y_:d| / d p^d straight from the definition, with the
    overlap kept incrementally (x and y have at least ``depth`` distinct items each)."""
    seen_x, seen_y, overlap, total = set(), set(), 0, 0.0
    for d in range(1, depth + 1):
        a, b = x[d - 1], y[d - 1]
        if a == b:
            overlap += 1
        else:
            overlap += (a in seen_y) + (b in seen_x)
        seen_x.add(a)
        seen_y.add(b)
        total += overlap / d * p**d
    return (1 - p) / p * total


@settings(max_examples=200, deadline=None)
@given(ranking, ranking, st.floats(0.05, 0.95))
def test_min_and_max_equal_the_definition_on_explicit_extensions(a, b, p):
    """WMZ's bounds are RBO of the worst and the best extension of the two prefixes
    (their section 4). Build both extensions item by item and sum RBO's definition to a
    depth where p^d is below 1e-18 -- no closed form involved:
    - worst: both rankings continue with fresh items nobody else has;
    - best: the shorter continues with the longer's unseen items in its order, the longer
      with the shorter's unseen items, then both with the same fresh items."""
    S, L = (b, a) if len(a) >= len(b) else (a, b)
    depth = len(S) + len(L) + math.ceil(math.log(1e-18) / math.log(p))
    fresh = [("fresh", i) for i in range(depth)]
    worst = _rbo_prefix_sum(list(S) + [("s", i) for i in range(depth)],
                            list(L) + [("l", i) for i in range(depth)], p, depth)
    best = _rbo_prefix_sum(list(S) + [x for x in L if x not in S] + fresh,
                           list(L) + [x for x in S if x not in L] + fresh, p, depth)
    r = rbo(a, b, p)
    assert r.min == pytest.approx(worst, abs=1e-12)
    assert r.max == pytest.approx(best, abs=1e-12)
    assert r.res == pytest.approx(best - worst, abs=1e-12)


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


def test_batch_in_blocks_equals_one_block(monkeypatch):
    """rbo_batch cuts long inputs into blocks of rankings; the cut changes nothing."""
    from pooling import rbo as rbo_module

    rng = np.random.default_rng(11)
    ref = rng.permutation(400)[:150]
    rankings = [rng.permutation(400)[: rng.integers(0, 200)] for _ in range(60)]
    flat = np.concatenate(rankings)
    offsets = np.concatenate([[0], np.cumsum([r.size for r in rankings])])
    whole = rbo_batch(ref, rankings, 0.9)
    monkeypatch.setattr(rbo_module, "_BLOCK", 97)
    for got in (rbo_batch(ref, rankings, 0.9), rbo_batch(ref, flat, 0.9, offsets=offsets)):
        for a, b in zip(got, whole):
            assert a.shape == (60,) and np.array_equal(a, b)
    assert rbo_batch(ref, [], 0.9).min.shape == (0,)


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


# --- published test vectors (Corsi & Urbano 2024) -----------------------------------------
#
# M. Corsi and J. Urbano, "The Treatment of Ties in Rank-Biased Overlap", SIGIR 2024
# (arXiv:2406.07121). Their repository github.com/julian-urbano/sigir2024-rbo (MIT licence)
# publishes rbo/test.csv: random tied rankings with RBO_ext, min, max and res of all three
# variants computed by their reference implementation, printed to 15 significant digits.
# The first 24 rows, unchanged. In a ranking string, "(a b)" is a group of tied items.
CU2024_TEST_CSV = """\
x,y,p,w.ext,w.min,w.max,w.res,a.ext,a.min,a.max,a.res,b.ext,b.min,b.max,b.res
(i5 i9 i13 i15 i16 i19 i20) (i3 i8),i6 (i4 i18) i2 i7 i8 i17 i14 (i11 i12) i1,0.958074765324023,0.0816485573277354,0.0370062754797617,0.59493569657566,0.557929421095898,0.0808189832771587,0.0354671825076603,0.593396603603558,0.557929421095898,0.0813693619867344,0.0356267307324464,0.593556151828344,0.557929421095898
i13 (i1 i4 i5 i6),i3 i14 i11 (i10 i15) i12 (i6 i9) i4 i2,0.92238320668128,0.117578490431637,0.0763135264223449,0.53999366118093,0.463680134758586,0.114619469221414,0.0733545052121218,0.537945108035391,0.464590602823269,0.11474835409049,0.0734833900811979,0.538589532380772,0.465106142299574
i11 (i8 i21) (i2 i18) (i6 i16 i20) (i4 i10),i8 (i9 i20 i21) (i2 i3) i13 i1 i11 i14 i19,0.93912403977192,0.482369482292872,0.346394412736983,0.712103626756557,0.365709214019575,0.46852753894333,0.332552469387441,0.698261683407016,0.365709214019575,0.486650566878314,0.350675497322425,0.716384711341999,0.365709214019575
i13 i4 (i1 i2 i5 i6),i11 i14 i1 (i5 i6) (i3 i12) i8,0.936646766367491,0.419724384588563,0.222485580291386,0.718444020803497,0.495958440512111,0.400042334962327,0.19648716951006,0.69244561002217,0.495958440512111,0.410333982781949,0.203127599510132,0.699086040022243,0.495958440512111
(i4 i7 i15) (i2 i11) i8 i18,i4 i8 i17 i11 (i2 i3 i5 i7 i9 i13 i14),0.955836875418683,0.601671359995661,0.310498723372055,0.820912519608734,0.510413796236679,0.584235464666522,0.295503371358027,0.805839323150565,0.510335951792538,0.632087129618464,0.322093781902212,0.833840285843908,0.511746503941696
(i3 i5 i6 i8 i9),(i1 i6) (i8 i10) i11 i2 (i3 i4),0.946588158477176,0.481477824833812,0.23269613702392,0.802226864320287,0.569530727296368,0.456505385192971,0.207870074991659,0.77813269033093,0.570262615339271,0.482684075039396,0.233899573241503,0.804576609682389,0.570677036440887
(i3 i6) (i2 i7) i10,(i3 i6 i7 i10) (i1 i2),0.965413635276732,0.946064537517568,0.343706790399566,0.958770957517067,0.615064167117501,0.92051534467649,0.319428239558438,0.934492406675939,0.615064167117501,0.956844651806714,0.348953051936765,0.964017219054266,0.615064167117501
i1 (i15 i16) i10 i12 i2 i14,i16 (i1 i10 i11 i15) i2 (i4 i5 i6),0.988786023528663,0.691527178549045,0.161742780873865,0.967889887307834,0.806147106433969,0.7056986088397,0.157852652669937,0.964075955944718,0.806223303274782,0.718722074850857,0.163365514575474,0.96964641663531,0.806280902059836
i9 (i7 i10 i11 i20) i17 i4 (i2 i15),(i12 i24) i8 (i13 i18) (i14 i21) i3 (i15 i16) (i4 i23) i1 i5 i17,0.925042675826437,0.112815118647638,0.0706978593698327,0.371480074655074,0.300782215285242,0.101033507362676,0.0674088329351841,0.368462905669962,0.301054072734778,0.101491625769712,0.0675839203187042,0.368785136040247,0.301201215721543
i14 (i5 i12 i16) (i1 i17) (i3 i11) i8,i12 i3 i17 i9 i8 i4 i15 (i13 i14),0.942991097099648,0.456106059590995,0.278178268495676,0.699819136853325,0.421640868357649,0.438090212407969,0.26016242131265,0.681803289670299,0.421640868357649,0.443426560241437,0.265498769146118,0.687139637503766,0.421640868357649
i4 (i2 i14) i7 i5 i3,(i9 i13) (i6 i8) i1 i5 i10 i15 i11,0.986650551181127,0.155835200392091,0.02839705430193,0.89085092447296,0.86245387017103,0.155835200392091,0.02839705430193,0.89085092447296,0.86245387017103,0.155835200392091,0.02839705430193,0.89085092447296,0.86245387017103
(i2 i9 i13 i14 i17) (i5 i11),i8 i16 (i6 i10 i18) i14 i5 i2 i3 (i1 i11 i19),0.971813369867667,0.378316081680315,0.139230302040199,0.783675290599478,0.644444988559279,0.377432846972023,0.138576262122468,0.783950386807411,0.645374124684943,0.378211692122799,0.139236431029208,0.785084542702099,0.64584811167289
i21 i2 (i7 i18) i4 i19 i13 i14,(i3 i9 i17) i8 i16 i20 (i5 i12) (i6 i13) i15 (i4 i14),0.905634889619438,0.0894029851126766,0.0656686605729733,0.328487581562821,0.262818920989847,0.0849544932925448,0.0612201687528415,0.32471169954937,0.263491530796529,0.0851369640273762,0.061402639487673,0.325259111753865,0.263856472266192
i2 i10 (i1 i4 i5 i6),(i2 i4 i6) i10 i7 i1 i5 i12,0.975209133774857,0.915421890198304,0.302950207951357,0.950881700045833,0.647931492094477,0.90398769646913,0.291516014222182,0.939447506316658,0.647931492094477,0.917668318216977,0.305196635970029,0.953128128064506,0.647931492094477
(i3 i6 i10 i14 i15),i6 (i3 i7 i10 i14) i8 i15 (i1 i2 i4),0.926466853612826,0.826094305041388,0.472435570943777,0.886946365077668,0.414510794133891,0.756260643055255,0.408427037876955,0.819119845432353,0.410692807555398,0.828615638235269,0.479991820201298,0.891823302442912,0.411831482241614
i8 i12 (i10 i15) i23 (i14 i16 i21),i3 (i9 i19) i15 i7 i20 i16 i18 i11 i4 i1 i14 (i8 i17) i12,0.918859497646982,0.257949406470209,0.173592792352234,0.458194504391846,0.284601712039612,0.256987393677248,0.172667414706192,0.457687814139163,0.285020399432971,0.258331259404033,0.173958110263213,0.459202384095189,0.285244273831976
(i4 i14) i10 i9 i16 i1 (i11 i21) i7,(i4 i7 i9 i10 i14 i16) i21 (i1 i11) (i3 i6 i17 i18),0.980350757903177,0.95731778452095,0.350742506261885,0.95731778452095,0.606575278259065,0.939619367902257,0.336112285552834,0.939619367902257,0.603507082349424,0.96333114711547,0.35963910728389,0.96333114711547,0.60369203983158
i1 (i4 i5 i6 i7 i9 i10 i12),(i2 i8 i10 i11 i16) (i3 i9 i13),0.93104225303903,0.210506059521637,0.135600585673543,0.581147284297058,0.445546698623516,0.18437546644166,0.109469992593566,0.555016691217082,0.445546698623516,0.195491602475505,0.120586128627411,0.566132827250927,0.445546698623516
(i1 i3 i6 i11 i15) i17 (i5 i8),(i1 i2 i3 i4 i5 i6 i7 i8 i9 i10 i11 i12),0.966485585840186,0.647993254615828,0.307897712904381,0.853885398258049,0.545987685353668,0.56593642947334,0.250532359019861,0.795583602856033,0.545051243836172,0.658581961799868,0.315458973083789,0.861496368240528,0.546037395156739
i23 (i1 i7 i9 i11 i17 i18) i3 i15,(i3 i11 i17 i18 i23) i1 (i7 i15 i19) i5 (i9 i14) i21 i2,0.937283622416433,0.829709983835696,0.556794903569998,0.84967027009363,0.292875366523632,0.771054717340052,0.498792987041842,0.791927771934917,0.293134784893076,0.843515651496785,0.571149913548087,0.864425108769321,0.293275195221234
i4 (i2 i7) i10 i5,i1 i3 (i6 i7 i9 i10),0.968432720355691,0.363709313737383,0.114541210834554,0.855925827210154,0.7413846163756,0.344495350581105,0.104361690568615,0.845746306944215,0.7413846163756,0.350296441316573,0.106557360310577,0.847941976686177,0.7413846163756
i21 i20 (i1 i16 i19) (i5 i10) i4,(i12 i17) (i2 i3 i8 i11) (i15 i18) (i6 i13) (i7 i14) i9,0.930074017489188,0,0,0.389142712252727,0.389142712252727,0,0,0.38977330351866,0.38977330351866,0,0,0.390116806797613,0.390116806797613
i2 i5 i3 (i1 i4),i5 i8 i2 (i3 i9),0.968922741966306,0.580287544332462,0.196704918554571,0.917454802645556,0.720749884090985,0.580994268838527,0.197411643060636,0.918161527151621,0.720749884090985,0.583518284931614,0.199935659153723,0.920685543244708,0.720749884090985
i3 (i1 i5 i7) i9,(i1 i9) i7 i3 i4,0.930093081332594,0.697096710334179,0.35176094170816,0.836304027811629,0.484543086103469,0.678580739450433,0.333244970824414,0.817788056927883,0.484543086103469,0.684614956129899,0.339279187503881,0.82382227360735,0.484543086103469
"""


def _cu_ranking(text):
    """A CU ranking string as (items, scores): one score per tie group, best first."""
    items, scores, group, inside = [], [], 0, False
    for tok in text.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
            inside = True
        elif tok == ")":
            inside, group = False, group + 1
        else:
            items.append(tok)
            scores.append(-group)
            group += 0 if inside else 1
    return items, scores


def _cu_rows():
    import csv
    import io

    return list(csv.DictReader(io.StringIO(CU2024_TEST_CSV)))


@pytest.mark.parametrize("row", _cu_rows(), ids=lambda r: r["x"][:24])
@pytest.mark.parametrize("ties", ["a", "b", "w"])
def test_equals_corsi_urbano_published_vectors(row, ties):
    x, sx = _cu_ranking(row["x"])
    y, sy = _cu_ranking(row["y"])
    r = rbo(x, y, float(row["p"]), a_scores=sx, b_scores=sy, ties=ties)
    for score in ("ext", "min", "max", "res"):
        assert getattr(r, score) == pytest.approx(float(row[f"{ties}.{score}"]), abs=1e-12), score


def test_corsi_urbano_readme_example():
    """The worked example of rbo/Python/README.md in the same repository (7 digits)."""
    x, sx = _cu_ranking("red (blue green) yellow pink")
    y, sy = _cu_ranking("(blue red) white (yellow black purple) green")
    assert _cu_ranking("red (blue green) yellow pink") == (
        ["red", "blue", "green", "yellow", "pink"], [0, -1, -1, -2, -3])
    published = {
        "a": (0.6922853, 0.3310519, 0.8930692, 0.5620173),
        "w": (0.7068257, 0.3429684, 0.9049857, 0.5620173),
        "b": (0.7207131, 0.3509163, 0.9129336, 0.5620173),
    }
    for ties, (ext, mn, mx, res) in published.items():
        r = rbo(x, y, 0.95, a_scores=sx, b_scores=sy, ties=ties)
        assert (round(r.ext, 7), round(r.min, 7), round(r.max, 7), round(r.res, 7)) == (
            ext, mn, mx, res), ties


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
