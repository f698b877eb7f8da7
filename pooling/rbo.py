"""Rank-biased overlap (RBO) between two rankings, with uneven lengths and ties.

Plain Python and NumPy; nothing here imports Django.

References
----------
- W. Webber, A. Moffat, J. Zobel. A similarity measure for indefinite rankings.
  ACM TOIS 28(4), 2010 (WMZ).
- M. Corsi, J. Urbano. The Treatment of Ties in Rank-Biased Overlap. SIGIR 2024 (CU).

Classic RBO (no ties).  ``S`` is the shorter ranking (length ``s``), ``L`` the
longer (length ``l``); ``X_d = |S_{:d} n L_{:d}|`` (for ``d > s`` all of ``S``),
``A_d = X_d / d``, ``0 < p < 1``::

    RBO_min = (1-p)/p * ( sum_{d=1}^{l} A_d p^d + X_l (ln 1/(1-p) - sum_{d=1}^{l} p^d/d) )
    RBO_max = (1-p)/p * ( sum_{d=1}^{s} A_d p^d + sum_{d=s+1}^{l} (X_d + d - s)/d p^d
                          + sum_{d=l+1}^{f} (2d - l - s + X_l)/d p^d + p^{f+1}/(1-p) ),
              f = l + s - X_l
    RBO_ext = (1-p)/p * ( sum_{d=1}^{l} A_d p^d + sum_{d=s+1}^{l} X_s (d-s)/(s d) p^d )
              + ( (X_l - X_s)/l + X_s/s ) p^l                          (WMZ eq. 32)
    RBO_res = RBO_max - RBO_min

These are WMZ's bounds and extrapolation for prefix evaluation, in their form for
lists of uneven length (its eq. 32 for RBO_ext); with ``s = l`` they reduce to
the even-length forms.

Ties (CU 2024).  A tie group occupying flattened positions ``t..b`` (0-based)
is a set of items of unknown or equal order.  Item ``i`` contributes to depth
``d`` (column ``c = d - 1``) the amount ``c_i(c)``:

- ``ties="a"`` (default) and ``"b"``: ``clip((c - t + 1) / (b - t + 1), 0, 1)``,
  the probability that ``i`` is within the top ``d`` under a uniformly random
  order of its group;
- ``ties="w"``: ``1 if c >= t else 0`` (the whole group counts as soon as it starts).

``X_d = sum_i c^S_i(c) c^L_i(c)`` and the agreement is

- RBO^a: ``A_d = X_d / d`` -- the expected agreement over random tie
  orderings (recommended when ties mean "order unknown", as with tied retrieval
  scores; RBO^a_min and, for equal lengths, RBO^a_ext equal the mean of classic
  RBO over all orderings of the ties);
- RBO^w: ``A_d = 2 X_d / (|S_{:d}| + |L_{:d}|)`` with ``|S_{:d}| = sum_i c^S_i``
  (ties mean "equal");
- RBO^b: ``A_d = X_d / sqrt(sum_i c^S_i(c)^2 * sum_i c^L_i(c)^2)`` (tau-b-like).

For ``d > s`` the unseen part of ``S`` counts ``d`` items (``d - s`` unseen,
untied); RBO_max fills them with the first ``d - s`` items of ``L`` not in
``S``; RBO_ext adds ``(d - s) * A_s * mean{c^L_i(c) > 0 : i in L \\ S}``; the
tail beyond ``l`` is the classic one with ``X_l``.  This follows CU's
reference implementation (all three variants and all four scores agreed with it
to 2e-14 on 3,000 random tied rankings when this module was written).  Without
ties all three variants reduce to the classic formulas above.

Within a tie group the flattened order is ascending docid (only RBO_max's
choice of "first items of L not in S" depends on it).
"""
from __future__ import annotations

import math
import threading
from typing import NamedTuple, Sequence

import numpy as np
from cachetools import LRUCache

__all__ = ["RBOBatch", "RBOResult", "rbo", "rbo_batch", "tie_groups"]

_TIES = ("a", "b", "w")


class RBOResult(NamedTuple):
    min: float  # RBO_min: no further overlap beyond the seen prefixes
    res: float  # residual RBO_max - RBO_min
    ext: float  # extrapolated RBO_ext

    @property
    def max(self) -> float:
        return self.min + self.res


class RBOBatch(NamedTuple):
    min: np.ndarray
    res: np.ndarray
    ext: np.ndarray


def _check_p(p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating)) or not (0.0 < p < 1.0):
        raise ValueError(f"p (RBO persistence) must satisfy 0 < p < 1, got {p!r}")
    return float(p)


def tie_groups(items: Sequence, scores: Sequence[float] | None = None):
    """Flatten a ranking: ``(ids, t, b)`` with ids ordered by ``(-score, id)``.

    Without scores the given order is kept and every item is its own group.
    With scores, items with equal score form one group spanning positions
    ``t..b`` (0-based, inclusive).
    """
    ids = np.asarray(items)
    if ids.ndim != 1:
        raise ValueError(f"a ranking must be 1-D, got shape {ids.shape}")
    n = ids.size
    if n and np.unique(ids).size != n:
        raise ValueError("a ranking lists some item more than once")
    if scores is None:
        pos = np.arange(n, dtype=np.int64)
        return ids, pos, pos.copy()
    sc = np.asarray(scores, dtype=np.float64)
    if sc.shape != ids.shape:
        raise ValueError(f"scores have shape {sc.shape}, items {ids.shape}")
    if np.isnan(sc).any():
        raise ValueError("scores contain NaN")
    order = np.lexsort((ids, -sc))
    ids, sc = ids[order], sc[order]
    new = np.ones(n, dtype=bool)
    new[1:] = sc[1:] != sc[:-1]
    starts = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    ends = np.append(starts[1:], n) - 1
    return ids, starts[gid].astype(np.int64), ends[gid].astype(np.int64)


def _expand(start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(item index, column) for every column in [start_i, stop_i)."""
    ln = np.maximum(stop - start, 0)
    tot = int(ln.sum())
    if tot == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    item = np.repeat(np.arange(ln.size, dtype=np.int64), ln)
    offs = np.cumsum(ln) - ln
    col = start[item] + (np.arange(tot, dtype=np.int64) - offs[item])
    return item, col


def _contrib(t, b, col, ties):
    if ties == "w":
        return (col >= t).astype(np.float64)
    return np.clip((col - t + 1) / (b - t + 1), 0.0, 1.0)


def _profile(t, b, l, ties, power=1, gate=None):
    """sum_i (c_i(col) * [col >= gate_i]) ** power for col = 0..l-1."""
    t = np.asarray(t, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    g = np.zeros_like(t) if gate is None else np.asarray(gate, dtype=np.int64)
    start = np.maximum(t, g)
    full = start if ties == "w" else np.maximum(b, g)
    out = np.zeros(l + 1, dtype=np.float64)
    fm = full < l
    np.add.at(out, full[fm], 1.0)
    out = np.cumsum(out)[:l]
    item, col = _expand(start, np.minimum(full, l))
    if item.size:
        v = _contrib(t[item], b[item], col, ties) ** power
        out += np.bincount(col, weights=v, minlength=l)[:l]
    return out


def _product_profile(tS, bS, tL, bL, l, ties):
    """sum_i c^S_i(col) c^L_i(col) over common items, col = 0..l-1."""
    start = np.maximum(tS, tL)
    full = start if ties == "w" else np.maximum(bS, bL)
    out = np.zeros(l + 1, dtype=np.float64)
    np.add.at(out, np.minimum(full, l), 1.0)
    out = np.cumsum(out)[:l]
    item, col = _expand(start, np.minimum(full, l))
    if item.size:
        v = _contrib(tS[item], bS[item], col, ties) * _contrib(tL[item], bL[item], col, ties)
        out += np.bincount(col, weights=v, minlength=l)[:l]
    return out


def rbo(
    a: Sequence,
    b: Sequence,
    p: float,
    *,
    a_scores: Sequence[float] | None = None,
    b_scores: Sequence[float] | None = None,
    ties: str = "a",
) -> RBOResult:
    """RBO of rankings ``a`` and ``b`` (best first) with persistence ``p``.

    Items are any hashable ids of one kind (ints or strings).  With
    ``a_scores``/``b_scores`` the ranking is ordered by ``(-score, id)`` and
    equal scores are ties, treated by variant ``ties`` ("a", "b" or "w"; see the
    module docstring).  Without scores the rankings have no ties and the result
    is classic RBO (WMZ 2010), the same for every ``ties`` value.

    Empty rankings: one empty gives ``(min 0, res 1, ext 0)``; both empty give
    ``(0, 1, 1)`` (identical, but nothing was seen).
    """
    p = _check_p(p)
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    if a_scores is None and b_scores is None:
        return _rbo_classic(a, b, p)
    fa = tie_groups(a, a_scores)
    fb = tie_groups(b, b_scores)
    # CU: S is the shorter; with equal lengths the second argument is S.
    if fa[0].size >= fb[0].size:
        S, L = fb, fa
    else:
        S, L = fa, fb
    s, l = S[0].size, L[0].size
    if s == 0:
        return RBOResult(0.0, 1.0, 1.0 if l == 0 else 0.0)
    idS, tS, bS = S
    idL, tL, bL = L
    if idS.dtype.kind != idL.dtype.kind and not (
        idS.dtype.kind in "iu" and idL.dtype.kind in "iu"
    ):
        raise TypeError(f"rankings hold ids of different kinds ({idS.dtype} vs {idL.dtype})")
    _, iS, iL = np.intersect1d(idS, idL, assume_unique=True, return_indices=True)
    X = _product_profile(tS[iS], bS[iS], tL[iL], bL[iL], l, ties)
    d = np.arange(1, l + 1, dtype=np.float64)
    only_L = np.ones(l, dtype=bool)
    only_L[iL] = False
    lt, lb = tL[only_L], bL[only_L]  # items of L not in S, in L order

    if ties == "w":
        nS = _profile(tS, bS, l, "w")
        nL = _profile(tL, bL, l, "w")

        def agree1(x, c):
            return 2 * x / (nS[c] + nL[c])

        def agree2(x, c):
            return 2 * x / (d[c] + nL[c])
    elif ties == "a":

        def agree1(x, c):
            return x / d[c]

        agree2 = agree1
    else:
        qS = _profile(tS, bS, l, "b", power=2)
        qL = _profile(tL, bL, l, "b", power=2)

        def agree1(x, c):
            return x / np.sqrt(qS[c]) / np.sqrt(qL[c])

        def agree2(x, c):
            return x / np.sqrt(d[c]) / np.sqrt(qL[c])

    c1 = np.arange(0, s)
    c2 = np.arange(s, l)
    A1 = agree1(X[c1], c1)
    A_s = A1[s - 1]
    X2 = X[c2]
    A2_min = agree2(X2, c2)
    # max: the d - s unseen items of S are the first d - s items of L \ S
    k = np.arange(l - s, dtype=np.int64)
    U = _profile(lt[: l - s], lb[: l - s], l, ties, gate=s + k)[c2] if l > s else X2
    A2_max = agree2(X2 + U, c2)
    # ext: unseen items of S agree at rate A_s, weighted by L's mean contribution
    if l > s:
        cnt = _profile(lt, lt, l, "w")[c2]  # items of L \ S started by col
        tot = _profile(lt, lb, l, ties)[c2]
        mean_c = tot / cnt
        A2_ext = agree2(X2 + (c2 - s + 1) * A_s * mean_c, c2)
    else:
        A2_ext = A2_min

    pd = np.power(p, d)
    Xl = X[l - 1]
    H_l = float(np.sum(pd / d))
    sec3_min = Xl * (-np.log1p(-p) - H_l)
    f = l + s - Xl
    dd = np.arange(l + 1, f + 1, dtype=np.float64)
    sec3_max = float(np.sum((2 * dd - l - s + Xl) / dd * np.power(p, dd))) + p ** (f + 1) / (1 - p)
    sec3_ext = (Xl + (l - s) * A_s) / l * p ** (l + 1) / (1 - p)
    k0 = (1 - p) / p
    head = float(np.sum(A1 * pd[:s]))
    rmin = k0 * (head + float(np.sum(A2_min * pd[s:])) + sec3_min)
    rmax = k0 * (head + float(np.sum(A2_max * pd[s:])) + sec3_max)
    rext = k0 * (head + float(np.sum(A2_ext * pd[s:])) + sec3_ext)
    return RBOResult(float(rmin), float(rmax - rmin), float(rext))


# ----------------------------------------------------------------------------
# Classic RBO (no ties) in closed form: one sort and a few table look-ups.
# ----------------------------------------------------------------------------

_TABLES_MAX = 32  # distinct p values kept (least recently used dropped first)
_tables: LRUCache[float, tuple] = LRUCache(maxsize=_TABLES_MAX)
_tables_lock = threading.Lock()  # threads of one process share the tables
_TAIL_MAX = 1 << 21  # longest tail summed term by term (p up to ~0.99998)


def _powers(p: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(d, p^d, w_d = p^d/d, T)`` for d = 1..size with size >= n (float64), cached per
    ``p`` and grown by doubling; entries are elementwise, so they do not depend on size.

    ``T[k] = sum_{d>k} w_d = ln(1/(1-p)) - sum_{d<=k} w_d`` for k = 0..size-1 (``T[0]``
    is ln(1/(1-p))), summed from the far end (where the terms are below 1e-17 of the
    tail), so it keeps full relative precision where ``ln(1/(1-p)) - H_k`` cancels.  For
    p so close to 1 that this needs more than ``_TAIL_MAX`` extra terms, the difference
    is used.
    """
    with _tables_lock:
        t = _tables.get(p)
    if t is not None and t[0].size >= n:
        return t
    size = max(1024, 2 * n)
    extra = math.ceil(40.0 / -math.log(p))  # p^extra < 1e-17
    tail = extra <= _TAIL_MAX
    d = np.arange(1, size + (extra if tail else 0) + 1, dtype=np.float64)
    pd = np.power(p, d)
    w = pd / d
    T = np.empty(size, dtype=np.float64)
    if tail:
        T[:] = np.cumsum(w[::-1])[::-1][:size]
    else:
        T[0] = 0.0
        np.cumsum(w[: size - 1], out=T[1:])
        T[:] = -math.log1p(-p) - T
    t = (d[:size], pd[:size], w[:size], T)
    with _tables_lock:
        _tables[p] = t
    return t


def _ids(items) -> np.ndarray:
    ids = items if isinstance(items, np.ndarray) else np.asarray(items)
    if ids.ndim != 1:
        raise ValueError(f"a ranking must be 1-D, got shape {ids.shape}")
    return ids


def _classic_scores(s: int, l: int, e: np.ndarray, p: float) -> RBOResult:
    """Classic RBO from the lengths ``1 <= s <= l`` and the depths ``e`` (1-based) at
    which the common items enter the overlap: the sums of the module docstring, term by
    term (``X_d`` explicitly, no differences of large partial sums), with ``w_d = p^d/d``::

        min = (1-p)/p (sum_{d<=l} X_d w_d + X_l sum_{d>l} w_d)
        gap = sum_{d=s+1}^{l} (d - s) w_d
        max = (1-p)/p (sum_{d<=l} X_d w_d + gap + sum_{d=l+1}^{f} (2d - f) w_d
                       + p^{f+1}/(1-p)),               f = l + s - X_l
        ext = (1-p)/p (sum_{d<=l} X_d w_d + A_s gap + (X_l + (l-s) A_s)/l p^{l+1}/(1-p))
    """
    Xl = e.size
    f = l + s - Xl
    dd, pp, ww, T = _powers(p, f + 2)
    X = np.cumsum(np.bincount(e, minlength=l + 1)[1:]).astype(np.float64)
    w = ww[:l]
    sum_xw = float(np.dot(X, w))
    A_s = float(X[s - 1]) / s
    gap = float(np.dot(dd[s:l] - s, w[s:])) if l > s else 0.0
    sec3_min = Xl * float(T[l])
    sec3_max = (float(np.dot(2 * dd[l:f] - f, ww[l:f])) if f > l else 0.0) + p ** (f + 1) / (1 - p)
    sec3_ext = (Xl + (l - s) * A_s) / l * p ** (l + 1) / (1 - p)
    k0 = (1 - p) / p
    rmin = k0 * (sum_xw + sec3_min)
    rmax = k0 * (sum_xw + gap + sec3_max)
    rext = k0 * (sum_xw + A_s * gap + sec3_ext)
    return RBOResult(float(rmin), float(rmax - rmin), float(rext))


_scratch = threading.local()
_SCRATCH_MAX = 1 << 22  # ids below this use a reusable rank table (16 MB at most)


def _scratch_table(hi: int) -> np.ndarray:
    """This thread's all-zero int32 table of at least ``hi`` entries; callers put
    values in and must zero them again before returning."""
    table = getattr(_scratch, "table", None)
    if table is None or table.size < hi:
        # calloc'd: pages the ids never touch stay unallocated
        table = np.zeros(min(max(hi, 1 << 16) * 2, _SCRATCH_MAX), dtype=np.int32)
        _scratch.table = table
    return table


def _common_depths_table(S: np.ndarray, L: np.ndarray, hi: int) -> np.ndarray:
    """Depths (1-based) at which the items common to ``S`` and ``L`` enter the overlap,
    for non-negative integer ids below ``hi``: a per-thread table indexed by id holds
    the ranks of ``S`` for the time of the call (and is zeroed again before returning),
    so a pair costs a few passes over its items and no sort."""
    table = _scratch_table(hi)
    s, l = S.size, L.size
    rank_s = np.arange(1, s + 1, dtype=np.int32)
    try:
        table[S] = rank_s
        repeated = bool((table[S] != rank_s).any())
        in_s = table[L]
        if not repeated:
            rank_l = -np.arange(1, l + 1, dtype=np.int32)
            table[L] = rank_l
            repeated = bool((table[L] != rank_l).any())
    finally:
        table[S] = 0
        table[L] = 0
    if repeated:
        raise ValueError("a ranking lists some item more than once")
    hit = np.flatnonzero(in_s)
    return np.maximum(in_s[hit].astype(np.int64), hit + 1)


def _common_depths_sort(S: np.ndarray, L: np.ndarray) -> np.ndarray:
    """The same for any ids (strings, negative or very large integers): one stable sort
    of both rankings; equal neighbours from one ranking are a repeated item, from both
    a common item."""
    s = S.size
    both = np.concatenate((S, L))
    order = np.argsort(both, kind="stable")
    sorted_ = both[order]
    at = np.flatnonzero(sorted_[1:] == sorted_[:-1])
    first, second = order[at], order[at + 1]  # stable: first < second
    if at.size and ((second < s).any() or (first >= s).any()):
        raise ValueError("a ranking lists some item more than once")
    return np.maximum(first + 1, second - (s - 1))


def _rbo_classic(a, b, p: float) -> RBOResult:
    A = _ids(a)
    B = _ids(b)
    # CU: S is the shorter; with equal lengths the second argument is S.
    S, L = (B, A) if A.size >= B.size else (A, B)
    s, l = S.size, L.size
    if s == 0:
        if l and np.unique(L).size != l:
            raise ValueError("a ranking lists some item more than once")
        return RBOResult(0.0, 1.0, 1.0 if l == 0 else 0.0)
    ks, kl = S.dtype.kind, L.dtype.kind
    if ks in "iu" and kl in "iu":
        lo = min(int(S.min()), int(L.min()))
        hi = max(int(S.max()), int(L.max())) + 1
        if lo >= 0 and hi <= _SCRATCH_MAX:
            return _classic_scores(s, l, _common_depths_table(S, L, hi), p)
    elif ks != kl:
        raise TypeError(f"rankings hold ids of different kinds ({S.dtype} vs {L.dtype})")
    return _classic_scores(s, l, _common_depths_sort(S, L), p)


# ----------------------------------------------------------------------------
# Batched path: one reference ranking against many rankings, no ties.
# ----------------------------------------------------------------------------


def _pack(rankings, offsets) -> tuple[np.ndarray, np.ndarray]:
    if offsets is not None:
        flat = np.asarray(rankings)
        off = np.asarray(offsets, dtype=np.int64)
        if flat.ndim != 1 or off.ndim != 1 or off.size == 0 or off[0] != 0 or off[-1] != flat.size:
            raise ValueError("packed rankings need 1-D flat ids and offsets from 0 to len(flat)")
        if np.any(np.diff(off) < 0):
            raise ValueError("offsets must be non-decreasing")
        return flat, off
    arrs = [np.asarray(r) for r in rankings]
    arrs = [a if a.size else np.zeros(0, dtype=np.int64) for a in arrs]
    lens = np.fromiter((x.size for x in arrs), dtype=np.int64, count=len(arrs))
    off = np.zeros(len(arrs) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    flat = np.concatenate(arrs) if arrs else np.zeros(0, dtype=np.int64)
    return flat, off


def _segment_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums of consecutive segments of ``values`` of lengths ``counts`` (0 for empty)."""
    out = np.zeros(counts.size, dtype=np.float64)
    if values.size:
        nonempty = counts > 0
        starts = np.cumsum(counts) - counts
        out[nonempty] = np.add.reduceat(values, starts[nonempty], dtype=np.float64)
    return out


def rbo_batch(reference: Sequence[int], rankings, p: float, *, offsets=None) -> RBOBatch:
    """Classic RBO (no ties) of ``reference`` against each of ``rankings``.

    ``rankings`` is a sequence of 1-D integer arrays or, with ``offsets``, one
    flat array in which ranking ``j`` is ``rankings[offsets[j]:offsets[j+1]]``
    (``offsets[0] == 0``, ``offsets[-1] == len(rankings)``).  Ids are
    non-negative integers and must be distinct within each ranking (not checked
    here, for speed; :func:`rbo` checks).

    Closed forms of the module docstring with ``w_d = p^d/d``, the tails
    ``T_k = sum_{d>k} w_d`` and ``P_k = sum_{d>k} p^d = p^{k+1}/(1-p)``: each common
    item ``i`` enters the overlap at depth ``e_i = max(rank_S(i), rank_L(i))``, so
    ``sum_{d<=l} X_d w_d + X_l T_l = sum_i T_{e_i - 1}`` and::

        min = (1-p)/p sum_i T_{e_i - 1}
        gap = sum_{d=s+1}^{l} (d - s) w_d = P_s - P_l - s (T_s - T_l)
        ext = (1-p)/p (sum_i T_{e_i-1} - X_l T_l + A_s gap + (X_l + (l-s) A_s)/l P_l)
        max = (1-p)/p (sum_i T_{e_i-1} - X_l T_l + gap + 2 (P_l - P_f) - f (T_l - T_f) + P_f)

    (``f = l + s - X_l``): a few table look-ups per common item, all terms positive
    where it matters.  Agrees with :func:`rbo` to ~1e-15.  Rankings are processed in
    blocks of about ``_BLOCK`` ids, so the working arrays stay in the processor's cache.
    """
    p = _check_p(p)
    ref = np.asarray(reference, dtype=np.int64)
    if ref.ndim != 1:
        raise ValueError("reference must be 1-D")
    if offsets is not None:
        flat, offsets = _pack(rankings, offsets)
        blocks = [(flat, offsets)]
        if flat.size > _BLOCK:
            cuts = np.unique(np.searchsorted(offsets, np.arange(0, flat.size, _BLOCK)))
            cuts = np.append(cuts[cuts < offsets.size - 1], offsets.size - 1)
            blocks = [(flat[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a])
                      for a, b in zip(cuts[:-1], cuts[1:])]
    else:
        rankings = list(rankings)
        blocks, start, size = [], 0, 0
        for j, x in enumerate(rankings):
            size += len(x)
            if size >= _BLOCK:
                blocks.append(_pack(rankings[start:j + 1], None))
                start, size = j + 1, 0
        if start < len(rankings) or not blocks:
            blocks.append(_pack(rankings[start:], None))
    parts = [_rbo_batch_packed(ref, f, o, p) for f, o in blocks]
    if len(parts) == 1:
        return parts[0]
    return RBOBatch(*(np.concatenate(x) for x in zip(*parts)))


_BLOCK = 1 << 18  # ids per block of rbo_batch


def _rbo_batch_packed(ref: np.ndarray, flat: np.ndarray, offsets: np.ndarray, p: float) -> RBOBatch:
    m = offsets.size - 1
    qlen = np.diff(offsets)
    r = ref.size
    if flat.size and flat.dtype.kind not in "iu":
        raise TypeError(f"rankings must hold integer ids, got dtype {flat.dtype}")
    if (flat.size and flat.min() < 0) or (r and ref.min() < 0):
        raise ValueError("ids must be non-negative integers")
    # 1-based rank in the reference of every entry of flat (0 = absent), then the
    # entries found there ("hits"): only those are touched again.
    if r == 0 or flat.size == 0:
        h = np.zeros(0, dtype=np.int64)
        rr_h = np.zeros(0, dtype=np.int64)
    else:
        hi = int(max(ref.max(), flat.max())) + 1
        if hi <= (1 << 27):
            if hi <= _SCRATCH_MAX:
                table = _scratch_table(hi)
            else:
                table = np.zeros(hi, dtype=np.int32)
            try:
                table[ref] = np.arange(1, r + 1, dtype=np.int32)
                rr = table[flat]
            finally:
                table[ref] = 0
        else:
            so = np.argsort(ref, kind="stable")
            sr = ref[so]
            pos = np.minimum(np.searchsorted(sr, flat), sr.size - 1)
            rr = np.where(sr[pos] == flat, so[pos] + 1, 0)
        h = np.flatnonzero(rr > 0)
        rr_h = rr[h]
    # ranking of each hit: h is ascending, so count the hits before each offset
    hits_per = np.diff(np.searchsorted(h, offsets))
    # depth at which each hit enters the overlap (its 1-based rank is h - offset + 1)
    e = np.maximum(h - np.repeat(offsets[:-1] - 1, hits_per), rr_h)
    s = np.minimum(qlen, r)
    l = np.maximum(qlen, r)
    Xl = hits_per.astype(np.float64)
    Xs = _segment_sums(e <= np.repeat(s, hits_per), hits_per)
    fmax = int((l + s).max()) if m else 0
    _, pp, _, T = _powers(p, fmax + 2)
    P = pp / (1 - p)  # P[k] = sum_{d>k} p^d
    ST = _segment_sums(T[e - 1], hits_per)
    k0 = (1 - p) / p
    rmin = k0 * ST
    sl = s.astype(np.float64)
    sumXd = ST - Xl * T[l]
    gap = (P[s] - P[l]) - sl * (T[s] - T[l])
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(s > 0, Xs / np.maximum(sl, 1), 0.0)
        rext = k0 * (sumXd + rate * gap + (Xl + (l - s) * rate) / np.maximum(l, 1) * P[l])
    f = (l + s - hits_per).astype(np.int64)
    rmax = k0 * (sumXd + gap + 2 * (P[l] - P[f]) - f * (T[l] - T[f]) + P[f])
    empty = s == 0
    if np.any(empty):
        rmin = np.where(empty, 0.0, rmin)
        rmax = np.where(empty, 1.0, rmax)
        rext = np.where(empty, np.where(l == 0, 1.0, 0.0), rext)
    return RBOBatch(rmin, rmax - rmin, rext)
