"""Variance components of per-intent effectiveness scores, the allocation of a judging
budget between queries and intents, and the agreement of subsampled collections.

Plain Python (pandas, numpy, statsmodels); nothing here imports Django.

Scores are one row per (system, query, intent): ``system query intent score``. The
mixed models are fitted by REML with statsmodels' MixedLM, random effects nested in the
query (``groups=query``, the nested term as a variance component), L-BFGS polished by
Nelder-Mead; a component that goes to the boundary is settled by refitting without it. The standard deviations agree
with R's lme4 (REML) to 1e-3 of the model's scale. In lme4 notation:

- model1 ``score ~ system + (1|query)`` on each (system, query)'s mean over its intents;
- model2 ``score ~ system + (1|query) + (1|query:system)`` on the per-intent scores;
- model3 ``score ~ system + (1|query) + (1|query:intent)`` on the per-intent scores;
- full ``score ~ system + (1|query) + (1|query:system) + (1|query:intent)``, whose
  components give the allocation table.

Allocation: a system's mean over N queries × M intents per query has variance
``(σ²_q + σ²_qs)/N + (σ²_qi + σ²_e)/(N·M)`` under the full model, and the difference of
two systems' means ``2(σ²_qs/N + σ²_e/(N·M))`` (the query and query:intent effects are
shared by both systems). For a budget of N·M judged (query, intent) pairs the table
lists every split.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Sequence, Union

import numpy as np
import pandas as pd

from common import fileio
from common.fileio import InputError
from common.naturalsort import natural_key

__all__ = [
    "allocation_table",
    "fit_models",
    "read_intent_scores",
    "subsample_taus",
]

PathLike = Union[str, os.PathLike]


COLUMNS = ("system", "query", "intent", "score")


def _fields(line: str, comma: bool) -> list[str]:
    parts = line.rstrip("\r\n").split(",") if comma else line.split()
    return [p.strip().strip('"').strip("'") for p in parts]


def read_intent_scores(path: PathLike) -> pd.DataFrame:
    """Read ``system query intent score`` lines (whitespace separated; ``#`` comments and
    blank lines skipped); a (system, query, intent) scored twice is an error.

    The first line may be a header naming the four columns in any order, as R's
    ``write.table`` and pandas' ``to_csv`` write them: names may be quoted, a header with
    commas means comma-separated rows, and rows with one field more than the header start
    with a row name (R's default), which is dropped."""
    rows, seen = [], {}
    order = (0, 1, 2, 3)
    header = None  # (line number, field count) once a header was read
    comma = False
    for lineno, line in fileio.open_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if header is None and not rows:
            names = [n.lower() for n in _fields(line, "," in line)]
            if set(names) & set(COLUMNS) and not _is_number(names[-1]):
                missing = [c for c in COLUMNS if c not in names]
                if missing or len(names) != 4:
                    raise InputError(
                        path, lineno, "a header must name the columns system, query, intent "
                        f"and score once each; found {' '.join(names)}")
                order = tuple(names.index(c) for c in COLUMNS)
                comma = "," in line
                header = (lineno, 4)
                continue
            header = (0, 4)
        parts = _fields(line, comma)
        if header[0] and len(parts) == 5:
            parts = parts[1:]  # a row name
        if len(parts) != 4:
            raise InputError(
                path, lineno, f"expected 4 columns (system query intent score), found {len(parts)}")
        parts = [parts[i] for i in order]
        try:
            score = float(parts[3])
        except ValueError:
            raise InputError(path, lineno, f"score {parts[3]!r} is not a number") from None
        if not math.isfinite(score):
            raise InputError(path, lineno, f"score {parts[3]!r} is not finite")
        key = tuple(parts[:3])
        if key in seen:
            raise InputError(
                path, lineno,
                f"system {key[0]} query {key[1]} intent {key[2]} already scored on line {seen[key]}")
        seen[key] = lineno
        rows.append((*parts[:3], score))
    if not rows:
        raise InputError(path, 1, "no scores")
    return intent_scores_frame(rows)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def intent_scores_frame(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["system", "query", "intent", "score"]) if not isinstance(
        rows, pd.DataFrame) else rows[["system", "query", "intent", "score"]].copy()
    for col in ("system", "query", "intent"):
        frame[col] = frame[col].astype(str)
    frame["score"] = frame["score"].astype(float)
    return frame


def _check(scores: pd.DataFrame) -> None:
    if scores["system"].nunique() < 2:
        raise ValueError("variance components need at least two systems")
    if scores["query"].nunique() < 3:
        raise ValueError("variance components need at least three queries")
    cells = scores.groupby(["query", "intent"])["system"].nunique()
    systems = scores["system"].nunique()
    if (cells != systems).any():
        q, i = cells[cells != systems].index[0]
        raise ValueError(f"query {q} intent {i} is not scored for every system")


def _fit_once(formula: str, data: pd.DataFrame, vc: dict):
    """The REML fit by L-BFGS (BFGS, then Powell, when it fails). L-BFGS can stop early
    where a small variance component flattens the REML surface, so when a component is
    below 5% of the residual variance the fit is polished by Nelder-Mead from there and
    the larger REML criterion wins."""
    import statsmodels.formula.api as smf

    model = smf.mixedlm(formula, data, groups=data["query"], re_formula="1", vc_formula=vc or None)

    def attempt(method, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # boundary and convergence notes; checked below
            try:
                result = model.fit(reml=True, method=method, **kwargs)
            except (ValueError, np.linalg.LinAlgError):
                return None
        return result if result.converged and np.isfinite(result.llf) else None

    fits = []
    for method in ("lbfgs", "bfgs", "powell"):
        first = attempt(method)
        if first is not None:
            fits.append(first)
            break
    if fits and _small_component(fits[0]):
        polished = attempt("nm", start_params=fits[0].params_object, maxiter=5000)
        if polished is not None:
            fits.append(polished)
            again = attempt("lbfgs", start_params=polished.params_object)
            if again is not None:
                fits.append(again)
    if not fits:
        raise ValueError(f"the mixed model {formula} with {sorted(vc)} did not converge")
    result = max(fits, key=lambda f: f.llf)
    names = list(result.model.exog_vc.names) if vc else []
    variances = {"query": float(result.cov_re.iloc[0, 0]), "residual": float(result.scale)}
    variances.update({name: float(v) for name, v in zip(names, result.vcomp)})
    return result.llf, variances


def _small_component(result) -> bool:
    comps = [float(result.cov_re.iloc[0, 0]), *map(float, np.atleast_1d(result.vcomp))]
    return min(comps) < 0.05 * float(result.scale)


def _fit(formula: str, data: pd.DataFrame, vc: dict | None) -> dict:
    """REML variances {"query", "residual", <component>…}. A component the optimiser
    leaves near zero is checked on the boundary: when the model without it has at least
    the same REML criterion, the component is exactly 0 (lme4's answer), which a
    gradient optimiser in the square-root scale only approaches."""
    vc = dict(vc or {})
    llf, variances = _fit_once(formula, data, vc)
    for name in list(vc):
        if variances[name] < 4e-4 * variances["residual"]:
            reduced = {k: v for k, v in vc.items() if k != name}
            llf0, var0 = _fit_once(formula, data, reduced)
            if llf0 >= llf - 1e-9:
                llf, variances, vc = llf0, {**var0, name: 0.0}, reduced
    return variances


def _sd(value: float) -> float:
    return float(math.sqrt(max(0.0, float(value))))


def fit_models(scores: pd.DataFrame, full: bool = True) -> dict:
    """The module's models by REML: their standard deviations (and the full model's,
    with ``full``)."""
    scores = intent_scores_frame(scores)
    _check(scores)
    means = scores.groupby(["system", "query"], as_index=False)["score"].mean()
    formula = "score ~ C(system)"
    m1 = _fit(formula, means, None)
    m2 = _fit(formula, scores, {"query_system": "0 + C(system)"})
    m3 = _fit(formula, scores, {"query_intent": "0 + C(intent)"})
    out = {
        "model1": {"sd_query": _sd(m1["query"]), "sd_residual": _sd(m1["residual"])},
        "model2": {"sd_query": _sd(m2["query"]), "sd_query_system": _sd(m2["query_system"]),
                   "sd_residual": _sd(m2["residual"])},
        "model3": {"sd_query": _sd(m3["query"]), "sd_query_intent": _sd(m3["query_intent"]),
                   "sd_residual": _sd(m3["residual"])},
    }
    if full:
        m4 = _fit(formula, scores, {"query_intent": "0 + C(intent)", "query_system": "0 + C(system)"})
        out["full"] = {"sd_query": _sd(m4["query"]), "sd_query_system": _sd(m4["query_system"]),
                       "sd_query_intent": _sd(m4["query_intent"]), "sd_residual": _sd(m4["residual"])}
    out["data"] = {"systems": int(scores["system"].nunique()), "queries": int(scores["query"].nunique()),
                   "scores": int(len(scores))}
    return out


def allocation_table(components: dict, budget: int, max_intents: int | None = None) -> list[dict]:
    """Every split of ``budget`` judged (query, intent) pairs into N queries × M intents
    (M dividing the budget, M ≤ ``max_intents``), with the variance of one system's mean
    and of the difference of two systems' means under the full model's components."""
    if budget < 1:
        raise ValueError("the budget must be a positive number of (query, intent) pairs")
    q = components["sd_query"] ** 2
    qs = components["sd_query_system"] ** 2
    qi = components["sd_query_intent"] ** 2
    e = components["sd_residual"] ** 2
    rows = []
    for m in range(1, budget + 1):
        if budget % m or (max_intents and m > max_intents):
            continue
        n = budget // m
        var_mean = (q + qs) / n + (qi + e) / (n * m)
        var_diff = 2 * (qs / n + e / (n * m))
        rows.append({"queries": n, "intents": m, "var_mean": var_mean, "sd_mean": math.sqrt(var_mean),
                     "var_difference": var_diff, "sd_difference": math.sqrt(var_diff)})
    return rows


def _ordering(scores: pd.DataFrame) -> pd.Series:
    """A system's score: the mean over queries of its mean over the query's intents."""
    per_query = scores.groupby(["system", "query"])["score"].mean()
    return per_query.groupby("system").mean()


def subsample_taus(scores: pd.DataFrame, fractions: Sequence[float] = (0.2, 0.4, 0.6, 0.8),
                   repeats: int = 100, seed: int = 0) -> list[dict]:
    """Kendall's τ_b between the full collection's system ordering and that of subsampled
    collections keeping a fraction of the queries (every intent) or, in every query, a
    fraction of its intents (at least one; the others removed). Seeded; ``repeats``
    draws per fraction. Returns rows (fraction, kind, mean, sd, min, max of τ_b)."""
    from evaluation.ranking import kendall_tau_b

    scores = intent_scores_frame(scores)
    _check(scores)
    full = _ordering(scores)
    systems = full.index
    rng = np.random.default_rng(seed)
    queries = np.array(sorted(scores["query"].unique(), key=natural_key))
    intents = {q: np.array(sorted(g.unique(), key=natural_key))
               for q, g in scores.groupby("query")["intent"]}
    rows = []
    for fraction in fractions:
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction {fraction} is not in (0, 1]")
        taus = {"queries": [], "intents": []}
        for _ in range(repeats):
            keep_q = rng.choice(queries, size=max(1, round(fraction * len(queries))), replace=False)
            sub = scores[scores["query"].isin(keep_q)]
            taus["queries"].append(kendall_tau_b(full.to_numpy(), _ordering(sub).reindex(systems).to_numpy()))
            keep = [(q, i) for q in queries
                    for i in rng.choice(intents[q], size=max(1, round(fraction * len(intents[q]))),
                                        replace=False)]
            keys = pd.MultiIndex.from_tuples(keep, names=["query", "intent"])
            sub = scores.set_index(["query", "intent"]).loc[lambda f: f.index.isin(keys)].reset_index()
            taus["intents"].append(kendall_tau_b(full.to_numpy(), _ordering(sub).reindex(systems).to_numpy()))
        for kind, values in taus.items():
            v = np.array([t for t in values if t is not None], dtype=float)
            rows.append({"fraction": fraction, "kind": kind, "repeats": repeats,
                         "mean": float(v.mean()), "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                         "min": float(v.min()), "max": float(v.max())})
    return rows
