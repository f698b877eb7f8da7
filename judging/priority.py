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
``bandit-discounted``
    This project's own non-stationary variant of ``bandit``, in the spirit of the
    non-stationary maximum-mean bandit (MM-NS) of Losada, Parapar & Barreiro (IP&M 53(5),
    2017, "Multi-armed bandits for adjudicating documents in pooling-based evaluation of
    information retrieval systems") but not checked against that paper's update rule,
    so it does not carry the paper's name (it was called ``bandit-ns`` before). A
    ranking's chance of giving a relevant document falls as it is read deeper, so its
    evidence is discounted: each time ranking s gives a document of relevance r (1 or 0)
    the counts become

        rel_s    <- gamma * rel_s    + r
        nonrel_s <- gamma * nonrel_s + (1 - r)

    so that after n documents rel_s = sum_i gamma**(n - i) * r_i (the i-th document
    given, i = 1..n), and the ranking of largest posterior mean
    (1 + rel_s) / (2 + rel_s + nonrel_s) -- Beta(1 + rel_s, 1 + nonrel_s) -- is
    played. ``gamma`` = 1 is the stationary ``bandit``. Everything else (documents
    reached through another ranking count without a judgment, ties to the ranking
    listed first, exhausted rankings retired) is as in ``bandit``.

    Choices made here: (1) the discount is applied per ranking, at each document that
    ranking gives (the drift is in the ranking's depth, which only advances when it is
    played), not per global judgment; (2) the Beta(1, 1) prior is not discounted, only
    the observed counts; (3) ``gamma`` = :data:`NS_DISCOUNT` = 0.9 (an effective memory
    of about ten documents per ranking), fixed before running any simulation, not
    tuned. Ties are broken deterministically (ranking listed first), not at random,
    so that every assessor sees the same order.

``hedge``
    Aslam, Pavlu & Savell's Hedge (2003): see :mod:`judging.learned`, which defines it
    with the other learned orders; it is offered to the live queue because its state is
    a closed form of the judgments (no model to refit).

Non-adaptive orders: ``pool`` (pool order, positions 0, 1, 2, ...) and ``depth``
(:func:`depth_order`: by the shallowest rank at which any ranking placed the document,
ties in pool order).
"""
from __future__ import annotations

import heapq
from typing import Iterator, Mapping, Sequence

import numpy as np

from . import learned

__all__ = [
    "ADAPTIVE_ORDERS",
    "AdaptiveReplay",
    "adaptive_order",
    "bandit_mean",
    "NS_DISCOUNT",
    "depth_order",
    "order_items",
]

ADAPTIVE_ORDERS = ("mtf", "bandit", "bandit-discounted", "hedge")

#: The discount of ``bandit-discounted``: weight of a ranking's evidence per document it
#: gives after it (see the module docstring for why 0.9).
NS_DISCOUNT = 0.9


def bandit_mean(rel: float, nonrel: float) -> float:
    """Posterior mean of Beta(1 + rel, 1 + nonrel): (1 + rel) / (2 + rel + nonrel).
    The counts may be discounted (fractional) ones, as in ``bandit-discounted``."""
    return (1.0 + rel) / (2.0 + rel + nonrel)


def depth_order(min_rank: Sequence[int]) -> list[int]:
    """Items by shallowest contributing rank, ties in pool order (a stable sort)."""
    ranks = np.asarray(min_rank, dtype=np.int64)
    return [int(i) for i in np.argsort(ranks, kind="stable")]


class _Rankings:
    """Cursors over the contributing rankings and the items reached through any of them."""

    def __init__(self, rankings: Sequence[Sequence[int]], n_items: int):
        self.rankings = [np.asarray(r, dtype=np.int64) for r in rankings]
        self.cursor = [0] * len(self.rankings)
        self.reached = np.zeros(n_items, dtype=bool)

    def copy(self) -> "_Rankings":
        other = _Rankings.__new__(_Rankings)
        other.rankings, other.cursor = self.rankings, list(self.cursor)
        other.reached = self.reached.copy()
        return other

    def take(self, s: int) -> None:
        """Ranking ``s`` gives the item at its cursor: the item is reached, the cursor moves on."""
        c = self.cursor[s]
        self.reached[self.rankings[s][c]] = True
        self.cursor[s] = c + 1


class _MTF:
    """Move-to-front as a state machine: :meth:`peek` names the next item (-1 when every
    ranking is exhausted), :meth:`commit` takes it with its relevance (None: no feedback)."""

    def __init__(self, rk: _Rankings):
        n = len(rk.rankings)
        self.rk = rk
        # heap of (-priority, tick, ranking); the tick makes equal priorities first-in first-out
        self.heap = [(0, s, s) for s in range(n)]
        self.tick = n

    def copy(self) -> "_MTF":
        other = _MTF.__new__(_MTF)
        other.rk, other.heap, other.tick = self.rk.copy(), list(self.heap), self.tick
        return other

    def peek(self) -> tuple[int, bool]:
        rk = self.rk
        while self.heap:
            s = self.heap[0][2]
            r, c = rk.rankings[s], rk.cursor[s]
            while c < len(r) and rk.reached[r[c]]:  # reached through another ranking
                c += 1
            rk.cursor[s] = c
            if c < len(r):
                return int(r[c]), True
            heapq.heappop(self.heap)
        return -1, False

    def commit(self, rel: bool | None) -> None:
        neg_p, _, s = self.heap[0]
        self.rk.take(s)
        if rel is False:  # relevant or not yet judged: the same ranking stays in front
            heapq.heapreplace(self.heap, (neg_p + 1, self.tick, s))
            self.tick += 1


class _Bandit:
    """Maximum-mean bandit; ``discount`` < 1 is the discounted variant (the counts of
    the ranking just played are multiplied by ``discount`` before its new observation is
    added), 1 the stationary MM. The ranking played is the one of largest posterior mean,
    ties to the ranking listed first: the top of a heap of (-mean, ranking), where only the
    ranking just played changes its mean."""

    def __init__(self, rk: _Rankings, discount: float = 1.0):
        n = len(rk.rankings)
        self.rk, self.discount = rk, discount
        self.rel = [0.0] * n
        self.nonrel = [0.0] * n
        self.heap = [(-bandit_mean(0.0, 0.0), s) for s in range(n)]

    def copy(self) -> "_Bandit":
        other = _Bandit.__new__(_Bandit)
        other.rk, other.discount = self.rk.copy(), self.discount
        other.rel, other.nonrel, other.heap = list(self.rel), list(self.nonrel), list(self.heap)
        return other

    def peek(self) -> tuple[int, bool]:
        """The next item of the ranking played and whether it is reached the first time."""
        rk = self.rk
        while self.heap:
            s = self.heap[0][1]
            r, c = rk.rankings[s], rk.cursor[s]
            if c < len(r):
                item = int(r[c])
                return item, not rk.reached[item]
            heapq.heappop(self.heap)  # retired: no documents left
        return -1, False

    def commit(self, rel: bool | None) -> None:
        s = self.heap[0][1]
        self.rk.take(s)
        if rel is None:  # not judged yet: no evidence
            return
        d = self.discount
        self.rel[s] = d * self.rel[s] + (1.0 if rel else 0.0)
        self.nonrel[s] = d * self.nonrel[s] + (0.0 if rel else 1.0)
        heapq.heapreplace(self.heap, (-bandit_mean(self.rel[s], self.nonrel[s]), s))


def _policy(order: str, rankings: Sequence[Sequence[int]], n_items: int):
    rk = _Rankings(rankings, n_items)
    if order == "mtf":
        return _MTF(rk)
    if order == "bandit":
        return _Bandit(rk)
    if order == "bandit-discounted":
        return _Bandit(rk, NS_DISCOUNT)
    raise ValueError(f"adaptive order must be one of {ADAPTIVE_ORDERS}, not {order!r}")


def _run(policy, known: Mapping[int, bool]) -> Iterator[int]:
    """Carry the policy on from its state: yield each item reached the first time whose
    relevance is not known (it gives no feedback unless a sequential caller records it in
    ``known`` before resuming), then the items no ranking holds, in pool order."""
    while True:
        item, first = policy.peek()
        if item < 0:
            break
        rel = known.get(item)
        if rel is None and first:
            yield item
            rel = known.get(item)  # given meanwhile by a sequential caller
        policy.commit(rel)
    for item in np.flatnonzero(~policy.rk.reached):
        if int(item) not in known:
            yield int(item)


def adaptive_order(
    order: str,
    rankings: Sequence[Sequence[int]],
    n_items: int,
    known: Mapping[int, bool],
) -> Iterator[int]:
    """Items not in ``known``, in the order the policy ``order`` (mtf, bandit,
    bandit-discounted or hedge) reaches them given the relevance of the items in ``known``;
    then any item no ranking holds, in pool order (hedge: items no ranking holds score 0
    and take their turn by pool position). Lazy: take only as many as needed."""
    if order == "hedge":
        return learned.learned_order("hedge", rankings, n_items, known)
    return _run(_policy(order, rankings, n_items), known)


class AdaptiveReplay:
    """:func:`adaptive_order` for one topic, asked again and again as judgments arrive,
    without replaying from the start each time.

    It keeps the policy's state at its *frontier*: the point just before the replay first
    reaches an item whose relevance is not known. Up to there the replay read only the
    relevance of the items it consumed (kept in ``consumed``), so for new judgments the
    replay is the same up to the frontier as long as none of those items changed; it then
    carries on from the frontier, consuming the newly known items, to the new frontier.
    When a consumed item's relevance changed (a revision, an undo, a second assessor
    tipping the majority) it replays from the start. Either way :meth:`items` is exactly
    ``adaptive_order(order, rankings, n_items, known)``."""

    def __init__(self, order: str, rankings: Sequence[Sequence[int]], n_items: int):
        self.order, self.rankings, self.n_items = order, rankings, n_items
        self.full_replays = 0
        # hedge keeps no replay: its order is a closed form of the judgments
        self._hedge = learned.HedgeReplay(rankings, n_items) if order == "hedge" else None
        if self._hedge is None:
            self._restart()

    def _restart(self) -> None:
        self._state = _policy(self.order, self.rankings, self.n_items)
        self._consumed: dict[int, bool | None] = {}
        self.full_replays += 1

    def items(self, known: Mapping[int, bool], changed=None) -> Iterator[int]:
        """The items not in ``known`` in the policy's order. ``changed``: the items whose
        relevance may differ from ``known`` at the previous call (None: any may have)."""
        if self._hedge is not None:
            return self._hedge.items(known, changed)
        consumed = self._consumed
        if changed is None:
            stale = any(known.get(i) != v for i, v in consumed.items())
        else:
            stale = any(i in consumed for i in changed)
        if stale:
            self._restart()
            consumed = self._consumed
        state = self._state
        while True:
            item, first = state.peek()
            if item < 0:
                break
            rel = known.get(item)
            if rel is None and first:
                break  # the frontier
            state.commit(rel)
            consumed[item] = rel
        return _run(state.copy(), known)


def unpack_rankings(ranks: bytes, offsets: bytes) -> list[np.ndarray]:
    """A task topic's contributing rankings (0-based item positions) from their stored
    form: every ranking's positions packed one after another as little-endian int32, and
    the int32 offsets where each starts (one more than there are rankings)."""
    flat = np.frombuffer(bytes(ranks), dtype="<i4")
    ends = np.frombuffer(bytes(offsets), dtype="<i4")
    return [flat[ends[k]:ends[k + 1]] for k in range(len(ends) - 1)]


def order_items(
    order: str,
    *,
    n_items: int,
    rankings: Sequence[Sequence[int]] = (),
    min_rank: Sequence[int] | None = None,
    known: Mapping[int, bool] | None = None,
) -> Iterator[int]:
    """Every item not in ``known`` in the order ``order`` (pool, depth, mtf, bandit,
    bandit-discounted)."""
    known = {} if known is None else known
    if order == "pool":
        return (i for i in range(n_items) if i not in known)
    if order == "depth":
        if min_rank is None:
            raise ValueError("the depth order needs each item's shallowest rank")
        return (i for i in depth_order(min_rank) if i not in known)
    return adaptive_order(order, rankings, n_items, known)
