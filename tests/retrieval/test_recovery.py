"""The job ledger without a worker: leases, the reconciler, duplicate delivery, counters
recounted from rows, `jobs` and `recover`, and the per-process docid cache.

Worker processes killed for real are in tests/retrieval/test_worker_kills.py."""
import io
import json
import socket
import subprocess
import time
from datetime import timedelta

import pytest
from cachetools import LRUCache
from django.core.management import call_command
from django.utils import timezone

from jobs import leases
from jobs.services import reconcile_all
from pooling.models import Pool
from pooling.services import pool_build, pool_create
from retrieval.services import runs, vocabulary
from retrieval.models import Collection, Run, RunChunk
from retrieval.services import chunk_fail, chunk_retrieve, run_create
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


HOST = socket.gethostname()


def chunks_reconcile() -> leases.Reconciled:
    """One pass of the reconciler over every kind; what it did to the chunks."""
    return reconcile_all(origin="command")["chunks"]


def pools_reconcile() -> leases.Reconciled:
    return reconcile_all(origin="command")["pools"]


@pytest.fixture
def run(settings, django_capture_on_commit_callbacks):
    """A queued run of 4 titles in 2 chunks over a collection row (no index is searched)."""
    settings.RETRIEVAL_CHUNK_SIZE = 2
    Collection.objects.create(name="c", format="trec", source_path="x", status="ready",
                              index_path="/nonexistent")
    ts = TopicSet.objects.create(name="ts")
    for i in range(1, 5):
        Topic.objects.create(topic_set=ts, topic_id=str(i), title=f"query number {i}")
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        r = run_create(topic_set_name="ts", collection_name="c", model_name="bm25",
                       source="titles")
    assert len(wakeups) == 2
    return r


def _chunk(run, index=0) -> RunChunk:
    return RunChunk.objects.get(run=run, index=index)


def _hold(chunk: RunChunk, holder: str, expires_in: float, attempts: int = 1):
    RunChunk.objects.filter(pk=chunk.pk).update(
        status="running", holder=holder, attempts=attempts,
        lease_expires=timezone.now() + timedelta(seconds=expires_in))


def test_a_chunk_is_claimed_once_and_a_live_holder_keeps_it(run):
    chunk = _chunk(run)
    me = leases.claim(RunChunk, chunk.pk)
    assert me == f"{HOST}:{__import__('os').getpid()}"
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts, chunk.holder) == ("running", 1, me)
    assert chunk.lease_expires > timezone.now()
    # a duplicate delivery while a live process holds it claims nothing
    assert leases.claim(RunChunk, chunk.pk) is None
    assert chunk_retrieve(chunk.pk) == 0
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == ("running", 1)


def test_reconciler_requeues_the_chunk_of_a_dead_process_at_once(
        run, django_capture_on_commit_callbacks):
    chunk = _chunk(run)
    _hold(chunk, f"{HOST}:{_dead_pid()}", expires_in=25)  # lease still valid
    _hold(_chunk(run, 1), f"{HOST}:{__import__('os').getpid()}", expires_in=25)  # alive
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        done = chunks_reconcile()
    assert done.requeued == [chunk.pk] and not done.failed and len(wakeups) == 1
    assert "died" in done.reasons[chunk.pk]
    chunk.refresh_from_db()
    assert (chunk.status, chunk.holder, chunk.lease_expires) == ("queued", "", None)
    assert "attempt 1 lost" in chunk.error
    assert _chunk(run, 1).status == "running"
    run.refresh_from_db()
    assert run.status == "running"  # a chunk is held


def test_an_expired_lease_is_requeued_then_failed_after_its_attempts(
        run, settings, django_capture_on_commit_callbacks):
    settings.JOB_MAX_ATTEMPTS = 2
    chunk = _chunk(run)
    _hold(chunk, "elsewhere:1234", expires_in=-1, attempts=1)  # another host: lease only
    with django_capture_on_commit_callbacks(execute=False):
        assert chunks_reconcile().requeued == [chunk.pk]
    assert leases.claim(RunChunk, chunk.pk)  # attempt 2
    RunChunk.objects.filter(pk=chunk.pk).update(
        holder="elsewhere:1234", lease_expires=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        done = chunks_reconcile()
    assert done.failed == [chunk.pk] and not wakeups
    chunk.refresh_from_db()
    assert chunk.status == "failed"
    assert chunk.error.startswith("failed after 2 attempt(s): the lease of elsewhere:1234 "
                                  "expired")
    run.refresh_from_db()
    assert (run.status, run.tasks_failed, run.error) == ("failed", 1, chunk.error)
    assert run.finished is not None
    # a late delivery of the failed chunk does nothing
    assert chunk_retrieve(chunk.pk) == 0


def test_a_lost_wakeup_is_sent_again_with_backoff(run, settings,
                                                  django_capture_on_commit_callbacks):
    settings.JOB_WAKEUP_AFTER = 60
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        assert not chunks_reconcile()  # messages just sent
    assert not wakeups
    old = timezone.now() - timedelta(seconds=61)
    RunChunk.objects.filter(run=run).update(woken=old)
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        assert len(chunks_reconcile().woken) == 2
    assert len(wakeups) == 2
    assert set(RunChunk.objects.filter(run=run).values_list("wakeups", flat=True)) == {2}
    # after a second wake-up the next waits twice as long
    RunChunk.objects.filter(run=run).update(woken=old)
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        assert not chunks_reconcile().woken
    RunChunk.objects.filter(run=run).update(woken=timezone.now() - timedelta(seconds=121))
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        assert len(chunks_reconcile().woken) == 2


def test_an_error_fails_the_chunk_and_the_run_with_the_message(run):
    chunk = _chunk(run)
    with pytest.raises(Exception, match="no Lucene index|nonexistent"):
        chunk_retrieve(chunk.pk)
    chunk.refresh_from_db()
    run.refresh_from_db()
    assert chunk.status == "failed" and chunk.holder == ""
    assert run.status == "failed" and run.error == chunk.error and "AnseriniError" in run.error


def test_a_transient_error_requeues_and_exhausted_retries_fail(run):
    chunk = _chunk(run)
    with pytest.raises(Exception):
        chunk_retrieve(chunk.pk, retry_on=(Exception,))
    chunk.refresh_from_db()
    assert chunk.status == "queued" and chunk.error.startswith("will retry: ")
    chunk_fail(chunk.pk, "OperationalError: the database went away")
    chunk.refresh_from_db()
    run.refresh_from_db()
    assert chunk.status == "failed" and run.status == "failed"
    assert run.error == "OperationalError: the database went away"


def test_run_counters_are_recounted_from_rows(run):
    Run.objects.filter(pk=run.pk).update(tasks_done=57, completed=3, status="running")
    runs._runs_refresh([run.pk])
    run.refresh_from_db()
    assert (run.status, run.completed, run.tasks_done, run.tasks_total) == ("queued", 0, 0, 2)


def test_jobs_json_lists_runs_pools_analyses_and_uploads(run):
    from evaluation.models import Analysis
    from uploads.models import Upload

    ts = TopicSet.objects.get(name="ts")
    pool = Pool.objects.create(name="p", topic_set=ts, sources="systems", depth=10,
                               status="failed", error="No system runs.")
    analysis = Analysis.objects.create(kind="evaluate", status="running", progress=0.5)
    upload = Upload.objects.create(kind="topics", filename="t.tsv", path="x", status="failed",
                                   error="t.tsv, line 3: empty topic id")
    out = io.StringIO()
    call_command("jobs", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {
        "runs": [{"id": run.id, "topic_set": "ts", "collection": "c", "model": "bm25",
                  "source": "titles", "state": "queued", "done": 0, "total": 4,
                  "error": ""}],
        "pools": [{"id": pool.id, "name": "p", "state": "failed", "error": "No system runs."}],
        "analyses": [{"id": analysis.id, "kind": "evaluate", "state": "running",
                      "progress": 0.5, "error": ""}],
        "uploads": [{"id": upload.id, "kind": "topics", "filename": "t.tsv", "state": "failed",
                     "progress": 0.0, "error": "t.tsv, line 3: empty topic id"}],
        "refits": [],  # no judging task with a learned order here
    }
    _hold(_chunk(run), "elsewhere:77", expires_in=20)
    out = io.StringIO()
    call_command("jobs", stdout=out)
    text = out.getvalue()
    assert f"run {run.id}: queued 0/4 queries, chunks 0/2 done" in text
    assert "chunk 0 attempt 1: elsewhere:77 (expires in" in text
    assert "pool" in text and "error: No system runs." in text
    assert f"analysis {analysis.id} evaluate: running 50%" in text
    assert f"upload {upload.id} topics t.tsv: failed" in text
    assert "error: t.tsv, line 3: empty topic id" in text


def test_recover_command_says_what_it_did(run, django_capture_on_commit_callbacks):
    out = io.StringIO()
    call_command("recover", stdout=out)
    assert "nothing to recover" in out.getvalue()
    _hold(_chunk(run), f"{HOST}:{_dead_pid()}", expires_in=20)
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("recover", "--json", stdout=out)
    assert json.loads(out.getvalue())["chunks"]["requeued"] == [_chunk(run).pk]


# --- pools ------------------------------------------------------------------------------


@pytest.fixture
def empty_pool(db):
    ts = TopicSet.objects.create(name="pts")
    Topic.objects.create(topic_set=ts, topic_id="1", title="x")
    return Pool.objects.create(name="pool", topic_set=ts, sources="systems", depth=10)


def test_a_done_pool_is_never_touched_again_nor_failed(empty_pool):
    Pool.objects.filter(pk=empty_pool.pk).update(status="done", documents_count=7)
    assert leases.claim(Pool, empty_pool.pk) is None
    again = pool_build(empty_pool.pk)
    assert (again.status, again.documents_count, again.attempts) == ("done", 7, 0)
    # a holder that lost it cannot fail it either
    assert not leases.release(Pool, empty_pool.pk, "someone:1", "boom", retry=False)
    empty_pool.refresh_from_db()
    assert empty_pool.status == "done"


def test_a_failing_pool_build_is_failed_with_a_sentence(empty_pool):
    with pytest.raises(ValueError):
        pool_build(empty_pool.pk)
    empty_pool.refresh_from_db()
    assert empty_pool.status == "failed" and empty_pool.holder == ""
    assert empty_pool.error.startswith("Topic set 'pts' has no finished system-run rankings")
    assert empty_pool.finished is not None and empty_pool.attempts == 1
    # a second delivery of a failed build leaves it as it is
    assert pool_build(empty_pool.pk).attempts == 1


def test_pools_of_dead_workers_are_requeued(empty_pool, django_capture_on_commit_callbacks):
    Pool.objects.filter(pk=empty_pool.pk).update(
        status="running", holder=f"{HOST}:{_dead_pid()}", attempts=1,
        lease_expires=timezone.now() + timedelta(seconds=30))
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        assert pools_reconcile().requeued == [empty_pool.pk]
    assert len(wakeups) == 1
    empty_pool.refresh_from_db()
    assert empty_pool.status == "queued" and "died" in empty_pool.error


def test_pool_create_records_the_wakeup(empty_pool, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as wakeups:
        pool = pool_create(topic_set_name="pts", sources="systems", depth=5, name="q",
                           enqueue=True)
    assert len(wakeups) == 1 and pool.woken is not None and pool.wakeups == 1


# --- the per-process docid cache -----------------------------------------------------------


def test_docid_cache_full_starts_again_without_losing_ids(monkeypatch):
    monkeypatch.setattr(vocabulary, "_vocab_cache", LRUCache(maxsize=3))
    first = vocabulary.vocabulary_ids({"a", "b"})
    # "a" is cached, "c" and "d" are new, and together they pass the limit: the cache is
    # emptied, and "a" must still come back (it raised KeyError before)
    second = vocabulary.vocabulary_ids({"a", "c", "d"})
    assert set(second) == {"a", "c", "d"} and second["a"] == first["a"]
    assert len(vocabulary._vocab_cache) <= 3
    third = vocabulary.vocabulary_ids({"a", "b", "c", "d", "e"})
    assert third["b"] == first["b"] and len(set(third.values())) == 5
    assert vocabulary.vocabulary_ids({"a"}) == {"a": first["a"]}  # a subset, not the cache


@pytest.mark.django_db(transaction=True)
def test_a_lease_is_renewed_while_the_work_runs(settings, monkeypatch):
    settings.JOB_LEASE_SECONDS = 3  # renewed every second
    woken = []
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: woken.append((kind, pk)))
    ts = TopicSet.objects.create(name="lease")
    pool = Pool.objects.create(name="lease", topic_set=ts, sources="systems", depth=10)
    me = leases.claim(Pool, pool.pk)
    first = Pool.objects.get(pk=pool.pk).lease_expires
    with leases.renewing(Pool, pool.pk, me):
        time.sleep(2.5)
        renewed = Pool.objects.get(pk=pool.pk).lease_expires
    assert renewed > first
    assert not chunks_reconcile() and not pools_reconcile()  # a live holder keeps it
    # past its lease without renewal, another host's holder loses it
    Pool.objects.filter(pk=pool.pk).update(holder="elsewhere:1")
    time.sleep(3.2)
    assert pools_reconcile().requeued == [pool.pk] and woken == [("pool", pool.pk)]
