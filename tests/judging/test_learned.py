"""Orders that learn (judging/learned.py), on examples small enough to work by hand."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from judging import learned

LN3 = math.log(3)


def run(order, rankings, n_items, relevant, **kw):
    """The sequential policy: every yielded item's relevance is recorded before resuming."""
    known: dict[int, bool] = {}
    seq = []
    for item in learned.learned_order(order, rankings, n_items, known, **kw):
        assert item not in known
        seq.append(item)
        known[item] = item in relevant
    return seq


def test_hedge_values_are_half_log_of_depth_over_rank():
    # rankings of length 3 and 2: N = 3; rank r has ½ ln(3 / r); an item not held gets 0
    v = learned.hedge_values([[0, 1, 2], [2, 3]], 4)
    assert v[0] == pytest.approx([0.5 * LN3, 0.5 * math.log(1.5), 0.0, 0.0])
    assert v[1] == pytest.approx([0.0, 0.0, 0.5 * LN3, 0.5 * math.log(1.5)])


def test_hedge_update_by_hand():
    rankings = [[0, 1, 2], [2, 3, 0]]
    v = learned.hedge_values(rankings, 4)
    a, b = 0.5 * LN3, 0.5 * math.log(1.5)
    # uniform weights: each item's score is the mean of its two values
    assert learned.hedge_scores(v, {}) == pytest.approx([a / 2, b / 2, a / 2, b / 2])
    # item 0 non-relevant: ranking 1 (rank 1) loses a, ranking 2 (rank 3, value 0) nothing;
    # w = (0.1**a, 1) normalised
    w0 = 0.1 ** a
    w = np.array([w0, 1.0]) / (1 + w0)
    assert learned.hedge_scores(v, {0: False}) == pytest.approx(
        [w[0] * a, w[0] * b, w[1] * a, w[1] * b])
    # the weights depend on the set of judgments, not their order
    assert learned.hedge_scores(v, {2: True, 0: False}) == pytest.approx(
        learned.hedge_scores(v, {0: False, 2: True}))
    # first item: tie between 0 and 2 goes to the earlier position; then 2 (ranking 2 now
    # heavier), relevant, so ranking 2 keeps the lead: 3, then 1
    assert run("hedge", rankings, 4, {2, 3}) == [0, 2, 3, 1]
    assert learned.hedge_next(rankings, 4, {0: False}) == 2
    assert learned.hedge_next(rankings, 4, {0: False}, exclude=[2]) == 3
    assert learned.hedge_next(rankings, 4, {0: False, 1: False, 2: True, 3: True}) == -1


def test_hedge_yields_every_item_once_including_items_no_ranking_holds():
    # the last rank of the longest ranking is worth ln(N / N) = 0, as much as an item no
    # ranking holds: after item 3 the rest go in pool order
    assert run("hedge", [[3, 1]], 5, {1}) == [3, 0, 1, 2, 4]
    # N = 3: 2 and 3 tie (½ ln 3 each) and 2 is earlier; both non-relevant cost both
    # rankings ½ ln 3, so 1 and 4 tie again: 1, then 4 (relevant 1 lifted ranking 1 but
    # ranking 1 has nothing left), then 0
    assert run("hedge", [[3, 1], [2, 4, 0]], 5, {1}) == [2, 3, 1, 4, 0]


def test_rank_features_by_hand():
    # two system rankings and one user ranking over four items
    pooled, per = learned.rank_features([[0, 1], [1, 2], [0]], 4,
                                        ["system", "system", "user"], p=0.5)
    # RBP weights scaled by 1/(1-p): rank 1 -> 1, rank 2 -> 0.5
    assert per.tolist() == [[1, 0, 1], [0.5, 1, 0], [0, 0.5, 0], [0, 0, 0]]
    cols = dict(zip(learned.RANK_FEATURES, pooled.T))
    assert cols["rbp_mean"] == pytest.approx([2 / 3, 0.5, 0.5 / 3, 0])
    assert cols["rbp_max"] == pytest.approx([1, 1, 0.5, 0])
    assert cols["rr_mean"] == pytest.approx([2 / 3, 0.5, 0.5 / 3, 0])
    assert cols["share"] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 0])
    assert cols["log_count"] == pytest.approx(
        [math.log(3) / math.log(4), math.log(3) / math.log(4), math.log(2) / math.log(4), 0])
    assert cols["user_share"] == pytest.approx([1, 0, 0, 0])
    assert cols["system_share"] == pytest.approx([0.5, 1, 0.5, 0])
    with pytest.raises(ValueError, match="2 sources for 3 rankings"):
        learned.rank_features([[0], [1], [2]], 3, ["user", "system"])


def test_al_rank_starts_by_the_fusion_prior_then_learns_which_ranking_is_good():
    # ranking 1 holds the relevant items 0..9, ranking 2 the non-relevant 10..19, interleaved
    # so that the fusion prior alternates between them
    good, bad = list(range(10)), list(range(10, 20))
    seq = run("al-rank", [good, bad], 20, set(good))
    # batches 1, 2, 3, …: the prior first (rank 1 of ranking 1, then rank 1 of ranking 2)
    assert seq[:2] == [0, 10]
    # once a relevant and a non-relevant item are known, the topic model prefers ranking 1:
    # every relevant item comes in the first 12 but for the 10th pick, the exploration
    # slot, which goes to the prior's best remaining item (rank 2 of ranking 2)
    assert seq[9] == 11
    assert set(seq[:12]) == set(good) | {10, 11}
    assert sorted(seq) == list(range(20))


def test_al_rank_pooled_model_carries_over_topics():
    shared = learned.PooledModel()
    run("al-rank", [list(range(10)), list(range(10, 20))], 20, set(range(10)), pooled=shared)
    assert shared.fits >= 1 and len(shared.labels) == 20
    # a new topic, no judgments of its own: the pooled model ranks by the learned weights
    # (documents held by one ranking at the top are relevant here as elsewhere)
    seq = run("al-rank", [[0, 1, 2], [3, 4, 5]], 6, {0, 1, 2, 3}, pooled=shared)
    assert sorted(seq) == list(range(6))


def test_cal_text_starts_from_the_statement_and_learns():
    texts = ["apple pie recipe", "car engine repair", "apple tart baking", "engine oil change",
             "pie crust with apple", "weather forecast rain"]
    seq = run("cal-text", [[1, 3, 5], [0, 2, 4]], 6, {0, 2, 4}, texts=texts,
              statement="apple pie")
    # the first document is the one nearest the statement; the three apple documents
    # come first
    assert seq[0] == 0
    assert set(seq[:3]) == {0, 2, 4}
    assert sorted(seq) == list(range(6))
    with pytest.raises(ValueError, match="every pooled document's text"):
        list(learned.learned_order("cal-text", [[0]], 2, {}, texts=["a"]))


def test_cal_combines_text_and_rank_features():
    texts = ["alpha", "alpha", "beta", "beta"]
    # text cannot separate 0 from 1, but ranking puts 1 first; 1 and 3 are relevant
    seq = run("cal", [[1, 3, 0, 2]], 4, {1, 3}, texts=texts, statement="alpha")
    assert seq[0] == 1
    assert sorted(seq) == [0, 1, 2, 3]


def test_batches_grow_by_a_tenth():
    sizes = learned._batch_sizes()
    got = [next(sizes) for _ in range(14)]
    assert got == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17]


def test_unknown_order():
    with pytest.raises(ValueError, match="must be one of hedge, al-rank, cal-text, cal"):
        learned.learned_order("bm25", [], 0, {})


def test_learned_imports_no_django():
    code = ("import sys, judging.learned; "
            "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hedge_in_the_live_queue_orders_by_the_judgments_so_far():
    from judging import priority

    rankings = [[0, 1, 2], [2, 3, 0]]
    known = {0: False}
    # weights fixed by the judgments so far: 2 (ranking 2's first) then 3, then 1
    assert list(learned.HedgeReplay(rankings, 4).items(known)) == [2, 3, 1]
    assert list(priority.AdaptiveReplay("hedge", rankings, 4).items(known)) == [2, 3, 1]
    assert list(priority.adaptive_order("hedge", rankings, 4, dict(known))) == [2, 3, 1]
    assert "hedge" in priority.ADAPTIVE_ORDERS
