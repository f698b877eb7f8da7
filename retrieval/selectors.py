"""Reads of retrieval data for other apps (pooling reads every ranking of a topic set)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

from .models import Collection, Docid, RetrievalModel, Run, RunQuery
from .rankings import DOCID_DTYPE, SCORE_DTYPE

USER_SOURCES = ("variants",)


@dataclass(frozen=True)
class RankingRecord:
    """One contributing ranking for pooling.

    ``source`` is "user" (a crowd/imported variant, or a title/description query) or
    "system" (an imported run); ``label`` is the variant label or the run tag; ``weight``
    counts the people who typed the query (1 for system runs).
    """

    topic_id: str
    source: str
    run_id: int
    label: str
    weight: int
    users: tuple[str, ...]
    docids: np.ndarray
    scores: np.ndarray


def collection_get(name: str) -> Collection:
    try:
        return Collection.objects.get(name=name)
    except Collection.DoesNotExist:
        known = ", ".join(Collection.objects.values_list("name", flat=True)) or "none"
        raise ValueError(f"no collection named {name!r} (known: {known})") from None


def retrieval_model_get(name: str) -> RetrievalModel:
    try:
        return RetrievalModel.objects.get(name=name)
    except RetrievalModel.DoesNotExist:
        known = ", ".join(RetrievalModel.objects.values_list("name", flat=True)) or "none"
        raise ValueError(f"no retrieval model named {name!r} (known: {known})") from None


def run_list(topic_set_name: str | None = None):
    qs = Run.objects.select_related("topic_set", "collection", "model")
    if topic_set_name is not None:
        qs = qs.filter(topic_set__name=topic_set_name)
    return qs


def ranking_records(
    topic_set_name: str,
    *,
    sources: Iterable[str] = ("user", "system"),
    model_name: str | None = None,
    collection_name: str | None = None,
    run_ids: Iterable[int] | None = None,
    topic_ids: Iterable[str] | None = None,
) -> Iterator[RankingRecord]:
    """Stream every stored ranking of a topic set, as packed arrays.

    User rankings come from finished retrieval runs over user variants (optionally of one
    model / collection); system rankings from imported system runs. Order: topic id, then
    source, then run id, then label — deterministic.
    """
    sources = set(sources)
    unknown = sources - {"user", "system"}
    if unknown:
        raise ValueError(f"unknown ranking source(s) {sorted(unknown)}; use user and/or system")
    qs = RunQuery.objects.filter(run__topic_set__name=topic_set_name, ranking__isnull=False)
    kinds = []
    if "user" in sources:
        kinds.append(Run.KIND_RETRIEVAL)
    if "system" in sources:
        kinds.append(Run.KIND_SYSTEM)
    qs = qs.filter(run__kind__in=kinds)
    if "user" in sources:
        qs = qs.exclude(run__kind=Run.KIND_RETRIEVAL, run__source__in=["titles", "descriptions"])
    if model_name is not None:
        qs = qs.filter(_kind_q(Run.KIND_SYSTEM) | _model_q(model_name))
    if collection_name is not None:
        qs = qs.filter(_kind_q(Run.KIND_SYSTEM) | _collection_q(collection_name))
    if run_ids is not None:
        qs = qs.filter(run_id__in=list(run_ids))
    if topic_ids is not None:
        qs = qs.filter(topic__topic_id__in=[str(t) for t in topic_ids])
    rows = qs.order_by("topic__topic_id", "run__kind", "run_id", "label").values_list(
        "topic__topic_id",
        "run__kind",
        "run_id",
        "label",
        "weight",
        "users",
        "ranking__docids",
        "ranking__scores",
    )
    for topic_id, kind, run_id, label, weight, users, d, s in rows.iterator(chunk_size=2000):
        yield RankingRecord(
            topic_id=topic_id,
            source="system" if kind == Run.KIND_SYSTEM else "user",
            run_id=run_id,
            label=label,
            weight=weight,
            users=tuple(u for u in users.split("\n") if u),
            docids=np.frombuffer(bytes(d), dtype=DOCID_DTYPE),
            scores=np.frombuffer(bytes(s), dtype=SCORE_DTYPE),
        )


def _kind_q(kind):
    from django.db.models import Q

    return Q(run__kind=kind)


def _model_q(model_name):
    from django.db.models import Q

    return Q(run__model__name=model_name)


def _collection_q(collection_name):
    from django.db.models import Q

    return Q(run__collection__name=collection_name)


def docid_strings(ids) -> dict[int, str]:
    """Map integer docid ids back to their strings."""
    ids = [int(i) for i in np.unique(np.asarray(ids, dtype=np.int64))]
    out: dict[int, str] = {}
    for start in range(0, len(ids), 5000):
        chunk = ids[start : start + 5000]
        out.update(Docid.objects.filter(id__in=chunk).values_list("id", "docid"))
    missing = len(ids) - len(out)
    if missing:
        raise ValueError(f"{missing} docid ids are not in the docid vocabulary")
    return out


def docid_ids(strings: Iterable[str]) -> dict[str, int]:
    """Map docid strings to integer ids (only those already known)."""
    strings = list(dict.fromkeys(strings))
    out: dict[str, int] = {}
    for start in range(0, len(strings), 5000):
        chunk = strings[start : start + 5000]
        out.update(Docid.objects.filter(docid__in=chunk).values_list("docid", "id"))
    return out


def run_get(run_id: int) -> Run:
    try:
        return Run.objects.select_related("topic_set", "collection", "model").get(id=run_id)
    except Run.DoesNotExist:
        raise ValueError(f"no run with id {run_id}") from None


def run_qid(run: Run, topic_id: str, label: str) -> str:
    """The TREC query id of one query of a run: the topic id, or for variant runs
    ``<topic id>:<variant label>``."""
    return f"{topic_id}:{label}" if run.source == "variants" else topic_id


def run_find(*, topic_set_name: str, collection_name: str | None = None,
             model_name: str | None = None, source: str | None = None,
             tag: str | None = None) -> Run:
    """The run named by a tag, or the newest finished run of a collection and model."""
    qs = Run.objects.select_related("model", "collection").filter(topic_set__name=topic_set_name)
    if tag:
        qs = qs.filter(tag=tag)
        what = f"tag {tag!r}"
    else:
        if not (collection_name and model_name):
            raise ValueError("give --tag, or --collection and --model")
        qs = qs.filter(collection__name=collection_name, model__name=model_name, status="done")
        what = f"collection {collection_name!r} and model {model_name!r}"
        if source:
            qs = qs.filter(source=source)
            what += f" ({source})"
    run = qs.order_by("-created", "-id").first()
    if run is None:
        raise ValueError(f"topic set {topic_set_name!r} has no finished run with {what}")
    return run


def run_rankings(run: Run) -> Iterator[tuple[str, list[str], list[float]]]:
    """``(qid, docids, scores)`` for every ranked query of a run, by topic id then label."""
    rows = list(
        RunQuery.objects.filter(run=run, ranking__isnull=False)
        .order_by("topic__topic_id", "label")
        .values_list("topic__topic_id", "label", "ranking__docids", "ranking__scores")
    )
    arrays = [(t, lab, np.frombuffer(bytes(d), dtype=DOCID_DTYPE),
               np.frombuffer(bytes(s), dtype=SCORE_DTYPE)) for t, lab, d, s in rows]
    all_ids = np.concatenate([a[2] for a in arrays]) if arrays else np.zeros(0, DOCID_DTYPE)
    names = docid_strings(all_ids) if all_ids.size else {}
    for topic_id, label, ids, scores in arrays:
        yield run_qid(run, topic_id, label), [names[int(i)] for i in ids], scores.tolist()


def collection_list():
    return Collection.objects.all()


def retrieval_model_list():
    return RetrievalModel.objects.all()


def run_query_list(run: Run):
    return (RunQuery.objects.filter(run=run).select_related("topic", "ranking")
            .order_by("topic__topic_id", "label"))


def document_raw(collection: Collection, docid: str) -> str | None:
    """The raw text of a document of a collection (read from its index)."""
    from django.conf import settings

    from . import anserini

    anserini.configure(settings.ANSERINI_JAVA_HOME)
    return anserini.doc_raw(collection.index_path, docid)
