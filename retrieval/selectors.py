"""Reads of retrieval data for other apps (pooling reads every ranking of a topic set)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
from django.db import connection, transaction
from django.db.models import Max, Q

from .models import Collection, Docid, RetrievalModel, Run, RunQuery
from .rankings import DOCID_DTYPE, SCORE_DTYPE


@dataclass(frozen=True)
class RankingRecord:
    """One contributing ranking for pooling.

    ``source`` is "user" (a crowd or imported variant) or "system" (an imported run);
    ``label`` is the variant label or the run tag; ``weight`` counts the answers, the
    people who typed the query (1 for system runs).
    """

    topic_id: str
    source: str
    run_id: int
    label: str
    weight: int
    users: tuple[str, ...]
    docids: np.ndarray
    scores: np.ndarray | None  # None when read without scores


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


@dataclass(frozen=True)
class UserRankingSource:
    """The run whose rankings stand for the user variants of one (collection, model): the
    newest finished variants run of the topic set with that collection and model."""

    run_id: int
    collection: str | None
    model: str | None
    depth: int


def user_ranking_sources(topic_set_name: str) -> list[UserRankingSource]:
    """One source per (collection, model) that has a finished variants run, ordered by
    collection then model name (one query)."""
    rows = (
        Run.objects.filter(topic_set__name=topic_set_name, kind=Run.KIND_RETRIEVAL,
                           source="variants", status="done")
        .order_by("-created", "-id")
        .values_list("id", "collection__name", "model__name", "depth")
    )
    newest: dict[tuple, UserRankingSource] = {}
    for run_id, collection, model, depth in rows:
        newest.setdefault((collection, model), UserRankingSource(run_id, collection, model, depth))
    return sorted(newest.values(), key=lambda s: (s.collection or "", s.model or ""))


def _names(values) -> str:
    return ", ".join(sorted({v or "(none)" for v in values}))


def user_ranking_source_get(
    topic_set_name: str, *, model_name: str | None = None, collection_name: str | None = None
) -> UserRankingSource | None:
    """The one source of user rankings a pool or an analysis may use, or None when the topic
    set has no finished variants run (of that model and collection).

    A person must count once: when rankings of more than one model (or collection) remain
    after the filters, this raises naming them instead of choosing or adding them up.
    """
    sources = user_ranking_sources(topic_set_name)
    if model_name is not None:
        sources = [s for s in sources if s.model == model_name]
    if collection_name is not None:
        sources = [s for s in sources if s.collection == collection_name]
    if len({s.model for s in sources}) > 1:
        raise ValueError(
            f"topic set {topic_set_name!r} has user rankings from more than one model "
            f"({_names(s.model for s in sources)}); choose one model so that every person "
            "counts once"
        )
    if len(sources) > 1:
        raise ValueError(
            f"topic set {topic_set_name!r} has user rankings of model {sources[0].model!r} "
            f"over more than one collection ({_names(s.collection for s in sources)}); "
            "choose one collection so that every person counts once"
        )
    return sources[0] if sources else None


def contributing_run_ids(topic_set_name: str, *, sources: Iterable[str] = ("user", "system"),
                         model_name: str | None = None,
                         collection_name: str | None = None) -> list[int]:
    """The runs whose rankings contribute now, ascending: the newest finished variants run
    of the one (collection, model) :func:`user_ranking_source_get` allows, and every
    finished system run. A pool records these when it is created and reads only them
    afterwards, so a run imported or finished later changes nothing it built."""
    sources = _sources_check(sources)
    ids: set[int] = set()
    if "user" in sources:
        chosen = user_ranking_source_get(topic_set_name, model_name=model_name,
                                         collection_name=collection_name)
        if chosen is not None:
            ids.add(chosen.run_id)
    if "system" in sources:
        ids.update(Run.objects.filter(topic_set__name=topic_set_name, kind=Run.KIND_SYSTEM,
                                      status="done").values_list("id", flat=True))
    return sorted(ids)


def _sources_check(sources: Iterable[str]) -> set[str]:
    sources = set(sources)
    unknown = sources - {"user", "system"}
    if unknown:
        raise ValueError(f"unknown ranking source(s) {sorted(unknown)}; use user and/or system")
    return sources


def _contributing(topic_set_name, sources, model_name, collection_name,
                  run_ids: Iterable[int] | None = None) -> Q:
    """The RunQuery filter selecting the contributing runs of :func:`ranking_records`:
    exactly ``run_ids`` when given — their user-variant run (at most one) for "user",
    their system runs for "system" — else those of :func:`contributing_run_ids`."""
    if run_ids is None:
        return Q(run_id__in=contributing_run_ids(
            topic_set_name, sources=sources, model_name=model_name,
            collection_name=collection_name))
    sources = _sources_check(sources)
    rows = list(Run.objects.filter(id__in={int(i) for i in run_ids})
                .values_list("id", "kind", "source"))
    variants = sorted(i for i, kind, source in rows
                      if kind == Run.KIND_RETRIEVAL and source == "variants")
    chosen = [i for i, kind, _ in rows if kind == Run.KIND_SYSTEM] if "system" in sources else []
    if "user" in sources:
        if len(variants) > 1:
            raise ValueError(f"runs {', '.join(map(str, variants))} are all user-variant "
                             "runs; give one so that every person counts once")
        chosen += variants
    return Q(run_id__in=sorted(chosen))


def ranking_records(
    topic_set_name: str,
    *,
    sources: Iterable[str] = ("user", "system"),
    model_name: str | None = None,
    collection_name: str | None = None,
    topic_ids: Iterable[str] | None = None,
    with_scores: bool = True,
    run_ids: Iterable[int] | None = None,
) -> Iterator[RankingRecord]:
    """Stream the rankings that contribute to pools and analyses of a topic set, as packed
    arrays.

    Only finished runs contribute. User rankings: one per variant, from the newest finished
    variants run of the one (collection, model) that :func:`user_ranking_source_get`
    allows — never two models or two runs of one person's query. System rankings: one per
    finished imported run (tags are unique per topic set). Order: topic (natural order),
    then source, then run id, then label — deterministic. ``with_scores=False`` leaves the scores in
    the database (pools need only the docids: a third of the bytes).

    With ``run_ids`` (the runs a pool recorded) exactly those runs contribute, whatever
    was imported or finished since; ``sources`` still picks user or system rankings among
    them, and the model and collection are theirs.
    """
    qs = RunQuery.objects.filter(
        _contributing(topic_set_name, sources, model_name, collection_name, run_ids),
        run__topic_set__name=topic_set_name, ranking__isnull=False)
    if topic_ids is not None:
        qs = qs.filter(topic__topic_id__in=[str(t) for t in topic_ids])
    columns = ["topic__topic_id", "run__kind", "run_id", "label", "weight", "users",
               "ranking__docids"] + (["ranking__scores"] if with_scores else [])
    rows = qs.order_by("topic__sort_key", "run__kind", "run_id", "label").values_list(*columns)
    for topic_id, kind, run_id, label, weight, users, d, *s in rows.iterator(chunk_size=2000):
        yield RankingRecord(
            topic_id=topic_id,
            source="system" if kind == Run.KIND_SYSTEM else "user",
            run_id=run_id,
            label=label,
            weight=weight,
            users=tuple(u for u in users.split("\n") if u),
            docids=np.frombuffer(bytes(d), dtype=DOCID_DTYPE),
            scores=np.frombuffer(bytes(s[0]), dtype=SCORE_DTYPE) if with_scores else None,
        )


def ranking_depth(topic_set_name: str, *, sources: Iterable[str] = ("user", "system"),
                  model_name: str | None = None, collection_name: str | None = None,
                  run_ids: Iterable[int] | None = None) -> int:
    """The length of the longest contributing ranking (0 when there is none): the depth to
    which the stored rankings reach (of exactly ``run_ids`` when given)."""
    runs = _contributing(topic_set_name, sources, model_name, collection_name, run_ids)
    got = RunQuery.objects.filter(runs, run__topic_set__name=topic_set_name).aggregate(
        longest=Max("ranking__length"))["longest"]
    return int(got or 0)


DOCID_RANGE_DENSITY = 0.25  # wanted ids ≥ this share of their id span: scan the span
DOCID_IN_BATCH = 5000  # ids per ``IN (...)`` list otherwise (SQLite's variable limit)


def _wanted_span(ids) -> tuple[np.ndarray, bool]:
    """The distinct ids, and whether they fill enough of their span to scan it."""
    wanted = np.asarray(ids, dtype=np.int64).reshape(-1)
    if wanted.size > 1 and not (wanted[1:] > wanted[:-1]).all():  # a remap's vocabulary is sorted and distinct already
        wanted = np.unique(wanted)
    dense = bool(wanted.size) and wanted.size >= DOCID_RANGE_DENSITY * (
        int(wanted[-1]) - int(wanted[0]) + 1)
    return wanted, dense


def _one_query_where(wanted: np.ndarray, dense: bool) -> tuple[str, list] | None:
    """A WHERE clause reading ``wanted`` in one query: the id range when the ids fill it
    (rows outside ``wanted`` are filtered afterwards), one array parameter on PostgreSQL
    (``IN`` lists of thousands of literals cost ~0.2 s each there); None elsewhere."""
    if dense:
        return "id >= %s AND id <= %s", [int(wanted[0]), int(wanted[-1])]
    if connection.vendor == "postgresql":
        return "id = ANY(%s)", [wanted.tolist()]
    return None


def _docid_rows(columns: str, where: str, params: list, order_by: str = "") -> list[tuple]:
    # A plain client-side cursor: a server-side one (QuerySet.iterator) costs a round trip
    # per chunk and Django's row machinery per row, 3x the time for a pool's docids.
    table = connection.ops.quote_name(Docid._meta.db_table)
    sql = f"SELECT {columns} FROM {table} WHERE {where}"
    if order_by:
        sql += f" ORDER BY {order_by}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# PostgreSQL's binary form of a one-dimensional int4[] (array_send): a 20-byte header
# (dimensions, flags, element type, length, lower bound), then per element its length
# (int32) and value (int32), big-endian.
_ARRAY_HEADER = 20
_ARRAY_ITEM = np.dtype([("length", ">i4"), ("id", ">i4")])
ORDER_CHECKS = 256  # adjacent pairs whose strings confirm an order read from PostgreSQL


def _ordered_ids(where: str, params: list, order_by: str) -> np.ndarray:
    """The ids of the rows matching ``where``, in ``order_by`` order.

    On PostgreSQL they come as one int4[] value in binary (2M ids as one buffer, where
    2M Python rows cost ~1 s more), aggregated from a sorted subquery — an order
    PostgreSQL keeps for a plain aggregate without parallel workers (turned off here);
    a sample of adjacent pairs is checked against the strings all the same.
    """
    if connection.vendor != "postgresql":
        rows = _docid_rows("id", where, params, order_by=order_by)
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    table = connection.ops.quote_name(Docid._meta.db_table)
    sql = (f"SELECT array_send(array_agg(id)) FROM "
           f"(SELECT id FROM {table} WHERE {where} ORDER BY {order_by}) AS ordered")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        cursor.execute(sql, params)
        data = cursor.fetchone()[0]
    if data is None:
        return np.zeros(0, np.int64)
    items = np.frombuffer(bytes(data), dtype=_ARRAY_ITEM, offset=_ARRAY_HEADER)
    if not (items["length"] == 4).all():
        raise ValueError("unexpected binary layout reading ordered docid ids")
    got = items["id"].astype(np.int64)
    _order_check(got)
    return got


def _order_check(ids: np.ndarray) -> None:
    """Raise unless evenly spaced adjacent pairs of ``ids`` are in docid code point order."""
    if ids.size < 2:
        return
    first = np.unique(np.linspace(0, ids.size - 2, min(ORDER_CHECKS, ids.size - 1)).astype(int))
    pairs = np.stack([ids[first], ids[first + 1]], axis=1)
    rows = _docid_rows("id, docid", "id = ANY(%s)", [np.unique(pairs).tolist()])
    names = dict(rows)
    if any(names[int(a)] > names[int(b)] for a, b in pairs.tolist()):
        raise RuntimeError("the database returned docids out of code point order")


def _wanted_rows(rows: list[tuple], wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ids of ``rows`` (first column) and the positions of those in ``wanted``."""
    got = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return got, np.flatnonzero(np.isin(got, wanted, assume_unique=True))


def _missing_error(wanted: np.ndarray, found: int) -> ValueError:
    return ValueError(f"{int(wanted.size) - found} docid ids are not in the docid vocabulary")


def docid_strings(ids) -> dict[int, str]:
    """Map integer docid ids back to their strings.

    Vocabulary ids of one collection are allocated together, so the ids a pool or a run
    needs usually fill most of their span: then one range scan, filtered here, replaces
    hundreds of ``IN`` lists (the bottleneck of pool builds and exports at depth 1000).
    """
    wanted, dense = _wanted_span(ids)
    if not wanted.size:
        return {}
    one_query = _one_query_where(wanted, dense)
    if one_query is not None:
        rows = _docid_rows("id, docid", *one_query)
        got, keep = _wanted_rows(rows, wanted)
        out = dict(zip(got[keep].tolist(), [rows[k][1] for k in keep.tolist()]))
    else:
        out = {}
        chunks = wanted.tolist()
        for start in range(0, len(chunks), DOCID_IN_BATCH):
            chunk = chunks[start : start + DOCID_IN_BATCH]
            out.update(Docid.objects.filter(id__in=chunk).values_list("id", "docid"))
    if len(out) != wanted.size:
        raise _missing_error(wanted, len(out))
    return out


# ORDER BY clauses that sort docids by code point, as Python sorts str: PostgreSQL's "C"
# collation compares bytes, and UTF-8 byte order is code point order; SQLite's default
# BINARY collation compares the UTF-8 bytes too.
_CODE_POINT_ORDER = {"postgresql": 'docid COLLATE "C"', "sqlite": "docid"}


def docid_order(ids) -> np.ndarray:
    """The distinct ids, ordered by their docid strings in code point order.

    Pools and analyses break ties by docid string; this gives that order without
    moving the strings out of the database when the ids fill their span.
    """
    wanted, dense = _wanted_span(ids)
    if not wanted.size:
        return wanted
    order_by = _CODE_POINT_ORDER.get(connection.vendor)
    one_query = _one_query_where(wanted, dense)
    if order_by is None or one_query is None:
        strings = docid_strings(wanted)
        names = [strings[i] for i in wanted.tolist()]
        return wanted[np.asarray(sorted(range(len(names)), key=names.__getitem__), np.int64)]
    got = _ordered_ids(*one_query, order_by=order_by)
    keep = np.flatnonzero(np.isin(got, wanted, assume_unique=True))
    if keep.size != wanted.size:
        raise _missing_error(wanted, int(keep.size))
    return got[keep]


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
    """``(qid, docids, scores)`` for every ranked query of a run, by topic (natural order)
    then label."""
    rows = list(
        RunQuery.objects.filter(run=run, ranking__isnull=False)
        .order_by("topic__sort_key", "label")
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
            .order_by("topic__sort_key", "label"))


def document_raw(collection: Collection, docid: str) -> str | None:
    """The raw text of a document of a collection (read from its index)."""
    from django.conf import settings

    from . import anserini

    anserini.configure(settings.ANSERINI_JAVA_HOME)
    return anserini.doc_raw(collection.index_path, docid)


def run_chunk_list(run: Run):
    """The chunks (units of work) of a run with their status, lease and last error."""
    from .models import RunChunk

    return RunChunk.objects.filter(run=run).defer("keys").order_by("index")


def run_job_list() -> list[dict]:
    """Every run as a job: state, queries ranked of total, chunks by state, the leases of
    running chunks (holder, expiry) and the last error, newest first."""
    from django.db.models import Count

    from .models import RunChunk

    chunks: dict[int, dict] = {}
    for run_id, status, n in (RunChunk.objects.order_by().values("run_id", "status")
                              .annotate(n=Count("id")).values_list("run_id", "status", "n")):
        chunks.setdefault(run_id, {})[status] = n
    held: dict[int, list] = {}
    for run_id, index, holder, expires, attempts in (
            RunChunk.objects.filter(status="running").order_by("run_id", "index")
            .values_list("run_id", "index", "holder", "lease_expires", "attempts")):
        held.setdefault(run_id, []).append(
            {"chunk": index, "holder": holder, "expires": expires, "attempt": attempts})
    return [{
        "id": run.id,
        "topic_set": run.topic_set.name,
        "collection": run.collection.name if run.collection else None,
        "model": run.model.name if run.model else None,
        "tag": run.tag,
        "source": run.source,
        "state": run.status,
        "done": run.completed,
        "total": run.total,
        "chunks": chunks.get(run.id, {}),
        "leases": held.get(run.id, []),
        "error": run.error,
    } for run in run_list().order_by("-created", "-id")]


def collection_texts(collection: Collection, docids) -> dict[str, str]:
    """``{docid: indexed text}`` of the documents ``docids`` of a collection, read from the
    collection's file (one pass; documents not in the file are left out). For analyses that
    need many documents' text at once, where reading each from the index would be slow."""
    from .collections_io import read_collection

    wanted = set(docids)
    out: dict[str, str] = {}
    for doc in read_collection(collection.source_path, collection.format, allow_empty=True):
        if doc.docid in wanted:
            out[doc.docid] = doc.contents
            if len(out) == len(wanted):
                break
    return out
