"""Writes of pooling data: pools built from stored rankings.

The function that writes owns the transaction; queueing a task happens on commit. The
mathematics lives in plain modules (:mod:`pooling.pools`); this
module moves data between them and the database.

Document ids inside the mathematics are dense integers whose numeric order equals the
docid *string* order, so integer tie-breaks there are the house tie-break (-score, docid).
Vocabulary ids (retrieval's int32 ``Docid`` ids) are in insertion order: a pool build sums
the weights over them as stored and remaps only the pooled documents to string order for
the tie-breaks (``string_order`` of :func:`pooling.pools.pool_compute`), then maps the
pool back to vocabulary ids to store it.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable, Iterable

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from common.fileio import clean_name
from common.naturalsort import natural_key
from jobs import leases, registry
from retrieval.selectors import (
    collection_get,
    contributing_run_ids,
    ranking_depth,
    retrieval_model_get,
    user_ranking_source_get,
)

from . import pools as pool_maths
from .models import Pool, PoolRun, PoolTopic
from .remap import DocidRemap
from .selectors import (
    COUNT_DTYPE,
    ID_DTYPE,
    SOURCE_KINDS,
    WEIGHT_DTYPE,
    contribution_list,
    docid_remap,
    pool_run_ids,
)

log = logging.getLogger(__name__)

POOL_TOPIC_BATCH = 20  # rows hold arrays of up to a few MB each
PROGRESS_EVERY_SECONDS = 2.0


# --- pools -----------------------------------------------------------------------------


def _topic_set_get(name: str):
    from topics.selectors import topic_set_get

    return topic_set_get(name)


def pool_create(
    *,
    topic_set_name: str,
    sources: str,
    depth: int | None = None,
    strategy: str = "depth",
    p: float = 0.95,
    budget: int | None = None,
    budget_scope: str = "topic",
    model_name: str | None = None,
    collection_name: str | None = None,
    name: str | None = None,
    enqueue: bool = False,
    system_run_ids: Iterable[int] | None = None,
) -> Pool:
    """Validate the parameters and record a queued pool; with ``enqueue`` the build task is
    queued once the pool row is committed.

    A pool with user rankings records the collection and model they come from (the one
    :func:`retrieval.selectors.user_ranking_source_get` allows: this refuses, naming them,
    when several models or collections have user rankings and none is chosen). The depth
    strategy needs ``depth``; rbp defaults it to the depth of the stored rankings.

    The pool records the runs it is built from, as they are now
    (:func:`retrieval.selectors.contributing_run_ids`): its build, the judging orders that
    replay its rankings and its analyses read exactly these, whatever is imported or
    finished later. ``system_run_ids``, when given, are the system runs it takes (finished
    system runs of the topic set) instead of every one.
    """
    if sources not in SOURCE_KINDS:
        raise ValueError(f"sources must be one of {sorted(SOURCE_KINDS)}, not {sources!r}")
    if depth is None and strategy != "rbp":
        raise ValueError("give a depth: the depth strategy pools each ranking's top depth "
                         "(only rbp defaults it, to the depth of the stored rankings)")
    pool_maths.validate_pool_params(
        strategy, int(depth) if depth is not None else 1, float(p),
        int(budget) if budget is not None else None, budget_scope
    )
    if name is not None:
        name = clean_name(name, "pool name", max_chars=Pool._meta.get_field("name").max_length)
    if name is not None and Pool.objects.filter(name=name).exists():
        raise ValueError(f"a pool named {name!r} already exists")
    topic_set = _topic_set_get(topic_set_name)
    model = retrieval_model_get(model_name) if model_name else None
    collection = collection_get(collection_name) if collection_name else None
    if "user" in SOURCE_KINDS[sources]:
        source = user_ranking_source_get(topic_set.name, model_name=model_name,
                                         collection_name=collection_name)
        if source is not None:  # with none, the build fails saying so
            model = retrieval_model_get(source.model) if source.model else None
            collection = collection_get(source.collection) if source.collection else None
    run_ids = contributing_run_ids(topic_set.name, sources=SOURCE_KINDS[sources],
                                   model_name=model.name if model else None,
                                   collection_name=collection.name if collection else None)
    if system_run_ids is not None and "system" in SOURCE_KINDS[sources]:
        chosen = _system_runs_check(topic_set.name, system_run_ids)
        system = set(contributing_run_ids(topic_set.name, sources=("system",)))
        run_ids = sorted((set(run_ids) - system) | set(chosen))
    if depth is None:
        depth = ranking_depth(topic_set.name, sources=SOURCE_KINDS[sources], run_ids=run_ids)
        if depth < 1:
            raise ValueError(_no_rankings_message(topic_set.name, sources, model, collection))
    with transaction.atomic():
        pool = Pool.objects.create(
            name=name or None,
            topic_set=topic_set,
            sources=sources,
            strategy=strategy,
            depth=int(depth),
            p=float(p),
            budget=int(budget) if budget is not None else None,
            budget_scope=budget_scope,
            collection=collection,
            model=model,
            woken=timezone.now(),  # built here at once, or woken on commit
            wakeups=1 if enqueue else 0,
        )
        PoolRun.objects.bulk_create(PoolRun(pool=pool, run_id=i) for i in run_ids)
        if enqueue:
            pool_id = pool.id
            transaction.on_commit(lambda: registry.wake("pool", pool_id))
    return pool


def _system_runs_check(topic_set_name: str, run_ids: Iterable[int]) -> list[int]:
    """The chosen system runs, each a finished system run of the topic set (else a
    ValueError naming the first that is not)."""
    from retrieval.models import Run

    wanted = sorted({int(i) for i in run_ids})
    if not wanted:
        raise ValueError("choose at least one system run for a pool with system rankings")
    found = set(Run.objects.filter(id__in=wanted, topic_set__name=topic_set_name,
                                   kind=Run.KIND_SYSTEM, status="done")
                .values_list("id", flat=True))
    for run_id in wanted:
        if run_id not in found:
            raise ValueError(f"run {run_id} is not a finished system run of topic set "
                             f"{topic_set_name!r}")
    return wanted


def _no_rankings_message(topic_set_name: str, sources: str, model, collection) -> str:
    what = {"users": "user-variant", "systems": "system-run", "combined": "user or system"}
    message = f"Topic set {topic_set_name!r} has no finished {what[sources]} rankings"
    if model is not None:
        message += f" of model {model.name!r}"
    if collection is not None:
        message += f" over collection {collection.name!r}"
    if sources == Pool.SOURCES_SYSTEMS:
        return message + ": import a system run (import_run) first."
    return message + (": run retrieval over the variants (run_retrieval --source variants) "
                      "first, or choose another model.")


def pool_failure_message(exc: BaseException) -> str:
    """The sentence stored on a failed pool: what went wrong and what to do about it."""
    return leases.failure_sentence(exc, stopped="The build", again="Build the pool again")


def pool_build(pool_id: int, *, progress: Callable[[float], None] | None = None,
               retry_on: tuple[type[BaseException], ...] = ()) -> Pool:
    """Build a recorded pool from the rankings of the runs it recorded and store its
    documents.

    The build holds the pool's lease (:mod:`jobs.leases`) while it runs. Idempotent
    under duplicate delivery: a pool that is done, failed or being built by a live process
    is returned untouched, and a finished pool never becomes failed. A retried build
    replaces any topics a failed attempt left. The topics and the done mark commit only
    while this build still holds the pool's lease; a build whose lease was taken over
    discards its result. On an error of a type in ``retry_on`` the
    pool is queued again (the caller retries); on any other it is marked failed with the
    message, and the error is raised again.
    """
    holder = leases.claim(Pool, pool_id)
    pool = Pool.objects.select_related("topic_set", "collection", "model").get(pk=pool_id)
    if holder is None:
        return pool
    Pool.objects.filter(pk=pool.pk, holder=holder).update(progress=0.0)
    renewal = leases.Renewal(Pool, pool.pk, holder).start()
    try:
        n_topics = max(1, pool.topic_set.topics.count())
        last = [0.0]

        def on_topic(seen: int):
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_SECONDS:
                last[0] = now
                _progress_set(pool, 0.6 * min(1.0, seen / n_topics), progress)

        _records, contributions = contribution_list(
            pool.topic_set.name,
            pool.sources,
            model_name=pool.model.name if pool.model else None,
            collection_name=pool.collection.name if pool.collection else None,
            on_topic=on_topic,
            depth=pool.depth,
            run_ids=pool_run_ids(pool),
        )
        if not contributions:
            raise ValueError(_no_rankings_message(pool.topic_set.name, pool.sources,
                                                  pool.model, pool.collection))
        _progress_set(pool, 0.6, progress)
        kwargs = dict(strategy=pool.strategy, depth=pool.depth, p=pool.p)
        if pool.budget is not None:
            kwargs.update(budget=pool.budget, budget_scope=pool.budget_scope)
        contributions, string_order, remaps = _string_order_plan(contributions)
        built = pool_maths.pool_compute(contributions, string_order=string_order, **kwargs)
        _progress_set(pool, 0.8, progress)
        rows = [_pool_topic_row(pool, tp, remaps[0]) for tp in sorted(built.values(), key=lambda tp: natural_key(tp.topic_id))]
        with transaction.atomic():
            if not leases.held(Pool, pool.pk, holder):
                # taken over (lease expired, re-queued) or finished by another delivery
                log.warning("pool %s: lease of %s (attempt %s) was taken over; result "
                            "discarded", pool.pk, holder, holder.attempt)
                return Pool.objects.get(pk=pool.pk)
            PoolTopic.objects.filter(pool=pool).delete()
            _pool_topics_store(rows)
            Pool.objects.filter(pk=pool.pk).update(
                status=Pool.STATUS_DONE,
                progress=1.0,
                topics_count=len(rows),
                documents_count=sum(r.size for r in rows),
                finished=timezone.now(),
                holder="",
                lease_expires=None,
                error="",
            )
    except BaseException as exc:
        retry = isinstance(exc, retry_on)
        if leases.release(Pool, pool.pk, holder, pool_failure_message(exc), retry=retry) \
                and not retry:
            Pool.objects.filter(pk=pool.pk).update(finished=timezone.now())
        raise
    finally:
        renewal.stop()
    if progress is not None:
        progress(1.0)
    pool.refresh_from_db()
    return pool


def _string_order_plan(contributions):
    """``(contributions, string_order, remaps)`` for :func:`pooling.pools.pool_compute`.

    The weights are summed over the vocabulary ids as stored and only the pooled
    documents (a fifth of the ranked entries of a depth-1000 pool) are remapped to string
    order, for the tie-breaks: ``string_order`` does it and leaves the remap in
    ``remaps``. Ids beyond the pool maths' lookup table (a vocabulary of more than 32M
    docids) would be grouped by sorting instead, so those rankings are remapped first.
    """
    remaps: list[DocidRemap] = []
    biggest = max((int(c.docids.max()) for c in contributions if c.docids.size), default=0)
    if biggest >= pool_maths.ID_TABLE_MAX:
        remaps.append(docid_remap(c.docids for c in contributions))
        dense = [dataclasses.replace(c, docids=remaps[0].to_dense(c.docids))
                 for c in contributions]
        return dense, None, remaps

    def string_order(docids: list[np.ndarray]) -> list[np.ndarray]:
        remaps.append(docid_remap(docids))
        return [remaps[0].to_dense(d) for d in docids]

    return contributions, string_order, remaps


_COPY_FIELDS = ("pool", "topic_id", "size", "docids", "weights", "min_rank", "users", "systems")
_COPY_TYPES = ("int8", "text", "int4", "bytea", "bytea", "bytea", "bytea", "bytea")


def pool_fail(pool_id: int, message: str) -> None:
    """Fail a pool whose retries are exhausted (it waits queued for a retry that will not
    come); a finished or running pool is left as it is."""
    if leases.fail_waiting(Pool, pool_id, message):
        Pool.objects.filter(pk=pool_id).update(finished=timezone.now())


def pools_reconciled(result: leases.Reconciled) -> None:
    """After a reconciliation of the pool builds: a build it failed gets its finish time."""
    if result.failed:
        Pool.objects.filter(pk__in=result.failed).update(finished=timezone.now())


def _pool_topics_store(rows: list[PoolTopic]) -> None:
    """Insert a pool's topic rows. On PostgreSQL a binary COPY sends the packed arrays as
    bytes (INSERT parameters travel as hex text: twice the size, 2x the time for a
    depth-1000 pool); elsewhere ``bulk_create`` in batches."""
    if connection.vendor != "postgresql":
        for start in range(0, len(rows), POOL_TOPIC_BATCH):
            PoolTopic.objects.bulk_create(rows[start : start + POOL_TOPIC_BATCH])
        return
    ops = connection.ops
    columns = ", ".join(ops.quote_name(PoolTopic._meta.get_field(f).column) for f in _COPY_FIELDS)
    sql = (f"COPY {ops.quote_name(PoolTopic._meta.db_table)} ({columns}) "
           "FROM STDIN (FORMAT BINARY)")
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        copy.set_types(list(_COPY_TYPES))
        for r in rows:
            copy.write_row((r.pool_id, r.topic_id, r.size, r.docids, r.weights, r.min_rank,
                            r.users, r.systems))


def _progress_set(pool: Pool, value: float, callback):
    Pool.objects.filter(pk=pool.pk).update(progress=float(value))
    if callback is not None:
        callback(float(value))


def _pool_topic_row(pool: Pool, tp, remap: DocidRemap) -> PoolTopic:
    dense = np.asarray(tp.docids, dtype=np.int64)
    return PoolTopic(
        pool=pool,
        topic_id=str(tp.topic_id),
        size=int(dense.shape[0]),
        docids=remap.to_vocab(dense).astype(ID_DTYPE).tobytes(),
        weights=np.asarray(tp.weights, dtype=WEIGHT_DTYPE).tobytes(),
        min_rank=np.asarray(tp.min_rank, dtype=COUNT_DTYPE).tobytes(),
        users=np.asarray(tp.users, dtype=COUNT_DTYPE).tobytes(),
        systems=np.asarray(tp.systems, dtype=COUNT_DTYPE).tobytes(),
    )
