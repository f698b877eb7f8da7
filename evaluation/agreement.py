"""Agreement between assessors: Cohen's κ, Fleiss' κ, Krippendorff's α, Jaccard, coherence.

Plain Python (pandas, numpy, krippendorff); nothing here imports Django.

A *label table* has one row per label: ``topic intent docid assessor grade`` (ids are
strings, grades integers). An *item* is one (topic, intent, docid); the assessors who
labelled an item are its raters. An assessor labels an item at most once.

Every statistic is computed over the items of a scope (one intent of a topic, one topic,
or everything) and treats a missing label as that statistic defines it:

- Cohen's κ (Cohen 1960; linearly weighted, Cohen 1968) is defined for two raters on
  the items both labelled. For every pair of assessors sharing at least ``min_shared``
  items of the scope, ``κ_w = 1 − Σ w∘O / Σ w∘E`` with O the confusion matrix of their
  shared items, ``E = outer(row sums, column sums) / n`` and disagreement weights
  ``w = 1 − I`` (unweighted) or ``w_kl = |k − l|`` over the ordered categories (linear) —
  scikit-learn's ``cohen_kappa_score`` with ``labels`` set to every category. A pair whose
  κ is 0/0 (both gave one and the same category throughout) is undefined and left out.
  The scope reports the mean over pairs and how many pairs were used.
- Fleiss' κ (Fleiss 1971) needs the same number of raters per item; with missing labels
  it is Gwet's generalisation (Handbook of Inter-Rater Reliability; irrCAC's
  ``fleiss.kappa.raw``): ``p_a`` is the mean over items with r_i ≥ 2 raters of
  ``Σ_k r_ik(r_ik − 1) / (r_i(r_i − 1))``, ``π_k`` the mean over all items of
  ``r_ik / r_i``, ``p_e = Σ_k π_k²`` and ``κ = (p_a − p_e) / (1 − p_e)``. With equal
  numbers of raters it is exactly statsmodels' ``fleiss_kappa``.
- Krippendorff's α (Krippendorff 2011) is defined with missing values: items with fewer
  than two labels are not pairable and drop out. It is computed by the ``krippendorff``
  package from the item × category counts, at all three levels of measurement
  (nominal, ordinal, interval) with the value domain set to every category in order, so
  that the ordinal and interval distances use the grade values themselves.
- Jaccard similarity of two assessors' relevant sets (Radlinski, Szummer & Craswell 2010,
  ``sim``): ``|R_a ∩ R_b| / |R_a ∪ R_b|`` over the items both judged, where R is the set
  of items labelled at least ``relevant_from``; undefined (left out) when neither found
  anything relevant there. The scope reports the mean over pairs.
- α-coherence (Radlinski et al. 2010): an intent is α-coherent when its coherence — the
  mean Jaccard similarity over pairs of its assessors — is at least α. Topics and the
  whole set report how many of their intents are.

A statistic that is undefined on a scope (too few raters, a single category) is ``None``.
"""
from __future__ import annotations

import csv
import math
import os
from typing import Iterable, Mapping, Sequence, Union

import krippendorff
import numpy as np
import pandas as pd

from common import fileio
from common.fileio import InputError
from common.naturalsort import natural_key

__all__ = [
    "COLUMNS",
    "LEVELS",
    "agreement_summary",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "label_table",
    "pair_statistics",
    "read_labels_tsv",
    "read_trec_rf10_crowd",
]

COLUMNS = ["topic", "intent", "docid", "assessor", "grade"]
LEVELS = ("nominal", "ordinal", "interval")
CROWD_INTENT = "0"

PathLike = Union[str, os.PathLike]


# ---------------------------------------------------------------------------- tables

def label_table(records: Union[pd.DataFrame, Iterable[Sequence]]) -> pd.DataFrame:
    """A validated label table from a DataFrame or (topic, intent, docid, assessor, grade)
    records: string ids, integer grades, one label per (item, assessor)."""
    if isinstance(records, pd.DataFrame):
        missing = [c for c in COLUMNS if c not in records.columns]
        if missing:
            raise ValueError(f"label table lacks the column(s) {', '.join(missing)}")
        frame = records[COLUMNS].copy()
    else:
        frame = pd.DataFrame(list(records), columns=COLUMNS)
    for col in COLUMNS[:4]:
        frame[col] = frame[col].astype(str)
    if frame["grade"].isna().any():
        raise ValueError("label table has a missing grade")
    grades = pd.to_numeric(frame["grade"], errors="raise")
    if not (grades == np.floor(grades)).all():
        raise ValueError("label table has a grade that is not an integer")
    frame["grade"] = grades.astype(np.int64)
    dup = frame.duplicated(["topic", "intent", "docid", "assessor"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(
            f"assessor {row.assessor} labelled topic {row.topic} intent {row.intent} "
            f"document {row.docid} more than once")
    return frame.reset_index(drop=True)


def read_labels_tsv(path: PathLike) -> pd.DataFrame:
    """Read ``topic intent docid assessor grade`` lines (tab or space separated; blank
    lines and ``#`` comments skipped). Any bad line stops the read with its number."""
    rows, seen = [], {}
    for lineno, line in fileio.open_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 5:
            raise InputError(
                path, lineno, f"expected 5 columns (topic intent docid assessor grade), "
                              f"found {len(parts)}")
        try:
            grade = int(parts[4])
        except ValueError:
            raise InputError(path, lineno, f"grade {parts[4]!r} is not an integer") from None
        key = tuple(parts[:4])
        if key in seen:
            raise InputError(
                path, lineno, f"assessor {parts[3]} already labelled this document for "
                              f"topic {parts[0]} intent {parts[1]} on line {seen[key]}")
        seen[key] = lineno
        rows.append((*parts[:4], grade))
    if not rows:
        raise InputError(path, 1, "no labels")
    return label_table(rows)


def read_trec_rf10_crowd(path: PathLike) -> pd.DataFrame:
    """Read the TREC 2010 Relevance Feedback track crowd judgments
    (``topicID workerID docID gold label``, tab separated, with a header).

    The file has no intents: every label gets intent ``0``, as in ad hoc qrels. Label −2
    ("broken link") is not a relevance grade and is read as missing. A worker who judged
    the same topic–document pair more than once (the published file has 1,489 such
    pairs) keeps the last judgment in file order (as the judging app keeps the latest
    revision); when that is a broken link the pair has no label from that worker.
    """
    rows: dict = {}
    expected = ["topicID", "workerID", "docID", "gold", "label"]
    header = None
    for lineno, line in fileio.open_lines(path):
        parts = next(csv.reader([line], delimiter="\t"), [])  # one record per line
        if header is None:
            header = parts
            if [h.strip() for h in header[:5]] != expected:
                raise InputError(path, 1, "expected the header topicID workerID docID gold label")
            continue
        if not parts or not "".join(parts).strip():
            continue
        if len(parts) != 5:
            raise InputError(path, lineno, f"expected 5 tab-separated columns, found {len(parts)}")
        topic, worker, docid, _gold, label = (p.strip() for p in parts)
        try:
            grade = int(label)
        except ValueError:
            raise InputError(path, lineno, f"label {label!r} is not an integer") from None
        if grade not in (-2, 0, 1, 2):
            raise InputError(path, lineno, f"label {grade} is not one of -2, 0, 1, 2")
        key = (topic, docid, worker)
        rows.pop(key, None)  # the last judgment wins, in file order
        if grade != -2:
            rows[key] = grade
    if header is None:
        raise InputError(path, 1, "expected the header topicID workerID docID gold label")
    if not rows:
        raise InputError(path, 1, "no labels")
    return label_table((t, CROWD_INTENT, d, w, g) for (t, d, w), g in rows.items())


# ------------------------------------------------------------------------ statistics

def cohen_kappa(a: Sequence[int], b: Sequence[int], categories: Sequence[int],
                weights: str | None = None) -> float | None:
    """Cohen's κ of two raters' labels on the same items (``weights`` None or
    ``"linear"``); ``None`` when 0/0."""
    cats = np.asarray(sorted(categories))
    ia, ib = np.searchsorted(cats, np.asarray(a)), np.searchsorted(cats, np.asarray(b))
    k = len(cats)
    observed = np.zeros((1, k, k))
    np.add.at(observed, (np.zeros(len(ia), dtype=int), ia, ib), 1.0)
    value = _kappa_from_confusion(observed, _disagreement(k, weights))[0]
    return None if math.isnan(value) else float(value)


def _disagreement(k: int, weights: str | None) -> np.ndarray:
    idx = np.arange(k)
    if weights is None:
        return 1.0 - np.eye(k)
    if weights == "linear":
        return np.abs(idx[:, None] - idx[None, :]).astype(float)
    raise ValueError(f"unknown weights {weights!r} (None or 'linear')")


def _kappa_from_confusion(observed: np.ndarray, w: np.ndarray) -> np.ndarray:
    """κ for a stack of confusion matrices (P × K × K); NaN where 0/0."""
    n = observed.sum(axis=(1, 2))
    rows, cols = observed.sum(axis=2), observed.sum(axis=1)
    expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
    num = (observed * w).sum(axis=(1, 2))
    den = (expected * w).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 1.0 - num / den, np.nan)


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' κ from an items × categories matrix of rater counts (Gwet's form for
    unequal numbers of raters, see the module docstring); ``None`` when undefined."""
    counts = np.asarray(counts, dtype=float)
    r = counts.sum(axis=1)
    counts, r = counts[r > 0], r[r > 0]
    if not len(r) or not (r >= 2).any():
        return None
    pairs = r >= 2
    pa = ((counts[pairs] * (counts[pairs] - 1)).sum(axis=1) / (r[pairs] * (r[pairs] - 1))).mean()
    pi = (counts / r[:, None]).mean(axis=0)
    pe = float((pi ** 2).sum())
    if pe >= 1.0:
        return None
    return float((pa - pe) / (1.0 - pe))


def krippendorff_alpha(counts: np.ndarray, categories: Sequence[int], level: str) -> float | None:
    """Krippendorff's α at ``level`` (nominal, ordinal or interval) from an items ×
    categories matrix of counts, by the ``krippendorff`` package; ``None`` when no item
    has two labels, fewer than two categories exist, or no variation is expected."""
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r} ({', '.join(LEVELS)})")
    counts = np.asarray(counts)
    if len(categories) < 2 or not (counts.sum(axis=1) >= 2).any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(krippendorff.alpha(value_counts=counts,
                                         value_domain=np.asarray(categories, dtype=float),
                                         level_of_measurement=level))
    return None if math.isnan(value) else value


def _mean_or_none(values) -> float | None:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(values)) if values else None


# --------------------------------------------------------------------- pairwise table

def pair_statistics(labels: pd.DataFrame, by: Sequence[str], relevant_from: int,
                    categories: Sequence[int], min_shared: int = 2) -> pd.DataFrame:
    """One row per (scope, assessor a, assessor b) with a < b: shared items, unweighted
    and linear κ, and Jaccard of relevant sets over the shared items. ``by`` names the
    scope columns ([] for everything, ["topic"], ["topic", "intent"])."""
    cats = np.asarray(sorted(categories))
    frame = labels[["topic", "intent", "docid", "assessor", "grade"]].copy()
    frame["item"] = frame.groupby(["topic", "intent", "docid"], sort=False).ngroup()
    frame["g"] = np.searchsorted(cats, frame["grade"].to_numpy())
    left = frame[["item", "assessor", "g", "grade", *by]]
    right = frame[["item", "assessor", "g", "grade"]]
    pairs = left.merge(right, on="item", suffixes=("_a", "_b"))
    pairs = pairs[pairs["assessor_a"] < pairs["assessor_b"]]
    keys = [*by, "assessor_a", "assessor_b"]
    columns = [*keys, "shared", "kappa", "kappa_linear", "jaccard"]
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    pid = pairs.groupby(keys, sort=True).ngroup().to_numpy()
    n_pairs = int(pid.max()) + 1
    k = len(cats)
    observed = np.zeros((n_pairs, k, k))
    np.add.at(observed, (pid, pairs["g_a"].to_numpy(), pairs["g_b"].to_numpy()), 1.0)
    shared = observed.sum(axis=(1, 2))
    ra = pairs["grade_a"].to_numpy() >= relevant_from
    rb = pairs["grade_b"].to_numpy() >= relevant_from
    both = np.bincount(pid, weights=(ra & rb), minlength=n_pairs)
    either = np.bincount(pid, weights=(ra | rb), minlength=n_pairs)
    out = pairs[keys].drop_duplicates().sort_values(keys).reset_index(drop=True)
    out["shared"] = shared.astype(int)
    out["kappa"] = _kappa_from_confusion(observed, _disagreement(k, None))
    out["kappa_linear"] = _kappa_from_confusion(observed, _disagreement(k, "linear"))
    with np.errstate(divide="ignore", invalid="ignore"):
        out["jaccard"] = np.where(either > 0, both / either, np.nan)
    few = out["shared"] < min_shared
    out.loc[few, ["kappa", "kappa_linear"]] = np.nan
    return out[columns]


# -------------------------------------------------------------------------- summary

def _scope_stats(counts: np.ndarray, categories: Sequence[int], pairs: pd.DataFrame) -> dict:
    kappa = pairs["kappa"].dropna()
    return {
        "items": int(len(counts)),
        "labels": int(counts.sum()),
        "fleiss_kappa": fleiss_kappa(counts),
        "krippendorff_alpha": {lv: krippendorff_alpha(counts, categories, lv) for lv in LEVELS},
        "cohen_kappa": {
            "unweighted": _mean_or_none(kappa),
            "linear": _mean_or_none(pairs["kappa_linear"].dropna()),
            "pairs": int(len(kappa)),
        },
        "jaccard": {
            "mean": _mean_or_none(pairs["jaccard"].dropna()),
            "pairs": int(pairs["jaccard"].notna().sum()),
        },
    }


def agreement_summary(labels: pd.DataFrame, relevant_from: int = 1, coherence_alpha: float = 0.5,
                      categories: Sequence[int] | None = None, min_shared: int = 2) -> dict:
    """Agreement overall, per topic and per intent (``{"overall", "per_topic",
    "per_intent": {topic: {intent: …}}}``) as the module docstring defines it.

    ``categories`` is the ordered grade scale (default: every grade used); coherence at
    threshold ``coherence_alpha`` is reported per intent and counted per topic and overall.
    """
    labels = label_table(labels)
    if labels.empty:
        raise ValueError("no labels to compare")
    cats = sorted(set(categories) if categories is not None else set(labels["grade"]))
    unknown = set(labels["grade"]) - set(cats)
    if unknown:
        raise ValueError(f"grades {sorted(unknown)} are not among the categories {cats}")
    idx = {c: i for i, c in enumerate(cats)}
    counts_frame = (labels.assign(g=labels["grade"].map(idx))
                    .groupby(["topic", "intent", "docid", "g"]).size().unstack("g", fill_value=0)
                    .reindex(columns=range(len(cats)), fill_value=0))
    counts_all = counts_frame.to_numpy()
    topics = counts_frame.index.get_level_values("topic").to_numpy()
    intents = counts_frame.index.get_level_values("intent").to_numpy()

    pairs = {
        "overall": pair_statistics(labels, [], relevant_from, cats, min_shared),
        "topic": pair_statistics(labels, ["topic"], relevant_from, cats, min_shared),
        "intent": pair_statistics(labels, ["topic", "intent"], relevant_from, cats, min_shared),
    }
    per_intent: dict = {}
    coherent = {}
    intent_groups = pairs["intent"].groupby(["topic", "intent"]) if len(pairs["intent"]) else {}
    intent_pairs = {key: grp for key, grp in intent_groups}
    empty = pairs["intent"].iloc[0:0]
    natural_pair = lambda ti: (natural_key(ti[0]), natural_key(ti[1]))  # noqa: E731
    for (topic, intent) in sorted(set(zip(topics, intents)), key=natural_pair):
        mask = (topics == topic) & (intents == intent)
        stats = _scope_stats(counts_all[mask], cats, intent_pairs.get((topic, intent), empty))
        value = stats["jaccard"]["mean"]
        stats["coherence"] = {"value": value, "threshold": coherence_alpha,
                              "coherent": value is not None and value >= coherence_alpha}
        coherent[(topic, intent)] = stats["coherence"]["coherent"]
        per_intent.setdefault(topic, {})[intent] = stats
    topic_pairs = {key: grp for key, grp in pairs["topic"].groupby("topic")} if len(pairs["topic"]) else {}
    per_topic = {}
    for topic in sorted(set(topics), key=natural_key):
        stats = _scope_stats(counts_all[topics == topic], cats, topic_pairs.get(topic, empty))
        flags = [coherent[(topic, i)] for i in per_intent[topic]]
        stats["coherence"] = _coherence_count(flags, coherence_alpha)
        per_topic[topic] = stats
    overall = _scope_stats(counts_all, cats, pairs["overall"])
    overall["coherence"] = _coherence_count(list(coherent.values()), coherence_alpha)
    return {
        "categories": cats,
        "relevant_from": relevant_from,
        "min_shared": min_shared,
        "overall": overall,
        "per_topic": per_topic,
        "per_intent": per_intent,
    }


def _coherence_count(flags: list, threshold: float) -> dict:
    return {"threshold": threshold, "intents": len(flags), "coherent_intents": int(sum(flags)),
            "fraction": (sum(flags) / len(flags)) if flags else None}


def summary_rows(summary: Mapping) -> list[dict]:
    """Flat rows (scope, topic, intent, statistics) of an agreement summary, for CSV."""
    def flat(scope, topic, intent, s):
        return {
            "scope": scope, "topic": topic, "intent": intent, "items": s["items"],
            "fleiss_kappa": s["fleiss_kappa"],
            **{f"alpha_{lv}": s["krippendorff_alpha"][lv] for lv in LEVELS},
            "cohen_kappa": s["cohen_kappa"]["unweighted"], "cohen_kappa_linear": s["cohen_kappa"]["linear"],
            "jaccard": s["jaccard"]["mean"],
        }
    rows = [flat("overall", "", "", summary["overall"])]
    rows += [flat("topic", t, "", s) for t, s in summary["per_topic"].items()]
    rows += [flat("intent", t, i, s) for t, d in summary["per_intent"].items() for i, s in d.items()]
    return rows
