"""The analyses the evaluation pages run, and what the pages show of their results.

:data:`COMPUTE` maps an analysis kind to the function that computes it from its
parameters (through the same selectors and plain modules as the commands, so a page and a
command give the same numbers); :func:`present` turns a result into tables and figures
(rows plus a function drawing them with :mod:`common.figures`, the rows being the CSV
behind the figure).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from common import figures, fileio
from common.naturalsort import natural_key

Progress = Callable[[float], None]


# --- computing ---------------------------------------------------------------------------


def _qrels_kind(specs) -> str:
    kinds = {s.qrels_kind for s in specs}
    if len(kinds) > 1:
        raise ValueError("measures: ad hoc and diversity measures need different qrels; evaluate them apart")
    return kinds.pop()


def _run_tags(topic_set: str, tags) -> list[str]:
    """The tags asked for, or (none asked for) every finished system run of the topic set."""
    if tags:
        return list(tags)
    from retrieval.models import Run
    from retrieval.selectors import run_list

    found = sorted(set(run_list(topic_set).filter(kind=Run.KIND_SYSTEM, status="done")
                       .values_list("tag", flat=True)))
    if not found:
        raise ValueError(f"topic set {topic_set!r} has no finished system run; import one with import_run")
    return found


def _evaluate(topic_set, tags, measures_text, judgments, qrels, complete, order):
    from evaluation import measures
    from evaluation.measures.engine import check_measures
    from evaluation.selectors import stored_runs
    from evaluation.variability import stored_qrels

    try:
        specs = measures.parse_measures(measures_text)
        stored = stored_qrels(kind=_qrels_kind(specs), judgments=judgments, qrels=qrels)
        check_measures(specs, stored.kind, False)
        runs = measures.RunSet.from_rankings(stored_runs(topic_set=topic_set, tags=_run_tags(topic_set, tags)))
        result = measures.evaluate_runs(runs, stored, specs, order=order, complete=complete)
    except fileio.InputError as exc:
        raise ValueError(str(exc)) from None
    return result, [k for s in specs for k in s.keys], stored.source


def _conventions(measures_text: str) -> list[str]:
    from evaluation import measures

    return [s.convention for s in measures.parse_measures(measures_text) if s.convention]


def _estimate(p: dict) -> dict:
    """Measures estimated from a sampled judgment set (``evaluate --estimator``)."""
    from evaluation import estimators
    from evaluation.selectors import judgment_set_sampled_sample, stored_runs

    name = p.get("judgments") or p.get("qrels")
    try:
        measures = estimators.parse_estimated_measures(p["measures"])
        samples = judgment_set_sampled_sample(name)
        runs = [(tag, estimators.run_rankings(per, p.get("order", "trec_eval")))
                for tag, _, per in stored_runs(topic_set=p["topic_set"], tags=_run_tags(p["topic_set"], p.get("tags")))]
        result = estimators.estimate_runs(runs, samples, measures, p["estimator"])
    except fileio.InputError as exc:
        raise ValueError(str(exc)) from None
    names = estimators.estimated_names(p["estimator"], measures)
    return {"runs": result, "measures": [m.key for m in measures], "qrels": f"sample {name!r}",
            "estimator": p["estimator"], "estimated_as": names, "confidence": 0.95,
            "conventions": [f"{p['estimator']}: " + ", ".join(f"{k} is {v}" for k, v in names.items())
                            + "; 95% intervals from the stratified jackknife, spanning the estimate "
                            "and its bias-corrected value"]}


def evaluate_compute(p: dict, progress: Progress) -> dict:
    if p.get("estimator"):
        return _estimate(p)
    runs, keys, source = _evaluate(p["topic_set"], p.get("tags"), p["measures"], p.get("judgments"),
                                   p.get("qrels"), p.get("complete", False), p.get("order", "trec_eval"))
    out = {"runs": runs, "measures": keys, "qrels": source}
    notes = _conventions(p["measures"])
    if notes:
        out["conventions"] = notes
    return out


def agreement_compute(p: dict, progress: Progress) -> dict:
    from evaluation import analysis

    labels = analysis.labels_from_judgments(p["judgments"])
    progress(0.3)
    return analysis.agreement_report(labels, intent=p.get("intent") or None,
                                     relevant_from=p.get("relevant_from", 1))


def intents_compute(p: dict, progress: Progress) -> dict:
    from evaluation import analysis, intents

    labels = analysis.labels_from_judgments(p["judgments"])
    users = analysis.labels_from_judgments(p["user_judgments"]) if p.get("user_judgments") else None
    topics = analysis.topic_set_topics(p["topic_set"]) if p.get("topic_set") else None
    progress(0.3)
    return intents.intent_properties(labels, users, alpha=p.get("alpha", 0.5), beta=p.get("beta", 0.5),
                                     kind=p.get("similarity", "jaccard"), topics=topics)


def rank_correlation_compute(p: dict, progress: Progress) -> dict:
    from evaluation.ranking import correlations, significance_agreement

    first, keys, source_a = _evaluate(p["topic_set"], p.get("tags"), p["measure"], p.get("judgments"),
                                      p.get("qrels"), True, "trec_eval")
    progress(0.4)
    second, _, source_b = _evaluate(p["topic_set"], p.get("tags"), p["measure"], p.get("judgments_b"),
                                    p.get("qrels_b"), True, "trec_eval")
    key = keys[0]
    a = {tag: r["mean"][key] for tag, r in first.items()}
    b = {tag: r["mean"][key] for tag, r in second.items()}
    out = correlations(a, b)
    out.update({"measure": key, "first": source_a, "second": source_b,
                "scores": [{"system": s, "first": a[s], "second": b[s]} for s in sorted(a)]})
    if p.get("significance"):
        progress(0.6)
        out["significance"] = significance_agreement(
            _topic_matrix(first, key, source_a), _topic_matrix(second, key, source_b),
            trials=p.get("trials") or SIGNIFICANCE_TRIALS, seed=p.get("seed") or 0, alpha=p.get("alpha") or 0.05)
    return out


SIGNIFICANCE_TRIALS = 10_000  # B of Sakai, Dou & Clarke (2013)


def _topic_matrix(result: dict, key: str, source: str):
    """The topics × systems frame of an evaluation's per-topic values, as the command
    reads it from ``evaluate --json`` (:func:`evaluation.ranking.topic_matrix`)."""
    import pandas as pd

    from evaluation.ranking import topic_matrix

    rows = [(tag, topic, values[key]) for tag, run in result.items() for topic, values in run["per_topic"].items()]
    return topic_matrix(pd.DataFrame(rows, columns=["system", "topic", "score"]), source)


def variance_compute(p: dict, progress: Progress) -> dict:
    from evaluation import analysis, variance
    from evaluation.variability import stored_qrels

    qrels = stored_qrels(kind="diversity", judgments=p.get("judgments"), qrels=p.get("qrels"))
    tags = _run_tags(p["topic_set"], p.get("tags"))
    scores = analysis.intent_scores_from_stored(p["topic_set"], tags, qrels, p["measure"])
    progress(0.3)
    result = variance.fit_models(scores, full=True)
    budget = p.get("budget") or int(scores["query"].nunique() * scores.groupby("query")["intent"]
                                    .nunique().max())
    result["budget"] = budget
    result["allocation"] = variance.allocation_table(result["full"], budget, p.get("max_intents"))
    result["measure"] = p["measure"]
    result["qrels"] = qrels.source
    if p.get("intent_taus"):
        from evaluation.ranking import intent_pair_taus

        result["per_topic"] = intent_pair_taus(scores)
    if p.get("subsample"):
        fractions = p.get("fractions") or list(SUBSAMPLE_FRACTIONS)
        repeats = p.get("repeats") or SUBSAMPLE_REPEATS
        seed = p.get("seed") or 0
        progress(0.6)
        result["subsample"] = variance.subsample_taus(scores, fractions, repeats, seed)
        progress(0.75)
        result["subsample"] += analysis.merged_intent_taus_stored(p["topic_set"], tags, qrels, p["measure"],
                                                                  fractions, repeats, seed)
    return result


SUBSAMPLE_FRACTIONS = (0.2, 0.4, 0.6, 0.8)
SUBSAMPLE_REPEATS = 20  # draws per fraction on a page (the command's default is 100)


def variability_compute(p: dict, progress: Progress) -> dict:
    from evaluation.variability import variability

    return variability(p["topic_set"], measure=p["measure"], judgments=p.get("judgments"),
                       qrels=p.get("qrels"), model=p.get("model") or None,
                       decompose=p.get("decompose", True), progress=progress)


COMPUTE: dict[str, Callable[[dict, Progress], dict]] = {
    "evaluate": evaluate_compute,
    "agreement": agreement_compute,
    "intents": intents_compute,
    "rank_correlation": rank_correlation_compute,
    "variance": variance_compute,
    "variability": variability_compute,
}

# the command that prints the same result with --json
COMMANDS = {"evaluate": "evaluate", "agreement": "agreement", "intents": "intent_properties",
            "rank_correlation": "rank_correlation", "variance": "variance_components",
            "variability": "variability"}


# --- presenting ----------------------------------------------------------------------------


#: page headings of result names a word-by-word reading would not say well
HEADINGS = {"sd_ratio": "SD ratio (variants / systems)", "tau_b": "Kendall's τ_b",
            "tau_ap": "τ_AP", "tau_ap_a": "τ_AP (first as truth)",
            "tau_ap_b": "τ_AP (second as truth)", "fleiss_kappa": "Fleiss' κ",
            "cohen_kappa": "Cohen's κ", "krippendorff_alpha": "Krippendorff's α",
            "iqr": "IQR", "q1": "first quartile", "q3": "third quartile"}
_WORDS = {"sd": "SD", "n": "N", "ci": "CI", "rbo": "RBO", "kappa": "κ", "alpha": "α",
          "tau": "τ", "var": "variance of", "iqr": "IQR", "q1": "first quartile",
          "q3": "third quartile"}


def heading(name: str) -> str:
    """A result's name (a CSV column, a series in a figure) as a page says it:
    ``variants_sd`` is "variants SD", ``krippendorff_alpha.ordinal`` "Krippendorff's α
    (ordinal)"; names with no underscore or dot (``topic``, ``P@10``) stay as they are."""
    base, dot, rest = str(name).partition(".")
    text = HEADINGS.get(base) or " ".join(_WORDS.get(w, w) for w in base.split("_") if w)
    return f"{text} ({heading(rest)})" if dot else text


@dataclass
class Table:
    """A result table: ``columns`` are the CSV's names; ``headings`` the page's words for
    some of them (the others read by :func:`heading`)."""

    title: str
    columns: list[str]
    rows: list[list] = field(default_factory=list)
    headings: dict[str, str] = field(default_factory=dict)

    def dict_rows(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows]

    def heads(self) -> list[tuple[str, str]]:
        """``(CSV column, page heading)`` of each column."""
        return [(c, self.headings.get(c) or heading(c)) for c in self.columns]

    def display(self) -> list[list[tuple[str, bool]]]:
        """Rows of ``(text, is_number)`` cells: floats to 4 decimals (3 significant
        digits below 0.001), missing values as a dash."""
        return [[cell_text(v) for v in r] for r in self.rows]


def cell_text(value) -> tuple[str, bool]:
    if value is None:
        return "–", False
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, int):
        return str(value), True
    if isinstance(value, float):
        if value != value:
            return "NaN", True
        return (f"{value:.4f}" if value == 0 or abs(value) >= 0.001 else f"{value:.3g}"), True
    return str(value), False


def param_rows(params: dict) -> list[tuple[str, str]]:
    """An analysis's parameters as ``(heading, text)`` for a key/value list: lists joined
    with commas, yes/no for booleans, empty ones left out."""
    rows = []
    for key in sorted(params):
        value = params[key]
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, (list, tuple)):
            text = ", ".join(str(v) for v in value)
        else:
            text = str(value)
        rows.append((heading(key), text))
    return rows


@dataclass
class Plot:
    title: str
    rows: list[dict]
    draw: Callable[[list[dict]], object]

    def figure(self):
        return self.draw(self.rows)


def flatten(d: dict, prefix: str = "") -> dict:
    """Nested statistics as one level of ``a.b`` keys with scalar values (lists left out)."""
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif not isinstance(v, (list, tuple)):
            out[name] = v
    return out


def _table(title: str, rows: list[dict], headings: dict[str, str] | None = None) -> Table:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return Table(title, columns, [[r.get(c) for c in columns] for r in rows], headings or {})


def _present_estimates(r):
    keys = r["measures"]
    names = r["estimated_as"]
    notes = "".join(f"; {note}" for note in r.get("conventions", []))

    def cells(v: dict) -> list:
        return [v["estimate"], v["low"], v["high"]]

    columns = ["run"] + [c for k in keys for c in (k, f"{k}_low", f"{k}_high")]
    headings = {c: h for k in keys for c, h in ((k, f"{k} ({names[k]})"), (f"{k}_low", f"{k}: 95% low"),
                                                 (f"{k}_high", f"{k}: 95% high"))}
    tables = [Table(f"Estimated mean over topics ({r['qrels']}){notes}", columns,
                    [[tag, *[c for k in keys for c in cells(run["mean"][k])]] for tag, run in r["runs"].items()],
                    headings),
              Table("Per topic (the per-topic intervals cover less often than the means')", ["run", "topic", *columns[1:]],
                    [[tag, t, *[c for k in keys for c in cells(v[k])]]
                     for tag, run in r["runs"].items() for t, v in run["per_topic"].items()], headings)]
    rows = [{"run": tag, "measure": k, "estimate": run["mean"][k]["estimate"], "low": run["mean"][k]["low"],
             "high": run["mean"][k]["high"]} for k in keys for tag, run in r["runs"].items()]
    title = "Estimated means with 95% intervals"
    plots = {"intervals": Plot(title, rows, lambda rows: figures.interval_figure(
        rows, "run", "estimate", "low", "high", series="measure", title=title, xlabel="run",
        ylabel="estimate"))}
    return tables, plots


def _present_evaluate(r):
    if r.get("estimator"):
        return _present_estimates(r)
    keys = r["measures"]
    notes = "".join(f"; {note}" for note in r.get("conventions", []))
    tables = [Table(f"Mean over topics ({r['qrels']}){notes}", ["run", *keys],
                    [[tag, *[run["mean"][k] for k in keys]] for tag, run in r["runs"].items()])]
    per_topic = [{"run": tag, "topic": t, **v} for tag, run in r["runs"].items() for t, v in run["per_topic"].items()]
    tables.append(_table("Per topic", per_topic))
    key = keys[0]
    box_rows = [{"run": row["run"], "topic": row["topic"], key: row[key]} for row in per_topic]
    plots = {"per-topic": Plot(f"{key} per topic, by run", box_rows, lambda rows: figures.box_figure(
        rows, "run", key, title=f"{key} per topic, by run", xlabel="run", ylabel=key))}
    return tables, plots


def _present_agreement(r):
    tables = [_table("Overall", [flatten(r["overall"])]),
              _table("Per topic", [{"topic": t, **flatten(s)} for t, s in r["per_topic"].items()]),
              _table("Per intent", [{"topic": t, "intent": i, **flatten(s)}
                                    for t, ints in r["per_intent"].items() for i, s in ints.items()])]
    rows = []
    for t, s in r["per_topic"].items():
        f = flatten(s)
        for name in ("fleiss_kappa", "krippendorff_alpha.ordinal"):
            if f.get(name) is not None:
                rows.append({"topic": t, "statistic": heading(name), "value": f[name]})
    plots = {}
    if rows:
        plots["per-topic"] = Plot("Agreement per topic", rows, lambda rows: figures.bar_figure(
            rows, "topic", "value", series="statistic", title="Agreement per topic", xlabel="topic",
            ylabel="agreement"))
    return tables, plots


def _present_intents(r):
    tables = [_table("Overall", [flatten(r["overall"])])]
    tables.append(_table("Intents", [{"topic": t, "intent": i, **flatten(e)}
                                     for t, entry in r["per_topic"].items() for i, e in entry["intents"].items()]))
    tables.append(_table("Topics", [{"topic": t, **flatten({k: v for k, v in entry.items() if k != "intents"})}
                                    for t, entry in r["per_topic"].items()]))
    curves = r.get("curves", {})
    betas = curves.get("beta", [])
    rows = []
    if curves.get("mean_completeness"):
        rows += [{"beta": b, "curve": "completeness (mean over topics)", "value": v}
                 for b, v in zip(betas, curves["mean_completeness"]) if v is not None]
    plaus = [c for per in (curves.get("plausibility") or {}).values() for c in per.values()]
    for k, b in enumerate(betas):
        values = [c[k] for c in plaus if c[k] is not None]
        if values:
            rows.append({"beta": b, "curve": "plausibility (mean over intents)", "value": sum(values) / len(values)})
    plots = {}
    if rows:
        plots["beta-curves"] = Plot("Plausibility and completeness over β", rows, lambda rows: figures.line_figure(
            rows, "beta", "value", series="curve", title="Plausibility and completeness over β",
            xlabel="β (similarity threshold)", ylabel="fraction"))
    return tables, plots


def _present_rank_correlation(r):
    stats = {k: r[k] for k in ("systems", "tau_b", "tau_ap", "tau_ap_a", "tau_ap_b")}
    tables = [_table(f"{r['measure']}: {r['first']} against {r['second']}", [stats]),
              _table("System scores", r["scores"])]
    plots = {"scores": Plot("System scores under both evaluations", r["scores"], lambda rows: figures.scatter_figure(
        rows, "first", "second", title=f"{r['measure']} under two evaluations", xlabel=r["first"],
        ylabel=r["second"], diagonal=True, labels="system"))}
    if "significance" in r:
        s = r["significance"]
        tables.insert(1, _table(
            f"Significance agreement: randomised two-sided Tukey HSD, B = {s['trials']}, seed {s['seed']}, "
            f"α = {s['alpha']} (TR: {r['first']}; PS: {r['second']})",
            [{k: s[k] for k in ("systems", "pairs", "TR", "PS", "TR-PS", "TR&PS", "PS-TR", "opposite")}]))
        rows = [{"set": k, "pairs": s[k]} for k in ("TR", "PS", "TR-PS", "TR&PS", "PS-TR")]
        title = f"Significantly different system pairs (of {s['pairs']})"
        plots["significance"] = Plot(title, rows, lambda rows, title=title: figures.bar_figure(
            rows, "set", "pairs", title=title, xlabel="set (TR: first, PS: second evaluation)",
            ylabel="system pairs"))
    return tables, plots


def _intent_tau_rows(per_topic: dict) -> list[dict]:
    """Per topic min/mean/max τ_b between its intents, topics in increasing mean τ (the
    seed's Figure 2); ``position`` is the topic's place on the x axis."""
    order = sorted(per_topic, key=lambda t: (per_topic[t]["mean"], natural_key(t)))
    return [{"position": n, "topic": t, "statistic": k, "tau": per_topic[t][k]}
            for k in ("max", "mean", "min") for n, t in enumerate(order, 1)]


#: the variance components of :mod:`evaluation.variance` (intents nested in topics)
VARIANCE_HEADINGS = {"sd_query": "SD topic", "sd_query_system": "SD topic × system",
                     "sd_query_intent": "SD intent within topic", "sd_residual": "SD residual"}


def _present_variance(r):
    comps = [{"model": m, **v} for m, v in r.items() if m in ("model1", "model2", "model3", "full")]
    tables = [_table(f"Standard deviations ({r['measure']}, REML)", comps, VARIANCE_HEADINGS),
              _table(f"Allocation of a budget of {r['budget']} judged (query, intent) pairs", r["allocation"])]
    rows = [{"intents": a["intents"], "queries": a["queries"], "quantity": q, "variance": a[k]}
            for a in r["allocation"] for q, k in (("one system's mean", "var_mean"),
                                                  ("difference of two systems", "var_difference"))
            if a[k] > 0]
    plots = {}
    if rows:
        title = f"Variance of the mean for N queries × M intents, N·M = {r['budget']}"
        plots["allocation"] = Plot(title, rows, lambda rows, title=title: figures.line_figure(
            rows, "intents", "variance", series="quantity", title=title, xlabel="M intents per query (N = budget / M)",
            ylabel=f"variance of mean {r['measure']}", xlog=True, ylog=True))
    if "per_topic" in r:
        tables.append(_table(f"Per topic: Kendall's τ_b between the system orderings ({r['measure']}) "
                             "of every pair of its intents", [{"topic": t, **v} for t, v in r["per_topic"].items()]))
        if r["per_topic"]:
            title = f"τ_b between intents' system orderings ({r['measure']}), per topic"
            plots["intent-taus"] = Plot(title, _intent_tau_rows(r["per_topic"]), lambda rows, title=title: (
                figures.line_figure(rows, "position", "tau", series="statistic", title=title,
                                    xlabel="topic (in increasing mean τ_b)", ylabel="Kendall's τ_b", xint=True)))
    if "subsample" in r:
        tables.append(_table("Subsampled collections: Kendall's τ_b with the full collection's ordering",
                             r["subsample"]))
        title = f"τ_b of subsampled collections ({r['measure']})"
        labels = {"queries": "fewer queries", "intents": "fewer intents (removed)",
                  "merged": "fewer intents (merged)"}
        rows = [{"fraction": row["fraction"], "kind": labels.get(row["kind"], row["kind"]), "tau": row["mean"],
                 "sd": row["sd"], "repeats": row["repeats"]} for row in r["subsample"]]
        plots["subsample"] = Plot(title, rows, lambda rows, title=title: figures.line_figure(
            rows, "fraction", "tau", series="kind", title=title, xlabel="fraction kept",
            ylabel="mean Kendall's τ_b"))
    return tables, plots


def _present_variability(r):
    from evaluation.variability import COMPONENTS, figure_rows, per_topic_rows

    tables = [_table("Overall", [r["overall"]]),
              _table(f"Per topic: {r['measure']} over user variants ({r['model']}) and systems", per_topic_rows(r)),
              _table("Scores", r["scores"])]
    if r.get("decomposition"):
        d = r["decomposition"]
        tables.insert(1, _table(f"Variance components over models {', '.join(d['models'])}",
                                [{"component": COMPONENTS.get(k, k), "sd": d["components"]["sd_" + k],
                                  "share": v} for k, v in d["shares"].items()]))
    rows = figure_rows(r)
    title = f"{r['measure']} per topic: user variants and systems"
    plots = {"spread": Plot(title, rows["spread"], lambda rows: figures.box_figure(
        rows, "topic", "score", series="kind", title=title, xlabel="topic", ylabel=r["measure"]))}
    if "components" in rows:
        plots["components"] = Plot("Share of variance", rows["components"], lambda rows: figures.bar_figure(
            rows, "component", "share", title="Share of variance by component", xlabel="component",
            ylabel="share of variance"))
    return tables, plots


_PRESENT = {"evaluate": _present_evaluate, "agreement": _present_agreement, "intents": _present_intents,
            "rank_correlation": _present_rank_correlation, "variance": _present_variance,
            "variability": _present_variability}


def present(kind: str, result: dict) -> tuple[list[Table], dict[str, Plot]]:
    """The tables and the figures of a finished analysis."""
    return _PRESENT[kind](result)
