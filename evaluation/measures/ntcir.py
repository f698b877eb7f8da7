"""D-measures for diversified search as NTCIREVAL (Sakai) computes them. No Django.

NTCIREVAL's conventions (``README.diversity``, ``D-NTCIR-eval``):

- the gain of a document for intent i is its grade (L1 = 1 … L4 = 4); grade 0 and
  negative grades (junk) gain 0;
- the global gain of a document is GG(d) = Σ_i P(i | q) · g_i(d), with the intent
  probabilities given per topic, or uniform over the intents that have at least one
  relevant document;
- D-nDCG@l is nDCG over global gains with NTCIREVAL's "Microsoft" discount 1/log(1 + r)
  from rank 1 (printed as ``MSnDCG``; the base of the log cancels); the ideal list sorts
  all judged documents by global gain (it is not greedy);
- I-rec@l is the fraction of the intents with a relevant document that the top l cover;
- D#-nDCG@l = γ · I-rec@l + (1 − γ) · D-nDCG@l with γ = 0.5, combined from the two values
  rounded to the 4 decimals NTCIREVAL prints (its ``D-NTCIR-eval`` script does so).

NTCIREVAL passes the gains between its programs as text, and the precision of that text
is part of its result (:func:`global_gains`, :func:`d_ndcg`):

- ``DIN-splitqrels`` (gawk) writes each P(i | q) · g_i(d) with gawk's default ``%.6g``,
  taking P(i | q) with exactly the decimals of the intent-probability file, then sums them
  per document and writes the sum with ``%.6g`` again: the ideal ("Grelv") list;
- ``ntcir_eval glabel`` writes the run's gains read from that list with ``%.4f``, and
  ``gcompute`` computes the run's DCG from those, the ideal DCG from the ``%.6g`` values.

So when P(i | q) · g_i is not a short decimal (1/3, 1/6…), the printed D-nDCG can differ
from the exact ratio in the 4th decimal; the functions here follow the tool. To reproduce
a given NTCIREVAL run, pass the intent-probability file that NTCIREVAL read: the tool sees
only its decimals (``0.333333``, not 1/3), while the uniform default is exact (1/n).
"""
from __future__ import annotations

import numpy as np

__all__ = ["GAMMA", "global_gains", "d_ndcg", "intent_recall", "d_sharp_ndcg", "printed"]

GAMMA = 0.5


def _as_printed(x: np.ndarray, fmt: str) -> np.ndarray:
    """``x`` as a C ``printf(fmt)`` (or gawk ``print``) writes it and ``atof`` reads it back."""
    x = np.asarray(x, dtype=np.float64)
    values, inverse = np.unique(x, return_inverse=True)
    back = np.array([float(format(v, fmt)) for v in values.tolist()], dtype=np.float64)
    return back[inverse].reshape(x.shape)


def global_gains(grades: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """GG = Σ_i P(i) · max(g_i, 0) over the last axis (intents), as NTCIREVAL's
    ``DIN-splitqrels`` writes it: each term and the sum with gawk's ``%.6g``."""
    g = np.where(grades > 0, grades, 0).astype(np.float64)
    terms = _as_printed(g * np.asarray(probabilities, dtype=np.float64), ".6g")
    return _as_printed(terms.sum(axis=-1), ".6g")


def _msdcg(gg: np.ndarray, k: int) -> np.ndarray:
    g = gg[..., :k]
    return (g / np.log(np.arange(g.shape[-1], dtype=np.float64) + 2.0)).sum(axis=-1)


def d_ndcg(gg: np.ndarray, ideal_gg: np.ndarray, k: int) -> np.ndarray:
    """D-nDCG@l = Σ_{r ≤ l} GG(r) / log(1 + r)  /  Σ_{r ≤ l} GG*(r) / log(1 + r), GG* being
    the judged documents' global gains sorted descending; 0 when the ideal is 0.

    As NTCIREVAL (``glabel`` then ``gcompute``): the run's gains GG(r) are taken as written
    with ``%.4f``, the ideal gains GG* as given (see :func:`global_gains`)."""
    dcg = _msdcg(_as_printed(gg, ".4f"), k)
    idcg = np.broadcast_to(_msdcg(np.sort(ideal_gg)[::-1], k), dcg.shape)
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


def intent_recall(relevant: np.ndarray, k: int) -> np.ndarray:
    """I-rec@l = |{i : ∃ r ≤ l, g_i(r) > 0}| / |{intents with a relevant document}|.

    ``relevant``: boolean ``(..., depth, intents)`` over the intents that have a relevant
    document in the qrels (so the denominator is the last axis' length)."""
    n = relevant.shape[-1]
    if n == 0:
        return np.zeros(relevant.shape[:-2])
    return relevant[..., :k, :].any(axis=-2).sum(axis=-1) / float(n)


def printed(x: np.ndarray, decimals: int = 4) -> np.ndarray:
    """``x`` as a C program prints it with ``%.{decimals}f`` and reads it back."""
    return _as_printed(x, f".{decimals}f")


def d_sharp_ndcg(i_rec: np.ndarray, d_ndcg_value: np.ndarray, gamma: float = GAMMA, decimals: int | None = 4) -> np.ndarray:
    """D#-nDCG@l = γ · I-rec@l + (1 − γ) · D-nDCG@l (Sakai & Song 2011), γ = 0.5.

    NTCIREVAL's ``D-NTCIR-eval`` combines the two values as it printed them, rounded to 4
    decimals; ``decimals=4`` does the same (``None`` combines the exact values)."""
    if decimals is not None:
        i_rec, d_ndcg_value = printed(i_rec, decimals), printed(d_ndcg_value, decimals)
    return gamma * i_rec + (1.0 - gamma) * d_ndcg_value
