"""A result commits only while its claim holds the lease: for each kind of job (retrieval
chunk, pool build, refit of a learned judging order, analysis, upload), a claim whose lease ran out and was taken by the
next attempt discards its result; the unit stays with the claim that holds it now.

The takeover is the one a threads-pool worker meets: the same process (same ``host:pid``
holder name) claims the unit again after the lease expired, so only the attempt tells the
two claims apart."""
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from jobs import leases
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_broker(monkeypatch):
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: None)


def _take_over(model, pk) -> leases.Holder:
    """The first claim's lease runs out while it works, and the next attempt claims it."""
    first = model.objects.get(pk=pk)
    assert (first.status, first.attempts) == ("running", 1)
    model.objects.filter(pk=pk).update(lease_expires=timezone.now() - timedelta(seconds=1))
    second = leases.claim(model, pk)
    assert second is not None and second.attempt == 2 and second == first.holder
    return second


def _still_held_by_the_second_claim(model, pk, second):
    row = model.objects.get(pk=pk)
    assert (row.status, row.holder, row.attempts) == ("running", second, 2)
    return row


def test_a_chunk_taken_over_discards_its_rankings(settings, monkeypatch):
    from retrieval import services
    from retrieval.models import Collection, Ranking, Run, RunChunk, RunQuery
    from retrieval.services import runs

    settings.RETRIEVAL_CHUNK_SIZE = 10
    Collection.objects.create(name="c", format="trec", source_path="x", status="ready",
                              index_path="/nonexistent")
    ts = TopicSet.objects.create(name="ts")
    for i in (1, 2):
        Topic.objects.create(topic_set=ts, topic_id=str(i), title=f"query {i}")
    run = services.run_create(topic_set_name="ts", collection_name="c", model_name="bm25")
    (chunk,) = RunChunk.objects.filter(run=run)
    # another run stored these rankings meanwhile: the chunk only links its queries to them
    for key in chunk.keys:
        Ranking.objects.create(key=key, docids=b"", scores=b"")
    taken = []
    vocabulary_ids = runs.vocabulary_ids

    def stalls_then_looks_up(strings):  # after the search, before the result commits
        taken.append(_take_over(RunChunk, chunk.pk))
        return vocabulary_ids(strings)

    monkeypatch.setattr(runs, "vocabulary_ids", stalls_then_looks_up)
    assert services.chunk_retrieve(chunk.pk) == 0
    _still_held_by_the_second_claim(RunChunk, chunk.pk, taken[0])
    assert not RunQuery.objects.filter(run=run, ranking__isnull=False).exists()
    assert Run.objects.get(pk=run.pk).status == "running"
    # the claim that holds it commits its own result
    monkeypatch.setattr(runs, "vocabulary_ids", vocabulary_ids)
    assert runs._chunk_search_store(chunk, run, taken[0]) == 0
    run.refresh_from_db()
    assert (run.status, run.completed) == ("done", 2)
    assert RunChunk.objects.get(pk=chunk.pk).status == "done"


def test_a_pool_build_taken_over_discards_its_topics(tmp_path, monkeypatch):
    from pooling import services
    from pooling.models import Pool, PoolTopic
    from retrieval.services import system_run_import

    ts = TopicSet.objects.create(name="ts")
    Topic.objects.create(topic_set=ts, topic_id="1", title="x")
    run_file = tmp_path / "sys.run"
    run_file.write_text("1 Q0 d1 1 3.0 sys\n1 Q0 d2 2 2.0 sys\n")
    system_run_import(run_file, topic_set_name="ts")
    pool = services.pool_create(topic_set_name="ts", sources="systems", depth=10, name="p")
    taken = []
    compute = services.pool_maths.pool_compute

    def stalls_then_computes(*args, **kwargs):
        taken.append(_take_over(Pool, pool.pk))
        return compute(*args, **kwargs)

    monkeypatch.setattr(services.pool_maths, "pool_compute", stalls_then_computes)
    services.pool_build(pool.pk)
    _still_held_by_the_second_claim(Pool, pool.pk, taken[0])
    assert not PoolTopic.objects.filter(pool=pool).exists()
    # a duplicate delivery while the second claim is live changes nothing either
    monkeypatch.setattr(services.pool_maths, "pool_compute", compute)
    assert services.pool_build(pool.pk).status == "running"
    assert not PoolTopic.objects.filter(pool=pool).exists()


def test_a_refit_taken_over_discards_its_ranking(tmp_path):
    from judging import services
    from judging.models import TopicRefit
    from judging.services import refits
    from tests.judging.conftest import make_pool

    pool = make_pool(tmp_path, topics=("1",), docs=4)
    task = services.judging_task_create(pool=pool, name="t", mode="topic", order="al-rank")
    refit = TopicRefit.objects.get(task_topic__task=task)
    taken = []
    refits.topic_refit(refit.pk, fitted=lambda: taken.append(_take_over(TopicRefit, refit.pk)))
    row = _still_held_by_the_second_claim(TopicRefit, refit.pk, taken[0])
    assert bytes(row.ranking) == b"" and row.fits == 0 and row.fitted is None


def test_an_analysis_taken_over_discards_its_result():
    from evaluation import services
    from evaluation.models import Analysis

    analysis = services.analysis_create("evaluate", {})
    taken = []

    def stalls_then_computes(params, progress):
        taken.append(_take_over(Analysis, analysis.pk))
        return {"answer": 42}

    services.analysis_run(analysis.pk, compute=stalls_then_computes)
    row = _still_held_by_the_second_claim(Analysis, analysis.pk, taken[0])
    assert row.result is None and row.finished is None


def test_an_upload_taken_over_rolls_its_import_back(settings, tmp_path, monkeypatch):
    from topics import topicfiles
    from uploads import services
    from uploads.models import Upload

    settings.DATA_DIR = tmp_path
    upload = services.upload_create(
        "topics", SimpleUploadedFile("t.tsv", b"id\ttitle\nT1\tfirst\nT2\tsecond\n"),
        {"topic_set": "up", "format": "tsv"})
    taken = []
    iter_topics = topicfiles.iter_topics

    def stalls_then_reads(*args, **kwargs):
        taken.append(_take_over(Upload, upload.pk))
        return iter_topics(*args, **kwargs)

    monkeypatch.setattr(topicfiles, "iter_topics", stalls_then_reads)
    row = services.upload_run(upload.pk)
    _still_held_by_the_second_claim(Upload, upload.pk, taken[0])
    assert row.result is None
    assert not TopicSet.objects.filter(name="up").exists()  # rolled back, not imported
    assert (tmp_path / "uploads").exists() and any((tmp_path / "uploads").rglob("t.tsv"))
