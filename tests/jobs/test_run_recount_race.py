"""Two chunks of one run finishing at the same moment leave the run done, not "running"
for ever: on PostgreSQL, two threads (two connections) commit the last two chunks of a
run, and a barrier holds each recount until the other has counted too -- the interleaving
in which, without the lock on the run rows, each counted before the other committed and
the later write put its stale count back. A first barrier holds both chunks inside their
result transactions (lease checked, nothing committed) so the two commits always
interleave."""
import threading

import pytest
from django.db import connections

from jobs import leases
from jobs.services import reconcile_all
from retrieval import services
from retrieval.services import runs
from retrieval.models import Collection, Ranking, Run, RunChunk
from tests.workers import require_postgresql
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run_of_two_chunks(settings, monkeypatch):
    """A run of 4 titles in 2 chunks whose rankings another run already stored: finishing
    a chunk links its queries and commits, with no search."""
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: None)
    settings.RETRIEVAL_CHUNK_SIZE = 2
    Collection.objects.create(name="c", format="trec", source_path="x", status="ready",
                              index_path="/nonexistent")
    ts = TopicSet.objects.create(name="ts")
    for i in range(1, 5):
        Topic.objects.create(topic_set=ts, topic_id=str(i), title=f"query number {i}")
    run = services.run_create(topic_set_name="ts", collection_name="c", model_name="bm25")
    for chunk in RunChunk.objects.filter(run=run):
        for key in chunk.keys:
            Ranking.objects.create(key=key, docids=b"", scores=b"")
    return run


def test_two_chunks_committing_together_leave_the_run_done(run_of_two_chunks, monkeypatch):
    require_postgresql()  # SQLite has no row locks: its writers take turns anyway
    run = run_of_two_chunks
    chunks = list(RunChunk.objects.filter(run=run).values_list("pk", flat=True))
    assert len(chunks) == 2
    both_committing = threading.Barrier(2)
    counted_both = threading.Barrier(2)
    committing = threading.local()
    waited = []
    held, count = leases.held, runs._runs_count

    def held_then_wait(model, pk, holder):  # each chunk's result transaction, lease checked
        ok = held(model, pk, holder)
        committing.now = True
        both_committing.wait(timeout=10)  # neither commits before both are this far
        return ok

    def count_then_wait(run_ids):
        counted = count(run_ids)
        if getattr(committing, "now", False):
            try:  # wait until the other chunk has counted too (or 3 s: it cannot)
                counted_both.wait(timeout=3)
                waited.append("together")
            except threading.BrokenBarrierError:
                waited.append("alone")
        return counted

    monkeypatch.setattr(leases, "held", held_then_wait)
    monkeypatch.setattr(runs, "_runs_count", count_then_wait)
    errors = []

    def finish(chunk_id):
        try:
            services.chunk_retrieve(chunk_id)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=finish, args=(pk,)) for pk in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    assert set(RunChunk.objects.filter(run=run).values_list("status", flat=True)) == {"done"}
    run.refresh_from_db()
    assert (run.status, run.completed, run.tasks_done) == ("done", 4, 2), waited
    # the second recount waited for the first to commit: never counted "together"
    assert sorted(waited) == ["alone", "alone"], waited


def test_the_reconciler_recounts_every_unfinished_run(run_of_two_chunks):
    run = run_of_two_chunks
    for pk in RunChunk.objects.filter(run=run).values_list("pk", flat=True):
        services.chunk_retrieve(pk)
    # a recount lost (as the race above once did): the run says running, its rows say done
    Run.objects.filter(pk=run.pk).update(status="running", completed=2, tasks_done=1,
                                         finished=None)
    reconcile_all(origin="command")
    run.refresh_from_db()
    assert (run.status, run.completed, run.tasks_done) == ("done", 4, 2)
    assert run.finished is not None
