"""Reads for ``evaluate`` on stored data: runs of a topic set and judgment sets as qrels.

Runs come from :mod:`retrieval.selectors` and judgments from :mod:`judging.selectors`; the
scoring itself is :mod:`evaluation.measures` (no Django there).
"""
from __future__ import annotations

from evaluation.measures import Qrels
from common.fileio import InputError
from judging.selectors import judgment_set_get, judgment_set_sample, qrels_lines
from retrieval.selectors import run_find, run_rankings


def stored_runs(*, topic_set: str, tags: list[str] | None = None, collection: str | None = None,
                model: str | None = None) -> list[tuple[str, str, dict]]:
    """``(tag, description, {topic: (docids, scores, ranks)})`` for the runs named by tag,
    or for the newest finished run of ``collection`` and ``model``.

    Stored rankings keep the (-score, docid) order they were stored in; ranks are their
    positions. Variant runs (one ranking per query variant) are refused: their query ids
    are not topics."""
    if not tags and not (collection and model):
        raise InputError("--topic-set", None, "give --tag, or --collection and --model")
    finders = ([dict(tag=t) for t in tags] if tags else [dict(collection_name=collection, model_name=model)])
    out = []
    for kw in finders:
        try:
            run = run_find(topic_set_name=topic_set, **kw)
        except ValueError as exc:
            raise InputError("--topic-set", None, str(exc)) from None
        where = f"stored run {run.tag or run.pk} of topic set {topic_set!r}"
        if run.source == "variants":
            raise InputError(
                "--topic-set", None, f"{where} ranks query variants, not topics; evaluate a titles, "
                "descriptions or system run")
        per = {}
        for qid, docids, scores in run_rankings(run):
            per[qid] = (docids, scores, list(range(1, len(docids) + 1)))
        if not per:
            raise InputError("--topic-set", None, f"{where} has no rankings")
        tag = run.tag or f"{run.model.name}-{run.collection.name}-{run.source}"
        out.append((tag, where, per))
    return out


def judgment_set_qrels(name: str, kind: str, *, adhoc_intent: str | None = None) -> Qrels:
    """A stored judgment set as ad hoc or diversity qrels (each item's labels combined by
    majority, as ``export_qrels`` does); ``adhoc_intent``: ad hoc qrels from that intent's
    labels instead of the topic-level ones."""
    try:
        lines = qrels_lines(judgment_set_get(name), kind, adhoc_intent=adhoc_intent)
    except ValueError as exc:
        raise InputError("--judgments", None, str(exc)) from None
    judgments: dict = {}
    for line in lines:
        if kind == "adhoc":
            judgments.setdefault(line.topic_id, {})[line.docid] = line.grade
        else:
            judgments.setdefault(line.topic_id, {}).setdefault(line.second, {})[line.docid] = line.grade
    return Qrels(kind, judgments, f"judgment set {name!r}")


def judgment_set_sampled_sample(name: str) -> dict:
    """A sampled judgment set (a task in sample mode) as the estimators read it:
    ``{topic: judging.prels.TopicSample}``."""
    try:
        return judgment_set_sample(judgment_set_get(name))
    except ValueError as exc:
        raise InputError("--judgments", None, str(exc)) from None
