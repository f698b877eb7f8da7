"""User query variability in effectiveness: is the spread of a measure over the queries
people typed for a topic as large as its spread over systems?

For one topic set and one set of judgments, every crowd variant's stored ranking and every
stored system run are scored with the same measure (:mod:`evaluation.measures`, trec_eval's
conventions as ``evaluate`` applies them to stored runs). Per topic, the spread over the
topic's distinct variants sits next to the spread over the systems; and the scores of the
variants' rankings under every retrieval model are decomposed by the mixed models of
:mod:`evaluation.variance` with the retrieval model as the system, the topic as the query
and the variant as the intent nested in it: ``score ~ system + (1|topic) +
(1|topic:system) + (1|topic:variant)``.

Reads go through ``retrieval.selectors``, ``judging.selectors`` and ``pooling.selectors``;
nothing here writes.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from common import fileio

from common.naturalsort import natural_key
from evaluation import measures, variance
from evaluation.measures.engine import check_measures

SUMMARY = ("n", "min", "q1", "median", "q3", "max", "mean", "sd", "iqr")


def spread(values) -> dict:
    """``n, min, q1, median, q3, max, mean, sd, iqr`` of a list of scores: quartiles by
    linear interpolation (numpy's default, R's type 7), ``sd`` with n − 1 (None for one
    value)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {k: (0 if k == "n" else None) for k in SUMMARY}
    q1, med, q3 = (float(x) for x in np.quantile(v, [0.25, 0.5, 0.75]))
    return {"n": int(v.size), "min": float(v.min()), "q1": q1, "median": med, "q3": q3,
            "max": float(v.max()), "mean": float(v.mean()),
            "sd": float(v.std(ddof=1)) if v.size > 1 else None, "iqr": q3 - q1}


# --- reads ---------------------------------------------------------------------------------


def stored_qrels(*, kind: str, judgments: str | None = None, qrels: str | None = None) -> measures.Qrels:
    """Exactly one of a stored judgment set (labels combined by majority, as
    ``export_qrels`` does) and imported qrels (``import_qrels``), as ``kind`` qrels. Both
    name a judgment set (imported qrels are one); ``qrels`` also checks that a set read
    from a qrels file is of the kind the measure needs."""
    from evaluation.selectors import judgment_set_qrels
    from judging.selectors import qrels_get

    if bool(judgments) == bool(qrels):
        raise ValueError("give either a stored judgment set (--judgments) or imported qrels (--qrels)")
    if qrels:
        stored = qrels_get(qrels)
        if stored.format in ("adhoc", "diversity") and stored.format != kind:
            raise ValueError(
                f"qrels {qrels!r} are {stored.format} qrels and the measure needs {kind} qrels; "
                f"choose {'an ad hoc' if kind == 'adhoc' else 'a diversity'} measure or other qrels")
    try:
        out = judgment_set_qrels(judgments or qrels, kind)
    except fileio.InputError as exc:
        raise ValueError(str(exc)) from None
    if qrels:
        if not out.judgments:
            raise ValueError(f"qrels {qrels!r} hold no judgments")
        return measures.Qrels(kind, out.judgments, f"qrels {qrels!r}")
    return out


def _variant_runs(topic_set: str, model: str | None):
    """The variants runs to score: the one of ``model`` (or of the only model) for the
    spread, and one per model over the same collection for the decomposition."""
    from retrieval.selectors import user_ranking_sources

    sources = user_ranking_sources(topic_set)
    if not sources:
        raise ValueError(f"topic set {topic_set!r} has no finished variants run; run "
                         "run_retrieval --source variants first")
    models = sorted({s.model for s in sources})
    if model is None:
        if len(models) > 1:
            raise ValueError(f"topic set {topic_set!r} has variant rankings of more than one model "
                             f"({', '.join(models)}); choose one with --model")
        model = models[0]
    chosen = [s for s in sources if s.model == model]
    if not chosen:
        raise ValueError(f"topic set {topic_set!r} has no finished variants run of model {model!r} "
                         f"(it has: {', '.join(models)})")
    if len(chosen) > 1:
        raise ValueError(f"topic set {topic_set!r} has variant rankings of model {model!r} over more "
                         f"than one collection ({', '.join(sorted(s.collection or '' for s in chosen))})")
    collection = chosen[0].collection
    per_model = [s for s in sources if s.collection == collection]
    return chosen[0], per_model


def _variant_rankings(run_id: int) -> tuple[dict, dict]:
    """``({topic:label: (docids, scores, ranks)}, {topic:label: (topic, label, people)})``."""
    from retrieval.models import RunQuery
    from retrieval.selectors import run_get, run_rankings

    run = run_get(run_id)
    people = dict(((t, lab), w) for t, lab, w in RunQuery.objects.filter(run=run).values_list(
        "topic__topic_id", "label", "weight"))
    rankings, info = {}, {}
    for qid, docids, scores in run_rankings(run):
        topic, label = qid.rsplit(":", 1)
        rankings[qid] = (docids, scores, list(range(1, len(docids) + 1)))
        info[qid] = (topic, label, people.get((topic, label), 1))
    return rankings, info


def _system_runs(topic_set: str) -> list[tuple[str, str, dict]]:
    from evaluation.selectors import stored_runs
    from retrieval.models import Run
    from retrieval.selectors import run_list

    tags = sorted(set(run_list(topic_set).filter(kind=Run.KIND_SYSTEM, status="done")
                      .values_list("tag", flat=True)))
    if not tags:
        return []
    try:
        return stored_runs(topic_set=topic_set, tags=tags)
    except fileio.InputError as exc:
        raise ValueError(str(exc)) from None


# --- scoring -------------------------------------------------------------------------------


def _variant_scores(rankings: dict, info: dict, qrels: measures.Qrels, specs, order: str) -> dict:
    """``{qid: score}`` for every variant of a judged topic. The topic's judgments are the
    variant's judgments; an empty ranking scores 0 (trec_eval -c)."""
    judged = {qid: qrels.judgments[info[qid][0]] for qid in rankings if info[qid][0] in qrels.judgments}
    if not judged:
        return {}
    runset = measures.RunSet.from_rankings([("variants", "variant rankings",
                                             {q: rankings[q] for q in judged})])
    result = measures.evaluate_runs(runset, measures.Qrels(qrels.kind, judged, qrels.source), specs,
                                    order=order, complete=True)
    key = specs[0].keys[0]
    return {qid: values[key] for qid, values in result["variants"]["per_topic"].items()}


def variability(topic_set: str, *, measure: str, judgments: str | None = None,
                qrels: str | None = None, model: str | None = None, order: str = "trec_eval",
                decompose: bool = True, progress: Callable[[float], None] | None = None) -> dict:
    """Scores of every variant and system per judged topic, their spreads, and the variance
    decomposition (see the module docstring). Returns a JSON-ready dict:

    ``{"topic_set", "measure", "qrels", "model", "collection", "order", "systems": [tag…],
    "scores": [{"topic", "kind": "variant"|"system", "name", "people", "score"}…],
    "per_topic": [{"topic", "variants": {n, min, q1, median, q3, max, mean, sd, iqr},
    "systems": {…}, "sd_ratio"}…], "overall": {…}, "decomposition": {…} | None,
    "decomposition_note"}``.
    """
    step = progress or (lambda f: None)
    specs = measures.parse_measures(measure)
    if len(specs) != 1 or len(specs[0].keys) != 1:
        raise ValueError(f"--measure needs exactly one measure (e.g. nDCG@10, AP), not {measure!r}")
    kind = specs[0].qrels_kind
    try:
        check_measures(specs, kind, False)
    except fileio.InputError as exc:
        raise ValueError(str(exc)) from None
    judged = stored_qrels(kind=kind, judgments=judgments, qrels=qrels)
    key = specs[0].keys[0]
    source, per_model = _variant_runs(topic_set, model)
    step(0.1)
    rankings, info = _variant_rankings(source.run_id)
    variant = _variant_scores(rankings, info, judged, specs, order)
    if not variant:
        raise ValueError(f"no topic with variant rankings is judged in {judged.source}")
    step(0.3)
    systems = _system_runs(topic_set)
    system_scores: dict = {}
    if systems:
        runset = measures.RunSet.from_rankings(systems)
        result = measures.evaluate_runs(runset, judged, specs, order=order, complete=False)
        for tag, r in result.items():
            for topic, values in r["per_topic"].items():
                system_scores.setdefault(topic, {})[tag] = values[key]
    step(0.5)

    rows = []
    by_topic: dict = {}
    for qid, score in variant.items():
        topic, label, people = info[qid]
        by_topic.setdefault(topic, {"variant": [], "system": []})["variant"].append(score)
        rows.append({"topic": topic, "kind": "variant", "name": label, "people": people, "score": score})
    for topic in by_topic:
        for tag, score in sorted(system_scores.get(topic, {}).items()):
            by_topic[topic]["system"].append(score)
            rows.append({"topic": topic, "kind": "system", "name": tag, "people": None, "score": score})
    topics = sorted(by_topic, key=natural_key)
    rows.sort(key=lambda r: (natural_key(r["topic"]), r["kind"] != "variant", r["name"]))
    per_topic = []
    for topic in topics:
        v, s = spread(by_topic[topic]["variant"]), spread(by_topic[topic]["system"])
        ratio = (v["sd"] / s["sd"]) if v["sd"] is not None and s["sd"] else None
        per_topic.append({"topic": topic, "variants": v, "systems": s, "sd_ratio": ratio})
    compared = [t for t in per_topic if t["variants"]["sd"] is not None and t["systems"]["sd"] is not None]
    overall = {
        "topics": len(topics),
        "variants": sum(t["variants"]["n"] for t in per_topic),
        "systems": len(systems),
        "topics_compared": len(compared),
        "mean_sd_variants": _mean(t["variants"]["sd"] for t in compared),
        "mean_sd_systems": _mean(t["systems"]["sd"] for t in compared),
        "mean_iqr_variants": _mean(t["variants"]["iqr"] for t in compared),
        "mean_iqr_systems": _mean(t["systems"]["iqr"] for t in compared),
        "topics_variants_wider": sum(t["variants"]["sd"] > t["systems"]["sd"] for t in compared),
    }
    step(0.6)
    decomposition, note = None, ""
    if decompose:
        decomposition, note = _decompose(per_model, judged, specs, order)
    step(1.0)
    return {"topic_set": topic_set, "measure": key, "qrels": judged.source, "model": source.model,
            "collection": source.collection, "order": order, "systems": [t for t, _, _ in systems],
            "scores": rows, "per_topic": per_topic, "overall": overall,
            "decomposition": decomposition, "decomposition_note": note}


def _mean(values):
    values = [v for v in values if v is not None]
    return float(sum(values) / len(values)) if values else None


def _decompose(per_model, qrels, specs, order) -> tuple[dict | None, str]:
    """REML components of the variants' scores under every retrieval model; (None, why)
    when the data cannot carry the model."""
    if len(per_model) < 2:
        return None, ("the decomposition needs variant rankings of at least two retrieval models "
                      f"(found {', '.join(s.model or '' for s in per_model)}); run the variants "
                      "through another model")
    frames = []
    for source in per_model:
        rankings, info = _variant_rankings(source.run_id)
        for qid, score in _variant_scores(rankings, info, qrels, specs, order).items():
            topic, label, _ = info[qid]
            frames.append((source.model, topic, label, score))
    scores = variance.intent_scores_frame(frames)
    # keep the (topic, variant) pairs every model scored
    counts = scores.groupby(["query", "intent"])["system"].transform("nunique")
    full = scores[counts == len(per_model)]
    dropped = int(len(scores) - len(full))
    try:
        fitted = variance.fit_models(full, full=True)
    except ValueError as exc:
        return None, f"the mixed models cannot be fitted: {exc}"
    comps = fitted["full"]
    total = sum(v ** 2 for v in comps.values())
    shares = {k.replace("sd_", ""): (v ** 2 / total if total else None) for k, v in comps.items()}
    system_means = full.groupby("system")["score"].mean()
    note = (f"{dropped} score(s) of variants not ranked by every model were left out" if dropped else "")
    return {"models": [s.model for s in per_model], "components": comps, "shares": shares,
            "model1": fitted["model1"], "model2": fitted["model2"], "model3": fitted["model3"],
            "data": fitted["data"], "system_means": {k: float(v) for k, v in system_means.items()},
            "sd_system_means": float(np.std(system_means.to_numpy(), ddof=1))}, note


#: the variance components by name, as the page's table and figure say them (the variant
#: is the intent nested in its topic)
COMPONENTS = {"query": "topic", "query_system": "topic × model",
              "query_intent": "variant within topic", "residual": "residual"}


def figure_rows(result: dict) -> dict:
    """The rows behind the page's figures: box plots of scores per topic (variants next to
    systems) and the variance shares."""
    out = {"spread": [{"topic": r["topic"], "kind": "user variants" if r["kind"] == "variant" else "systems",
                       "name": r["name"], "people": r["people"], "score": r["score"]}
                      for r in result["scores"]]}
    if result.get("decomposition"):
        out["components"] = [{"component": COMPONENTS.get(k, k), "sd": result["decomposition"]["components"]["sd_" + k],
                              "share": v} for k, v in result["decomposition"]["shares"].items()]
    return out


def per_topic_rows(result: dict) -> list[dict]:
    """One row per topic with the variants' and the systems' spread, for CSV and tables."""
    rows = []
    for t in result["per_topic"]:
        row = {"topic": t["topic"]}
        for side in ("variants", "systems"):
            row.update({f"{side}_{k}": t[side][k] for k in SUMMARY})
        row["sd_ratio"] = t["sd_ratio"]
        rows.append(row)
    return rows
