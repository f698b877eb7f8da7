"""Measures estimated from a judged probability sample of the pool, with 95% intervals.

Plain Python and NumPy; nothing here imports Django. The sample is one
:class:`judging.prels.TopicSample` per topic (a ``sample-eval`` or ``prels`` file, or a
stored sampled judgment set): every pooled document's stratum where known, the judged
documents' grades and inclusion probabilities.

Estimators (``estimator=``), each for ``AP``, ``nDCG``, ``nDCG@k`` and ``P@k``:

- ``xinf`` — TREC's ``sample_eval.pl`` (NIST's revision of 10 Oct 2011 of Yilmaz,
  Kanoulas & Aslam's script for "A Simple and Efficient Sampling Method for Estimating AP
  and NDCG", SIGIR 2008): ``AP`` is xinfAP, ``nDCG`` infNDCG, ``P@k`` its iP@k. Per
  stratum ``h`` with ``N_h`` pooled documents of which ``n_h`` judged and ``r_h`` judged
  relevant: the relevant documents ``R̂ = Σ_h r_h·N_h/n_h``; at a judged relevant
  document at rank ``k`` the precision above it is estimated from the documents of the
  pool above it, stratum by stratum, ``prec(k) = 1/k + (1/k)·Σ_h a_h·(r'_h + ε)/(n'_h +
  3ε)`` (``a_h`` pooled documents of stratum ``h`` above rank ``k``, ``n'_h`` of them
  judged, ``r'_h`` judged relevant; ε = 0.00001); ``xinfAP = Σ_h (r_h·N_h/n_h)/R̂ ·
  mean_{judged relevant retrieved in h} prec`` (the mean over the stratum's ``r_h``
  judged relevant documents, unretrieved ones counting 0). infNDCG: ``DCG = Σ_h
  a_h/n''_h · Σ_{judged relevant of h retrieved} g/log₂(k+1)`` over the first
  ``k_max`` ranks (``a_h``, ``n''_h``: pooled and judged documents of ``h`` there),
  divided by the DCG of an ideal ranking of ``round(R̂_g)`` documents of each grade
  ``g``. ``iP@k = Σ_h a_h·(r'_h + ε)/(n'_h + 3ε) / k`` through rank ``k``. Runs are
  read as ``sample_eval.pl`` reads them: score descending, ties by docid descending,
  the first 1,000 documents; gains are the grades. ``nDCG`` (no cutoff) is the script's
  infNDCG, including its ideal ranking's arithmetic when more than 1,000 documents are
  estimated relevant; ``nDCG@k`` is this project's: the same estimate over the first
  ``k`` ranks against an ideal ranking cut at ``k`` (``sample_eval.pl`` has no cutoff).
- ``infap`` — infAP (Yilmaz & Aslam, CIKM 2006): the same with the whole pool one
  stratum; refused for a sample whose strata were drawn at different rates (use
  ``xinf``).
- ``statap`` — statAP (Aslam, Pavlu & Yilmaz, SIGIR 2006), as TREC's
  ``statAP_MQ_eval_v3.pl`` computes it (Horvitz–Thompson): with ``π_d`` each judged
  document's inclusion probability, ``R̂ = Σ_{judged relevant} 1/π_d``, at a judged
  relevant document at rank ``k`` ``prec(k) = (1 + Σ_{judged relevant above k} 1/π_d)/k``
  and ``statAP = Σ_{judged relevant retrieved} prec(k)/π_d / R̂`` (the whole run);
  ``P@k = Σ_{judged relevant in the first k} 1/π_d / k`` (the script's precision at
  cutoff); ``nDCG@k`` is this project's Horvitz–Thompson form ``Σ_{judged relevant in
  the first k} g/log₂(k+1)/π_d`` over the ideal DCG of ``round(Σ 1/π_d)`` documents of
  each grade (the script's nDCG is not an estimate: it ranks the judged documents only).

A topic with no judged relevant document scores 0 and counts in the mean, as in
``sample_eval.pl``; the mean is over the topics of the sample that the run has.

Intervals. Each topic's estimate gets a variance from the stratified delete-one
jackknife with the finite-population correction (Wolter, *Introduction to Variance
Estimation*, 2nd ed. 2007, §4.5; Shao & Tu, *The Jackknife and Bootstrap*, 1995, §6.2):
the estimate is recomputed with each judged document removed from the sample (its
stratum then has ``n_h − 1`` judged documents), and ``v = Σ_h (1 − f_h)·(n_h − 1)/n_h ·
Σ_{i ∈ h} (θ̂_(i) − θ̄_h)²`` with ``f_h = n_h/N_h`` (a fully judged stratum adds
nothing). The same formula serves every estimator (all are smooth functions of the
strata's sample means). The same replicates estimate the estimator's bias, ``b = Σ_h
(1 − f_h)·(n_h − 1)·(θ̄_h − θ̂)`` (Quenouille's, per stratum; ``corrected = θ̂ − b``):
the ratio estimators (xinfAP, statAP, the nDCGs, whose denominators are estimated too)
are biased when few relevant documents are judged. Topics are sampled independently,
so the mean over ``T`` topics has variance ``Σ_t v_t / T²`` and bias ``Σ_t b_t / T``.
The 95% interval spans ``estimate ± 1.96·√v`` and ``corrected ± 1.96·√v`` (the union:
the bias estimate is itself noisy, and on the Web 2011 pools centring on the corrected
value alone covered less often, on the CACM pools more often), cut to [0, 1]. A
``prels`` file does not give the strata: its judged documents are grouped by inclusion
probability (in a stratified design the documents of a stratum share one) and a
group's size is taken as ``n/π``. A stratum with a single judged document adds no
variance (one document cannot show any): the design judges at least two of each. A
topic whose sample holds no relevant document the run retrieved has a zero-width
interval: the per-topic intervals cover the topic's value less often than 95% (the
means' do; ``bench/sample_tables.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from common.fileio import InputError
from common.naturalsort import natural_key
from judging.prels import TopicSample

__all__ = [
    "ESTIMATORS",
    "MAX_RESULTS",
    "EstimatedMeasure",
    "estimate_runs",
    "estimated_names",
    "parse_estimated_measures",
    "ranking_order",
    "run_rankings",
]

ESTIMATORS = ("infap", "xinf", "statap")
#: sample_eval.pl's ``$maxResultSize``: the documents of a run it reads per topic
MAX_RESULTS = 1000
EPSILON = 0.00001  # sample_eval.pl's smoothing of the precision above a rank
EPSILON3 = 0.00003  # and its 3ε, as the script writes it (3 * 0.00001 differs in the last bit)
Z95 = 1.959963984540054  # the normal quantile of 0.975
_LOG2 = math.log(2)

#: how each estimator's measures are known in the literature and the scripts
_NAMES = {
    "xinf": {"AP": "xinfAP", "nDCG": "infNDCG", "P": "iP"},
    "infap": {"AP": "infAP", "nDCG": "infNDCG", "P": "iP"},
    "statap": {"AP": "statAP", "nDCG": "statNDCG", "P": "statP"},
}


@dataclass(frozen=True)
class EstimatedMeasure:
    """``AP``, ``nDCG`` (``cutoff`` None) or ``nDCG@k``, ``P@k``."""

    family: str
    cutoff: int | None = None

    @property
    def key(self) -> str:
        return self.family if self.cutoff is None else f"{self.family}@{self.cutoff}"


def parse_estimated_measures(text: str | Sequence[str]) -> list[EstimatedMeasure]:
    """``"AP nDCG@20 P@10"``: the measures the estimators give (module docstring)."""
    words = text.split() if isinstance(text, str) else list(text)
    out: list[EstimatedMeasure] = []
    for word in words:
        family, at, cut = word.partition("@")
        if family not in ("AP", "nDCG", "P") or (family == "AP" and at) or (
                family == "P" and not at):
            raise InputError("--measures", None, f"{word!r} cannot be estimated from a sample; "
                             "the estimators give AP, nDCG, nDCG@k and P@k")
        cutoff = None
        if at:
            try:
                cutoff = int(cut)
            except ValueError:
                cutoff = 0
            if cutoff < 1:
                raise InputError("--measures", None, f"{word!r}: the cutoff must be a whole "
                                 "number of at least 1")
        m = EstimatedMeasure(family, cutoff)
        if m not in out:
            out.append(m)
    if not out:
        raise InputError("--measures", None, "name at least one measure, e.g. AP nDCG@20")
    return out


def estimated_names(estimator: str, measures: Sequence[EstimatedMeasure]) -> dict[str, str]:
    """``{"AP": "xinfAP", "nDCG@20": "infNDCG@20", …}``."""
    names = _NAMES[estimator]
    return {m.key: names[m.family] + ("" if m.cutoff is None else f"@{m.cutoff}")
            for m in measures}


def ranking_order(docids: Sequence[str], scores: Sequence[float]) -> list[str]:
    """Docids by score descending, ties by docid descending (sample_eval.pl's and
    trec_eval's order)."""
    pairs = sorted(zip(scores, docids), key=lambda p: p[1], reverse=True)
    pairs.sort(key=lambda p: p[0], reverse=True)
    return [d for _, d in pairs]


def run_rankings(per_topic: Mapping[str, tuple[Sequence[str], Sequence[float], Sequence[int]]],
                 order: str = "trec_eval") -> dict[str, list[str]]:
    """``{topic: docids}`` of a run read as ``(docids, scores, ranks)`` per topic, in
    ``trec_eval`` order (:func:`ranking_order`) or by the ``rank`` column."""
    if order == "rank":
        return {t: [d for _, d in sorted(zip(k, docs))] for t, (docs, _, k) in per_topic.items()}
    if order != "trec_eval":
        raise InputError("--order", None, f"unknown order {order!r}; use trec_eval or rank")
    return {t: ranking_order(docs, scores) for t, (docs, scores, _) in per_topic.items()}


# --------------------------------------------------------------------------- one topic


class _Topic:
    """A topic's sample as arrays: strata (in the order of their labels as strings, the
    order sample_eval.pl sums them in), every judged document's stratum, grade and
    inclusion probability, and the replicates of the jackknife (row 0: the sample;
    row i: the sample without one judged document)."""

    def __init__(self, topic_id: str, sample: TopicSample, estimator: str):
        self.topic_id = topic_id
        if sample.strata:
            labels = sample.strata
            if estimator == "infap":
                rates = {}
                for doc, s in labels.items():
                    rates.setdefault(s, [0, 0])[0] += 1
                for doc in sample.grades:
                    rates[labels[doc]][1] += 1
                shares = {n / size for size, n in rates.values()}
                if max(shares) - min(shares) > 1e-12:
                    raise InputError(
                        "--estimator", None,
                        f"topic {topic_id}: infAP assumes one uniform sample of the pool, but "
                        "its strata were judged at different rates "
                        f"({', '.join(f'{s}: {n}/{size}' for s, (size, n) in sorted(rates.items()))}); "
                        "use the xinf estimator")
                labels = {doc: "1" for doc in labels}
            missing = [d for d in sample.grades if d not in labels]
            if missing:
                raise InputError("--prels", None, f"topic {topic_id}: judged document "
                                 f"{missing[0]!r} is not in the pool")
            strata = sorted(set(labels.values()))
            index = {s: h for h, s in enumerate(strata)}
            self.universe = {doc: index[s] for doc, s in labels.items()}
            sizes = np.zeros(len(strata))
            for h in self.universe.values():
                sizes[h] += 1
        else:
            if estimator != "statap":
                raise InputError("--prels-format", None,
                                 "xinfAP and infAP need every pooled document and its stratum: "
                                 "give a sample-eval file or a stored sampled judgment set "
                                 "(a prels file lists the judged documents only; statap reads it)")
            strata = sorted({repr(p) for p in sample.probability.values()})
            index = {s: h for h, s in enumerate(strata)}
            self.universe = {}
            sizes = None
        self.docs = list(sample.grades)
        self.doc_index = {d: i for i, d in enumerate(self.docs)}
        if self.universe:
            self.jh = np.array([self.universe[d] for d in self.docs], dtype=np.int64)
        else:
            self.jh = np.array([index[repr(sample.probability[d])] for d in self.docs],
                               dtype=np.int64)
        self.jg = np.array([sample.grades[d] for d in self.docs], dtype=np.int64)
        H = len(strata)
        self.H = H
        self.judged = np.bincount(self.jh, minlength=H).astype(np.float64)
        if sizes is None:  # a prels file: a group's size is n/π
            p = np.array([sample.probability[self.docs[np.flatnonzero(self.jh == h)[0]]]
                          for h in range(H)])
            sizes = self.judged / p
        self.sizes = sizes
        self.base_pi = np.array([sample.probability.get(d, 0.0) for d in self.docs])
        if self.universe:  # the stratum's share, as the estimators compute it
            self.base_pi = self.judged[self.jh] / self.sizes[self.jh]
        # jackknife replicates: documents of strata with n_h ≥ 2 not fully judged
        share = np.divide(self.judged, sizes, out=np.ones(H), where=sizes > 0)
        self.share = share
        deletable = [i for i in range(len(self.docs))
                     if self.judged[self.jh[i]] >= 2 and share[self.jh[i]] < 1 - 1e-12]
        self.deleted = np.array([-1] + deletable, dtype=np.int64)
        R = len(self.deleted)
        self.n = np.repeat(self.judged[None, :], R, axis=0)
        rows = np.arange(1, R)
        self.n[rows, self.jh[self.deleted[1:]]] -= 1
        self.in_sample = np.ones((R, len(self.docs)), dtype=bool)
        self.in_sample[rows, self.deleted[1:]] = False
        relevant = self.jg > 0
        onehot = np.zeros((len(self.docs), H))
        onehot[np.arange(len(self.docs)), self.jh] = 1
        self.rel_counts = (self.in_sample & relevant) @ onehot  # (R, H)
        # inclusion probabilities per replicate: the sample's own, or (n_h − 1)/N_h
        pi = np.repeat(self.base_pi[None, :], R, axis=0)
        if R > 1:
            h_del = self.jh[self.deleted[1:]]
            same = self.jh[None, :] == h_del[:, None]
            recomputed = (self.n[rows][:, self.jh]) / sizes[self.jh][None, :]
            pi[1:] = np.where(same, recomputed, pi[1:])
        self.pi = pi
        self._ideal: dict = {}

    def variance(self, values: np.ndarray) -> float:
        """The stratified jackknife variance of the estimate whose replicates are
        ``values`` (row 0 the estimate itself)."""
        if len(values) < 2:
            return 0.0
        reps = values[1:]
        h_del = self.jh[self.deleted[1:]]
        v = 0.0
        for h in np.unique(h_del):
            r = reps[h_del == h]
            n_h = self.judged[h]
            v += (1 - self.share[h]) * (n_h - 1) / n_h * float(((r - r.mean()) ** 2).sum())
        return v

    def bias(self, values: np.ndarray) -> float:
        """The stratified jackknife's estimate of the bias of the estimate whose
        replicates are ``values``: ``Σ_h (1 − f_h)(n_h − 1)(θ̄_h − θ̂)``."""
        if len(values) < 2:
            return 0.0
        reps = values[1:]
        h_del = self.jh[self.deleted[1:]]
        b = 0.0
        for h in np.unique(h_del):
            n_h = self.judged[h]
            b += (1 - self.share[h]) * (n_h - 1) * (float(reps[h_del == h].mean()) - float(values[0]))
        return b

    # --- the ranking's view of the sample

    def ranking_arrays(self, ranking: Sequence[str]):
        """Per rank: the stratum of a pooled document (−1 outside the pool) and the
        index of a judged document (−1 for the others)."""
        uh = np.fromiter((self.universe.get(d, -1) for d in ranking), dtype=np.int64,
                         count=len(ranking))
        ji = np.fromiter((self.doc_index.get(d, -1) for d in ranking), dtype=np.int64,
                         count=len(ranking))
        return uh, ji

    def grades_at(self, ji: np.ndarray) -> np.ndarray:
        """(replicates × ranks) grade of each retrieved document in each replicate, −1
        where it is not judged there."""
        g = np.where(ji >= 0, self.jg[np.maximum(ji, 0)], -1)
        out = np.repeat(g[None, :], len(self.deleted), axis=0)
        judged = ji >= 0
        out[:, judged] = np.where(self.in_sample[:, ji[judged]], out[:, judged], -1)
        return out

    def ideal_dcg(self, counts: np.ndarray, grades: np.ndarray, limit: int,
                  sample_eval_overrun: bool) -> np.ndarray:
        """The ideal DCG of each replicate from its estimated documents per grade
        (``counts``: replicates × grades, ``grades`` ascending), as sample_eval.pl sums
        it: grades from the highest, ``int(count + 0.5)`` documents each, term by term.
        ``sample_eval_overrun``: the script's loop (it stops a grade's documents at rank
        1,000 but starts the next grade past it, adding one term); else a clean cut at
        ``limit``."""
        out = np.zeros(len(counts))
        for r in range(len(counts)):
            total, start = 0.0, 0
            for gi in range(len(grades) - 1, -1, -1):
                g = int(grades[gi])
                cnt = int(counts[r, gi] + 0.5)
                rank = start + 1
                while rank <= start + cnt:
                    if not sample_eval_overrun and rank > limit:
                        break
                    total += g / (math.log(rank + 1) / _LOG2)
                    if sample_eval_overrun and rank >= limit:
                        break
                    rank += 1
                start += cnt
            out[r] = total
        return out


def _xinf(topic: _Topic, ranking: Sequence[str], measures: Sequence[EstimatedMeasure]
          ) -> dict[str, np.ndarray]:
    ranking = list(ranking[:MAX_RESULTS])
    L, H, R = len(ranking), topic.H, len(topic.deleted)
    uh, ji = topic.ranking_arrays(ranking)
    g = topic.grades_at(ji)  # (R, L)
    oh = np.zeros((L, H))
    pooled = uh >= 0
    oh[np.flatnonzero(pooled), uh[pooled]] = 1
    sampled = (g >= 0)[:, :, None] * oh[None]  # (R, L, H)
    relevant = (g > 0)[:, :, None] * oh[None]
    docs_cum = np.cumsum(oh, axis=0)
    samp_cum = np.cumsum(sampled, axis=1)
    rel_cum = np.cumsum(relevant, axis=1)
    ranks = np.arange(1, L + 1, dtype=np.float64)
    out: dict[str, np.ndarray] = {}
    need_ap = any(m.family == "AP" for m in measures)
    if need_ap:
        docs_above = docs_cum - oh
        depth = docs_above.sum(axis=1)  # pooled documents above each rank
        prob = np.divide(docs_above, depth[:, None], out=np.zeros_like(docs_above),
                         where=depth[:, None] > 0)
        term = prob[None] * ((rel_cum - relevant) + EPSILON) / ((samp_cum - sampled) + EPSILON3)
        prec_above = np.where(docs_above[None] > 0, term, 0.0).sum(axis=2)  # (R, L)
        prec = 1 / ranks + (depth / ranks) * prec_above
        sap = np.einsum("rl,rlh->rh", np.where(g > 0, prec, 0.0), relevant)
        n, rel = topic.n, topic.rel_counts
        est = np.divide(rel * topic.sizes[None], n, out=np.zeros_like(n), where=n != 0)
        total = est.sum(axis=1)
        mean_prec = np.divide(sap, rel, out=np.zeros_like(sap), where=rel != 0)
        share = np.divide(est, total[:, None], out=np.zeros_like(est), where=total[:, None] != 0)
        out["AP"] = (share * mean_prec).sum(axis=1)
    for m in measures:
        if m.family == "P":
            if L == 0:
                out[m.key] = np.zeros(R)
                continue
            at = min(m.cutoff, L) - 1
            num = (docs_cum[at][None] * (rel_cum[:, at] + EPSILON) / (samp_cum[:, at] + EPSILON3)).sum(axis=1)
            out[m.key] = num / m.cutoff
        elif m.family == "nDCG":
            k = MAX_RESULTS if m.cutoff is None else m.cutoff
            kk = min(k, L)
            if kk == 0:
                out[m.key] = np.zeros(R)
                continue
            docs_k = docs_cum[kk - 1]
            samp_k = samp_cum[:, kk - 1]
            disc = np.log(ranks[:kk] + 1) / _LOG2
            gains = np.where(g[:, :kk] > 0, g[:, :kk] / disc, 0.0)
            gain_h = np.einsum("rl,rlh->rh", gains, relevant[:, :kk])
            depth_k = docs_k.sum()
            prob = docs_k / depth_k if depth_k else np.zeros(H)
            dcg = np.divide(prob[None] * gain_h, samp_k, out=np.zeros_like(gain_h),
                            where=samp_k != 0).sum(axis=1)
            ideal = _ideal(topic, k, sample_eval_overrun=m.cutoff is None, statap=False)
            out[m.key] = np.divide(depth_k * dcg, ideal, out=np.zeros(R), where=ideal != 0)
    return out


def _grade_counts(topic: _Topic, statap: bool) -> tuple[np.ndarray, np.ndarray]:
    """(replicates × positive grades) estimated relevant documents per grade, and the
    grades ascending."""
    positive = topic.jg > 0
    grades = np.unique(topic.jg[positive])
    counts = np.zeros((len(topic.deleted), len(grades)))
    for gi, gr in enumerate(grades):
        mine = topic.jg == gr
        if statap:
            counts[:, gi] = np.where(topic.in_sample & mine[None], 1 / np.maximum(topic.pi, 1e-300),
                                     0.0).sum(axis=1)
        else:
            per = (topic.in_sample & mine[None]).astype(np.float64) @ _onehot(topic)
            counts[:, gi] = np.divide(per * topic.sizes[None], topic.n, out=np.zeros_like(per),
                                      where=topic.n != 0).sum(axis=1)
    return counts, grades


def _onehot(topic: _Topic) -> np.ndarray:
    oh = np.zeros((len(topic.docs), topic.H))
    oh[np.arange(len(topic.docs)), topic.jh] = 1
    return oh


def _ideal(topic: _Topic, k: int, *, sample_eval_overrun: bool, statap: bool) -> np.ndarray:
    key = (k, sample_eval_overrun, statap)
    if key not in topic._ideal:
        counts, grades = _grade_counts(topic, statap)
        topic._ideal[key] = topic.ideal_dcg(counts, grades, k, sample_eval_overrun)
    return topic._ideal[key]


def _statap(topic: _Topic, ranking: Sequence[str], measures: Sequence[EstimatedMeasure]
            ) -> dict[str, np.ndarray]:
    ranking = list(ranking)
    L, R = len(ranking), len(topic.deleted)
    _, ji = topic.ranking_arrays(ranking)
    g = topic.grades_at(ji)
    rel = g > 0
    pi = np.where(ji >= 0, topic.pi[:, np.maximum(ji, 0)], 1.0)  # (R, L)
    inv = np.where(rel, 1 / pi, 0.0)
    through = np.cumsum(inv, axis=1) if L else np.zeros((R, 0))
    ranks = np.arange(1, L + 1, dtype=np.float64)
    out: dict[str, np.ndarray] = {}
    for m in measures:
        if m.family == "AP":
            relevant = (topic.jg > 0)[None] & topic.in_sample
            total = np.where(relevant, 1 / np.maximum(topic.pi, 1e-300), 0.0).sum(axis=1)
            before = np.concatenate((np.zeros((R, 1)), through[:, :-1]), axis=1)
            prec = (1 + before) / ranks
            up = np.cumsum(np.where(rel, prec / pi, 0.0), axis=1)[:, -1] if L else np.zeros(R)
            out["AP"] = np.divide(up, total, out=np.zeros(R), where=total > 0)
        elif m.family == "P":
            at = min(m.cutoff, L)
            out[m.key] = (through[:, at - 1] if at else np.zeros(R)) / m.cutoff
        elif m.family == "nDCG":
            k = MAX_RESULTS if m.cutoff is None else m.cutoff
            kk = min(k, L)
            disc = np.log(ranks[:kk] + 1) / _LOG2
            dcg = np.where(rel[:, :kk], g[:, :kk] / disc / pi[:, :kk], 0.0).sum(axis=1)
            ideal = _ideal(topic, k, sample_eval_overrun=False, statap=True)
            out[m.key] = np.divide(dcg, ideal, out=np.zeros(R), where=ideal != 0)
    return out


# --------------------------------------------------------------------------- runs


def _interval(estimate: float, variance: float, z: float, bias: float = 0.0) -> dict:
    se = math.sqrt(max(variance, 0.0))
    corrected = estimate - bias
    return {"estimate": estimate, "corrected": corrected, "se": se,
            "low": max(0.0, min(estimate, corrected) - z * se),
            "high": min(1.0, max(estimate, corrected) + z * se)}


def estimate_runs(runs: Iterable[tuple[str, Mapping[str, Sequence[str]]]],
                  samples: Mapping[str, TopicSample], measures: Sequence[EstimatedMeasure],
                  estimator: str = "xinf", *, z: float = Z95) -> dict:
    """``{tag: {"mean": {key: {estimate, se, low, high}}, "per_topic": {topic: {key:
    {…}}}}}`` for runs given as ``(tag, {topic: docids in evaluation order})``
    (:func:`ranking_order`). The mean is over the topics of the sample the run has."""
    if estimator not in ESTIMATORS:
        raise InputError("--estimator", None, f"unknown estimator {estimator!r}; use "
                         f"{', '.join(ESTIMATORS)}")
    measures = list(measures)
    topics = {t: _Topic(t, samples[t], estimator) for t in sorted(samples, key=natural_key)}
    compute = _statap if estimator == "statap" else _xinf
    result: dict = {}
    for tag, rankings in runs:
        per_topic: dict = {}
        sums = {m.key: [0.0, 0.0, 0.0] for m in measures}
        for t, topic in topics.items():
            if t not in rankings:
                continue
            values = compute(topic, rankings[t], measures)
            row = {}
            for m in measures:
                v = values[m.key]
                var, bias = topic.variance(v), topic.bias(v)
                row[m.key] = _interval(float(v[0]), var, z, bias)
                sums[m.key][0] += float(v[0])
                sums[m.key][1] += var
                sums[m.key][2] += bias
            per_topic[t] = row
        n = len(per_topic)
        if not n:
            raise InputError("--run", None, f"run {tag!r} has none of the sample's topics")
        mean = {k: _interval(s / n, v / n / n, z, b / n) for k, (s, v, b) in sums.items()}
        result[tag] = {"mean": mean, "per_topic": per_topic}
    return result
