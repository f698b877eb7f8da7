"""The judging orders, with hand-computed sequences. No Django."""
from __future__ import annotations

import subprocess
import sys

import pytest

from judging import priority
from judging.priority import adaptive_order, bandit_mean, depth_order, order_items


def sequential(order, rankings, n, relevant):
    """Judge one item at a time, feeding each judgment back before asking again."""
    known, seq = {}, []
    while True:
        nxt = next(iter(adaptive_order(order, rankings, n, known)), None)
        if nxt is None:
            return seq
        seq.append(nxt)
        known[nxt] = nxt in relevant


def interactive(order, rankings, n, relevant):
    """The same, through one generator that reads each judgment back when resumed."""
    known, seq = {}, []
    for item in adaptive_order(order, rankings, n, known):
        seq.append(item)
        known[item] = item in relevant
    return seq


def test_interactive_generator_equals_replay():
    import random

    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 12)
        rankings = [rng.sample(range(n), rng.randint(0, n)) for _ in range(rng.randint(1, 4))]
        relevant = {i for i in range(n) if rng.random() < 0.4}
        for order in ("mtf", "bandit", "bandit-discounted"):
            seq = sequential(order, rankings, n, relevant)
            assert interactive(order, rankings, n, relevant) == seq
            assert sorted(seq) == list(range(n))


def test_mtf_without_feedback_walks_the_first_ranking_then_the_next():
    assert list(adaptive_order("mtf", [[0, 1, 2], [3, 1, 4]], 5, {})) == [0, 1, 2, 3, 4]


def test_mtf_replays_known_judgments():
    # A's first document is non-relevant: A drops behind B; 1 is first reached through B
    assert list(adaptive_order("mtf", [[0, 1, 2], [3, 1, 4]], 5, {0: False})) == [3, 1, 4, 2]
    # A: 0 relevant (stays), 1 non-relevant (drops); B: 3 relevant, 1 already reached, 4 next
    assert list(adaptive_order("mtf", [[0, 1, 2], [3, 1, 4]], 5,
                               {0: True, 3: True, 1: False})) == [4, 2]


def test_mtf_sequential_hand_computed():
    # A: 0 rel, 1 non -> A(-1); B: 4 non -> B(-1) queued after A; A: 2 non -> A(-2);
    # B: 5, 6, 7 relevant; B exhausted; A: 3
    assert sequential("mtf", [[0, 1, 2, 3], [4, 5, 6, 7]], 8, {0, 5, 6, 7}) == [
        0, 1, 4, 2, 5, 6, 7, 3]


def test_bandit_sequential_hand_computed():
    # means: A 1/2 = B 1/2 -> A; 0 rel: A 2/3; 1 non: A 2/4 = B 1/2, tie -> A; 2 non: A 2/5;
    # B 1/2: 4 non: B 1/3 < A 2/5: 3 non: A 2/6 = B 1/3 -> A, exhausted, retired; B: 5 6 7
    assert sequential("bandit", [[0, 1, 2, 3], [4, 5, 6, 7]], 8, {0, 5, 6, 7}) == [
        0, 1, 2, 4, 3, 5, 6, 7]
    assert bandit_mean(0, 0) == 0.5 and bandit_mean(2, 3) == 3 / 7


def test_bandit_discounted_sequential_hand_computed():
    # A = 0..7 (0, 1, 2 relevant), B = 8, 9 (non-relevant); gamma = 0.9.
    # Stationary MM: A's mean after 0-2 relevant and k non-relevant is 4/(5+k): k=3 gives
    # 1/2 = B's 1/2, tie -> A; k=4 (after 6) 4/9 < 1/2 -> B: 8 non, B 1/3 < 4/9 -> A: 7,
    # 4/10 > 1/3, A exhausted -> B: 9.
    rankings, relevant = [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9]], {0, 1, 2}
    assert sequential("bandit", rankings, 10, relevant) == [0, 1, 2, 3, 4, 5, 6, 8, 7, 9]
    # the discounted bandit: (rel, nonrel) of A after 0, 1, 2: (1, 0), (1.9, 0), (2.71, 0); after 3:
    # (2.439, 1) mean .632; after 4: (2.1951, 1.9) .524; after 5: (1.97559, 2.71) .445
    # < 1/2 -> B: 8 non, B (0, 1) 1/3 < .445 -> A: 6, (1.778, 3.439) .385 > 1/3 -> A: 7,
    # (1.600, 4.095) .299 < 1/3 -> B: 9. The old evidence fades one document sooner.
    assert sequential("bandit-discounted", rankings, 10, relevant) == [0, 1, 2, 3, 4, 5, 8, 6, 7, 9]
    assert bandit_mean(1.97559, 2.71) == pytest.approx(2.97559 / 6.68559)
    assert bandit_mean(1.97559, 2.71) < 0.5 < bandit_mean(2.1951, 1.9)


def test_bandit_discounted_replays_known_judgments():
    # 0-5 judged as above: the discounted bandit has moved to B, which (no feedback on items still being
    # judged) stays in front until it runs out; the stationary bandit is still on A
    rankings, relevant = [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9]], {0, 1, 2}
    known = {i: i in relevant for i in (0, 1, 2, 3, 4, 5)}
    assert list(adaptive_order("bandit-discounted", rankings, 10, known)) == [8, 9, 6, 7]
    assert list(adaptive_order("bandit", rankings, 10, known)) == [6, 7, 8, 9]


def test_bandit_discounted_without_discount_is_the_stationary_bandit(monkeypatch):
    import random

    monkeypatch.setattr(priority, "NS_DISCOUNT", 1.0)
    rng = random.Random(11)
    for _ in range(100):
        n = rng.randint(1, 12)
        rankings = [rng.sample(range(n), rng.randint(0, n)) for _ in range(rng.randint(1, 4))]
        relevant = {i for i in range(n) if rng.random() < 0.4}
        assert (sequential("bandit-discounted", rankings, n, relevant)
                == sequential("bandit", rankings, n, relevant))


def test_unknown_adaptive_order_is_refused():
    with pytest.raises(ValueError, match="bandit-discounted"):
        list(adaptive_order("bandit-x", [[0]], 1, {}))


def test_bandit_learns_from_documents_judged_through_another_ranking():
    # A reaches 0 (relevant) and gives 1; B reaches 0 again (rewarded, no cost) and gives 2
    assert list(adaptive_order("bandit", [[0, 1], [0, 2]], 3, {0: True})) == [1, 2]


def test_items_no_ranking_holds_come_last_in_pool_order():
    assert list(adaptive_order("mtf", [[2]], 4, {1: True})) == [2, 0, 3]


def test_depth_and_pool_orders():
    assert depth_order([3, 1, 1, 2]) == [1, 2, 3, 0]
    assert list(order_items("depth", n_items=4, min_rank=[3, 1, 1, 2], known={2: True})) == [
        1, 3, 0]
    assert list(order_items("pool", n_items=3, known={1: False})) == [0, 2]


def test_plain_modules_import_without_django():
    code = ("import sys; import judging.priority, judging.aggregate, judging.labelfiles; "
            "assert 'django' not in sys.modules, 'django imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": "."})


def _random_case(rng):
    n = rng.randint(1, 40)
    rankings = [rng.sample(range(n), rng.randint(0, n)) for _ in range(rng.randint(1, 6))]
    return n, rankings


# the orders that replay (hedge keeps no frontier: its order is a closed form of the
# judgments, checked against a full replay in test_adaptive_cache)
@pytest.mark.parametrize("order", [o for o in priority.ADAPTIVE_ORDERS if o != "hedge"])
def test_incremental_replay_equals_full_replay_through_revisions_and_undos(order):
    """One AdaptiveReplay asked after every change of a random judgment history (new
    judgments mostly at the front of the order, some anywhere, revisions flipping a known
    item, undos forgetting one) gives exactly the full replay each time, whether told which
    items changed or not."""
    import random

    rng = random.Random(order)
    restarts = resumed = 0
    for _ in range(60):
        n, rankings = _random_case(rng)
        told, untold = priority.AdaptiveReplay(order, rankings, n), priority.AdaptiveReplay(
            order, rankings, n)
        known: dict[int, bool] = {}
        for _ in range(3 * n):
            before = dict(known)
            full = list(adaptive_order(order, rankings, n, known))
            r = rng.random()
            if r < 0.15 and known:  # a revision: a known item flips
                i = rng.choice(sorted(known))
                known[i] = not known[i]
            elif r < 0.25 and known:  # an undo: a known item is no longer known
                del known[rng.choice(sorted(known))]
            elif full:  # new judgments: the next few items, or one further down
                picks = full[:rng.randint(1, 3)] if rng.random() < 0.7 else [rng.choice(full)]
                for i in picks:
                    known[i] = rng.random() < 0.4
            changed = {i for i in set(before) | set(known) if before.get(i) != known.get(i)}
            want = list(adaptive_order(order, rankings, n, known))
            restarts_before = told.full_replays
            assert list(told.items(known, changed)) == want
            assert list(untold.items(known)) == want
            if told.full_replays > restarts_before:
                restarts += 1
            else:
                resumed += 1
            if not want:
                break
    assert restarts and resumed > 5 * restarts  # most steps resume from the frontier


def test_incremental_replay_is_lazy_and_serves_a_sequential_caller():
    rankings = [[0, 1, 2, 3], [3, 2, 1, 0]]
    replay = priority.AdaptiveReplay("mtf", rankings, 5)
    known: dict[int, bool] = {}
    seq = []
    for item in replay.items(known):
        seq.append(item)
        known[item] = item in (1, 3)
    assert seq == sequential("mtf", rankings, 5, {1, 3})


def test_bandit_heap_matches_maximum_by_scan():
    """The bandit picks the ranking of largest posterior mean, ties to the first listed;
    checked against a direct scan over the rankings on random sequential runs."""
    import random

    def by_scan(rankings, n, relevant, discount):
        rel, nonrel = [0.0] * len(rankings), [0.0] * len(rankings)
        cursor, reached, live, seq = [0] * len(rankings), set(), list(range(len(rankings))), []
        while live:
            s = max(live, key=lambda k: (bandit_mean(rel[k], nonrel[k]), -k))
            if cursor[s] >= len(rankings[s]):
                live.remove(s)
                continue
            item = rankings[s][cursor[s]]
            cursor[s] += 1
            if item not in reached:
                seq.append(item)
            reached.add(item)
            r = item in relevant
            rel[s] = discount * rel[s] + r
            nonrel[s] = discount * nonrel[s] + (not r)
        return seq + [i for i in range(n) if i not in reached]

    rng = random.Random(5)
    for _ in range(200):
        n, rankings = _random_case(rng)
        relevant = {i for i in range(n) if rng.random() < 0.4}
        assert sequential("bandit", rankings, n, relevant) == by_scan(rankings, n, relevant, 1.0)
        assert sequential("bandit-discounted", rankings, n, relevant) == by_scan(
            rankings, n, relevant, priority.NS_DISCOUNT)
