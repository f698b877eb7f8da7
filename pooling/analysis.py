"""Analyses of pools and of the rankings behind them: growth, rank-biased overlap, coverage
against qrels, and shallowest rank against weight.

Each analysis reads through :mod:`pooling.selectors` (and retrieval's selectors), then
samples, fits or tests with the plain modules (:mod:`pooling.growth`, :mod:`pooling.rbo`,
:mod:`pooling.stats`, :mod:`pooling.coverage`). Nothing here writes.

"People" means answers everywhere: a variant typed by ``w`` people is ``w`` answers, as
in a pool's ``users`` column.

The rows behind the seed paper's figures and tables, made from these analyses, are
:mod:`pooling.paper`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from common.naturalsort import natural_key

from . import growth, selectors, rbo as rbo_maths, stats
from .models import Pool

ORDERED_BY = {
    Pool.SOURCES_USERS: "arrival: answers collected here by answer time, then imported "
                        "answers by worker id",
    Pool.SOURCES_SYSTEMS: "run name",
}
PAIR_LEVEL_NOTE = ("pair-level: pairs of one topic share rankings, so they are not "
                   "independent and the p-value is anti-conservative")


# --- growth ------------------------------------------------------------------------------


def _ordered_contributors(records, sources: str, keys) -> dict[str, list[int]]:
    """Per topic, the record index of every contributor in the "ordered" order.

    Users: one entry per answer (a record of weight w appears w times), ordered by
    :class:`pooling.selectors.AnswerKey`; answers the crowd app no longer lists (the run
    is older than a change of variants) are keyed by the run's worker ids, else anonymous.
    Systems: one entry per run, by run name (tag).
    """
    entries: dict[str, list[tuple]] = {}
    for i, rec in enumerate(records):
        if sources == Pool.SOURCES_SYSTEMS:
            entries.setdefault(rec.topic_id, []).append(
                ((rec.label or f"run-{rec.run_id}", rec.run_id), i))
            continue
        found = keys.get((rec.topic_id, rec.label), [])[: rec.weight]
        for k in range(len(found), rec.weight):
            worker = rec.users[k] if k < len(rec.users) else ""
            found.append(selectors.AnswerKey(1 if worker else 2, 0.0, worker, rec.label, -1, k))
        entries.setdefault(rec.topic_id, []).extend((key, i) for key in found)
    return {t: [i for _, i in sorted(e)] for t, e in entries.items()}


def _fit_summary(n: np.ndarray, mean_curve: np.ndarray, topic_curves: dict, depth: int,
                 common: int) -> dict:
    """The power-law fit of the mean curve over ``1..common`` (every topic reaches it),
    and each topic's own exponent over the same range with their mean and 95% CI."""
    out: dict = {"range": [1, common] if common else None, "c": None, "x": None, "r2": None,
                 "per_topic": {}, "x_mean": None, "x_ci95": None, "note": ""}
    if common < 2:
        out["note"] = (f"some topic has only {common} contributor(s): a fit needs every "
                       "topic to reach at least 2")
        return out
    try:
        fit = growth.power_law_fit(n[:common], mean_curve[:common], depth)
    except ValueError as exc:
        out["note"] = str(exc)
        return out
    out.update(c=fit.c, x=fit.x, r2=fit.r2)
    skipped = []
    for topic_id, curve in topic_curves.items():
        try:
            out["per_topic"][topic_id] = growth.power_law_fit(
                n[:common], curve[:common], depth).x
        except ValueError:
            skipped.append(topic_id)
    if out["per_topic"]:
        ci = stats.mean_ci(list(out["per_topic"].values()))
        out["x_mean"] = ci.mean
        out["x_ci95"] = None if ci.low is None else [ci.low, ci.high]
    if skipped:
        out["note"] = (f"{len(skipped)} topic(s) with empty pools have no exponent: "
                       + ", ".join(skipped[:10]))
    return out


def pool_growth_analysis(
    topic_set_name: str,
    *,
    sources: str,
    depths: Iterable[int] = (10, 100),
    model_name: str | None = None,
    collection_name: str | None = None,
    orders: int = 10,
    seed: int = 0,
    run_ids: Iterable[int] | None = None,
) -> dict:
    """Pool growth as answers (users) or runs (systems) are added, per depth.

    Contributors are answers — a variant typed by ``w`` people counts ``w``, as in pools —
    or system runs. ``ordered`` adds them in their arrival order (answers collected here
    by answer time, imported answers by worker id; runs by name); ``random`` is the mean
    over ``orders`` random orders drawn from ``numpy.random.default_rng(seed)`` topic by
    topic (in natural topic id order).

    ``curves[depth]``: for ``n = 1..max``, the number of topics with at least ``n``
    contributors and the mean pool size over those topics. ``fit[depth]``: the power law
    size ≈ c·depth·n^x fitted (least squares in log space, with R²) to the mean random
    curve over ``n = 1..N`` where N is the fewest contributors of any topic (``range``),
    so every point averages every topic; ``per_topic`` holds each topic's own exponent
    over the same range, with their mean and 95% t interval (``x_mean``, ``x_ci95``).

    The rankings are those of exactly ``run_ids`` when given (a pool's runs:
    :func:`pooling.selectors.pool_run_ids`), else of the runs that contribute now;
    ``runs`` lists the ids of the runs read.
    """
    if sources not in (Pool.SOURCES_USERS, Pool.SOURCES_SYSTEMS):
        raise ValueError(f"growth is measured for users or systems, not {sources!r}")
    depths = sorted({int(d) for d in depths})
    if not depths or depths[0] < 1:
        raise ValueError("give at least one depth, each at least 1")
    if orders < 1:
        raise ValueError("orders must be at least 1")
    records, contribs, _ = selectors.ranking_contributions(
        topic_set_name, sources, model_name=model_name, collection_name=collection_name,
        depth=depths[-1], run_ids=run_ids)
    if not records:
        raise ValueError(
            f"topic set {topic_set_name!r} has no stored {sources} rankings"
            + (f" of model {model_name!r}" if model_name else "")
            + (f" over collection {collection_name!r}" if collection_name else "")
            + (f" in runs {run_ids_text(run_ids)}" if run_ids is not None else "")
        )
    keys = selectors.answer_keys(topic_set_name) if sources == Pool.SOURCES_USERS else {}
    ordered = _ordered_contributors(records, sources, keys)
    topics = sorted(ordered, key=natural_key)
    counts = {t: len(ordered[t]) for t in topics}
    rng = np.random.default_rng(seed)
    perms = {t: [rng.permutation(counts[t]) for _ in range(orders)] for t in topics}
    longest, common = max(counts.values()), min(counts.values())
    n = np.arange(1, longest + 1, dtype=np.float64)
    curves, fits = {}, {}
    local = {}  # per topic: its contributions, and the order as indices into them
    for t in topics:
        used, order = np.unique(np.asarray(ordered[t], dtype=np.int64), return_inverse=True)
        local[t] = ([contribs[i] for i in used.tolist()], order.reshape(-1))
    for d in depths:
        by_topic_ordered, by_topic_random = {}, {}
        for t in topics:
            t_contribs, order = local[t]
            by_topic_ordered[t] = growth.pool_growth(t_contribs, order, d).astype(np.float64)
            by_topic_random[t] = growth.mean_growth(t_contribs, [order[p] for p in perms[t]], d)
        curve = {"n": n.astype(int).tolist(), "topics": [], "ordered": [], "random": []}
        for k in range(longest):
            present = [t for t in topics if counts[t] > k]
            curve["topics"].append(len(present))
            curve["ordered"].append(float(np.mean([by_topic_ordered[t][k] for t in present])))
            curve["random"].append(float(np.mean([by_topic_random[t][k] for t in present])))
        curves[d] = curve
        fits[d] = _fit_summary(n, np.asarray(curve["random"]), by_topic_random, d, common)
    return {
        "topic_set": topic_set_name,
        "sources": sources,
        "model": model_name,
        "collection": collection_name,
        "contributor": "answer" if sources == Pool.SOURCES_USERS else "run",
        "ordered_by": ORDERED_BY[sources],
        "orders": orders,
        "seed": seed,
        "topics": len(topics),
        "contributors": counts,
        "runs": sorted({r.run_id for r in records}),
        "curves": curves,
        "fit": fits,
    }


def run_ids_text(run_ids) -> str:
    return ", ".join(str(i) for i in sorted({int(i) for i in run_ids})) or "(none)"


# --- rank-biased overlap -----------------------------------------------------------------


def _title_run(topic_set_name: str, model: str | None, collection: str | None):
    """The newest finished title-query run of the user rankings' model and collection."""
    from retrieval.selectors import run_list

    qs = run_list(topic_set_name).filter(kind="retrieval", source="titles", status="done",
                                         model__name=model)
    qs = (qs.filter(collection__name=collection) if collection
          else qs.filter(collection__isnull=True))
    run = qs.order_by("-created", "-id").first()
    if run is None:
        raise ValueError(
            f"topic set {topic_set_name!r} has no finished title-query run of model "
            f"{model!r}" + (f" over collection {collection!r}" if collection else "")
            + "; retrieve the titles first, or compare all pairs (reference pairs)"
        )
    return run


@dataclass(frozen=True)
class _RBORuns:
    """The runs an RBO analysis reads: the user-variant run (None: system pairs only), the
    title-query run (reference titles), the system runs."""

    user: object | None
    title: object | None
    system_ids: list[int]


def _rbo_runs_given(topic_set_name: str, run_ids, reference: str) -> _RBORuns:
    """Exactly the runs ``run_ids`` of the topic set: at most one user-variant run, the
    system runs, and for ``reference="titles"`` a title-query run (the newest of the user
    run's model and collection when none is given)."""
    from retrieval.selectors import run_list

    wanted = sorted({int(i) for i in run_ids})
    runs = {r.id: r for r in run_list(topic_set_name).filter(id__in=wanted)}
    missing = [i for i in wanted if i not in runs]
    if missing:
        raise ValueError(f"topic set {topic_set_name!r} has no run {run_ids_text(missing)}")
    retrieved = [runs[i] for i in wanted if runs[i].kind == "retrieval"]
    variants = [r for r in retrieved if r.source == "variants"]
    titles = [r for r in retrieved if r.source == "titles"]
    for what, found in (("user-variant", variants), ("title-query", titles)):
        if len(found) > 1:
            raise ValueError(f"runs {run_ids_text(r.id for r in found)} are all {what} runs; give "
                             "one so that every query counts once")
    user = variants[0] if variants else None
    system_ids = [i for i in wanted if runs[i].kind == "system"]
    if user is None and not system_ids:
        raise ValueError(f"runs {run_ids_text(wanted)} of topic set {topic_set_name!r} hold no "
                         "user-variant or system run")
    title = titles[0] if titles and reference == "titles" else None
    if reference == "titles" and title is None and user is not None:
        title = _title_run(topic_set_name, user.model.name if user.model else None,
                           user.collection.name if user.collection else None)
    return _RBORuns(user, title, system_ids)


def _rbo_runs_now(topic_set_name: str, reference: str, model_name, collection_name) -> _RBORuns:
    """The runs that contribute now: the newest variants run of the one allowed model and
    collection, every finished system run, and for ``reference="titles"`` the newest title
    run of that model and collection.

    Without a user-variant run the system pairs are compared alone, unless a model or
    collection was asked for (then its run is missing) or there is no system run either.
    """
    from retrieval.selectors import contributing_run_ids, run_get, user_ranking_source_get

    source = user_ranking_source_get(topic_set_name, model_name=model_name,
                                     collection_name=collection_name)
    system_ids = contributing_run_ids(topic_set_name, sources=("system",))
    if source is None and (model_name or collection_name or not system_ids):
        raise ValueError(
            f"topic set {topic_set_name!r} has no finished user-variant run"
            + (f" of model {model_name!r}" if model_name else "")
            + (f" over collection {collection_name!r}" if collection_name else "")
            + ("" if system_ids else " and no finished system run")
            + "; retrieve the variants first" + ("" if system_ids else " or import runs")
        )
    user = run_get(source.run_id) if source is not None else None
    title = (_title_run(topic_set_name, source.model, source.collection)
             if reference == "titles" and source is not None else None)
    return _RBORuns(user, title, system_ids)


def _pairs(n: int, max_pairs: int, rng) -> list[tuple[int, int]]:
    """All pairs i < j of n items, or a seeded sample of ``max_pairs`` of them."""
    total = n * (n - 1) // 2
    if total <= max_pairs:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = set()
    while len(chosen) < max_pairs:
        i, j = sorted(rng.choice(n, size=2, replace=False).tolist())
        chosen.add((i, j))
    return sorted(chosen)


@dataclass(frozen=True)
class _Ranked:
    label: str
    docids: np.ndarray  # dense ids in docid string order
    scores: np.ndarray

    @property
    def tied(self) -> bool:
        return bool(self.scores.size > 1 and (self.scores[1:] == self.scores[:-1]).any())


def _rbo_rows(topic_id: str, pairs: list[tuple[_Ranked, _Ranked]], p: float, *,
              reference_first: bool = False) -> list[dict]:
    """RBO of each pair ``(x, y)``, as rows ``{topic, a, b, min, res, ext}`` with ``a`` = x
    and ``b`` = y, or the other way round with ``reference_first`` (x is a reference).

    Pairs without tied scores go through :func:`pooling.rbo.rbo_batch` grouped by their
    first ranking (classic RBO, to ~1e-12 of :func:`pooling.rbo.rbo`); pairs with ties
    through :func:`pooling.rbo.rbo` with the scores (RBO^a).
    """
    rows: list[dict | None] = [None] * len(pairs)
    batches: dict[int, list[int]] = {}
    firsts: dict[int, _Ranked] = {}
    for k, (x, y) in enumerate(pairs):
        if x.tied or y.tied or not x.docids.size or not y.docids.size:
            res = rbo_maths.rbo(x.docids, y.docids, p, a_scores=x.scores, b_scores=y.scores)
            rows[k] = _rbo_row(topic_id, x.label, y.label, res.min, res.res, res.ext,
                               reference_first)
        else:
            batches.setdefault(id(x), []).append(k)
            firsts[id(x)] = x
    for key, ks in batches.items():
        x = firsts[key]
        res = rbo_maths.rbo_batch(x.docids, [pairs[k][1].docids for k in ks], p)
        for n, k in enumerate(ks):
            rows[k] = _rbo_row(topic_id, x.label, pairs[k][1].label,
                               res.min[n], res.res[n], res.ext[n], reference_first)
    return rows  # type: ignore[return-value]


def _rbo_row(topic_id, a, b, rmin, rres, rext, swap=False) -> dict:
    if swap:
        a, b = b, a
    return {"topic": topic_id, "a": a, "b": b,
            "min": float(rmin), "res": float(rres), "ext": float(rext)}


def _per_topic_means(user_rows: list[dict], system_rows: list[dict]) -> list[dict]:
    """Per topic with both kinds of pairs: the mean user and system RBO_ext."""
    by: dict[str, dict[str, list[float]]] = {}
    for group, rows in (("user", user_rows), ("system", system_rows)):
        for r in rows:
            by.setdefault(r["topic"], {"user": [], "system": []})[group].append(r["ext"])
    return [
        {"topic": t, "user_mean": float(np.mean(v["user"])),
         "system_mean": float(np.mean(v["system"])),
         "user_pairs": len(v["user"]), "system_pairs": len(v["system"])}
        for t, v in sorted(by.items(), key=lambda item: natural_key(item[0]))
        if v["user"] and v["system"]
    ]


def _significance(user_rows, system_rows, per_topic, level: str) -> tuple[dict | None, str]:
    """The one-sided test of "user RBO < system RBO", and a note when there is none."""
    alternative = "user RBO < system RBO"
    if level == "pair":
        if not (user_rows and system_rows):
            return None, "no test: user or system pairs are missing"
        res = stats.mann_whitney_less([r["ext"] for r in user_rows],
                                      [r["ext"] for r in system_rows])
        return {"level": "pair", "name": "Mann-Whitney U", "statistic": res.statistic,
                "p_value": res.pvalue, "n_user": res.n_x, "n_system": res.n_y,
                "alternative": alternative, "note": PAIR_LEVEL_NOTE}, ""
    if not per_topic:
        return None, "no test: no topic has both user and system pairs"
    try:
        res = stats.wilcoxon_less([t["user_mean"] for t in per_topic],
                                  [t["system_mean"] for t in per_topic])
    except ValueError as exc:
        return None, f"no test: {exc}"
    return {"level": "topic", "name": "Wilcoxon signed-rank", "statistic": res.statistic,
            "p_value": res.pvalue, "topics": res.n, "topics_nonzero": res.n_nonzero,
            "alternative": alternative,
            "note": "one value per topic: mean user RBO against mean system-pair RBO"}, ""


def rbo_analysis(
    topic_set_name: str,
    *,
    p: float = 0.9,
    reference: str = "titles",
    model_name: str | None = None,
    collection_name: str | None = None,
    max_pairs: int = 2000,
    seed: int = 0,
    test: str = "topic",
    run_ids: Iterable[int] | None = None,
) -> dict:
    """Rank-biased overlap of user-variant rankings and of system-run rankings, per topic.

    ``reference="titles"``: every user ranking against the title-query ranking of its
    topic (the newest finished title run of the user rankings' model and collection).
    ``reference="pairs"``: every pair of user rankings of a topic. System runs are always
    compared pairwise. At most ``max_pairs`` pairs per topic and group (a sample seeded by
    ``seed`` beyond that). Scores are passed on, so tied scores are ties (RBO^a,
    :func:`pooling.rbo.rbo`).

    Significance of "user RBO < system RBO" (``test``): ``"topic"`` (default) takes one
    value per topic — the mean user RBO_ext and the mean system-pair RBO_ext — and runs a
    one-sided Wilcoxon signed-rank test across the topics that have both; ``"pair"`` runs
    a one-sided Mann-Whitney U over every pair, which is anti-conservative because the
    pairs of a topic share rankings.

    A topic set with system runs only gets its system pairs (``user`` is empty and there
    is no test). With ``run_ids`` (a pool's runs: :func:`pooling.selectors.pool_run_ids`,
    or the ``runs`` of an earlier result) exactly those runs are read — a title-query run
    among them is the reference; ``runs`` lists the ids of the runs read.
    """
    from retrieval.selectors import ranking_records, run_rankings

    if reference not in ("titles", "pairs"):
        raise ValueError(f"reference must be titles or pairs, not {reference!r}")
    if test not in ("topic", "pair"):
        raise ValueError(f"test must be topic or pair, not {test!r}")
    if not 0.0 < float(p) < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, not {p}")
    runs = (_rbo_runs_given(topic_set_name, run_ids, reference) if run_ids is not None
            else _rbo_runs_now(topic_set_name, reference, model_name, collection_name))
    title_run = runs.title
    refs: dict[str, tuple[list[str], list[float]]] = {}
    if title_run is not None:
        refs = {qid: (docids, scores) for qid, docids, scores in run_rankings(title_run)}
    records = []
    if runs.user is not None:
        records += list(ranking_records(topic_set_name, sources=("user",),
                                        run_ids=[runs.user.id]))
    if runs.system_ids:
        records += list(ranking_records(topic_set_name, sources=("system",),
                                        run_ids=runs.system_ids))
    # dense ids in docid string order over the stored rankings and the reference rankings
    remap = selectors.docid_remap([r.docids for r in records])
    strings = remap.strings()
    names_of_dense = [strings[int(v)] for v in remap.vocab_of_dense.tolist()]
    extra = sorted({d for docs, _ in refs.values() for d in docs} - set(names_of_dense))
    if extra:
        names = sorted(names_of_dense + extra)
        pos = {d: i for i, d in enumerate(names)}
        to_global = np.array([pos[d] for d in names_of_dense], dtype=np.int64)
    else:
        pos = {d: k for k, d in enumerate(names_of_dense)}
        to_global = np.arange(len(names_of_dense), dtype=np.int64)
    by_topic: dict[str, dict[str, list]] = {}
    for r in records:
        dense = to_global[remap.to_dense(r.docids)] if len(r.docids) else np.zeros(0, np.int64)
        by_topic.setdefault(r.topic_id, {"user": [], "system": []})[r.source].append(
            _Ranked(r.label, dense, np.asarray(r.scores, dtype=np.float64)))
    rng = np.random.default_rng(seed)
    out: dict[str, list] = {"user": [], "system": []}

    for topic_id in sorted(by_topic, key=natural_key):
        users = by_topic[topic_id]["user"]
        if reference == "titles":
            if topic_id in refs and users:
                ref_docs, ref_scores = refs[topic_id]
                ref = _Ranked("title", np.array([pos[d] for d in ref_docs], dtype=np.int64),
                              np.asarray(ref_scores, dtype=np.float64))
                out["user"] += _rbo_rows(topic_id, [(ref, u) for u in users[:max_pairs]], p,
                                         reference_first=True)
        else:
            out["user"] += _rbo_rows(
                topic_id, [(users[i], users[j]) for i, j in _pairs(len(users), max_pairs, rng)], p)
        systems = by_topic[topic_id]["system"]
        out["system"] += _rbo_rows(
            topic_id, [(systems[i], systems[j]) for i, j in _pairs(len(systems), max_pairs, rng)],
            p)

    def summary(rows):
        ext = np.array([r["ext"] for r in rows], dtype=np.float64)
        return {
            "pairs": int(ext.size),
            "mean": float(ext.mean()) if ext.size else None,
            "median": float(np.median(ext)) if ext.size else None,
        }

    per_topic = _per_topic_means(out["user"], out["system"])
    significance, note = _significance(out["user"], out["system"], per_topic, test)
    if runs.user is None:
        note = "system-run pairs only: no user-variant run, so no test"
    user = runs.user
    return {
        "topic_set": topic_set_name,
        "p": float(p),
        "reference": reference,
        "reference_run": title_run.id if title_run else None,
        "model": user.model.name if user is not None and user.model else None,
        "collection": user.collection.name if user is not None and user.collection else None,
        "runs": sorted({r.id for r in (user, title_run) if r is not None}
                       | set(runs.system_ids)),
        "user": out["user"],
        "system": out["system"],
        "summary": {"user": summary(out["user"]), "system": summary(out["system"])},
        "per_topic": per_topic,
        "test": significance,
        "test_note": note,
    }


# --- coverage and the rank/weight scatter --------------------------------------------------


def pool_coverage(pool: Pool, qrels: Iterable) -> dict:
    """Coverage of a pool by judgments: ``{"rows": [per topic], "mean": {...}}`` with the
    columns of :func:`pooling.coverage.coverage` (size, relevant, nonrelevant, unjudged and
    their percentages of the pool size). ``qrels``: plain records with ``topic_id``,
    ``docid`` and ``rel`` (:mod:`common.trec`); those of other topics are ignored."""
    from . import coverage

    docs = selectors.pool_docids_by_topic(pool)
    rows = coverage.coverage(docs, (r for r in qrels if r.topic_id in docs))
    return {"rows": rows[:-1], "mean": rows[-1]}


def pool_rank_weight_points(pool: Pool, qrels: Iterable | None = None,
                            limit: int | None = None):
    """One point per pooled document: shallowest rank, aggregate weight, and (given qrels
    records, as :func:`pool_coverage` takes) whether it is judged and relevant. ``limit``
    keeps an evenly spaced subset, in order."""
    judged: dict[str, dict[str, bool]] = {}
    if qrels is not None:
        topics = set(selectors.pool_sizes(pool))
        for rec in (r for r in qrels if r.topic_id in topics):
            rel = judged.setdefault(rec.topic_id, {})
            rel[rec.docid] = rel.get(rec.docid, False) or rec.rel > 0
    points = []
    for d in selectors.pool_documents(pool):
        t = judged.get(d.topic_id, {})
        points.append({
            "topic": d.topic_id, "docid": d.docid, "min_rank": d.min_rank, "weight": d.weight,
            "users": d.users, "systems": d.systems,
            "judged": d.docid in t, "relevant": t.get(d.docid, False),
        })
    if limit is not None and len(points) > limit:
        step = len(points) / limit
        points = [points[int(i * step)] for i in range(limit)]
    return points
