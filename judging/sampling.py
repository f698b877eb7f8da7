"""A probability sample of a pool: strata, the allocation of a budget, the draw.

Plain Python and NumPy; nothing here imports Django. A judging task in ``sample`` mode
judges, for each topic, a stratified random sample of the pool instead of the whole pool;
the measures are then estimated from the sample (:mod:`evaluation.estimators`: xinfAP and
infNDCG of Yilmaz, Kanoulas & Aslam 2008 as TREC's ``sample_eval.pl`` computes them,
statAP of Aslam, Pavlu & Yilmaz 2006).

Design (one topic; the pool's documents with their shallowest rank ``m(d)`` and their RBP
weight ``W(d)``, as :mod:`pooling.pools` computes them):

1. **Strata.** ``depth:c1,c2,…`` puts a document in stratum 1 when ``m(d) ≤ c1``, in
   stratum 2 when ``c1 < m(d) ≤ c2``, …, and in the last stratum past the last cut (the
   default ``depth:10,20,50`` makes four: ranks 1–10, 11–20, 21–50 and deeper).
   ``rbp:H`` sorts the documents by ``(−W(d), docid)`` and cuts them into ``H`` strata of
   (as nearly as whole documents allow) equal total weight, so the heavy top is a small
   stratum. Empty strata are dropped and the others numbered 1, 2, … from the top.
2. **Allocation** of the topic's budget ``n`` (a number of documents, or a share of the
   topic's pool): every stratum first gets ``min(2, N_h)`` documents (two, so that the
   variance of the stratum can be estimated); the rest goes to the strata in proportion
   to ``N_h · √w̄_h`` with ``w̄_h`` the stratum's mean prior weight, capped at the
   stratum's size, whatever a cap leaves over going to the other strata in the same
   proportion; whole numbers by largest remainder (ties to the upper stratum). A budget
   smaller than the minimums goes two by two to the strata from the top. That is
   Neyman's allocation (``n_h ∝ N_h·S_h``, Cochran 1977 §5.5) for estimating the number
   of relevant documents, taking ``w̄_h`` as a stand-in for the stratum's share of
   relevant documents ``p_h`` and ``S_h = √(p_h(1 − p_h)) ≈ √p_h`` (relevant documents
   are rare): the top strata are sampled at higher rates, but not so much higher that a
   relevant document found deep in the pool, standing for ``1/π`` documents, is rarely
   seen and then swamps the estimates. Measured (``bench/sample_tables.py``): sampling in
   proportion to the prior itself (``N_h·w̄_h``, as statAP's sampling does) took the
   deepest stratum of the CACM pools at 3% and the top at 84%, and the 95% intervals of
   MAP held the whole pool's value in 71–88% of cases; ``N_h·w̄_h^0.75``, first chosen
   on Web 2011 and CACM for its better ordering of the systems, held it in only 31–95% on
   Cranfield, CISI and NPL (a few deep relevant documents, rarely drawn, left the
   number of relevant documents underestimated and the estimates too high); Neyman's allocation (``N_h·w̄_h^0.5``, :data:`ALLOCATION_EXPONENT`)
   held it in 87–100% on all six collections, at the cost of a worse ordering where
   the systems are close.
3. **Draw.** Within stratum ``h`` a simple random sample without replacement of ``n_h``
   of its ``N_h`` documents: each has inclusion probability ``π = n_h / N_h``, the
   probability recorded on the item. The drawn documents are judged in a random order
   (all strata mixed), so a sample judged only in part is still, within each stratum, a
   simple random sample of the judged size, and the estimators use the judged counts.

The draws are seeded: the same pool, spec, budget and seed give the same sample on any
machine (the generator is NumPy's PCG64 seeded from SHA-256 of the seed and the topic id).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "ALLOCATION_EXPONENT",
    "DEFAULT_STRATA",
    "MIN_PER_STRATUM",
    "Budget",
    "SampleUnit",
    "StrataSpec",
    "allocate",
    "draw_topic",
    "parse_budget",
    "parse_strata",
    "strata_of",
]

DEFAULT_STRATA = "depth:10,20,50"
#: documents every stratum gets first (or all of it when smaller): two, so that the
#: stratum's variance can be estimated (a jackknife needs two)
MIN_PER_STRATUM = 2
MAX_STRATA = 20
#: the allocation's exponent α: stratum h gets documents in proportion to N_h · w̄_h^α
#: (module docstring, step 2; 0.5: Neyman's allocation)
ALLOCATION_EXPONENT = 0.5


@dataclass(frozen=True)
class StrataSpec:
    """``kind`` is ``depth`` (``cuts``: the largest shallowest rank of each stratum but
    the last) or ``rbp`` (``count`` strata of equal prior weight)."""

    kind: str
    cuts: tuple[int, ...] = ()
    count: int = 0

    def __str__(self) -> str:
        if self.kind == "depth":
            return "depth:" + ",".join(str(c) for c in self.cuts)
        return f"rbp:{self.count}"


def parse_strata(text: str | None) -> StrataSpec:
    """``depth:10,20,50`` or ``rbp:4`` (see the module docstring); empty: the default."""
    text = (text or DEFAULT_STRATA).strip()
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    if kind == "depth":
        try:
            cuts = tuple(int(c) for c in rest.split(",") if c.strip())
        except ValueError:
            raise ValueError(f"strata {text!r}: depth cuts must be whole numbers, e.g. "
                             "depth:10,20,50") from None
        if any(c < 1 for c in cuts) or list(cuts) != sorted(set(cuts)):
            raise ValueError(f"strata {text!r}: depth cuts must be increasing ranks of at "
                             "least 1, e.g. depth:10,20,50")
        if len(cuts) + 1 > MAX_STRATA:
            raise ValueError(f"strata {text!r}: at most {MAX_STRATA} strata")
        return StrataSpec("depth", cuts=cuts)
    if kind == "rbp":
        try:
            count = int(rest)
        except ValueError:
            raise ValueError(f"strata {text!r}: give the number of strata, e.g. rbp:4") from None
        if not 1 <= count <= MAX_STRATA:
            raise ValueError(f"strata {text!r}: between 1 and {MAX_STRATA} strata")
        return StrataSpec("rbp", count=count)
    raise ValueError(f"strata {text!r}: use depth:CUT,CUT,… (by the shallowest rank) or "
                     "rbp:H (H strata of equal RBP prior weight)")


@dataclass(frozen=True)
class Budget:
    """Documents to judge per topic: ``count`` of them, or a ``share`` of the topic's pool
    (rounded up)."""

    count: int | None = None
    share: float | None = None

    def of(self, pool_size: int) -> int:
        n = self.count if self.count is not None else math.ceil(self.share * pool_size - 1e-9)
        return max(0, min(int(n), pool_size))

    def __str__(self) -> str:
        return str(self.count) if self.count is not None else f"{self.share * 100:g}%"


def parse_budget(text: str | int) -> Budget:
    """``60`` (documents per topic) or ``20%`` (of each topic's pool)."""
    s = str(text).strip()
    if s.endswith("%"):
        try:
            share = float(s[:-1]) / 100
        except ValueError:
            share = math.nan
        if not 0 < share <= 1:
            raise ValueError(f"budget {s!r}: a share must be above 0% and at most 100%")
        return Budget(share=share)
    try:
        count = int(s)
    except ValueError:
        raise ValueError(f"budget {s!r}: give documents per topic (e.g. 60) or a share of "
                         "each topic's pool (e.g. 20%)") from None
    if count < 1:
        raise ValueError(f"budget {s!r}: at least one document per topic")
    return Budget(count=count)


def strata_of(min_rank: np.ndarray, weights: np.ndarray, docids: Sequence[str],
              spec: StrataSpec) -> np.ndarray:
    """The 1-based stratum of each document (empty strata dropped and the rest numbered
    from the top)."""
    min_rank = np.asarray(min_rank, dtype=np.int64)
    n = len(min_rank)
    if spec.kind == "depth":
        raw = np.searchsorted(np.asarray(spec.cuts, dtype=np.int64), min_rank, side="left")
    else:
        w = np.asarray(weights, dtype=np.float64)
        order = sorted(range(n), key=lambda i: (-w[i], docids[i]))
        total = float(w.sum())
        raw = np.zeros(n, dtype=np.int64)
        if total > 0:
            cum = np.cumsum(w[order])
            # the stratum of a document: which H-th of the total weight its weight starts in
            start = np.concatenate(([0.0], cum[:-1])) / total
            raw[order] = np.minimum((start * spec.count).astype(np.int64), spec.count - 1)
    used = np.unique(raw)
    return (np.searchsorted(used, raw) + 1).astype(np.int64)


def allocate(sizes: Sequence[int], shares: Sequence[float], n: int,
             minimum: int = MIN_PER_STRATUM) -> np.ndarray:
    """Documents to draw from each stratum: the minimums, then the rest in proportion to
    ``shares`` (module docstring, step 2)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    masses = np.asarray(shares, dtype=np.float64)
    n = int(min(n, int(sizes.sum())))
    base = np.minimum(sizes, minimum)
    if n <= int(base.sum()):
        out = np.zeros(len(sizes), dtype=np.int64)
        left = n
        for h in range(len(sizes)):
            take = int(min(base[h], left))
            out[h] = take
            left -= take
        return out
    alloc = base.astype(np.float64)
    room = (sizes - base).astype(np.float64)
    left = float(n - base.sum())
    active = room > 0
    if masses[active].sum() <= 0:
        masses = sizes.astype(np.float64)
    while left > 1e-9 and active.any():
        share = np.where(active, masses, 0.0)
        if share.sum() <= 0:
            share = np.where(active, room, 0.0)
        want = left * share / share.sum()
        over = active & (want >= room)
        if over.any():
            alloc[over] += room[over]
            left -= float(room[over].sum())
            room[over] = 0
            active &= ~over
            continue
        alloc += want
        room -= want
        left = 0.0
    floor = np.floor(alloc + 1e-9).astype(np.int64)
    rest = n - int(floor.sum())
    if rest > 0:
        frac = alloc - floor
        frac[floor >= sizes] = -1.0
        order = sorted(range(len(sizes)), key=lambda h: (-round(frac[h], 12), h))
        for h in order[:rest]:
            floor[h] += 1
    return floor


@dataclass(frozen=True)
class SampleUnit:
    """One pooled document of a topic: its stratum, the size of that stratum and how
    many of it were drawn (so ``probability = drawn_in_stratum / stratum_size``), and
    whether it was drawn; ``order`` is a drawn document's place in the judging order
    (1 first; 0 for the others)."""

    docid: str
    stratum: int
    stratum_size: int
    drawn_in_stratum: int
    drawn: bool
    order: int

    @property
    def probability(self) -> float:
        return self.drawn_in_stratum / self.stratum_size


def _rng(seed: int, topic_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{int(seed)}\x00{topic_id}".encode("utf-8")).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


def draw_topic(topic_id: str, docids: Sequence[str], min_rank: Sequence[int],
               weights: Sequence[float], *, spec: StrataSpec, budget: Budget,
               seed: int = 0) -> list[SampleUnit]:
    """The sample of one topic's pool (documents in the pool's order); one unit per
    document, in the same order."""
    docids = list(docids)
    n_docs = len(docids)
    if n_docs == 0:
        return []
    weights = np.asarray(weights, dtype=np.float64)
    strata = strata_of(np.asarray(min_rank), weights, docids, spec)
    count = int(strata.max())
    members = [np.flatnonzero(strata == h) for h in range(1, count + 1)]
    sizes = [len(m) for m in members]
    shares = [n * (float(weights[m].sum()) / n) ** ALLOCATION_EXPONENT
              for n, m in zip(sizes, members)]
    take = allocate(sizes, shares, budget.of(n_docs))
    rng = _rng(seed, topic_id)
    drawn = np.zeros(n_docs, dtype=bool)
    for m, k in zip(members, take):
        if k:
            drawn[m[rng.permutation(len(m))[:k]]] = True
    picked = np.flatnonzero(drawn)
    order = np.zeros(n_docs, dtype=np.int64)
    order[picked[rng.permutation(len(picked))]] = np.arange(1, len(picked) + 1)
    return [SampleUnit(docids[i], int(strata[i]), sizes[strata[i] - 1],
                       int(take[strata[i] - 1]), bool(drawn[i]), int(order[i]))
            for i in range(n_docs)]
