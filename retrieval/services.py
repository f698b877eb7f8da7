"""Writes of retrieval data. The function that writes owns the transaction.

- :func:`collection_import` reads a collection file, builds its Lucene index under
  ``settings.INDEX_ROOT`` and registers it; all or nothing.
- :func:`run_create` makes a retrieval run (one query per title, description or distinct
  user variant), reuses rankings already retrieved under the same key and records the
  rest as chunks (rows with a status and a lease) whose wake-up messages are sent on
  commit; :func:`chunk_retrieve` is what a worker does with one, and after each pass of
  the reconciler (:func:`jobs.services.reconcile_all`) :func:`chunks_reconciled` recounts
  the runs concerned and every unfinished one.
- :func:`system_run_import` stores an imported TREC run.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone

from common import fileio
from common.fileio import clean_id, clean_name
from jobs import leases, registry

from . import anserini
from .collections_io import CollectionFormatError, read_collection, write_json_collection
from .models import (Collection, Docid, Ranking, RetrievalModel, Run, RunChunk,
                     RunQuery)
from .rankings import pack, query_key
from .selectors import docid_ids
from .trecrun import read_run

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class RetrievalError(ValueError):
    """A request was refused; nothing was written. The message says what to fix."""


def retrieval_models_ensure_defaults() -> None:
    """Create the ready-made models (bm25, bm25-okapi, qld, sdm) where missing.

    ``migrate`` creates them; this restores them after a database flush. Existing
    records, possibly edited by organisers, are left as they are.
    """
    from .defaults import READY_MADE_MODELS
    from .models import RetrievalModel

    for row in READY_MADE_MODELS:
        RetrievalModel.objects.get_or_create(name=row["name"], defaults=row)


DOCID_ANALYZE_AFTER = 50_000  # new docids in one call that refresh the planner statistics


def docids_ensure(strings: Iterable[str], batch_size: int = 5000) -> dict[str, int]:
    """Return integer ids for docid strings, adding unknown ones to the vocabulary."""
    strings = list(dict.fromkeys(strings))
    for s in strings:
        if not s or len(s) > 255 or any(c.isspace() for c in s):
            raise ValueError(f"invalid docid {s!r}: docids are 1-255 characters without spaces")
    known = docid_ids(strings)
    missing = [s for s in strings if s not in known]
    for start in range(0, len(missing), batch_size):
        Docid.objects.bulk_create(
            [Docid(docid=s) for s in missing[start : start + batch_size]],
            ignore_conflicts=True,
            batch_size=batch_size,
        )
    if missing:
        known.update(docid_ids(missing))
    if len(missing) >= DOCID_ANALYZE_AFTER and connection.vendor == "postgresql":
        # Fresh planner statistics: until autovacuum gets to it, a bulk-loaded vocabulary
        # looks empty, and pool builds then sort millions of docids instead of reading
        # them in order from the index (retrieval.selectors.docid_order).
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(Docid._meta.db_table)}")
    return known


# --- collections ----------------------------------------------------------------------------


IMPORT_TEMP_PREFIX = ".import-"


class ImportInterrupted(Exception):
    """The process was asked to stop (SIGTERM, SIGHUP) while importing."""


@contextlib.contextmanager
def _stop_signals_raise():
    """While the block runs, SIGTERM and SIGHUP raise :class:`ImportInterrupted` and SIGINT
    raises KeyboardInterrupt, so clean-up code runs however the import is stopped (only
    possible in the main thread). The JVM must already be running: it replaces the
    handlers of these signals when it starts. Afterwards SIGINT keeps Python's handler and
    the others get their previous Python handler, or the default (terminate)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise ImportInterrupted(f"interrupted by {signal.Signals(signum).name}; nothing was imported")

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _import_temp_dirs_stale_remove(index_root: Path) -> list[Path]:
    """Remove the temporary directories of imports whose process is gone.

    Each import holds an exclusive ``flock`` on ``<temp dir>/lock`` while it runs; the
    kernel releases it when the process ends, however it ends (``kill -9`` included), so a
    lock that can be taken marks a directory left behind. A directory without a lock file
    is removed once it is a minute old (it lost the race between creating the directory
    and the lock).
    """
    removed = []
    for d in index_root.glob(f"{IMPORT_TEMP_PREFIX}*"):
        if not d.is_dir():
            continue
        lock = d / "lock"
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            try:
                stale = time.time() - d.stat().st_mtime > 60
            except OSError:
                continue
        except OSError:
            continue
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                stale = True
            except OSError:
                stale = False
            finally:
                os.close(fd)
        if stale:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
            log.info("removed %s, left by an interrupted collection import", d)
    return removed


def collection_import(name: str, path: str | Path, fmt: str, *,
                      progress: Progress | None = None, encoding: str = "utf-8",
                      skip_empty: bool = False,
                      before_commit: Callable[[Collection], None] | None = None) -> Collection:
    """Index a collection file and register it as collection ``name``.

    All or nothing: on any error -- and when interrupted by Ctrl-C, SIGTERM or SIGHUP --
    no Collection row, no docids and no index directory remain; the work happens in a
    hidden ``INDEX_ROOT/.import-*`` directory, and those left by a killed process are
    removed by the next import. The index lives in ``INDEX_ROOT/<name>-<checksum prefix>``.

    A document with nothing to index is an error naming it (Anserini would silently leave
    it out); ``skip_empty`` leaves such documents out instead and says which. Any other
    document missing from the built index is an error naming it.

    ``before_commit(collection)``, when given, is called inside the transaction that
    registers the collection: a caller commits its own mark with it, or raises to roll the
    import back (the index directory is removed).
    """
    say = progress or (lambda msg: None)
    try:
        name = clean_name(name, "collection name")
        path = fileio.require_file(path, error=CollectionFormatError)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    if Collection.objects.filter(name=name).exists():
        raise RetrievalError(f"a collection named {name!r} already exists; choose another name")
    checksum = fileio.file_sha256(path)
    say(f"sha256 {checksum}")
    index_root = Path(settings.INDEX_ROOT)
    index_root.mkdir(parents=True, exist_ok=True)
    _import_temp_dirs_stale_remove(index_root)
    final_dir = index_root / f"{name}-{checksum[:12]}"
    if final_dir.exists():
        raise RetrievalError(f"{final_dir} already exists; remove it or choose another name")
    anserini.configure(settings.ANSERINI_JAVA_HOME)
    anserini.index_prepare()
    with _stop_signals_raise():
        work = Path(tempfile.mkdtemp(prefix=IMPORT_TEMP_PREFIX, dir=index_root))
        lock_fd = None
        try:
            lock_fd = os.open(work / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            collection = _collection_index(name, path, fmt, encoding, skip_empty, checksum,
                                           work, final_dir, say, before_commit)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            if lock_fd is not None:
                os.close(lock_fd)
    say(f"collection {name!r} ready: {collection.doc_count} documents in {final_dir}")
    return collection


def _collection_index(name, path: Path, fmt, encoding, skip_empty, checksum, work: Path,
                      final_dir: Path, say, before_commit=None) -> Collection:
    docids: list[str] = []
    skipped: list[str] = []

    def documents():
        for doc in read_collection(path, fmt, encoding=encoding, allow_empty=skip_empty):
            if not doc.contents.strip():
                skipped.append(doc.docid)
                continue
            docids.append(doc.docid)
            yield doc

    n = write_json_collection(documents(), work / "json",
                              progress=lambda k: say(f"read {k} documents"))
    if skipped:
        say(f"left out {len(skipped)} empty document(s): {_some(skipped)}")
    if n == 0:
        raise RetrievalError(f"{path}: no documents found (is the format {fmt!r} right?)")
    say(f"read {n} documents; indexing")
    indexed = anserini.index_build(work / "json", work / "index")
    if indexed != n:
        missing = anserini.index_missing_docids(work / "index", docids)
        raise RetrievalError(
            f"{path}: read {n} documents but Anserini indexed {indexed}; not indexed: "
            f"{_some(missing)}")
    say(f"indexed {indexed} documents")
    (work / "index").rename(final_dir)
    try:
        with transaction.atomic():
            collection = Collection.objects.create(
                name=name, format=fmt, source_path=str(path.resolve()),
                index_path=str(final_dir), doc_count=n,
                anserini_version=anserini.anserini_version(),
                analyzer=anserini.analyzer_description(), checksum=checksum,
                status="ready",
            )
            docids_ensure(docids)
            if before_commit is not None:
                before_commit(collection)
    except BaseException:
        shutil.rmtree(final_dir, ignore_errors=True)
        raise
    return collection


def _some(items: list[str], limit: int = 10) -> str:
    shown = ", ".join(fileio.quote(x, 60) for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def collection_delete(collection: Collection) -> None:
    """Remove a collection, its runs and rankings, and its index directory."""
    index_path = collection.index_path
    with transaction.atomic():
        collection.delete()
    if index_path:
        shutil.rmtree(index_path, ignore_errors=True)


# --- retrieval runs -------------------------------------------------------------------------


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

    from .selectors import collection_get, retrieval_model_get

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
    ids = _vocabulary_ids({d for docids, _, _ in results.values() for d in docids})
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


# docid string -> vocabulary id, per process. Vocabulary ids never change once assigned
# (rows are only ever added, and chunk_retrieve adds them outside its transaction, so only
# committed ids are cached): a worker looks each docid up once, not once per chunk. At
# _VOCAB_CACHE_MAX entries the cache starts again from the ids of the current call.
_vocab_cache: dict[str, int] = {}
_VOCAB_CACHE_MAX = 5_000_000


def _vocabulary_ids(strings: set[str]) -> dict[str, int]:
    """Vocabulary ids of ``strings`` (added where unknown); every string is in the result."""
    missing = [s for s in strings if s not in _vocab_cache]
    found = docids_ensure(missing) if missing else {}
    result = {s: found[s] if s in found else _vocab_cache[s] for s in strings}
    if len(_vocab_cache) + len(found) > _VOCAB_CACHE_MAX:
        _vocab_cache.clear()
        _vocab_cache.update(result)
    else:
        _vocab_cache.update(found)
    return result


def vocabulary_cache_clear() -> None:
    """Forget cached vocabulary ids (for tests that roll the database back)."""
    _vocab_cache.clear()


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


# --- system runs ----------------------------------------------------------------------------


def system_run_import(path: str | Path, *, topic_set_name: str, tag: str | None = None,
                      encoding: str = "utf-8",
                      before_commit: Callable[[Run], None] | None = None) -> Run:
    """Import a TREC run file as a system run of a topic set; all or nothing.

    One RunQuery + Ranking per topic (label = the tag), ordered by (-score, docid). Every
    topic id of the file must be a topic of the set. ``before_commit(run)``, when given,
    is called inside the import's transaction after the last write (a caller's own mark
    commits with the run, or it raises to roll the import back).
    """
    from topics.selectors import topic_list, topic_set_get

    try:
        topic_set = topic_set_get(topic_set_name)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    topics = {t.topic_id: t for t in topic_list(topic_set_name)}
    file_tag, rankings = read_run(path, topic_ids=topics, encoding=encoding)
    try:
        tag = clean_id(tag or file_tag, "run tag", max_chars=Run._meta.get_field("tag").max_length)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    if Run.objects.filter(topic_set=topic_set, kind=Run.KIND_SYSTEM, tag=tag).exists():
        raise RetrievalError(f"topic set {topic_set_name!r} already has a system run tagged {tag!r}")
    with transaction.atomic():
        ids = docids_ensure({d for docids, _ in rankings.values() for d in docids})
        run = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=topic_set, source="system",
                                 tag=tag, depth=max(len(d) for d, _ in rankings.values()),
                                 status="done", total=len(rankings), completed=len(rankings),
                                 finished=timezone.now())
        for qid in sorted(rankings):
            docids, scores = rankings[qid]
            d, s = pack([ids[x] for x in docids], scores)
            ranking = Ranking.objects.create(key=None, docids=d, scores=s, length=len(docids),
                                             depth=len(docids))
            RunQuery.objects.create(run=run, topic=topics[qid], label=tag, ranking=ranking)
        if before_commit is not None:
            before_commit(run)
    return run
