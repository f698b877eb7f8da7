"""Pool construction from ranked lists: depth-D pools and RBP-priority pools.

Plain Python and NumPy; nothing here imports Django.

Inputs are :class:`Contribution` objects, one ranked list each, from a person
(``source="user"``, ``weight`` = how many people typed that query) or from a
retrieval system (``source="system"``, ``weight`` = 1).  Document ids inside this
module are non-negative integers whose numeric order equals the order of the
document id strings; the caller maps strings to integers and back, so the house
tie-break "(-score, docid)" is "(-score, integer id)" here.  (Or the caller passes
ids in another order and a ``string_order`` that gives the pooled documents ids in
string order: :func:`pool_compute`.)

RBP weight of document ``d`` in a topic, over the top ``D`` of every ranking
``i`` with contribution weight ``w_i`` that ranks ``d`` at rank ``r_i(d)``::

    W(d) = sum_{i : r_i(d) <= D}  w_i * (1 - p) * p ** (r_i(d) - 1)

Both strategies pool the same documents, every document ranked within the top
``D`` of some ranking (``{d : W(d) > 0}``); they differ in the order in which the
documents are to be judged, and so in what a budget ``J`` keeps:

- ``strategy="depth"``: shallowest rank first, ascending ``(m(d), -W(d), d)`` where
  ``m(d)`` is the shallowest 1-based rank at which any ranking placed ``d``
  (all rank-1 documents, then rank 2, ...: the depth-k pools for growing k);
- ``strategy="rbp"``: heaviest first, ascending ``(-W(d), d)``.

A budget ``J`` keeps the first ``J`` documents of that order, per topic, or over all
topics together with ``budget_scope="global"`` (ties across topics by topic id).

Reproducibility.  Floating-point addition is not associative, so a sum taken in
a different order can differ in its last bit, and documents whose weights are
mathematically equal (very common: every document seen once, at the same rank,
by one ranking) would otherwise be ordered by rounding noise.  Therefore:

1. rankings of a topic are put in a canonical order (by source, weight, length
   and then the bytes of their truncated id arrays), independent of the
   caller's order;
2. terms are summed in rank-major order (all rank-1 terms, then rank 2, ...,
   within one rank in the canonical ranking order), sequentially;
3. the sums are rounded to 40 significant bits (``WEIGHT_BITS``, about 12
   significant decimal digits; relative change below 5e-13) and these rounded
   values are both the stored weights and the sort key.

So the same contributions in any order give bit-identical pools, and weights
that differ only by summation noise compare equal and fall back to docid order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from common.naturalsort import natural_key

from . import idtables
from .idtables import ID_TABLE_MAX, Scratch, group

__all__ = [
    "Contribution",
    "ID_TABLE_MAX",
    "StringOrder",
    "TopicPool",
    "WEIGHT_BITS",
    "pool_compute",
    "rbp_weights",
    "round_weights",
    "validate_pool_params",
]

#: Significant bits kept in RBP weights (40 bits ~ 12 decimal digits; module docstring).
WEIGHT_BITS = 40

_SOURCES = ("user", "system")
_STRATEGIES = ("depth", "rbp")
#: Bounds of the pool parameters (the API, the pages and ``build_pool`` alike).
MAX_DEPTH = 10_000
MAX_BUDGET = 10_000_000
_SCOPES = ("topic", "global")

# distinct docids of each topic -> ids in docid string order (pool_compute)
StringOrder = Callable[[list[np.ndarray]], Iterable[np.ndarray]]


@dataclass(frozen=True)
class Contribution:
    """One ranked list for one topic.

    ``docids`` is a 1-D array of distinct non-negative integer ids, best first.
    It is converted to ``int64`` (a copy is made only when needed).  Distinctness
    is checked where it matters, by :func:`pool_build` (one pass per topic), not
    here, so that building many contributions stays cheap.
    """

    topic_id: str
    source: str  # "user" | "system"
    weight: int  # people who typed this query (repeats); 1 for system runs
    docids: np.ndarray  # ranked, best first, int ids

    def __post_init__(self) -> None:
        if not isinstance(self.topic_id, str):
            raise TypeError(f"topic_id must be a str, got {type(self.topic_id).__name__}")
        if self.source not in _SOURCES:
            raise ValueError(f"source must be 'user' or 'system', got {self.source!r}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, np.integer)):
            raise TypeError(f"weight must be an int, got {type(self.weight).__name__}")
        if self.weight < 1:
            raise ValueError(f"weight must be >= 1, got {self.weight}")
        docids = np.asarray(self.docids)
        if docids.ndim != 1:
            raise ValueError(f"docids must be 1-D, got shape {docids.shape}")
        kind = docids.dtype.kind
        if docids.size and kind not in "iu":
            raise TypeError(f"docids must be integers, got dtype {docids.dtype}")
        if kind == "u" and docids.size and docids.max() > np.iinfo(np.int64).max:
            raise ValueError(f"docids must fit in int64 (topic {self.topic_id})")
        docids = docids.astype(np.int64, copy=False)
        if kind == "i" and docids.size and docids.min() < 0:
            raise ValueError(f"docids must be non-negative (topic {self.topic_id})")
        object.__setattr__(self, "docids", docids)
        object.__setattr__(self, "weight", int(self.weight))


@dataclass
class TopicPool:
    """The pool of one topic, in priority order (``(min_rank, -weight, docid)`` for the
    depth strategy, ``(-weight, docid)`` for rbp; module docstring).

    ``weights``: RBP weight (rounded to ``WEIGHT_BITS`` significant bits).
    ``min_rank``: shallowest 1-based rank at which any ranking placed the document.
    ``users``: people (sum of user contribution weights) whose ranking had it within depth.
    ``systems``: system rankings that had it within depth.
    """

    topic_id: str
    docids: np.ndarray  # int64, priority order
    weights: np.ndarray  # float64
    min_rank: np.ndarray  # int32
    users: np.ndarray  # int32
    systems: np.ndarray  # int32

    def __len__(self) -> int:
        return int(self.docids.size)

    def truncate(self, n: int) -> "TopicPool":
        """The first ``n`` documents (a budget cut keeps priority order)."""
        return TopicPool(
            self.topic_id,
            self.docids[:n],
            self.weights[:n],
            self.min_rank[:n],
            self.users[:n],
            self.systems[:n],
        )


def validate_pool_params(
    strategy: str, depth: int, p: float, budget: int | None, budget_scope: str
) -> None:
    """Raise ``ValueError`` with a clear message for invalid pool parameters."""
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    if not isinstance(p, (float, int, np.floating)) or isinstance(p, bool) or not (0.0 < p < 1.0):
        raise ValueError(f"p (RBP persistence) must satisfy 0 < p < 1, got {p!r}")
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not (
                1 <= budget <= MAX_BUDGET):
            raise ValueError(f"budget must be an integer from 1 to {MAX_BUDGET} or None, "
                             f"got {budget!r}")
    if budget_scope not in _SCOPES:
        raise ValueError(f"budget_scope must be one of {_SCOPES}, got {budget_scope!r}")


def round_weights(x: np.ndarray, bits: int = WEIGHT_BITS) -> np.ndarray:
    """Round non-negative finite floats to ``bits`` significant bits (half up).

    Works on the IEEE-754 bit pattern: add half a unit of the last kept bit and
    clear the dropped bits (a carry into the exponent is the correct rounding).
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    if not 1 <= bits <= 52:
        raise ValueError(f"bits must be in 1..52, got {bits}")
    drop = 52 - bits
    if drop == 0:
        return x.copy()
    b = x.view(np.int64)
    half = np.int64(1) << np.int64(drop - 1)
    mask = ~((np.int64(1) << np.int64(drop)) - np.int64(1))
    return ((b + half) & mask).view(np.float64)


def _rank_units(p: float, n: int) -> np.ndarray:
    """(1 - p) * p ** (r - 1) for r = 1..n, each computed directly (no cumulative product)."""
    r = np.arange(n, dtype=np.float64)
    return (1.0 - p) * np.power(p, r)


def _has_repeat_within_ranking(
    slot: np.ndarray, k: np.ndarray, nslots: int, nrank: int, scratch: Scratch
) -> bool:
    """True if some ranking holds some document twice (two entries, same (k, slot))."""
    size = nslots * nrank
    if size <= idtables.TABLE_MAX:
        mark = scratch.get("mark", size, np.bool_)  # all False between calls
        key = slot * nrank
        key += k
        mark[key] = True
        distinct = int(np.count_nonzero(mark[:size]))
        if size <= 32 * key.size:
            mark[:size] = False  # a memset beats a scattered clear here
        else:
            mark[key] = False
        return distinct != slot.size
    pairs = np.unique(slot.astype(np.int64) * nrank + k)
    return pairs.size != slot.size


def _canonical(contribs: Sequence[Contribution], depth: int) -> list[Contribution]:
    return sorted(
        contribs,
        key=lambda c: (c.source, c.weight, c.docids[:depth].size, c.docids[:depth].tobytes()),
    )


def _entries(
    arrays: Sequence[np.ndarray], depth: int, scratch: "Scratch | None" = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-major entries of the top-``depth`` of each array: (docs, rank0, ranking index)."""
    n = len(arrays)
    tops = [a[:depth] for a in arrays]
    lens = np.fromiter((t.size for t in tops), dtype=np.int64, count=n)
    L = int(lens.max()) if n else 0
    if n == 0 or L == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.astype(np.int32), z.astype(np.intp)
    if np.all(lens == L):
        mat = np.stack(tops)  # n x L
        docs = mat.T.reshape(-1)  # rank-major
        rank0, k = (scratch or Scratch()).grid(n, L)
        return docs, rank0, k
    mat = np.full((n, L), -1, dtype=np.int64)
    for i, t in enumerate(tops):
        mat[i, : t.size] = t
    flat = mat.T.reshape(-1)
    keep = flat >= 0
    rank0 = np.repeat(np.arange(L, dtype=np.int32), n)[keep]
    k = np.tile(np.arange(n, dtype=np.intp), L)[keep]
    return flat[keep], rank0, k


def _weights_from_entries(
    slot: np.ndarray, nslots: int, rank0: np.ndarray, w: np.ndarray | None, p: float, depth: int
) -> np.ndarray:
    """Sum of ``w * (1 - p) * p ** rank0`` per slot (``w=None``: all weights 1)."""
    units = _rank_units(p, depth)
    terms = units[rank0] if w is None else w * units[rank0]
    # np.bincount adds weights sequentially in entry order (rank-major): fixed order.
    return np.bincount(slot, weights=terms, minlength=nslots)


def rbp_weights(
    rankings: list[np.ndarray],
    p: float,
    depth: int,
    repeats: list[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """RBP weights of one topic's documents, in priority order.

    ``W(d) = sum_i repeats_i * (1 - p) * p ** (r_i(d) - 1)`` over rankings ``i``
    that rank ``d`` within the top ``depth`` (``repeats`` defaults to all 1).
    Summation order and rounding as in the module docstring; rankings are used
    in a canonical order, so the result does not depend on their order.

    Returns ``(docids int64, weights float64)`` sorted by ``(-weight, docid)``.
    """
    validate_pool_params("rbp", depth, p, None, "topic")
    if repeats is None:
        repeats = [1] * len(rankings)
    if len(repeats) != len(rankings):
        raise ValueError(f"repeats has {len(repeats)} entries for {len(rankings)} rankings")
    contribs = [
        Contribution("_", "user", int(r), np.asarray(a)) for a, r in zip(rankings, repeats)
    ]
    pool = _topic_pool("_", contribs, depth, p)
    return pool.docids, pool.weights


def _topic_pool(
    topic_id: str,
    contribs: Sequence[Contribution],
    depth: int,
    p: float,
    scratch: Scratch | None = None,
    budget: int | None = None,
    strategy: str = "rbp",
) -> TopicPool:
    """The topic's pool in priority order; with ``budget`` only its first ``budget`` entries."""
    return _prioritised(_topic_arrays(topic_id, contribs, depth, p, scratch), strategy, budget)


def _prioritised(raw: TopicPool, strategy: str, budget: int | None) -> TopicPool:
    if strategy == "depth":
        return _take(raw, _depth_order(raw)[:budget])
    return _sorted(raw, budget)


def _topic_arrays(
    topic_id: str,
    contribs: Sequence[Contribution],
    depth: int,
    p: float,
    scratch: Scratch | None,
) -> TopicPool:
    """The topic's pool, not yet in priority order."""
    scratch = scratch or Scratch()
    cs = _canonical(contribs, depth)
    nrank = len(cs)
    docs, rank0, k = _entries([c.docids for c in cs], depth, scratch)
    cw = np.fromiter((c.weight for c in cs), dtype=np.float64, count=nrank)
    is_user = np.fromiter((c.source == "user" for c in cs), dtype=bool, count=nrank)
    first, slot = group(docs, scratch)
    n = first.size
    if n and _has_repeat_within_ranking(slot, k, n, nrank, scratch):
        raise ValueError(
            f"topic {topic_id}: a ranking lists some docid more than once within depth {depth}"
        )
    unit_weights = bool(np.all(cw == 1.0))
    weights = round_weights(
        _weights_from_entries(slot, n, rank0, None if unit_weights else cw[k], p, depth)
    )
    if is_user.all():
        systems = np.zeros(n, dtype=np.int32)
        if unit_weights:
            users = np.bincount(slot, minlength=n).astype(np.int32)
        else:
            users = np.bincount(slot, weights=cw[k], minlength=n).astype(np.int32)
    else:
        users = np.bincount(slot, weights=(cw * is_user)[k], minlength=n).astype(np.int32)
        systems = np.bincount(slot, weights=(~is_user).astype(np.float64)[k], minlength=n)
        systems = systems.astype(np.int32)
    min_rank = np.full(n, np.iinfo(np.int32).max, dtype=np.int32)
    np.minimum.at(min_rank, slot, rank0)
    min_rank += 1
    return TopicPool(topic_id, docs[first], weights, min_rank, users, systems)


def _priority_order(docids: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Indices sorting by ``(-w, docid)``.

    Fast path: one quicksort on ``-w``, then one on the integer key
    ``(run of equal weights) << 32 | docid``; falls back to ``np.lexsort``.
    """
    if w.size < 2:
        return np.arange(w.size)
    if int(docids.max()) >= (1 << 32) or w.size >= (1 << 31):
        return np.lexsort((docids, -w))
    o = np.argsort(-w)
    sw = w[o]
    run = np.empty(w.size, dtype=np.int64)
    run[0] = 0
    np.cumsum(sw[1:] != sw[:-1], out=run[1:])
    key = (run << 32) | docids[o]
    return o[np.argsort(key)]


def _depth_order(pool: TopicPool) -> np.ndarray:
    """Indices sorting by ``(min_rank, -weight, docid)``: the ``(-weight, docid)`` order,
    then a stable sort by shallowest rank (a radix sort when ranks fit in 16 bits)."""
    order = _priority_order(pool.docids, pool.weights)
    ranks = pool.min_rank[order]
    if ranks.size and int(ranks.max()) < (1 << 16):
        ranks = ranks.astype(np.uint16)
    return order[np.argsort(ranks, kind="stable")]


def _take(pool: TopicPool, ix: np.ndarray) -> TopicPool:
    return TopicPool(
        pool.topic_id,
        pool.docids[ix],
        pool.weights[ix],
        pool.min_rank[ix],
        pool.users[ix],
        pool.systems[ix],
    )


def _sorted(pool: TopicPool, budget: int | None = None, threshold: float | None = None) -> TopicPool:
    """Sort by ``(-weight, docid)``; keep the first ``budget`` (only entries with weight
    >= the ``budget``-th largest, or >= ``threshold``, are sorted)."""
    w = pool.weights
    cand = None
    if budget is not None and budget < w.size:
        cut = np.partition(w, w.size - budget)[w.size - budget]  # budget-th largest
        cand = np.flatnonzero(w >= cut)
    if threshold is not None:
        cand = np.flatnonzero(w >= threshold)
    if cand is None:
        order = _priority_order(pool.docids, w)
    else:
        order = cand[_priority_order(pool.docids[cand], w[cand])]
    if budget is not None:
        order = order[:budget]
    return _take(pool, order)


def pool_compute(
    contributions: Iterable[Contribution],
    *,
    strategy: str = "depth",
    depth: int,
    p: float = 0.95,
    budget: int | None = None,
    budget_scope: str = "topic",
    string_order: StringOrder | None = None,
) -> dict[str, TopicPool]:
    """Compute the pool of every topic that has contributions.

    Both strategies pool the union of the top-``depth`` of every ranking, with RBP
    weights ``W`` (module docstring) over the same top-``depth``.
    strategy="depth" orders it by ``(min_rank, -W(d), d)``, strategy="rbp" by
    ``(-W(d), d)``.  With ``budget=J`` keep the first ``J`` documents of that order
    per topic (``budget_scope="topic"``) or over all topics together
    (``budget_scope="global"``; ties across topics broken by topic id, then docid).
    Without a budget both strategies return the whole depth pool.

    Contribution docids may be any non-negative ids when ``string_order`` is given:
    a function that receives the distinct docids of every topic (one array per
    topic, ascending topic_id) and returns, for each, ids whose numeric order is the
    docid string order (same shapes).  Only the priority order needs it, so it is
    called once, after the weights are summed, with the pooled documents alone (a
    depth-1000 pool of 10.8M ranked entries holds 1.9M); the pools hold the ids it
    returned.  The weights do not depend on which ids the rankings use: rankings
    that only the ids tell apart in the canonical order add equal terms.

    Returns ``{topic_id: TopicPool}`` with topics in ascending ``topic_id``
    order; a topic whose documents all fall outside a global budget is present
    with empty arrays.  Raises ``ValueError`` for invalid parameters and for a
    ranking that lists a document twice within ``depth``.
    """
    validate_pool_params(strategy, depth, p, budget, budget_scope)
    by_topic: dict[str, list[Contribution]] = {}
    for c in contributions:
        if not isinstance(c, Contribution):
            raise TypeError(f"expected Contribution, got {type(c).__name__}")
        by_topic.setdefault(c.topic_id, []).append(c)
    scratch = Scratch()
    topics = sorted(by_topic, key=natural_key)
    if string_order is None and (budget is None or budget_scope == "topic"):
        return {t: _topic_pool(t, by_topic[t], depth, p, scratch, budget, strategy)
                for t in topics}
    raw = {t: _topic_arrays(t, by_topic[t], depth, p, scratch) for t in topics}
    if string_order is not None:
        raw = _in_string_order(raw, string_order)
    if budget is None or budget_scope == "topic":
        return {t: _prioritised(raw[t], strategy, budget) for t in topics}
    if strategy == "depth":
        return _global_budget_depth(raw, budget)
    return _global_budget(raw, budget)


def _in_string_order(raw: dict[str, TopicPool], string_order: StringOrder) -> dict[str, TopicPool]:
    """The pools with their docids replaced by the ids ``string_order`` gives them."""
    topics = list(raw)
    ids = list(string_order([raw[t].docids for t in topics]))
    if len(ids) != len(topics):
        raise ValueError(f"string_order returned {len(ids)} arrays for {len(topics)} topics")
    out = {}
    for t, new in zip(topics, ids):
        new = np.asarray(new)
        old = raw[t]
        if new.shape != old.docids.shape or (new.size and new.dtype.kind not in "iu"):
            raise ValueError(f"string_order returned {new.shape} {new.dtype} ids for the "
                             f"{old.docids.size} documents of topic {t}")
        if new.size and new.min() < 0:
            raise ValueError(f"string_order returned negative ids for topic {t}")
        out[t] = TopicPool(t, new.astype(np.int64, copy=False), old.weights, old.min_rank,
                           old.users, old.systems)
    return out


def _global_budget_depth(raw: dict[str, TopicPool], budget: int) -> dict[str, TopicPool]:
    """The first ``budget`` documents over all topics by ``(min_rank, -W, topic_id, docid)``."""
    topics = list(raw)  # natural topic order
    ordered = {t: _take(raw[t], _depth_order(raw[t])) for t in topics}
    if not topics:
        return {}
    sizes = [len(ordered[t]) for t in topics]
    topic_ix = np.repeat(np.arange(len(topics)), sizes)
    cat = {f: np.concatenate([getattr(ordered[t], f) for t in topics])
           for f in ("docids", "weights", "min_rank")}
    chosen = np.lexsort((cat["docids"], topic_ix, -cat["weights"], cat["min_rank"]))[:budget]
    keep = np.bincount(topic_ix[chosen], minlength=len(topics))
    # within a topic the global order is the topic's own order: keep its first documents
    return {t: ordered[t].truncate(int(k)) for t, k in zip(topics, keep)}


def _global_budget(raw: dict[str, TopicPool], budget: int) -> dict[str, TopicPool]:
    """The ``budget`` heaviest documents over all topics, by ``(-W, topic_id, docid)``."""
    topics = list(raw)  # natural topic order
    if not topics:
        return {}
    w = np.concatenate([raw[t].weights for t in topics])
    if w.size <= budget:
        return {t: _sorted(raw[t]) for t in topics}
    cut = np.partition(w, w.size - budget)[w.size - budget]  # budget-th largest overall
    above = int(np.count_nonzero(w > cut))
    left = budget - above  # documents of weight == cut still to take, by (topic, docid)
    out = {}
    for t in topics:
        pool = _sorted(raw[t], threshold=cut)
        n_above = int(np.count_nonzero(pool.weights > cut))
        n_tied = pool.weights.size - n_above
        take = min(n_tied, left)
        left -= take
        out[t] = pool.truncate(n_above + take)
    return out
