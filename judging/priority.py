"""Orders in which to judge the documents of one topic. Plain Python; no Django.

Items are the 0-based positions of a topic's pooled documents in pool order. A
*contributing ranking* is the array of item positions one ranking (a system run or a user
variant's ranking), cut at the pool depth, placed in its own order; every item is in at
least one of them.

Adaptive orders are *replayed*: :func:`adaptive_order` runs the policy from the start,
feeding it the relevance of every item already judged (``known``), and yields the items
whose relevance is not known yet, in the order the policy reaches them. An item yielded
this way gives the policy no feedback (it is still being judged), so the policy carries
on as if nothing happened. Replaying from the judgments makes the order a function of the
judgments alone: every assessor and every request sees the same order, and a judgment by
any assessor changes it for all the others. A caller that records each yielded item's
relevance in ``known`` before asking for the next item gets the sequential policy (the
generator reads the item's relevance back when resumed): that is how a simulation runs.

Policies (``feedback`` is True for relevant):

``mtf``
    Move-to-front, Cormack, Palmer & Clarke (SIGIR 1998), as restated by Losada, Parapar
    & Barreiro (2016): every ranking starts with the same priority; the ranking of highest
    priority gives its next document not yet reached through any ranking; a relevant
    document keeps that ranking in front, a non-relevant one lowers its priority by one.
    Ties between equal priorities go to the ranking that has held that priority longest
    (first-in first-out), and initially to the ranking listed first.
``bandit``
    The Bayesian "maximum mean" bandit (MM) of Losada, Parapar & Barreiro (SAC 2016;
    IP&M 2017), stationary version: ranking s has a Beta(1 + rel_s, 1 + nonrel_s)
    posterior over the chance that its next document is relevant, rel_s and nonrel_s
    counting the judged documents it has given (including documents first reached
    through another ranking, which cost no judgment); the ranking with the largest
    posterior mean (1 + rel_s) / (2 + rel_s + nonrel_s) is played, ties to the ranking
    listed first. A ranking with no documents left is retired.
``bandit-ns``
    The non-stationary maximum-mean bandit (MM-NS) of the same papers, which Losada,
    Parapar & Barreiro (IP&M 53(5), 2017, "Multi-armed bandits for adjudicating
    documents in pooling-based evaluation of information retrieval systems") found the
    most effective adjudication method. A ranking's chance of giving a relevant
    document falls as it is read deeper, so its evidence is discounted: each time
    ranking s gives a document of relevance r (1 or 0) the counts become

        rel_s    <- gamma * rel_s    + r
        nonrel_s <- gamma * nonrel_s + (1 - r)

    so that after n documents rel_s = sum_i gamma**(n - i) * r_i (the i-th document
    given, i = 1..n), and the ranking of largest posterior mean
    (1 + rel_s) / (2 + rel_s + nonrel_s) -- Beta(1 + rel_s, 1 + nonrel_s) -- is
    played. ``gamma`` = 1 is the stationary ``bandit``. Everything else (documents
    reached through another ranking count without a judgment, ties to the ranking
    listed first, exhausted rankings retired) is as in ``bandit``.

    The paper's full text was not at hand when this was written: the update above is
    the discounted-count form of MM-NS as we read it and is to be checked against the
    paper. Choices made here: (1) the discount is applied per ranking, at each document that
    ranking gives (the drift is in the ranking's depth, which only advances when it is
    played), not per global judgment; (2) the Beta(1, 1) prior is not discounted, only
    the observed counts; (3) ``gamma`` = :data:`NS_DISCOUNT` = 0.9 (an effective memory
    of about ten documents per ranking), fixed before running any simulation, not
    tuned. Ties are broken deterministically (ranking listed first), not at random,
    so that every assessor sees the same order.

Non-adaptive orders: ``pool`` (pool order, positions 0, 1, 2, ...) and ``depth``
(:func:`depth_order`: by the shallowest rank at which any ranking placed the document,
ties in pool order).
"""
from __future__ import annotations

import heapq
from typing import Iterator, Mapping, Sequence

import numpy as np

__all__ = [
    "ADAPTIVE_ORDERS",
    "adaptive_order",
    "bandit_mean",
    "NS_DISCOUNT",
    "depth_order",
    "order_items",
]

ADAPTIVE_ORDERS = ("mtf", "bandit", "bandit-ns")

#: The discount of MM-NS (``bandit-ns``): weight of a ranking's evidence per document it
#: gives after it (see the module docstring for why 0.9).
NS_DISCOUNT = 0.9


def bandit_mean(rel: float, nonrel: float) -> float:
    """Posterior mean of Beta(1 + rel, 1 + nonrel): (1 + rel) / (2 + rel + nonrel).
    The counts may be discounted (fractional) ones, as in MM-NS."""
    return (1.0 + rel) / (2.0 + rel + nonrel)


def depth_order(min_rank: Sequence[int]) -> list[int]:
    """Items by shallowest contributing rank, ties in pool order (a stable sort)."""
    ranks = np.asarray(min_rank, dtype=np.int64)
    return [int(i) for i in np.argsort(ranks, kind="stable")]


class _Rankings:
    """Cursors over the contributing rankings; ``next_unreached(s)`` skips items already
    reached through any ranking and returns -1 when ranking s is exhausted."""

    def __init__(self, rankings: Sequence[Sequence[int]], n_items: int):
        self.rankings = [np.asarray(r, dtype=np.int64) for r in rankings]
        self.cursor = [0] * len(self.rankings)
        self.reached = np.zeros(n_items, dtype=bool)

    def next_unreached(self, s: int) -> int:
        r, c = self.rankings[s], self.cursor[s]
        while c < len(r) and self.reached[r[c]]:
            c += 1
        self.cursor[s] = c
        if c >= len(r):
            return -1
        self.cursor[s] = c + 1
        item = int(r[c])
        self.reached[item] = True
        return item

    def next_any(self, s: int) -> tuple[int, bool]:
        """The next item of ranking s, reached before or not: (item, first time)."""
        r, c = self.rankings[s], self.cursor[s]
        if c >= len(r):
            return -1, False
        self.cursor[s] = c + 1
        item = int(r[c])
        first = not self.reached[item]
        self.reached[item] = True
        return item, first


def _mtf(rk: _Rankings, known: Mapping[int, bool]) -> Iterator[int]:
    n = len(rk.rankings)
    # heap of (-priority, tick, ranking); the tick makes equal priorities first-in first-out
    heap = [(0, s, s) for s in range(n)]
    tick = n
    while heap:
        neg_p, _, s = heap[0]
        item = rk.next_unreached(s)
        if item < 0:
            heapq.heappop(heap)
            continue
        rel = known.get(item)
        if rel is None:
            yield item  # still to be judged: no feedback, the same ranking stays in front
            rel = known.get(item)  # given meanwhile by a sequential caller
        if rel is False:
            heapq.heapreplace(heap, (neg_p + 1, tick, s))
            tick += 1


def _bandit(rk: _Rankings, known: Mapping[int, bool], discount: float = 1.0) -> Iterator[int]:
    """Maximum-mean bandit; ``discount`` < 1 is the non-stationary MM-NS (the counts of
    the ranking just played are multiplied by ``discount`` before its new observation is
    added), 1 the stationary MM."""
    n = len(rk.rankings)
    rel = [0.0] * n
    nonrel = [0.0] * n
    live = list(range(n))
    while live:
        s = max(live, key=lambda k: (bandit_mean(rel[k], nonrel[k]), -k))
        item, first = rk.next_any(s)
        if item < 0:
            live.remove(s)
            continue
        r = known.get(item)
        if r is None and first:
            yield item
            r = known.get(item)  # given meanwhile by a sequential caller
        if r is None:
            continue
        rel[s] = discount * rel[s] + (1.0 if r else 0.0)
        nonrel[s] = discount * nonrel[s] + (0.0 if r else 1.0)


def adaptive_order(
    order: str,
    rankings: Sequence[Sequence[int]],
    n_items: int,
    known: Mapping[int, bool],
) -> Iterator[int]:
    """Items not in ``known``, in the order the policy ``order`` (mtf, bandit or
    bandit-ns) reaches them given the relevance of the items in ``known``; then any item
    no ranking holds, in pool order. Lazy: take only as many as needed."""
    rk = _Rankings(rankings, n_items)
    if order == "mtf":
        gen = _mtf(rk, known)
    elif order == "bandit":
        gen = _bandit(rk, known)
    elif order == "bandit-ns":
        gen = _bandit(rk, known, NS_DISCOUNT)
    else:
        raise ValueError(f"adaptive order must be one of {ADAPTIVE_ORDERS}, not {order!r}")
    yield from gen
    for item in np.flatnonzero(~rk.reached):
        if int(item) not in known:
            yield int(item)


def order_items(
    order: str,
    *,
    n_items: int,
    rankings: Sequence[Sequence[int]] = (),
    min_rank: Sequence[int] | None = None,
    known: Mapping[int, bool] | None = None,
) -> Iterator[int]:
    """Every item not in ``known`` in the order ``order`` (pool, depth, mtf, bandit,
    bandit-ns)."""
    known = {} if known is None else known
    if order == "pool":
        return (i for i in range(n_items) if i not in known)
    if order == "depth":
        if min_rank is None:
            raise ValueError("the depth order needs each item's shallowest rank")
        return (i for i in depth_order(min_rank) if i not in known)
    return adaptive_order(order, rankings, n_items, known)
