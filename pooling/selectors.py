"""Reads for views, commands, analyses and other apps: pools, the rankings
that contribute to pools (remapped to dense docids in string order) and the arrival order
of the answers behind them. Analyses that sample, fit or test are in :mod:`pooling.analysis`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np
from django.db.models import Prefetch

from common.naturalsort import natural_key
from common.spreadsheet import spreadsheet_writer
from retrieval.selectors import docid_order, docid_strings, ranking_records

from . import pools as pool_maths
from .models import Pool, PoolRun, PoolTopic
from .remap import DocidRemap

ID_DTYPE = np.dtype("<i4")
WEIGHT_DTYPE = np.dtype("<f8")
COUNT_DTYPE = np.dtype("<i4")

SOURCE_KINDS = {
    Pool.SOURCES_USERS: ("user",),
    Pool.SOURCES_SYSTEMS: ("system",),
    Pool.SOURCES_COMBINED: ("user", "system"),
}


@dataclass(frozen=True)
class PooledDocument:
    """One pooled document of a topic, in priority order (``rank`` 1 is judged first).

    ``min_rank`` is the shallowest (1-based) rank at which any contributing ranking placed
    it; ``users`` counts the people whose queries retrieved it, ``systems`` the system runs.
    """

    topic_id: str
    rank: int
    docid: str
    weight: float
    min_rank: int
    users: int
    systems: int


@dataclass(frozen=True)
class TopicArrays:
    """The packed arrays of one pool topic, decoded (docids are vocabulary ids)."""

    topic_id: str
    docids: np.ndarray
    weights: np.ndarray
    min_rank: np.ndarray
    users: np.ndarray
    systems: np.ndarray


def pool_list(topic_set_name: str | None = None):
    qs = (Pool.objects.select_related("topic_set", "collection", "model")
          .prefetch_related(_pool_runs_prefetch()))
    if topic_set_name is not None:
        qs = qs.filter(topic_set__name=topic_set_name)
    return qs


def pool_get(ref) -> Pool:
    """A pool by name, or by id when no pool has that name, with the runs it was built
    from (two queries). ``pool-<id>``, the label the service prints for a pool without a
    name, finds that pool too."""
    import re

    from django.db.models import Q

    ref_s = str(ref)
    label = re.fullmatch(r"pool-(\d{1,18})", ref_s)
    if ref_s.isdigit() and len(ref_s) <= 18:
        cond = Q(name=ref_s) | Q(pk=int(ref_s))
    elif label:
        cond = Q(name=ref_s) | (Q(pk=int(label.group(1))) & (Q(name__isnull=True) | Q(name="")))
    else:
        cond = Q(name=ref_s)
    pools = list(Pool.objects.select_related("topic_set", "collection", "model")
                 .prefetch_related(_pool_runs_prefetch()).filter(cond)[:2])
    pools.sort(key=lambda p: p.name != ref_s)  # a name match wins over an id match
    if not pools:
        raise ValueError(f"no pool {ref_s!r} (give a pool id or name)")
    return pools[0]


def pool_run_ids(pool: Pool) -> list[int]:
    """The ids of the runs the pool was built from, ascending (one query)."""
    return list(PoolRun.objects.filter(pool=pool).order_by("run_id")
                .values_list("run_id", flat=True))


def _pool_runs_prefetch() -> Prefetch:
    return Prefetch("pool_runs", queryset=PoolRun.objects.select_related("run__model"))


def pool_run_list(pool: Pool) -> list[dict]:
    """The runs the pool was built from, by id: ``{"id", "kind", "tag", "model", "source"}``
    (``model`` is the retrieval model's name, None for an imported system run). No query
    for a pool from :func:`pool_list` or :func:`pool_get` (prefetched), else one."""
    if "pool_runs" in getattr(pool, "_prefetched_objects_cache", {}):
        pool_runs = pool.pool_runs.all()
    else:
        pool_runs = PoolRun.objects.filter(pool=pool).select_related("run__model")
    runs = sorted((pr.run for pr in pool_runs), key=lambda r: r.id)
    return [{"id": r.id, "kind": r.kind, "tag": r.tag, "model": r.model.name if r.model else None,
             "source": r.source} for r in runs]


def pool_sizes(pool: Pool) -> dict[str, int]:
    """Documents per topic, in natural topic id order (one query; no arrays are read)."""
    rows = PoolTopic.objects.filter(pool=pool).values_list("topic_id", "size")
    return dict(sorted(rows, key=lambda row: natural_key(row[0])))


TOPIC_ROWS_BATCH = 50  # topic rows read together (each holds a few MB of arrays)


def pool_topic_arrays(pool: Pool, topic_ids: Iterable[str] | None = None) -> Iterator[TopicArrays]:
    """The decoded arrays of each topic of a pool, in natural topic id order.

    Queries: one for the topic ids, then one per ``TOPIC_ROWS_BATCH`` topics."""
    qs = PoolTopic.objects.filter(pool=pool)
    if topic_ids is not None:
        qs = qs.filter(topic_id__in=[str(t) for t in topic_ids])
    ordered = sorted(qs.values_list("topic_id", flat=True), key=natural_key)
    for start in range(0, len(ordered), TOPIC_ROWS_BATCH):
        chunk = ordered[start : start + TOPIC_ROWS_BATCH]
        rows = {row[0]: row for row in qs.filter(topic_id__in=chunk).values_list(
            "topic_id", "docids", "weights", "min_rank", "users", "systems")}
        for topic_id in chunk:
            _, d, w, m, u, s = rows[topic_id]
            yield TopicArrays(
                topic_id=topic_id,
                docids=np.frombuffer(bytes(d), dtype=ID_DTYPE),
                weights=np.frombuffer(bytes(w), dtype=WEIGHT_DTYPE),
                min_rank=np.frombuffer(bytes(m), dtype=COUNT_DTYPE),
                users=np.frombuffer(bytes(u), dtype=COUNT_DTYPE),
                systems=np.frombuffer(bytes(s), dtype=COUNT_DTYPE),
            )


STRINGS_BATCH = 200_000  # docids resolved to strings together (several small topics)


def _topics_with_strings(pool: Pool, topic_ids=None) -> Iterator[tuple[TopicArrays, dict]]:
    """Topic arrays with their docid strings, resolving several small topics at once."""
    batch: list[TopicArrays] = []
    size = 0

    def flush():
        ids = np.concatenate([t.docids for t in batch]) if batch else np.zeros(0, ID_DTYPE)
        strings = docid_strings(ids) if len(ids) else {}
        for t in batch:
            yield t, strings

    for t in pool_topic_arrays(pool, topic_ids):
        batch.append(t)
        size += len(t.docids)
        if size >= STRINGS_BATCH:
            yield from flush()
            batch, size = [], 0
    yield from flush()


def pool_documents(pool: Pool, topic_ids: Iterable[str] | None = None) -> Iterator[PooledDocument]:
    """Every pooled document, topic by topic (natural topic id order), in priority order.

    Queries: one for the topic ids, one for the topic rows per 50 topics, and the docid
    reads (one per batch of topics when the ids fill their span).
    """
    for t, strings in _topics_with_strings(pool, topic_ids):
        for i in range(len(t.docids)):
            yield PooledDocument(
                topic_id=t.topic_id,
                rank=i + 1,
                docid=strings[int(t.docids[i])],
                weight=float(t.weights[i]),
                min_rank=int(t.min_rank[i]),
                users=int(t.users[i]),
                systems=int(t.systems[i]),
            )


def pool_docids_by_topic(pool: Pool) -> dict[str, list[str]]:
    """Docid strings of each topic of a pool, in priority order."""
    return {
        t.topic_id: [strings[int(i)] for i in t.docids]
        for t, strings in _topics_with_strings(pool)
    }


def pool_size_summary(pool: Pool) -> dict:
    """``{"pool", "topics", "mean_size", "sizes": {topic: n}}`` (one query)."""
    sizes = pool_sizes(pool)
    return {
        "pool": pool.name or pool.id,
        "topics": len(sizes),
        "mean_size": (sum(sizes.values()) / len(sizes)) if sizes else 0.0,
        "sizes": sizes,
    }


# --- contributing rankings ---------------------------------------------------------------


def docid_remap(arrays: Iterable[np.ndarray]) -> DocidRemap:
    """The remap of the docid ids in ``arrays`` to dense ids in docid string order."""
    return DocidRemap.from_arrays(arrays, order=docid_order, strings=docid_strings)


def contribution_list(
    topic_set_name: str,
    sources: str,
    *,
    model_name: str | None = None,
    collection_name: str | None = None,
    topic_ids: Iterable[str] | None = None,
    on_topic: Callable[[int], None] | None = None,
    depth: int | None = None,
    run_ids: Iterable[int] | None = None,
):
    """The contributing rankings of a topic set (:func:`retrieval.selectors.ranking_records`:
    finished runs only, one ranking per variant of the one allowed model and collection) as
    contributions whose docids are the vocabulary ids as stored (not in string order: give
    :func:`pooling.pools.pool_compute` a ``string_order``, or use
    :func:`ranking_contributions`).

    Returns ``(records, contributions)``: the retrieval records (labels, users; read
    without their scores) and the parallel :class:`pooling.pools.Contribution` list.
    A user contribution weighs its number of answers (``weight``: a variant typed by w
    people counts w). With ``depth`` the contributions hold only each ranking's top
    ``depth``; the records keep their whole rankings. ``on_topic(n)`` is called as the
    n-th topic's rankings start to arrive. With ``run_ids`` exactly those runs contribute
    (a pool's: :func:`pool_run_ids`).
    """
    records = _contributing_records(topic_set_name, sources, model_name, collection_name,
                                    topic_ids, on_topic, run_ids)
    return records, [_contribution(r, r.docids[:depth]) for r in records]


def _contributing_records(topic_set_name, sources, model_name, collection_name, topic_ids,
                          on_topic, run_ids=None) -> list:
    if sources not in SOURCE_KINDS:
        raise ValueError(f"sources must be one of {sorted(SOURCE_KINDS)}, not {sources!r}")
    records = []
    last_topic = None
    topics_seen = 0
    for rec in ranking_records(
        topic_set_name, sources=SOURCE_KINDS[sources], model_name=model_name,
        collection_name=collection_name, topic_ids=topic_ids, with_scores=False,
        run_ids=run_ids,
    ):
        if rec.topic_id != last_topic:
            last_topic = rec.topic_id
            topics_seen += 1
            if on_topic is not None:
                on_topic(topics_seen)
        records.append(rec)
    return records


def _contribution(rec, docids: np.ndarray) -> pool_maths.Contribution:
    return pool_maths.Contribution(
        topic_id=rec.topic_id,
        source=rec.source,
        weight=int(rec.weight) if rec.source == "user" else 1,
        docids=docids,
    )


def ranking_contributions(
    topic_set_name: str,
    sources: str,
    *,
    model_name: str | None = None,
    collection_name: str | None = None,
    topic_ids: Iterable[str] | None = None,
    on_topic: Callable[[int], None] | None = None,
    depth: int | None = None,
    run_ids: Iterable[int] | None = None,
):
    """:func:`contribution_list` with the docids remapped to dense ids in docid string
    order.

    Returns ``(records, contributions, remap)``: the retrieval records, the parallel
    contributions with dense docids, and the remap. With ``depth`` the contributions
    (and the remap) hold only each ranking's top ``depth``; the records keep their whole
    rankings. With ``run_ids`` exactly those runs contribute.
    """
    records = _contributing_records(topic_set_name, sources, model_name, collection_name,
                                    topic_ids, on_topic, run_ids)
    remap = docid_remap(r.docids[:depth] for r in records)
    contributions = [_contribution(r, remap.to_dense(r.docids[:depth])) for r in records]
    return records, contributions, remap


@dataclass(frozen=True, order=True)
class AnswerKey:
    """Where one answer stands in the arrival order of a topic's answers: answers collected
    in a study first, by answer time (then id); then imported answers by worker id; then
    imported answers that name no worker, by variant label."""

    group: int  # 0: collected here; 1: imported with a worker id; 2: imported, anonymous
    when: float  # answer time, seconds since the epoch (collected here), else 0
    worker: str
    label: str
    row: int  # the variant row, then the answer within its count
    k: int


def answer_keys(topic_set_name: str) -> dict[tuple[str, str], list[AnswerKey]]:
    """``{(topic id, variant label): [AnswerKey, ...]}``, one key per answer (a variant
    row with count c gives c answers), each list in arrival order (one query)."""
    from topics.selectors import variant_label, variant_list

    rows = variant_list(topic_set_name).values_list(
        "topic__topic_id", "normalised", "count", "worker_id", "source", "created", "id")
    out: dict[tuple[str, str], list[AnswerKey]] = {}
    labels: dict[str, str] = {}
    for topic_id, normalised, count, worker_id, source, created, row_id in rows.iterator(
            chunk_size=5000):
        label = labels.get(normalised) or labels.setdefault(normalised, variant_label(normalised))
        keys = out.setdefault((topic_id, label), [])
        for k in range(count):
            if source == "crowd":  # collected in a study here (QueryVariant.SOURCE_CROWD)
                keys.append(AnswerKey(0, created.timestamp(), worker_id, label, row_id, k))
            elif worker_id:
                keys.append(AnswerKey(1, 0.0, worker_id, label, row_id, k))
            else:
                keys.append(AnswerKey(2, 0.0, "", label, row_id, k))
    for keys in out.values():
        keys.sort()
    return out


def pool_job_list() -> list[dict]:
    """Every pool build as a job: state, progress, lease (holder, expiry, attempts) and
    the last error, newest first."""
    return [{
        "id": pool.id,
        "name": pool.label,
        "topic_set": pool.topic_set.name,
        "state": pool.status,
        "progress": pool.progress,
        "holder": pool.holder,
        "expires": pool.lease_expires,
        "attempts": pool.attempts,
        "error": pool.error,
    } for pool in Pool.objects.select_related("topic_set").order_by("-created", "-id")]


POOL_EXPORT_FORMATS = ("txt", "csv", "trec")


def pool_done_get(ref) -> Pool:
    """The pool ``ref`` (id or name) when it is finished; ``ValueError`` saying why not."""
    pool = pool_get(ref)
    if pool.status != pool.STATUS_DONE:
        raise ValueError(f"pool {pool.label} is {pool.status}, not done")
    return pool


def _weight(w: float) -> str:
    return repr(float(w))


def pool_export_write(out, pool: Pool, fmt: str) -> int:
    """Write every pooled document of ``pool`` to ``out``, topic by topic in priority order,
    as ``fmt`` (one of :data:`POOL_EXPORT_FORMATS`; the ``export_pool`` command describes
    the columns); returns the number of documents."""
    if fmt not in POOL_EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(POOL_EXPORT_FORMATS)}, not {fmt!r}")
    n = 0
    if fmt == "csv":
        w = spreadsheet_writer(out)
        w.writerow(["topic", "docid", "weight", "min_rank", "users", "systems"])
    tag = pool.label.replace(" ", "_")
    for d in pool_documents(pool):
        if fmt == "csv":
            w.writerow([d.topic_id, d.docid, float(d.weight), d.min_rank, d.users, d.systems])
        elif fmt == "trec":
            out.write(f"{d.topic_id} Q0 {d.docid} {d.rank} {_weight(d.weight)} {tag}\n")
        else:
            out.write(f"{d.topic_id} {d.docid} {_weight(d.weight)} {d.min_rank} "
                      f"{d.users} {d.systems}\n")
        n += 1
    return n
