"""Ad hoc effectiveness measures as trec_eval (and, for ERR, gdeval) compute them. No Django.

Every function takes ``grades``: an integer array whose last axis is a ranking in
evaluation order (any leading axes — runs, topics — are kept), holding the qrels grade of
the document at each rank, ``NONPOOL`` (-1) for a document the qrels do not list,
``UNJUDGED`` (-2) for one they list with a negative grade and ``PAD`` (-9) past the end of
the ranking. Per-topic quantities (``num_rel``, ideal grades, the topic's highest grade)
broadcast against the leading axes. Ranks ``i`` below are 1-based.

Conventions (trec_eval 9.x, ``form_res_rels.c`` and the ``m_*.c`` files): the ranking is
ordered by score descending with ties by docid descending before these functions see it;
a document is relevant when its grade is at least the relevance level ℓ (``-l``, default 1);
documents absent from the qrels count as non-relevant; ``num_rel`` (R) counts the qrels'
documents with grade ≥ ℓ, retrieved or not; gains are the grades themselves.
"""
from __future__ import annotations

import numpy as np

from .runs import NONPOOL, PAD, UNJUDGED

__all__ = [
    "relevant_hits",
    "average_precision",
    "precision",
    "recall",
    "reciprocal_rank",
    "r_precision",
    "ndcg",
    "rbp",
    "err",
]


def _ranks(n: int) -> np.ndarray:
    return np.arange(1, n + 1, dtype=np.float64)


def relevant_hits(grades: np.ndarray, rel_level: int = 1):
    """Every ranked document with grade ≥ ``rel_level``, in rank order: its row (the leading
    axes flattened), 0-based position, 1-based count among the row's hits so far, whether it
    is the row's first, and its flat index. The measures below work on these alone, so their
    cost is in the relevant documents; pass the result as ``hits=`` to share it."""
    depth = grades.shape[-1]
    flat = np.flatnonzero(grades >= rel_level)
    row, pos = np.divmod(flat, max(depth, 1))
    n = len(flat)
    first = np.ones(n, dtype=bool)
    first[1:] = row[1:] != row[:-1]
    index = np.arange(n)
    count = index - np.maximum.accumulate(np.where(first, index, 0)) + 1
    return row, pos, count, first, flat


def _per_row(grades: np.ndarray, row: np.ndarray, weights: np.ndarray) -> np.ndarray:
    # bincount adds each row's weights one after another, in rank order (as trec_eval does)
    rows = int(np.prod(grades.shape[:-1], dtype=np.int64))
    return np.bincount(row, weights=weights, minlength=rows).reshape(grades.shape[:-1])


def _per_topic(value, shape) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=np.float64), shape)


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.zeros(a.shape), where=b > 0)


def average_precision(grades: np.ndarray, num_rel, rel_level: int = 1, hits=None) -> np.ndarray:
    """AP = (1/R) · Σ_{i : g_i ≥ ℓ} |{j ≤ i : g_j ≥ ℓ}| / i, and 0 when R = 0.

    trec_eval ``map``: R counts every judged relevant document of the topic, so relevant
    documents the run missed count as precision 0."""
    row, pos, count, _, _ = hits if hits is not None else relevant_hits(grades, rel_level)
    total = _per_row(grades, row, count / (pos + 1.0))
    return _ratio(total, _per_topic(num_rel, total.shape))


def precision(grades: np.ndarray, k: int, rel_level: int = 1) -> np.ndarray:
    """P@k = |{i ≤ k : g_i ≥ ℓ}| / k.

    trec_eval ``P.k``: the denominator is k even when fewer than k documents were retrieved."""
    return np.count_nonzero(grades[..., :k] >= rel_level, axis=-1) / float(k)


def recall(grades: np.ndarray, num_rel, k: int, rel_level: int = 1) -> np.ndarray:
    """R@k = |{i ≤ k : g_i ≥ ℓ}| / R, and 0 when R = 0 (trec_eval ``recall.k``)."""
    hits = np.count_nonzero(grades[..., :k] >= rel_level, axis=-1).astype(np.float64)
    return _ratio(hits, _per_topic(num_rel, hits.shape))


def reciprocal_rank(grades: np.ndarray, rel_level: int = 1, hits=None) -> np.ndarray:
    """RR = 1 / min{i : g_i ≥ ℓ}, and 0 when no relevant document was retrieved
    (trec_eval ``recip_rank``)."""
    row, pos, _, first, _ = hits if hits is not None else relevant_hits(grades, rel_level)
    out = np.zeros(grades.shape[:-1])
    out.reshape(-1)[row[first]] = 1.0 / (pos[first] + 1.0)
    return out


def r_precision(grades: np.ndarray, num_rel, rel_level: int = 1, hits=None) -> np.ndarray:
    """Rprec = |{i ≤ R : g_i ≥ ℓ}| / R, and 0 when R = 0 (trec_eval ``Rprec``; a run shorter
    than R still divides by R)."""
    row, pos, _, _, _ = hits if hits is not None else relevant_hits(grades, rel_level)
    r = _per_topic(num_rel, grades.shape[:-1])
    hits = _per_row(grades, row, (pos < r.reshape(-1)[row]).astype(np.float64))
    return _ratio(hits, r)


def _dcg(gains: np.ndarray) -> np.ndarray:
    return (gains / np.log2(_ranks(gains.shape[-1]) + 1.0)).sum(axis=-1)


def ndcg(grades: np.ndarray, ideal_grades: np.ndarray, k: int | None = None, hits=None) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{i ≤ k, g_i > 0} g_i / log2(i + 1); IDCG@k is
    the same sum over the topic's judged grades sorted descending (``ideal_grades``,
    zero-padded, all judged documents, retrieved or not). 0 when IDCG is 0.

    trec_eval ``ndcg_cut.k`` (and ``ndcg`` when k is None: the whole ranking against every
    relevant document): linear gains equal to the grade, log2 discount from rank 1."""
    g = grades if k is None else grades[..., :k]
    row, pos, _, _, flat = hits if hits is not None and k is None else relevant_hits(g, 1)
    dcg = _per_row(g, row, g.reshape(-1)[flat] / np.log2(pos + 2.0))
    ideal = ideal_grades if k is None else ideal_grades[..., :k]
    idcg = _per_topic(_dcg(np.where(ideal > 0, ideal, 0).astype(np.float64)), dcg.shape)
    return _ratio(dcg, idcg)


def rbp(grades: np.ndarray, p: float, max_grade, rel: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rank-biased precision (Moffat & Zobel 2008) and its residual, as trec_eval's ``rbp``
    and ``rbp_resid``.

    RBP = (1 − p) · Σ_i gain(g_i) · p^(i−1), where gain(g) = g / G when the topic's highest
    judged grade G exceeds 1 (trec_eval scales gains into [0, 1]) and gain(g) = g otherwise;
    documents absent from the qrels or judged negatively gain 0. With ``rel`` the gains are
    binary instead (ir_measures' ``RBP(rel=N)``): 1 for a grade of ``rel`` or more, else 0.

    residual = p^n + (1 − p) · Σ_{i : unjudged} p^(i−1), n being the number of documents
    retrieved, when at least one retrieved document is absent from the qrels or judged
    negatively, and 0 otherwise (trec_eval's convention: a fully judged ranking reports no
    residual). trec_eval's ``rbp_resid`` always uses p = 0.9; here it uses the same p as RBP,
    so the two agree at p = 0.9."""
    depth = grades.shape[-1]
    weights = np.cumprod(np.concatenate(([1.0], np.full(max(depth - 1, 0), p))))[:depth]
    max_grade = np.asarray(max_grade, dtype=np.float64)[..., None]
    if rel is not None:
        g = (grades >= rel).astype(np.float64)
    else:
        g = np.where(grades > 0, grades, 0).astype(np.float64)
        g = np.where(max_grade > 1, g / np.where(max_grade > 1, max_grade, 1.0), g)
    value = (1.0 - p) * (g * weights).sum(axis=-1)
    unj = (grades == NONPOOL) | (grades == UNJUDGED)
    n = np.count_nonzero(grades != PAD, axis=-1)
    tail = np.power(p, n.astype(np.float64))
    resid = np.where(unj.any(axis=-1), tail + (1.0 - p) * (unj * weights).sum(axis=-1), 0.0)
    return value, resid


def err(grades: np.ndarray, k: int, max_grade: int = 4) -> np.ndarray:
    """Expected reciprocal rank (Chapelle et al. 2009) at cutoff k, as TREC's ``gdeval.pl``:

    ERR@k = Σ_{i ≤ k} (R_i / i) · Π_{j < i} (1 − R_j),  R_i = (2^{g_i} − 1) / 2^{G},

    with G = 4 (gdeval's maximum grade) and g_i = 0 for documents that are non-relevant,
    negatively judged or absent from the qrels. gdeval orders runs as trec_eval does (score
    descending, docid descending). Grades above G are refused. gdeval prints nothing for a
    topic without relevant documents; it scores 0 here and counts in the mean like every
    other measure."""
    g = grades[..., :k]
    if (g > max_grade).any():
        raise ValueError(f"ERR needs grades of at most {max_grade}; the qrels have {int(g.max())}")
    r = np.where(g > 0, (np.exp2(np.where(g > 0, g, 0)) - 1.0) / 2.0 ** max_grade, 0.0)
    decay = np.cumprod(1.0 - r, axis=-1)
    before = np.concatenate([np.ones(r.shape[:-1] + (1,)), decay[..., :-1]], axis=-1)
    return (r * before / _ranks(g.shape[-1])).sum(axis=-1)
