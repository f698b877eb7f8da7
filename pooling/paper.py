"""The rows behind the seed paper's figures and tables (Moffat et al., on user query
variability and pooling): Figure 1 (:func:`pool_growth_rows`), Figure 2
(:func:`rbo_distribution_rows`), Figure 3 (:func:`rank_weight_rows`) and Tables 1–2
(:func:`judgment_table`). :mod:`pooling.figures` draws them; the analyses they are made
from are :mod:`pooling.analysis`. Nothing here writes.
"""
from __future__ import annotations

from typing import Iterable

from common.naturalsort import natural_key

from . import selectors
from .analysis import pool_growth_analysis, run_ids_text
from .models import Pool

#: the sources of Tables 1–2, in the paper's order
TABLE_SOURCES = (Pool.SOURCES_SYSTEMS, Pool.SOURCES_USERS, Pool.SOURCES_COMBINED)


def pool_growth_rows(topic_set_name: str, *, depths: Iterable[int] = (10, 20, 50, 100),
                     model_name: str | None = None, collection_name: str | None = None,
                     orders: int = 10, seed: int = 0, run_ids: Iterable[int] | None = None
                     ) -> tuple[list[dict], dict]:
    """The rows behind Figure 1 (:data:`pooling.figures.GROWTH_COLUMNS`): for systems and
    users that have rankings, the mean random-order growth curve of
    :func:`pool_growth_analysis` at each depth, each row carrying its depth's fit.

    Returns ``(rows, results)``, the results keyed by source. A source without rankings
    is left out; with neither, the first one's error is raised."""
    results, errors = {}, []
    for sources in (Pool.SOURCES_SYSTEMS, Pool.SOURCES_USERS):
        try:
            results[sources] = pool_growth_analysis(
                topic_set_name, sources=sources, depths=depths, model_name=model_name,
                collection_name=collection_name, orders=orders, seed=seed, run_ids=run_ids)
        except ValueError as exc:
            if "has no stored" not in str(exc):
                raise
            errors.append(str(exc))
    if not results:
        raise ValueError(" and ".join(errors))
    rows = []
    for sources, res in results.items():
        for depth, curve in res["curves"].items():
            fit = res["fit"][depth]
            for k, n in enumerate(curve["n"]):
                rows.append({"sources": sources, "depth": depth, "n": n,
                             "topics": curve["topics"][k], "mean_size": curve["random"][k],
                             "fit_c": fit["c"], "fit_x": fit["x"], "fit_r2": fit["r2"],
                             "fit_max_n": fit["range"][1] if fit["range"] else None})
    return rows, results


RBO_GROUPS = (("user", "users vs reference"), ("system", "system vs system"))


def rbo_distribution_rows(result: dict, bins: int = 20) -> list[dict]:
    """The rows behind Figure 2 (:data:`pooling.figures.RBO_COLUMNS`): a histogram on
    [0, 1] of the extrapolated RBO of each group of an :func:`rbo_analysis` result that
    has pairs."""
    from common.figures import histogram_rows

    label = dict(RBO_GROUPS)
    if result.get("reference") == "pairs":
        label["user"] = "users vs users"
    return [row for key, _ in RBO_GROUPS if result[key]
            for row in histogram_rows([r["ext"] for r in result[key]], bins=bins,
                                      pairs=label[key])]


def _judgment_of(records) -> dict[str, dict[str, str]]:
    """Per topic and docid: ``relevant`` (some grade > 0) or ``irrelevant`` (judged, none
    above 0; junk included), as in :mod:`pooling.coverage`."""
    from .coverage import judged_relevant

    judged, relevant = judged_relevant(records)
    return {t: {d: "relevant" if d in relevant.get(t, ()) else "irrelevant" for d in docs}
            for t, docs in judged.items()}


def rank_weight_rows(pool: Pool, qrels: Iterable | None = None, *,
                     topic_id: str | None = None, limit: int | None = 1000) -> list[dict]:
    """The rows behind Figure 3 (:data:`pooling.figures.RANK_WEIGHT_COLUMNS`): the pooled
    documents of ``topic_id`` (every topic when None), each topic's in order of summed RBP
    weight (heaviest first, ties by docid: the house order), ``position`` 1, 2, … in that
    order, the first ``limit`` of each topic, with the shallowest rank and the judgment in
    ``qrels`` (plain records with ``topic_id``, ``docid`` and ``rel``, as
    :mod:`common.trec` reads them): ``relevant``, ``irrelevant`` or ``unjudged``."""
    topics = [topic_id] if topic_id is not None else None
    sizes = selectors.pool_sizes(pool)
    if topic_id is not None and topic_id not in sizes:
        raise ValueError(f"pool {pool.label} has no topic {topic_id!r}")
    wanted = set(topics or sizes)
    judgments = _judgment_of([r for r in qrels if r.topic_id in wanted]
                             ) if qrels is not None else {}
    by_topic: dict[str, list] = {}
    for d in selectors.pool_documents(pool, topic_ids=topics):
        by_topic.setdefault(d.topic_id, []).append(d)
    rows = []
    for t in sorted(by_topic, key=natural_key):
        docs = sorted(by_topic[t], key=lambda d: (-d.weight, d.docid))[:limit]
        mine = judgments.get(t, {})
        rows += [{"topic": t, "position": k, "docid": d.docid, "weight": d.weight,
                  "min_rank": d.min_rank, "judgment": mine.get(d.docid, "unjudged")}
                 for k, d in enumerate(docs, start=1)]
    return rows


def judgment_table(topic_set_name: str, *, depth: int, qrels: Iterable, qrels_name: str,
                   model_name: str | None = None, collection_name: str | None = None,
                   run_ids: Iterable[int] | None = None) -> dict:
    """Tables 1–2 of the seed paper: for systems, users and combined that have rankings,
    the depth-``depth`` pool of each topic (every document in the top ``depth`` of some
    contributing ranking) compared with ``qrels`` (plain records, named ``qrels_name`` in
    the result): mean pool size per topic and the
    per-topic fractions relevant, irrelevant and unjudged averaged over topics
    (:func:`pooling.coverage.judgment_table`).

    ``{"rows": [...], "topics": {source: topics}, "topics_without_qrels": {source: n},
    "qrels", "depth", "model", "collection", "runs"}``. A ``model_name`` or
    ``collection_name`` with no user rankings of it is an error, not a table of the
    systems alone."""
    from .coverage import judgment_table as table

    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a whole number of at least 1, not {depth!r}")
    records, _ = selectors.contribution_list(
        topic_set_name, Pool.SOURCES_COMBINED, model_name=model_name,
        collection_name=collection_name, depth=depth, run_ids=run_ids)
    users_missing = not any(r.source == "user" for r in records)
    if not records or (users_missing and (model_name or collection_name)):
        # a model or collection names the user rankings: without them the rows would
        # silently be the systems' alone
        raise ValueError(
            f"topic set {topic_set_name!r} has no stored "
            + ("user " if records else "") + "rankings"
            + (f" of model {model_name!r}" if model_name else "")
            + (f" over collection {collection_name!r}" if collection_name else "")
            + (f" in runs {run_ids_text(run_ids)}" if run_ids is not None else ""))
    strings = selectors.docid_remap(r.docids[:depth] for r in records).strings()
    kinds = {Pool.SOURCES_SYSTEMS: ("system",), Pool.SOURCES_USERS: ("user",),
             Pool.SOURCES_COMBINED: ("user", "system")}
    pools: dict[str, dict[str, set]] = {}
    for source in TABLE_SOURCES:
        mine = [r for r in records if r.source in kinds[source]]
        if not mine:
            continue
        by_topic: dict[str, set] = {}
        for r in mine:
            by_topic.setdefault(r.topic_id, set()).update(
                strings[int(v)] for v in r.docids[:depth].tolist())
        pools[source] = {t: by_topic[t] for t in sorted(by_topic, key=natural_key)}
    topics = sorted({t for p in pools.values() for t in p}, key=natural_key)
    wanted = set(topics)
    qrel_records = [r for r in qrels if r.topic_id in wanted]
    judged_topics = {r.topic_id for r in qrel_records}
    return {
        "topic_set": topic_set_name,
        "qrels": qrels_name,
        "depth": depth,
        "model": model_name,
        "collection": collection_name,
        "runs": sorted({r.run_id for r in records}),
        "rows": table(pools, qrel_records, depth),
        "topics": {s: len(p) for s, p in pools.items()},
        "topics_without_qrels": {s: sum(1 for t in p if t not in judged_topics)
                                 for s, p in pools.items()},
    }
