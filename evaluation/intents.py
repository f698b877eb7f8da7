"""Properties of a topic's set of intents (Radlinski, Szummer & Craswell, SIGIR 2010):
coherence, distinctness, plausibility and completeness, with curves over β.

Plain Python (pandas, numpy); nothing here imports Django.

Inputs are label tables (see :mod:`evaluation.agreement`): the intent judgments
(``topic intent docid assessor grade``) and, optionally, the users' judgments of their
own need (the workers who wrote a query for the topic and judged in ``user`` mode; the
intent column is ignored). A document is relevant when its grade is at least
``relevant_from``.

- ``sim(A, B)`` compares two relevant sets over the documents judged for both: Jaccard
  ``|A ∩ B| / |A ∪ B|`` (undefined when neither has a relevant document there), or
  Cohen's κ of the two binary relevance vectors on those documents (undefined when 0/0).
- R_i, the relevant set of intent i: the documents that at least ``consensus`` (default
  half) of the assessors who judged them for i found relevant. R_u: the documents user u
  found relevant.
- Coherence of intent i: the mean sim over pairs of its assessors (each pair over the
  documents both judged); α-coherent when it is at least α.
- Distinctness: sim(R_i, R_j) for every pair of a topic's intents; a pair is α-distinct
  when sim ≤ 1 − α; the set's distinctness is the minimum of 1 − sim over its pairs
  (undefined pairs left out), α-distinct when every pair is.
- Plausibility of intent i: the fraction of the topic's users u with sim(R_u, R_i) ≥ β
  (an undefined sim counts as below); αβ-plausible when that fraction is at least α.
- Completeness of the set: the fraction of users with max_i sim(R_u, R_i) ≥ β.
- Curves: plausibility and completeness at every β of a grid, since the paper leaves
  good values open.
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import pandas as pd

from common.naturalsort import natural_key
from evaluation.agreement import cohen_kappa, label_table

__all__ = ["SIMILARITIES", "intent_properties", "relevant_sets", "similarity"]

SIMILARITIES = ("jaccard", "kappa")


def similarity(a_relevant: set, a_judged: set, b_relevant: set, b_judged: set,
               kind: str = "jaccard") -> float | None:
    """sim of two relevant sets over the documents judged for both (module docstring)."""
    common = a_judged & b_judged
    if not common:
        return None
    a, b = a_relevant & common, b_relevant & common
    if kind == "jaccard":
        union = a | b
        return len(a & b) / len(union) if union else None
    if kind == "kappa":
        docs = sorted(common)
        return cohen_kappa([d in a for d in docs], [d in b for d in docs], [False, True])
    raise ValueError(f"unknown similarity {kind!r} ({', '.join(SIMILARITIES)})")


def relevant_sets(labels: pd.DataFrame, relevant_from: int, consensus: float = 0.5) -> dict:
    """{(topic, intent): (relevant docids, judged docids)} by the consensus rule."""
    frame = labels.assign(rel=labels["grade"] >= relevant_from)
    share = frame.groupby(["topic", "intent", "docid"])["rel"].mean()
    out: dict = {}
    for (topic, intent, docid), value in share.items():
        rel, judged = out.setdefault((topic, intent), (set(), set()))
        judged.add(docid)
        if value >= consensus:
            rel.add(docid)
    return out


def _coherence(labels: pd.DataFrame, relevant_from: int, kind: str) -> dict:
    """{(topic, intent): mean sim over pairs of assessors, or None}."""
    out = {}
    for (topic, intent), frame in labels.groupby(["topic", "intent"], sort=True):
        per = {a: (set(g.loc[g["grade"] >= relevant_from, "docid"]), set(g["docid"]))
               for a, g in frame.groupby("assessor")}
        values = [similarity(*per[a], *per[b], kind) for a, b in itertools.combinations(sorted(per), 2)]
        values = [v for v in values if v is not None]
        out[(topic, intent)] = float(np.mean(values)) if values else None
    return out


def _fraction(values: Sequence[float | None], beta: float) -> float | None:
    if not values:
        return None
    return sum(1 for v in values if v is not None and v >= beta) / len(values)


def intent_properties(labels, user_labels=None, alpha: float = 0.5, beta: float = 0.5,
                      kind: str = "jaccard", relevant_from: int = 1, consensus: float = 0.5,
                      topics: Sequence[str] | None = None, betas: Sequence[float] | None = None) -> dict:
    """Every property of the module docstring per topic, the counts overall, and curves
    over ``betas`` (default 0, 0.05, …, 1)."""
    if kind not in SIMILARITIES:
        raise ValueError(f"unknown similarity {kind!r} ({', '.join(SIMILARITIES)})")
    labels = label_table(labels)
    users = label_table(user_labels) if user_labels is not None else None
    if topics is not None:
        wanted = {str(t) for t in topics}
        labels = labels[labels["topic"].isin(wanted)]
        if users is not None:
            users = users[users["topic"].isin(wanted)]
    if labels.empty:
        raise ValueError("no intent judgments for these topics")
    betas = [round(b, 10) for b in (betas if betas is not None else np.linspace(0, 1, 21))]
    sets = relevant_sets(labels, relevant_from, consensus)
    coherence = _coherence(labels, relevant_from, kind)
    user_sets: dict = {}
    if users is not None:
        for (topic, user), g in users.groupby(["topic", "assessor"], sort=True):
            user_sets.setdefault(topic, {})[user] = (set(g.loc[g["grade"] >= relevant_from, "docid"]),
                                                     set(g["docid"]))
    per_topic: dict = {}
    curves = {"beta": betas, "completeness": {}, "plausibility": {}}
    for topic in sorted({t for t, _ in sets}, key=natural_key):
        intents = sorted((i for t, i in sets if t == topic), key=natural_key)
        entry: dict = {"intents": {}}
        for i in intents:
            c = coherence[(topic, i)]
            entry["intents"][i] = {"relevant": len(sets[(topic, i)][0]), "judged": len(sets[(topic, i)][1]),
                                   "coherence": c, "coherent": c is not None and c >= alpha}
        pairs = []
        for i, j in itertools.combinations(intents, 2):
            s = similarity(*sets[(topic, i)], *sets[(topic, j)], kind)
            pairs.append({"intents": [i, j], "sim": s, "distinct": s is not None and s <= 1 - alpha})
        defined = [p["sim"] for p in pairs if p["sim"] is not None]
        entry["distinctness"] = {
            "pairs": pairs,
            "min": (min(1 - s for s in defined) if defined else None),
            "distinct": bool(pairs) and all(p["distinct"] for p in pairs),
        }
        topic_users = user_sets.get(topic, {})
        if users is not None:
            sims = {u: {i: similarity(*topic_users[u], *sets[(topic, i)], kind) for i in intents}
                    for u in topic_users}
            best = [max((v for v in s.values() if v is not None), default=None) for s in sims.values()]
            for i in intents:
                values = [sims[u][i] for u in sims]
                frac = _fraction(values, beta)
                entry["intents"][i]["plausibility"] = frac
                entry["intents"][i]["plausible"] = frac is not None and frac >= alpha
                curves["plausibility"].setdefault(topic, {})[i] = [_fraction(values, b) for b in betas]
            entry["users"] = len(sims)
            entry["completeness"] = _fraction(best, beta)
            curves["completeness"][topic] = [_fraction(best, b) for b in betas]
        per_topic[topic] = entry
    intents_all = [e for t in per_topic.values() for e in t["intents"].values()]
    overall = {
        "topics": len(per_topic),
        "intents": len(intents_all),
        "coherent_intents": sum(e["coherent"] for e in intents_all),
        "distinct_topics": sum(t["distinctness"]["distinct"] for t in per_topic.values()),
    }
    if users is not None:
        overall["plausible_intents"] = sum(e.get("plausible", False) for e in intents_all)
        comp = [t["completeness"] for t in per_topic.values() if t.get("completeness") is not None]
        overall["mean_completeness"] = float(np.mean(comp)) if comp else None
        mean_curve = []
        for k in range(len(betas)):
            vals = [c[k] for c in curves["completeness"].values() if c[k] is not None]
            mean_curve.append(float(np.mean(vals)) if vals else None)
        curves["mean_completeness"] = mean_curve
    return {"alpha": alpha, "beta": beta, "similarity": kind, "relevant_from": relevant_from,
            "consensus": consensus, "overall": overall, "per_topic": per_topic, "curves": curves}

