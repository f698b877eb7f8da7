"""Agreement between system orderings: Kendall's τ_b, AP correlation τ_ap and its
tie-aware forms, per-topic τ between intents, and significance agreement by a randomised
Tukey HSD.

Plain Python (numpy, scipy, pandas); nothing here imports Django. Higher scores rank
first throughout.

- Kendall's τ_b (Kendall 1945): scipy's ``kendalltau`` (variant ``b``),
  ``(C − D) / sqrt((N₀ − T_x)(N₀ − T_y))``.
- τ_ap (Yilmaz, Aslam & Robertson, SIGIR 2008), asymmetric: the *reference* ordering x
  judges the *other* ordering y. Walking y from the top, C(i) counts the items above
  position i in y that are also above that item in x;
  ``τ_ap = 2/(n−1) · Σ_{i=2..n} C(i)/(i−1) − 1``. Defined without ties only.
- τ_ap,a and τ_ap,b (Urbano & Marrero, ICTIR 2017; their ``ircor`` package): τ_ap,a
  allows ties in y (accuracy: x has none) and averages the position of an item over the
  places its tie group spans, plus the expected concordance within the group;
  τ_ap,b allows ties in both and is symmetric: the mean of the two directions of
  ``2/|{i: p_i > 1}| · Σ_{i: p_i > 1} c_i / (p_i − 1) − 1``, p_i being the first position
  of i's tie group in y and c_i the items of the groups above it that x also ranks
  strictly above i.
- Randomised Tukey HSD (Carterette 2012; Sakai 2014), two-sided: for each of B trials
  every topic's scores are permuted across systems, and the trial records the largest
  difference between system means. The p-value of a pair is the fraction of trials whose
  largest difference is at least the pair's observed difference of means. Seeded
  (numpy's PCG64).
"""
from __future__ import annotations

import itertools
import json
import math
import os
from typing import Mapping, Union

import numpy as np
import pandas as pd
from scipy import stats

from common import fileio
from common.fileio import InputError

__all__ = [
    "intent_pair_taus",
    "kendall_tau_b",
    "read_scores",
    "significance_agreement",
    "system_means",
    "tau_ap",
    "tau_ap_a",
    "tau_ap_b",
    "tukey_hsd_pvalues",
]

PathLike = Union[str, os.PathLike]


# ------------------------------------------------------------------ correlations

def _vectors(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("the two orderings must score the same systems")
    if len(x) < 2:
        raise ValueError("a correlation needs at least two systems")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("scores must be finite numbers")
    return x, y


def _has_ties(v: np.ndarray) -> bool:
    return len(np.unique(v)) < len(v)


def kendall_tau_b(x, y) -> float | None:
    """Kendall's τ_b; ``None`` when one ordering is all ties."""
    x, y = _vectors(x, y)
    value = stats.kendalltau(x, y, variant="b").statistic
    return None if math.isnan(value) else float(value)


def _group_start(y: np.ndarray) -> np.ndarray:
    """1-based first position of each item's tie group when y is sorted descending."""
    return stats.rankdata(-y, method="min")


def _concordant_above(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """c_i: items in strictly higher tie groups of y that x ranks strictly above i."""
    above_y = y[None, :] > y[:, None]
    above_x = x[None, :] > x[:, None]
    return (above_y & above_x).sum(axis=1)


def tau_ap(reference, other) -> float:
    """τ_ap of ``other`` against ``reference`` (Yilmaz et al. 2008); no ties allowed."""
    x, y = _vectors(reference, other)
    if _has_ties(x) or _has_ties(y):
        raise ValueError("τ_ap is defined without ties; use tau_ap_a or tau_ap_b")
    p = _group_start(y)
    c = _concordant_above(x, y)
    top = p > 1
    return float(2.0 / (len(x) - 1) * (c[top] / (p[top] - 1)).sum() - 1.0)


def tau_ap_a(reference, other) -> float:
    """τ_ap,a (Urbano & Marrero 2017): ties allowed in ``other`` only."""
    x, y = _vectors(reference, other)
    if _has_ties(x):
        raise ValueError("τ_ap,a needs a reference ordering without ties")
    n = len(x)
    p = _group_start(y)
    t = np.array([(p == pi).sum() for pi in p])
    c = _concordant_above(x, y)
    total = 0.0
    for i in range(n):
        if p[i] != 1:
            positions = p[i] + np.arange(1, t[i] + 1) - 2  # (position − 1) over the group
            total += c[i] * (1.0 / positions).sum() / t[i]
        k = np.arange(1, t[i])
        total += (k / (p[i] + k - 1)).sum() / 2.0 / t[i]
    return float(2.0 / (n - 1) * total - 1.0)


def _tau_ap_b_one_way(x: np.ndarray, y: np.ndarray) -> float:
    p = _group_start(y)
    c = _concordant_above(x, y)
    top = p > 1
    if not top.any():
        return math.nan
    return float(2.0 / top.sum() * (c[top] / (p[top] - 1)).sum() - 1.0)


def tau_ap_b(x, y) -> float | None:
    """τ_ap,b (Urbano & Marrero 2017): ties allowed in both, symmetric; ``None`` when an
    ordering is all ties."""
    x, y = _vectors(x, y)
    value = (_tau_ap_b_one_way(x, y) + _tau_ap_b_one_way(y, x)) / 2.0
    return None if math.isnan(value) else value


def correlations(reference: Mapping[str, float], other: Mapping[str, float]) -> dict:
    """τ_b, τ_ap (None with ties), τ_ap,a (None when the reference has ties) and τ_ap,b
    between two {system: score} orderings over the same systems."""
    a, b = set(reference), set(other)
    if a != b:
        only_a, only_b = sorted(a - b), sorted(b - a)
        raise ValueError(
            "the two evaluations score different systems: "
            + "; ".join(s for s in (f"only in the first: {', '.join(only_a[:5])}" if only_a else "",
                                    f"only in the second: {', '.join(only_b[:5])}" if only_b else "") if s))
    systems = sorted(a)
    x = np.array([reference[s] for s in systems], dtype=float)
    y = np.array([other[s] for s in systems], dtype=float)
    ties_x, ties_y = _has_ties(x), _has_ties(y)
    return {
        "systems": len(systems),
        "tau_b": kendall_tau_b(x, y),
        "tau_ap": None if ties_x or ties_y else tau_ap(x, y),
        "tau_ap_a": None if ties_x else tau_ap_a(x, y),
        "tau_ap_b": tau_ap_b(x, y),
        "ties": {"first": bool(ties_x), "second": bool(ties_y)},
    }


def intent_pair_taus(scores: pd.DataFrame) -> dict:
    """Per topic, Kendall's τ_b between the system orderings of every pair of its
    intents (``scores``: system, query, intent, score): ``{topic: {"min", "mean", "max",
    "pairs"}}``; a topic with one intent, or pairs where τ is undefined, are left out."""
    out = {}
    for topic, frame in scores.groupby("query", sort=True):
        table = frame.pivot_table(index="system", columns="intent", values="score", aggfunc="first")
        table = table.dropna(axis=0)
        taus = []
        for i, j in itertools.combinations(sorted(table.columns), 2):
            if len(table) >= 2:
                value = kendall_tau_b(table[i].to_numpy(), table[j].to_numpy())
                if value is not None:
                    taus.append(value)
        if taus:
            out[str(topic)] = {"min": float(min(taus)), "mean": float(np.mean(taus)),
                               "max": float(max(taus)), "pairs": len(taus)}
    return out


# ------------------------------------------------------------------ significance

def tukey_hsd_pvalues(matrix: np.ndarray, trials: int = 10_000, seed: int = 0,
                      chunk: int | None = None) -> np.ndarray:
    """Two-sided randomised Tukey HSD p-values (systems × systems) for a topics × systems
    score matrix; see the module docstring."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] < 2 or matrix.shape[0] < 1:
        raise ValueError("Tukey HSD needs a topics × systems matrix with at least two systems")
    if not np.isfinite(matrix).all():
        raise ValueError("every system needs a finite score on every topic")
    if trials < 1:
        raise ValueError("the number of trials must be positive")
    n_topics, n_systems = matrix.shape
    means = matrix.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    rng = np.random.default_rng(seed)
    chunk = chunk or max(1, min(trials, 2_000_000 // max(1, matrix.size)))
    ranges = np.empty(trials)
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        shuffled = rng.permuted(np.broadcast_to(matrix, (size, n_topics, n_systems)), axis=2)
        m = shuffled.mean(axis=1)
        ranges[done:done + size] = m.max(axis=1) - m.min(axis=1)
        done += size
    ranges.sort()
    # fraction of trials whose range is ≥ the observed difference (with a tolerance for
    # sums that differ only in the last bits)
    tol = 1e-12 * max(1.0, float(np.abs(matrix).max()))
    count_ge = trials - np.searchsorted(ranges, observed - tol, side="left")
    p = count_ge / trials
    np.fill_diagonal(p, 1.0)
    return p


def significance_agreement(first: pd.DataFrame, second: pd.DataFrame, trials: int = 10_000,
                           seed: int = 0, alpha: float = 0.05) -> dict:
    """Sakai, Dou & Clarke (2013) Table 4: significantly different system pairs under two
    evaluations (``first`` = TR, ``second`` = PS; each a topics × systems frame) and the
    counts TR, PS, TR−PS, TR∩PS, PS−TR. A pair in both with opposite directions is in
    TR∩PS and also counted as ``opposite``."""
    systems = sorted(set(first.columns))
    if set(second.columns) != set(systems):
        raise ValueError("the two evaluations score different systems")
    a = tukey_hsd_pvalues(first[systems].to_numpy(), trials, seed)
    b = tukey_hsd_pvalues(second[systems].to_numpy(), trials, seed)
    ma, mb = first[systems].to_numpy().mean(axis=0), second[systems].to_numpy().mean(axis=0)
    iu = np.triu_indices(len(systems), k=1)
    sa, sb = a[iu] < alpha, b[iu] < alpha
    da = np.sign(ma[:, None] - ma[None, :])[iu]
    db = np.sign(mb[:, None] - mb[None, :])[iu]
    both = sa & sb
    return {
        "systems": len(systems), "pairs": int(len(sa)), "trials": trials, "seed": seed, "alpha": alpha,
        "TR": int(sa.sum()), "PS": int(sb.sum()),
        "TR-PS": int((sa & ~sb).sum()), "TR&PS": int(both.sum()), "PS-TR": int((sb & ~sa).sum()),
        "opposite": int((both & (da != db)).sum()),
    }


# ----------------------------------------------------------------------- readers

def read_scores(path: PathLike, measure: str | None = None) -> pd.DataFrame:
    """Scores of systems from an ``evaluate --json`` output or a whitespace-separated file
    of ``system score`` (means) or ``system topic score`` lines. Returns a frame with
    columns system, topic (None for means), score."""
    # one "line" may be a whole evaluate --json output written without line breaks
    lines = fileio.open_lines(path, max_line_bytes=fileio.MAX_FILE_BYTES)
    text = "\n".join(line for _, line in lines)
    if text.lstrip().startswith("{"):
        return _read_evaluate_json(path, text, measure)
    rows, width = [], None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise InputError(path, lineno, "expected 'system score' or 'system topic score'")
        if width is None:
            width = len(parts)
        elif len(parts) != width:
            raise InputError(path, lineno, f"expected {width} columns like the first line")
        try:
            score = float(parts[-1])
        except ValueError:
            raise InputError(path, lineno, f"score {parts[-1]!r} is not a number") from None
        if not math.isfinite(score):
            raise InputError(path, lineno, f"score {parts[-1]!r} is not finite")
        rows.append((parts[0], parts[1] if width == 3 else None, score, lineno))
    if not rows:
        raise InputError(path, 1, "no scores")
    frame = pd.DataFrame(rows, columns=["system", "topic", "score", "line"])
    dup = frame.duplicated(["system", "topic"], keep="first")
    if dup.any():
        row = frame[dup].iloc[0]
        what = f"system {row.system}" + (f" topic {row.topic}" if width == 3 else "")
        raise InputError(path, int(row.line), f"{what} is scored twice")
    return frame.drop(columns="line")


def _read_evaluate_json(path, text: str, measure: str | None) -> pd.DataFrame:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict) or not runs:
        raise ValueError(f"{path}: expected an evaluate --json output with a 'runs' object")
    measures = sorted({m for r in runs.values() for m in (r.get("mean") or {})})
    if measure is None:
        if len(measures) != 1:
            raise ValueError(f"{path}: choose a measure with --measure ({', '.join(measures)})")
        measure = measures[0]
    rows = []
    for tag, run in runs.items():
        per_topic = run.get("per_topic") or {}
        if per_topic:
            for topic, values in per_topic.items():
                if measure not in values:
                    raise ValueError(f"{path}: run {tag} topic {topic} has no {measure}")
                rows.append((str(tag), str(topic), float(values[measure])))
        else:
            mean = run.get("mean") or {}
            if measure not in mean:
                raise ValueError(f"{path}: run {tag} has no {measure} (measures: {', '.join(measures)})")
            rows.append((str(tag), None, float(mean[measure])))
    frame = pd.DataFrame(rows, columns=["system", "topic", "score"])
    frame.attrs["means"] = {str(tag): float(run["mean"][measure]) for tag, run in runs.items()
                            if measure in (run.get("mean") or {})}
    frame.attrs["measure"] = measure
    return frame


def system_means(scores: pd.DataFrame) -> dict:
    """{system: mean score}: the mean an ``evaluate --json`` output reports (which
    follows its own treatment of missing topics), else the mean over the topics given."""
    if scores.attrs.get("means"):
        return dict(scores.attrs["means"])
    return {str(s): float(v) for s, v in scores.groupby("system")["score"].mean().items()}


def topic_matrix(scores: pd.DataFrame, path: str = "scores") -> pd.DataFrame:
    """A topics × systems frame from per-topic scores; every system must score every topic."""
    if scores["topic"].isna().any():
        raise ValueError(f"{path}: significance needs per-topic scores (system topic score, "
                         "or evaluate --json --per-topic)")
    table = scores.pivot(index="topic", columns="system", values="score")
    if table.isna().any().any():
        system = table.columns[table.isna().any()][0]
        topic = table.index[table[system].isna()][0]
        raise ValueError(f"{path}: system {system} has no score for topic {topic}")
    return table
