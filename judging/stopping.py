"""Knowing when to stop: how many relevant documents of a topic are still unjudged.

Plain mathematics over one topic's judgments in the order they were made (``seq``: True
for a relevant document) and the number of documents in the topic's pool; no Django.

**Estimate and the recall rule** — Callaghan & Müller-Hansen (2020), "Statistical stopping
criteria for automated screening in systematic reviews", Systematic Reviews 9:273. The
documents judged last are treated as a random sample drawn without replacement from an
urn made of themselves and the ``U`` documents not yet judged. Under a prioritised order
(the pool's order, MTF, the bandits) the relevant documents come early, so the last
documents are at least as rich as the rest and the treatment is conservative. For the
window of the last ``n`` judgments holding ``k`` relevant documents, with ``r`` found in
all and ``r_AL = r − k`` found before the window, the urn has ``M = n + U`` documents of
which ``K`` are relevant (unknown) and the count in the window is hypergeometric::

    P(X ≤ k | M, K, n) = Σ_{j=0..k} C(K, j) C(M − K, n − j) / C(M, n)

The hypothesis "recall below τ" means at least ``K_τ = ⌊r / τ⌋ + 1 − r_AL`` relevant
documents in the urn; it is rejected at level α when ``P(X ≤ k | M, K_τ, n) < α``. As in
the authors' ``buscar`` code, every window is tried and the rule fires when the smallest
p is below α (the windows are not corrected for multiple testing). Only the windows that
end just before a relevant document (or take every judgment) need trying: extending a
window by a non-relevant document adds a non-relevant ball to the urn and a draw, which
can only lower the p-value.

Inverting the test gives the interval shown to the organiser. For a window, ``K_hi`` is
the largest ``K`` with ``P(X ≤ k | M, K, n) ≥ α``: at most ``K_hi − k`` relevant
documents are not yet found, so recall is at least ``r / (r + K_hi − k)`` with
confidence 1 − α. The window shown is the one with the smallest ``K_hi − k``, so
``recall_low ≥ τ`` exactly when the recall rule at confidence 1 − α fires. The
assumption bounds what is left only from above (the unjudged documents may be far poorer
than the last judged), so the interval is one-sided: ``[recall_low, 1]``. The point
estimate is the window's rate over the unjudged documents, ``k · U / n`` still unfound,
recall ``r / (r + k · U / n)``; it leans low for the same reason.

**Knee rule** — Cormack & Grossman (2016), "Engineering quality and reliability in
technology-assisted review", SIGIR 2016 (the "knee method"). After ``s`` judgments with
``relret(i)`` relevant in the first ``i``, the knee ``i*`` is the point of the gain curve
farthest above the line from (0, 0) to (s, relret(s)), i.e. maximising
``s · relret(i) − relret(s) · i``; the slope ratio is::

    ρ = (relret(i*) / i*) / ((relret(s) − relret(i*) + 1) / (s − i*))

and judging stops when ``ρ ≥ 156 − min(relret(s), 150)`` and ``s ≥ 150``. The knee gives
no interval; its target is nominal (0.9 unless given) and only used to report how often it
stopped short of it.

The target method of the same paper needs a random sample of the pool judged first; the
live queue hands out documents in priority order only, so it is not offered.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.special import gammaln

KNEE_MIN_JUDGED = 150
KNEE_BASE = 156
KNEE_CAP = 150
DEFAULT_TARGET = 0.9
DEFAULT_CONFIDENCE = 0.95


# --- the rules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """``recall:τ:c`` (recall at least τ with confidence c) or ``knee[:τ]``."""

    kind: str  # "recall" or "knee"
    target: float = DEFAULT_TARGET
    confidence: float = DEFAULT_CONFIDENCE

    def __str__(self) -> str:
        if self.kind == "knee":
            return "knee" if self.target == DEFAULT_TARGET else f"knee:{self.target:g}"
        return f"recall:{self.target:g}:{self.confidence:g}"

    @property
    def description(self) -> str:
        if self.kind == "knee":
            return "knee of the gain curve (Cormack & Grossman 2016)"
        return (f"recall ≥ {self.target:g} with confidence {self.confidence:g} "
                "(Callaghan & Müller-Hansen 2020)")


def parse_rule(text: str) -> Rule:
    """``"recall:0.9:0.95"``, ``"recall:0.9"`` (confidence 0.95), ``"knee"`` or
    ``"knee:0.8"``; ValueError naming the part that is wrong."""
    parts = str(text).strip().split(":")
    kind, args = parts[0], parts[1:]
    if kind not in ("recall", "knee"):
        raise ValueError(f"stopping rule {text!r}: the rule must be 'recall' or 'knee', "
                         f"not {kind!r}")
    if len(args) > (2 if kind == "recall" else 1):
        raise ValueError(f"stopping rule {text!r}: too many parts")
    values = []
    for name, arg in zip(("target", "confidence"), args):
        try:
            v = float(arg)
        except ValueError:
            raise ValueError(f"stopping rule {text!r}: {name} {arg!r} is not a number"
                             ) from None
        if not 0 < v < 1:
            raise ValueError(f"stopping rule {text!r}: {name} must be between 0 and 1 "
                             f"(exclusive), not {arg}")
        values.append(v)
    return Rule(kind, *values)


def fires(rule: Rule, seq: Sequence[bool], pool_size: int) -> bool:
    """Whether ``rule`` stops a topic after the judgments ``seq`` (in judging order) out of
    ``pool_size`` documents. A topic whose pool is all judged has nothing left to stop."""
    if len(seq) >= pool_size:
        return False
    if rule.kind == "knee":
        return knee_fires(seq)
    return recall_p_value(seq, pool_size, rule.target) < 1 - rule.confidence


# --- hypergeometric tails ------------------------------------------------------------------


def _log_comb(n, k):
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def hypergeom_cdf(k, M, K, n) -> np.ndarray:
    """``P(X ≤ k)`` for X hypergeometric: ``n`` draws without replacement from ``M`` balls of
    which ``K`` are marked. Arrays broadcast; summed in log space from the support's
    lower end ``max(0, n − (M − K))``."""
    k, M, K, n = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in (k, M, K, n)))
    lo = np.maximum(0, n - (M - K))
    hi = np.minimum(k, np.minimum(n, K))
    out = np.zeros(k.shape)
    out[k >= np.minimum(n, K)] = 1.0
    todo = (hi >= lo) & (out < 1.0)
    if not todo.any():
        return out
    kk, MM, KK, nn, ll, hh = (a[todo] for a in (k, M, K, n, lo, hi))
    width = int((hh - ll).max()) + 1
    j = ll[:, None] + np.arange(width)[None, :]
    valid = j <= hh[:, None]
    jj = np.where(valid, j, ll[:, None])
    logp = (_log_comb(KK[:, None], jj) + _log_comb((MM - KK)[:, None], nn[:, None] - jj)
            - _log_comb(MM, nn)[:, None])
    logp = np.where(valid, logp, -np.inf)
    top = logp.max(axis=1)
    out[todo] = np.minimum(1.0, np.exp(top) * np.exp(logp - top[:, None]).sum(axis=1))
    return out


# --- windows ---------------------------------------------------------------------------------


def _windows(seq: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    """The windows worth trying (see the module docstring): sizes ``n`` and relevant
    counts ``k`` of the last-``n`` windows that end just before a relevant document, and
    of the window of every judgment."""
    rev = np.asarray(seq, dtype=bool)[::-1]
    if rev.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    k = np.cumsum(rev)
    n = np.arange(1, rev.size + 1)
    keep = np.zeros(rev.size, dtype=bool)
    keep[-1] = True
    keep[:-1] = rev[1:]  # the next older document is relevant
    return n[keep], k[keep]


def recall_p_value(seq: Sequence[bool], pool_size: int, target: float) -> float:
    """The smallest p-value over the windows of the hypothesis "recall below ``target``"
    (1.0 when nothing relevant has been found: there is nothing to measure recall of)."""
    judged, r = len(seq), int(sum(bool(x) for x in seq))
    unseen = pool_size - judged
    if unseen < 0:
        raise ValueError(f"{judged} judgments for a pool of {pool_size} documents")
    if r == 0:
        return 1.0
    if unseen == 0:
        return 0.0
    n, k = _windows(seq)
    k_tar = math.floor(r / target) + 1 - (r - k)
    M = n + unseen
    # K_τ beyond the urn's room for marked balls: the hypothesis is impossible
    possible = k_tar <= k + unseen
    if not possible.all():
        return 0.0
    return float(hypergeom_cdf(k, M, k_tar, n).min())


# --- the estimate ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """One topic: ``found`` relevant in ``judged`` of ``pool`` documents; relevant documents
    not yet found (point, and at most ``remaining_high`` with confidence 1 − α;
    ``remaining_low`` is 0 but for a topic judged to the end) and the estimated recall of
    the pool (``recall_high`` is 1 likewise).
    Recall is None while nothing relevant has been found; the point estimates are None
    while nothing is judged."""

    judged: int
    found: int
    pool: int
    remaining: float | None
    remaining_low: int
    remaining_high: int
    recall: float | None
    recall_low: float | None
    recall_high: float | None
    window: int  # the judgments the estimate treats as a sample



def _k_upper(k, M, n, unseen, alpha) -> np.ndarray:
    """Per window, the largest K in [k, k + U] with P(X ≤ k | M, K, n) ≥ α (the cdf falls
    as K grows; K = k always qualifies)."""
    lo, hi = k.copy(), k + unseen
    while (lo < hi).any():
        mid = (lo + hi + 1) // 2
        ok = hypergeom_cdf(k, M, mid, n) >= alpha
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid - 1)
    return lo


def estimate(seq: Sequence[bool], pool_size: int, *,
             confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """The topic's estimate (module docstring); ``confidence`` is 1 − α of the bound."""
    judged, r = len(seq), int(sum(bool(x) for x in seq))
    unseen = pool_size - judged
    if unseen < 0:
        raise ValueError(f"{judged} judgments for a pool of {pool_size} documents")
    if unseen == 0:
        one = 1.0 if r else None
        return Estimate(judged, r, pool_size, 0.0, 0, 0, one, one, one, 0)
    if judged == 0:  # no sample: anything from none to every document
        return Estimate(0, 0, pool_size, None, 0, unseen, None, None, None, 0)
    alpha = 1 - confidence
    n, k = _windows(seq)
    M = n + unseen
    high = _k_upper(k, M, n, unseen, alpha) - k
    best = int(np.lexsort((-n, high))[0])  # the tightest bound; ties: the longest window
    nb, kb = int(n[best]), int(k[best])
    rem_high = int(high[best])
    rem = kb * unseen / nb
    if r == 0:
        return Estimate(judged, 0, pool_size, rem, 0, rem_high, None, None, None, nb)
    return Estimate(judged, r, pool_size, rem, 0, rem_high, r / (r + rem),
                    r / (r + rem_high), 1.0, nb)


def combine(estimates: Sequence[Estimate]) -> Estimate | None:
    """All topics together: counts and point estimates add (no point estimate while a
    topic is unjudged); the bounds add too, which makes the combined bound hold with
    confidence at least 1 − α (conservative)."""
    if not estimates:
        return None
    judged = sum(e.judged for e in estimates)
    r = sum(e.found for e in estimates)
    pool = sum(e.pool for e in estimates)
    rem = (None if any(e.remaining is None for e in estimates)
           else sum(e.remaining for e in estimates))
    low = sum(e.remaining_low for e in estimates)
    high = sum(e.remaining_high for e in estimates)
    if r == 0:
        return Estimate(judged, 0, pool, rem, low, high, None, None, None, 0)
    return Estimate(judged, r, pool, rem, low, high,
                    None if rem is None else r / (r + rem), r / (r + high), r / (r + low), 0)


# --- the knee ------------------------------------------------------------------------------------


def knee_ratio(seq: Sequence[bool]) -> tuple[int, float] | None:
    """``(i*, ρ)`` of Cormack & Grossman's knee method after ``len(seq)`` judgments, or None
    before two judgments or while nothing relevant is found."""
    s = len(seq)
    if s < 2:
        return None
    rel = np.cumsum(np.asarray(seq, dtype=np.int64))
    total = int(rel[-1])
    if total == 0:
        return None
    i = np.arange(1, s)  # the knee lies strictly inside the curve
    gap = s * rel[:-1] - total * i
    knee = int(i[int(np.argmax(gap))])
    at = int(rel[knee - 1])
    if at == 0:
        return knee, 0.0
    rho = (at / knee) / ((total - at + 1) / (s - knee))
    return knee, float(rho)


def knee_fires(seq: Sequence[bool]) -> bool:
    """``ρ ≥ 156 − min(relret, 150)`` with at least 150 judgments."""
    if len(seq) < KNEE_MIN_JUDGED:
        return False
    kr = knee_ratio(seq)
    if kr is None:
        return False
    return kr[1] >= KNEE_BASE - min(int(sum(bool(x) for x in seq)), KNEE_CAP)


def first_stop(rule: Rule, seq: Sequence[bool], pool_size: int, *, every: int = 1
               ) -> int | None:
    """The number of judgments (a multiple of ``every``) after which ``rule`` first fires
    on the judging order ``seq`` (the whole topic, judged in order), or None if it never
    does before the pool is exhausted."""
    if every < 1:
        raise ValueError("every must be at least 1")
    for s in range(every, min(len(seq), pool_size - 1) + 1, every):
        if fires(rule, seq[:s], pool_size):
            return s
    return None
