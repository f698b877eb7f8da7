"""Intent-aware (diversity) measures as ndeval v4.5 (TREC Web track) computes them. No Django.

ndeval's conventions, reproduced here:

- grades are binarised: a document is relevant to an intent when its grade is above 0
  (ndeval reads grades above 1 as 1; it refuses negative grades, which count as 0 here);
- A, the number of intents of a topic, counts only intents with at least one relevant
  document; judged non-relevant and unjudged documents count the same;
- the gain of the document at rank i is s_i = Σ_{j : rel(i, j)} (1 − α)^{c_j(i)}, where
  c_j(i) is the number of documents above rank i relevant to intent j; α = 0.5;
- the ideal ranking is built greedily from the qrels' documents: each step takes the
  document with the largest gain given the documents already placed, ties going to the
  lexicographically largest docid; it serves alpha-nDCG, nERR-IA and nNRBP;
- ``alpha_DCG`` and ``ERR_IA`` are divided by an "ideal ideal" bound that assumes every
  intent is covered at every rank: II@k = Σ_{i ≤ k} A (1 − α)^{i−1} · d_i;
- a topic without relevant documents scores 0 on every measure (ndeval prints ``nan`` for
  its nNRBP).

``rel`` arguments are boolean arrays ``(..., depth, intents)``: the binarised judgments of
the ranked documents for each intent (all False past the end of a ranking). ``gains`` is the
vector s_i of the ideal ranking. ndeval prints cutoffs 5, 10 and 20; any k works here.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "ALPHA",
    "BETA",
    "alpha_gains",
    "ideal_gains",
    "alpha_dcg",
    "alpha_ndcg",
    "err_ia",
    "nerr_ia",
    "nrbp",
    "nnrbp",
    "ap_ia",
    "precision_ia",
    "subtopic_recall",
]

ALPHA = 0.5
BETA = 0.5


def alpha_gains(rel: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """s_i = Σ_j rel(i, j) · (1 − α)^{c_j(i)}, c_j(i) = Σ_{i' < i} rel(i', j)."""
    before = np.cumsum(rel, axis=-2, dtype=np.int32) - rel
    return np.where(rel, np.power(1.0 - alpha, before), 0.0).sum(axis=-1)


def ideal_gains(rel: np.ndarray, docids: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Gains s_i of ndeval's greedy ideal ranking of one topic's judged documents.

    ``rel``: ``(documents, intents)`` binarised judgments; ``docids``: their ids. Each step
    places the document with the largest Σ_j rel(d, j)·(1 − α)^{c_j}, ties to the largest
    docid (ndeval's ``idealResult``). Documents relevant to nothing come last with gain 0."""
    relevant = rel.any(axis=1)
    m = rel[relevant].astype(np.float64)
    order = np.argsort(np.asarray(docids)[relevant], kind="stable")[::-1]  # largest docid first
    m = m[order]
    out = np.zeros(len(docids))
    weight = np.ones(rel.shape[1])
    taken = np.zeros(len(m), dtype=bool)
    for step in range(len(m)):
        score = m @ weight
        score[taken] = -1.0
        best = int(np.argmax(score))  # first maximum: the largest docid among ties
        out[step] = score[best]
        taken[best] = True
        weight = np.where(m[best] > 0, weight * (1.0 - alpha), weight)
    return out


def _discounts(n: int) -> np.ndarray:
    # ndeval's discount(i) = log(2) / log(i + 2) for the 0-based rank i
    return np.log(2.0) / np.log(np.arange(n, dtype=np.float64) + 2.0)


def _ideal_ideal(n_intents, k: int, alpha: float, discount: np.ndarray) -> np.ndarray:
    decay = np.power(1.0 - alpha, np.arange(k, dtype=np.float64))
    return np.asarray(n_intents, dtype=np.float64)[..., None] * np.cumsum(decay * discount[:k])[-1:]


def _cut(gains: np.ndarray, k: int) -> np.ndarray:
    g = gains[..., :k]
    if g.shape[-1] < k:
        g = np.concatenate([g, np.zeros(g.shape[:-1] + (k - g.shape[-1],))], axis=-1)
    return g


def _safe_div(a, b):
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return np.divide(a, b, out=np.zeros(a.shape), where=b > 0)


def alpha_dcg(gains: np.ndarray, n_intents, k: int, alpha: float = ALPHA) -> np.ndarray:
    """ndeval ``alpha-DCG@k`` = Σ_{i ≤ k} s_i · d_i / II@k with d_i = 1 / log2(i + 1) and
    II@k = Σ_{i ≤ k} A (1 − α)^{i−1} d_i (collection-independent normalisation)."""
    d = _discounts(k)
    dcg = np.cumsum(_cut(gains, k) * d, axis=-1)[..., -1]
    return _safe_div(dcg, _ideal_ideal(n_intents, k, alpha, d)[..., 0])


def alpha_ndcg(gains: np.ndarray, ideal: np.ndarray, k: int) -> np.ndarray:
    """α-nDCG@k (Clarke et al. 2008) = Σ_{i ≤ k} s_i d_i / Σ_{i ≤ k} s*_i d_i, s* being the
    greedy ideal ranking's gains; 0 when the run gains nothing in the top k (ndeval)."""
    d = _discounts(k)
    dcg = np.cumsum(_cut(gains, k) * d, axis=-1)[..., -1]
    idcg = np.cumsum(_cut(ideal, k) * d, axis=-1)[..., -1]
    return np.where(dcg != 0, _safe_div(dcg, idcg), 0.0)


def err_ia(gains: np.ndarray, n_intents, k: int, alpha: float = ALPHA) -> np.ndarray:
    """ndeval ``ERR-IA@k`` = Σ_{i ≤ k} s_i / i divided by Σ_{i ≤ k} A (1 − α)^{i−1} / i
    (ndeval's "ideal ideal" normalisation; with s_i as above this is its cascade form)."""
    inv = 1.0 / np.arange(1, k + 1, dtype=np.float64)
    e = np.cumsum(_cut(gains, k) * inv, axis=-1)[..., -1]
    return _safe_div(e, _ideal_ideal(n_intents, k, alpha, inv)[..., 0])


def nerr_ia(gains: np.ndarray, ideal: np.ndarray, k: int) -> np.ndarray:
    """ndeval ``nERR-IA@k`` = Σ_{i ≤ k} s_i / i over the same sum for the greedy ideal
    ranking; 0 when the run gains nothing in the top k."""
    inv = 1.0 / np.arange(1, k + 1, dtype=np.float64)
    e = np.cumsum(_cut(gains, k) * inv, axis=-1)[..., -1]
    ie = np.cumsum(_cut(ideal, k) * inv, axis=-1)[..., -1]
    return np.where(e != 0, _safe_div(e, ie), 0.0)


def nrbp(gains: np.ndarray, n_intents, alpha: float = ALPHA, beta: float = BETA) -> np.ndarray:
    """Novelty- and rank-biased precision (Clarke et al. 2009), over the whole ranking:
    NRBP = (1 − (1 − α)β) / A · Σ_i s_i β^{i−1}."""
    w = np.power(beta, np.arange(gains.shape[-1], dtype=np.float64))
    return _safe_div((1.0 - (1.0 - alpha) * beta) * (gains * w).sum(axis=-1), n_intents)


def nnrbp(gains: np.ndarray, ideal: np.ndarray, n_intents, alpha: float = ALPHA, beta: float = BETA) -> np.ndarray:
    """nNRBP = NRBP(run) / NRBP(greedy ideal ranking) (ndeval's ``nNRBP``)."""
    return _safe_div(nrbp(gains, n_intents, alpha, beta), nrbp(ideal, n_intents, alpha, beta))


def ap_ia(rel: np.ndarray, n_rel_intent: np.ndarray) -> np.ndarray:
    """Intent-aware AP over the whole ranking (ndeval ``MAP-IA``):
    AP-IA = (1/A) Σ_{j : R_j > 0} (1/R_j) Σ_{i : rel(i, j)} |{i' ≤ i : rel(i', j)}| / i,
    R_j being the number of documents relevant to intent j in the qrels."""
    cum = np.cumsum(rel, axis=-2, dtype=np.int32)
    ranks = np.arange(1, rel.shape[-2] + 1, dtype=np.float64)[:, None]
    per_intent = np.where(rel, cum / ranks, 0.0).sum(axis=-2)
    n_rel_intent = np.asarray(n_rel_intent, dtype=np.float64)
    ap = _safe_div(per_intent, n_rel_intent)
    return _safe_div(ap.sum(axis=-1), np.count_nonzero(n_rel_intent > 0, axis=-1))


def precision_ia(rel: np.ndarray, n_intents, k: int) -> np.ndarray:
    """Intent-aware precision (ndeval ``P-IA@k``) = Σ_{i ≤ k} Σ_j rel(i, j) / (k · A)."""
    hits = rel[..., :k, :].sum(axis=(-2, -1)).astype(np.float64)
    return _safe_div(hits, np.asarray(n_intents, dtype=np.float64) * k)


def subtopic_recall(rel: np.ndarray, n_intents, k: int) -> np.ndarray:
    """Subtopic recall (Zhai et al. 2003; ndeval ``strec@k``) = |{j : ∃ i ≤ k, rel(i, j)}| / A."""
    covered = rel[..., :k, :].any(axis=-2).sum(axis=-1).astype(np.float64)
    return _safe_div(covered, n_intents)
