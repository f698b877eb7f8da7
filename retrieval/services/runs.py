"""Retrieval runs: the ready-made models, a run's queries and chunks, what a worker does
with a chunk, and the recount of runs from their rows."""
from __future__ import annotations

import hashlib
import logging
import time

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone

from jobs import leases, registry

from .. import anserini
from ..models import RetrievalModel, Run, RunChunk, Ranking, RunQuery
from ..rankings import pack, query_key
from .errors import RetrievalError
from .vocabulary import vocabulary_ids

log = logging.getLogger(__name__)


def retrieval_models_ensure_defaults() -> None:
    """Create the ready-made models (bm25, bm25-okapi, qld, sdm) where missing.

    ``migrate`` creates them; this restores them after a database flush. Existing
    records, possibly edited by organisers, are left as they are.
    """
    from ..defaults import READY_MADE_MODELS
    from ..models import RetrievalModel

    for row in READY_MADE_MODELS:
        RetrievalModel.objects.get_or_create(name=row["name"], defaults=row)


def model_spec(model: RetrievalModel) -> anserini.ModelSpec:
    return anserini.ModelSpec(
        kind=model.kind, k1=model.k1, b=model.b, mu=model.mu, base=model.sdm_base,
        term_weight=model.term_weight, ordered_weight=model.ordered_weight,
        unordered_weight=model.unordered_weight,
    )


def ranking_key(collection_id: int, model: RetrievalModel, depth: int, text: str) -> str:
    """sha256 of collection id | model parameter signature | depth | query key."""
    raw = f"{collection_id}|{model_spec(model).signature()}|{depth}|{query_key(text)}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _limit(text: str, limit: int) -> tuple[str, str]:
    """Cut an over-long query at a word boundary; returns (text, note)."""
    if len(text) <= limit:
        return text, ""
    cut = text[:limit]
    if " " in cut and not text[limit].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut, f"query truncated from {len(text)} to {len(cut)} characters (MAX_QUERY_CHARS={limit})"


def _run_queries(topic_set, source: str) -> list[dict]:
    from topics.selectors import topic_list

    topics = {t.topic_id: t for t in topic_list(topic_set.name)}
    rows = []
    if source in ("titles", "descriptions"):
        field, label = ("title", "title") if source == "titles" else ("description", "desc")
        if topics and not any(getattr(t, field).strip() for t in topics.values()):
            other = "descriptions" if source == "titles" else "titles"
            raise RetrievalError(
                f"no topic of set {topic_set.name!r} has a {field}: nothing to retrieve "
                f"(try --source {other})"
            )
        for tid in sorted(topics):
            t = topics[tid]
            rows.append(dict(topic=t, label=label, text=" ".join(getattr(t, field).split()),
                             weight=1, users=""))
    elif source == "variants":
        from topics.selectors import variant_groups

        for g in variant_groups(topic_set.name):
            rows.append(dict(topic=topics[g.topic_id], label=g.label, text=g.normalised,
                             weight=g.count, users="\n".join(g.worker_ids)))
    else:
        raise RetrievalError(f"unknown query source {source!r}; use titles, descriptions or variants")
    return rows


def run_create(*, topic_set_name: str, collection_name: str, model_name: str,
               depth: int = 1000, source: str = "titles") -> Run:
    """Create a retrieval run and queue what is not yet retrieved.

    One RunQuery per topic title ("title"), description ("desc") or distinct normalised
    variant (its stable label; weight = sum of counts; users = worker ids, one a line).
    Queries whose key already has a Ranking share it at once; the other keys are queued on
    commit, ``RETRIEVAL_CHUNK_SIZE`` keys per task.
    """
    from topics.selectors import topic_set_get

    from ..selectors import collection_get, retrieval_model_get

    if not 1 <= depth <= 10000:
        raise RetrievalError(f"depth must be between 1 and 10000, got {depth}")
    try:
        topic_set = topic_set_get(topic_set_name)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    collection = collection_get(collection_name)
    if collection.status != "ready":
        raise RetrievalError(f"collection {collection.name!r} is {collection.status}, not ready")
    model = retrieval_model_get(model_name)
    rows = _run_queries(topic_set, source)
    if not rows:
        raise RetrievalError(f"topic set {topic_set_name!r} has no {source} to retrieve")
    limit = settings.MAX_QUERY_CHARS
    with transaction.atomic():
        run = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=topic_set,
                                 collection=collection, model=model, source=source,
                                 depth=depth, status="queued", total=len(rows))
        queries = []
        for r in rows:
            text, note = _limit(r["text"], limit)
            queries.append(RunQuery(run=run, topic=r["topic"], label=r["label"][:200],
                                    query_text=text, weight=r["weight"], users=r["users"],
                                    note=note,
                                    key=ranking_key(collection.id, model, depth, text)))
        keys = sorted({q.key for q in queries})
        existing = dict(Ranking.objects.filter(key__in=keys).values_list("key", "id"))
        for q in queries:
            q.ranking_id = existing.get(q.key)
        RunQuery.objects.bulk_create(queries, batch_size=2000)
        pending = [k for k in keys if k not in existing]
        size = max(1, settings.RETRIEVAL_CHUNK_SIZE)
        now = timezone.now()
        chunks = RunChunk.objects.bulk_create([
            RunChunk(run=run, index=i, keys=pending[start:start + size], woken=now, wakeups=1)
            for i, start in enumerate(range(0, len(pending), size))
        ])
        _runs_refresh([run.id])
        for chunk in chunks:
            transaction.on_commit(lambda pk=chunk.pk: registry.wake("chunk", pk))
    run.refresh_from_db()
    return run


def chunk_retrieve(chunk_id: int, *, retry_on: tuple[type[BaseException], ...] = ()) -> int:
    """Retrieve and store the rankings of one chunk of a run, then link every query
    waiting on them and recount the runs concerned. Returns the rankings stored.

    Idempotent under duplicate delivery: a chunk that is finished, failed, or held by a
    live process is left untouched (returns 0); keys another run retrieved meanwhile are
    not searched again. The rankings and the done mark commit only while this claim still
    holds the chunk's lease; a claim that was taken over discards its result (returns 0).
    An error of a type in ``retry_on`` puts the chunk back in the queue (the caller
    retries); any other fails the chunk, and its run, with the message.
    """
    holder = leases.claim(RunChunk, chunk_id)
    if holder is None:
        return 0
    chunk = RunChunk.objects.select_related("run__collection", "run__model").get(pk=chunk_id)
    run = chunk.run
    _runs_refresh([run.id])
    try:
        with leases.renewing(RunChunk, chunk_id, holder):
            return _chunk_search_store(chunk, run, holder)
    except BaseException as exc:
        leases.release(RunChunk, chunk_id, holder, f"{type(exc).__name__}: {exc}",
                       retry=isinstance(exc, retry_on))
        _runs_refresh([run.id])
        raise


def _chunk_search_store(chunk: RunChunk, run: Run, holder: str) -> int:
    keys = list(chunk.keys)
    done = set(Ranking.objects.filter(key__in=keys).values_list("key", flat=True))
    todo = [k for k in keys if k not in done]
    texts = dict(RunQuery.objects.filter(run_id=run.id, key__in=todo)
                 .values_list("key", "query_text").distinct())
    missing = set(todo) - set(texts)
    if missing:
        raise RetrievalError(f"run {run.id} has no queries with {len(missing)} of the keys of "
                             f"chunk {chunk.index}")
    started = time.perf_counter()
    results = {}
    if texts:
        anserini.configure(settings.ANSERINI_JAVA_HOME)
        results = anserini.search_batch(run.collection.index_path, texts, model_spec(run.model),
                                        k=run.depth, threads=settings.RETRIEVAL_THREADS)
    searched = time.perf_counter()
    ids = vocabulary_ids({d for docids, _, _ in results.values() for d in docids})
    objs = []
    for key in sorted(results):
        docids, scores, reason = results[key]
        d, s = pack([ids[x] for x in docids], scores)
        objs.append(Ranking(key=key, collection=run.collection, model=run.model,
                            query_text=texts[key], depth=run.depth, length=len(docids),
                            docids=d, scores=s, empty_reason=reason))
    with transaction.atomic():
        if not leases.held(RunChunk, chunk.pk, holder):
            # taken over (lease expired, re-queued) or finished by another delivery: the
            # claim that holds it now commits its own result
            log.warning("run %s chunk %s: lease of %s (attempt %s) was taken over; result "
                        "discarded", run.id, chunk.index, holder, getattr(holder, "attempt", "?"))
            return 0
        # ignore_conflicts: a ranking stored meanwhile under the same key (by another run's
        # chunk) is the same ranking; the first one stays.
        Ranking.objects.bulk_create(objs, ignore_conflicts=True)
        waiting = RunQuery.objects.filter(key__in=keys, ranking__isnull=True)
        affected = set(waiting.values_list("run_id", flat=True).distinct()) | {run.id}
        waiting.update(ranking_id=Subquery(
            Ranking.objects.filter(key=OuterRef("key")).values("id")[:1]))
        RunChunk.objects.filter(pk=chunk.pk).update(
            status=leases.DONE, holder="", lease_expires=None, finished=timezone.now())
        _runs_refresh(affected)
    log.info("run %s chunk %s: %d queries searched in %.2f s, stored in %.2f s", run.id,
             chunk.index, len(objs), searched - started, time.perf_counter() - searched)
    return len(objs)


def chunk_fail(chunk_id: int, message: str) -> None:
    """Fail a chunk whose retries are exhausted (it waits queued for a retry that will not
    come); a finished or running chunk is left as it is."""
    if leases.fail_waiting(RunChunk, chunk_id, message):
        run_id = RunChunk.objects.filter(pk=chunk_id).values_list("run_id", flat=True).first()
        _runs_refresh([run_id])


def chunks_reconciled(result: leases.Reconciled) -> None:
    """After a reconciliation of the chunks: recount the runs whose chunks it touched and
    every unfinished retrieval run (a recount that lost a race, or a crash between a
    chunk's commit and its run's recount, is mended here)."""
    pks = result.requeued + result.failed + result.woken
    touched = set(RunChunk.objects.filter(pk__in=pks).values_list("run_id", flat=True))
    unfinished = set(Run.objects.filter(kind=Run.KIND_RETRIEVAL,
                                        status__in=("queued", "running"))
                     .values_list("id", flat=True))
    _runs_refresh(touched | unfinished)



def _runs_refresh(run_ids) -> None:
    """Recount runs from their rows: queries ranked, chunks by status; derive the status.

    A run is done when every query is ranked (whichever run's chunk ranked it), else
    failed when a chunk failed (with that chunk's error), running once a chunk was
    claimed, else queued.

    The run rows are locked (in id order) before counting, in the caller's transaction or
    one of its own: two chunks of a run committing at the same moment would otherwise
    each count before the other commits, and the later write would leave the run
    "running" for ever. The second recount waits for the first to commit and counts both.
    """
    run_ids = sorted(r for r in set(run_ids) if r is not None)
    if not run_ids:
        return
    with transaction.atomic(savepoint=False):
        runs = list(Run.objects.select_for_update()
                    .filter(id__in=run_ids, kind=Run.KIND_RETRIEVAL).order_by("id"))
        if runs:
            _runs_store(runs, _runs_count([run.id for run in runs]))


def _runs_count(run_ids: list[int]) -> dict:
    """Queries ranked, chunks by status and the newest chunk error of each run."""
    ranked = dict(RunQuery.objects.filter(run_id__in=run_ids, ranking__isnull=False)
                  .order_by().values("run_id").annotate(n=Count("id"))
                  .values_list("run_id", "n"))
    by_status: dict[int, dict[str, int]] = {}
    for run_id, status, n in (RunChunk.objects.filter(run_id__in=run_ids).order_by()
                              .values("run_id", "status").annotate(n=Count("id"))
                              .values_list("run_id", "status", "n")):
        by_status.setdefault(run_id, {})[status] = n
    errors = dict(RunChunk.objects.filter(run_id__in=run_ids, status=leases.FAILED)
                  .order_by("-index").values_list("run_id", "error"))
    return {"ranked": ranked, "by_status": by_status, "errors": errors}


def _runs_store(runs: list[Run], counted: dict) -> None:
    ranked, by_status, errors = counted["ranked"], counted["by_status"], counted["errors"]
    now = timezone.now()
    for run in runs:
        counts = by_status.get(run.id, {})
        completed = ranked.get(run.id, 0)
        failed = counts.get(leases.FAILED, 0)
        started = counts.get(leases.RUNNING, 0) + counts.get(leases.DONE, 0) + failed
        if completed >= run.total:
            status = "done"
        elif failed:
            status = "failed"
        elif started:
            status = "running"
        else:
            status = "queued"
        fields = dict(completed=completed, tasks_total=sum(counts.values()),
                      tasks_done=counts.get(leases.DONE, 0), tasks_failed=failed,
                      status=status, error=errors.get(run.id, "") if status == "failed" else "")
        if status != "queued" and run.started is None:
            fields["started"] = now
        if status in ("done", "failed"):
            if run.finished is None or run.status != status:
                fields["finished"] = now
        else:
            fields["finished"] = None
        Run.objects.filter(id=run.id).update(**fields)
