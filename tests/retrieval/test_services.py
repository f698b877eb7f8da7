"""Services and commands against the database (no worker: tasks are checked as queued and
the service they call is run directly)."""
import io
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from retrieval import anserini
from retrieval.models import Collection, Docid, Ranking, Run, RunChunk, RunQuery
from retrieval.rankings import unpack
from retrieval.selectors import docid_strings, ranking_records
from retrieval.services import RetrievalError, chunk_retrieve, run_create
from topics.models import QueryVariant, Topic, TopicSet

pytestmark = pytest.mark.django_db


@pytest.fixture
def index_root(settings, tmp_path):
    settings.INDEX_ROOT = tmp_path / "indexes"
    return settings.INDEX_ROOT


@pytest.fixture
def cacm(index_root, cacm_dir):
    out = io.StringIO()
    call_command("import_collection", "cacm", str(cacm_dir / "cacm.all"), "--format", "smart",
                 stdout=out)
    assert "3204 documents" in out.getvalue()
    return Collection.objects.get(name="cacm")


@pytest.fixture
def topics(cacm_queries):
    ts = TopicSet.objects.create(name="cacm")
    for qid in ("1", "2", "3", "4"):
        Topic.objects.create(topic_set=ts, topic_id=qid, title=cacm_queries[qid],
                             description=cacm_queries[qid] + " please")
    return ts


def test_run_create_refuses_a_source_field_no_topic_has(cacm, cacm_queries):
    ts = TopicSet.objects.create(name="untitled")
    Topic.objects.create(topic_set=ts, topic_id="1", description=cacm_queries["1"])
    with pytest.raises(RetrievalError, match="has a title.*--source descriptions"):
        run_create(topic_set_name="untitled", collection_name="cacm", model_name="bm25",
                   source="titles")
    assert not Run.objects.filter(topic_set=ts).exists()


def test_import_collection_records_everything(cacm):
    assert cacm.status == "ready" and cacm.doc_count == 3204
    assert cacm.anserini_version == "1.7.1"
    assert "DefaultEnglishAnalyzer" in cacm.analyzer
    assert len(cacm.checksum) == 64
    assert Path(cacm.index_path).is_dir()
    assert Docid.objects.filter(docid__in=["1", "3204"]).count() == 2
    assert anserini.index_doc_count(cacm.index_path) == 3204


def test_import_collection_is_all_or_nothing(index_root, tmp_path):
    bad = tmp_path / "bad.trec"
    bad.write_text("<DOC>\n<DOCNO>a</DOCNO>text\n</DOC>\n<DOC>\n<DOCNO>b</DOCNO>\n")
    with pytest.raises(CommandError, match=r"bad.trec, line 4: .*unterminated DOC"):
        call_command("import_collection", "broken", str(bad), "--format", "trec",
                     stdout=io.StringIO())
    assert not Collection.objects.filter(name="broken").exists()
    assert not Docid.objects.filter(docid="a").exists()
    assert list(Path(index_root).iterdir()) == []


def test_run_create_queues_chunks_and_reuses_keys(cacm, topics, settings,
                                                  django_capture_on_commit_callbacks):
    settings.RETRIEVAL_CHUNK_SIZE = 3
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = run_create(topic_set_name="cacm", collection_name="cacm", model_name="bm25",
                         depth=100, source="titles")
    assert (run.total, run.completed, run.tasks_total, run.status) == (4, 0, 2, "queued")
    assert len(callbacks) == 2
    keys = sorted(RunQuery.objects.filter(run=run).values_list("key", flat=True))
    assert len(set(keys)) == 4
    chunks = list(RunChunk.objects.filter(run=run))
    assert [c.keys for c in chunks] == [keys[:3], keys[3:]]
    # What the tasks do, run directly; a second delivery of a finished chunk does nothing.
    assert chunk_retrieve(chunks[0].pk) == 3
    run.refresh_from_db()
    assert (run.status, run.completed, run.tasks_done) == ("running", 3, 1)
    assert chunk_retrieve(chunks[1].pk) == 1
    assert chunk_retrieve(chunks[0].pk) == 0
    run.refresh_from_db()
    assert (run.status, run.completed, run.tasks_done, run.tasks_total) == ("done", 4, 2, 2)
    assert {c.status for c in RunChunk.objects.filter(run=run)} == {"done"}
    assert Ranking.objects.filter(key__in=keys).count() == 4
    rq = RunQuery.objects.get(run=run, topic__topic_id="1")
    packed = unpack(rq.ranking.docids, rq.ranking.scores)
    names = docid_strings(packed.docids)
    direct = anserini.search_batch(cacm.index_path, {"1": rq.query_text},
                                   anserini.ModelSpec("bm25"), k=100)["1"]
    assert [names[int(i)] for i in packed.docids] == direct[0]
    assert np.allclose(packed.scores, direct[1])
    # Same collection, model, depth and texts: shared at once, nothing queued.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        again = run_create(topic_set_name="cacm", collection_name="cacm", model_name="bm25",
                           depth=100, source="titles")
    assert (again.status, again.completed, again.tasks_total, len(callbacks)) == ("done", 4, 0, 0)
    # A different depth is a different key.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        deeper = run_create(topic_set_name="cacm", collection_name="cacm", model_name="bm25",
                            depth=200, source="titles")
    assert deeper.completed == 0 and len(callbacks) == 2


def test_variant_runs_group_by_normalised_text(cacm, topics, settings, tmp_path,
                                               django_capture_on_commit_callbacks):
    settings.MAX_QUERY_CHARS = 30
    t1 = Topic.objects.get(topic_set=topics, topic_id="1")
    t2 = Topic.objects.get(topic_set=topics, topic_id="2")
    for raw, norm, worker, count in [
        ("Time sharing!", "time sharing", "w1", 1), ("time  SHARING", "time sharing", "w2", 2),
        ("the of", "the of", "w3", 1),
        ("x " * 40, ("x " * 40).strip(), "w4", 1),
    ]:
        QueryVariant.objects.create(topic=t1, raw=raw, normalised=norm, worker_id=worker,
                                    count=count)
    QueryVariant.objects.create(topic=t2, raw="time sharing", normalised="time sharing",
                                worker_id="w9")
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(topic_set_name="cacm", collection_name="cacm", model_name="sdm",
                         depth=10, source="variants")
    rows = {(q.topic.topic_id, q.query_text): q for q in RunQuery.objects.filter(run=run)}
    assert run.total == 4
    ts = rows[("1", "time sharing")]
    assert (ts.weight, ts.users) == (3, "w1\nw2")
    assert ts.label.startswith("v")
    # same text under two topics: one key, retrieved once
    assert rows[("2", "time sharing")].key == ts.key
    long_q = [q for q in rows.values() if q.note]
    assert len(long_q) == 1 and "truncated from 79 to 29" in long_q[0].note
    assert len(long_q[0].query_text) <= 30
    keys = sorted({q.key for q in rows.values()})
    assert len(keys) == 3
    (chunk,) = RunChunk.objects.filter(run=run)
    assert sorted(chunk.keys) == keys
    chunk_retrieve(chunk.pk)
    run.refresh_from_db()
    assert (run.status, run.completed) == ("done", 4)
    empty = rows[("1", "the of")]
    empty.refresh_from_db()
    assert empty.ranking.length == 0 and "no searchable terms" in empty.ranking.empty_reason
    records = list(ranking_records("cacm", sources=["user"]))
    assert len(records) == 4 and {r.topic_id for r in records} == {"1", "2"}
    shared = [r for r in records if r.label == ts.label]
    assert len(shared) == 2 and np.array_equal(shared[0].docids, shared[1].docids)
    out = tmp_path / "variants.run"
    call_command("export_run", "--topic-set", "cacm", "--collection", "cacm", "--model", "sdm",
                 "--source", "variants", "--out", str(out), stdout=io.StringIO())
    qids = {line.split()[0] for line in out.read_text().splitlines()}
    assert f"1:{ts.label}" in qids and f"2:{ts.label}" in qids
    assert all(line.split()[5] == "sdm-variants" for line in out.read_text().splitlines())


def test_import_and_export_system_run(topics, tmp_path):
    run_file = tmp_path / "sys.run"
    run_file.write_text("1 Q0 d2 1 1.0 mysys\n1 Q0 d1 2 1.0 mysys\n1 Q0 d3 3 4.0 mysys\n"
                        "3 Q0 d1 1 0.5 mysys\n")
    call_command("import_run", str(run_file), "--topic-set", "cacm", "--tag", "sysA",
                 stdout=io.StringIO())
    run = Run.objects.get(tag="sysA")
    assert (run.kind, run.total, run.status) == ("system", 2, "done")
    out = tmp_path / "out.run"
    call_command("export_run", "--topic-set", "cacm", "--tag", "sysA", "--out", str(out),
                 stdout=io.StringIO())
    assert out.read_text().splitlines() == [
        "1 Q0 d3 1 4.0 sysA", "1 Q0 d1 2 1.0 sysA", "1 Q0 d2 3 1.0 sysA", "3 Q0 d1 1 0.5 sysA"]
    recs = list(ranking_records("cacm", sources=["system"]))
    assert [(r.topic_id, r.label, r.source) for r in recs] == [("1", "sysA", "system"),
                                                               ("3", "sysA", "system")]


@pytest.mark.parametrize("text, message", [
    ("1 Q0 d1 1 1.0 t\n99 Q0 d1 1 1.0 t\n", "line 2: topic '99' is not in the topic set"),
    ("1 Q0 d1 1 1.0 t\n1 Q0 d1 2 0.5 t\n", "line 2: document 'd1' appears twice"),
    ("1 Q0 d1 1 1.0\n", "line 1: expected 6 columns"),
])
def test_import_run_errors_import_nothing(topics, tmp_path, text, message):
    p = tmp_path / "bad.run"
    p.write_text(text)
    with pytest.raises(CommandError, match=message):
        call_command("import_run", str(p), "--topic-set", "cacm", stdout=io.StringIO())
    assert not Run.objects.exists() and not Ranking.objects.exists()
    assert not Docid.objects.filter(docid="d1").exists()


def test_pages(cacm, topics, admin_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(topic_set_name="cacm", collection_name="cacm", model_name="bm25",
                         depth=10, source="titles")
    page = admin_client.get("/retrieval/").content.decode()
    assert "cacm" in page and "0/4" in page and "queued" in page
    detail = admin_client.get(f"/retrieval/runs/{run.id}/").content.decode()
    assert "pending" in detail
    assert '<meta http-equiv="refresh"' in detail  # a queued run's page reloads itself
    doc = admin_client.get("/retrieval/collections/cacm/docs/1/").content.decode()
    assert "Preliminary Report-International Algebraic Language" in doc
    assert admin_client.get("/retrieval/collections/cacm/docs/nope/").status_code == 404


def test_document_text_is_escaped(index_root, tmp_path, admin_client):
    src = tmp_path / "x.jsonl"
    src.write_text('{"id": "evil", "contents": "<script>alert(1)</script> hello"}\n')
    call_command("import_collection", "x", str(src), "--format", "jsonl", stdout=io.StringIO())
    page = admin_client.get("/retrieval/collections/x/docs/evil/").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_retrieving_a_chunk_costs_a_bounded_number_of_queries(
        cacm, cacm_queries, settings, django_capture_on_commit_callbacks,
        django_assert_max_num_queries):
    settings.RETRIEVAL_CHUNK_SIZE = 1000
    ts = TopicSet.objects.create(name="all")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=q, title=t)
                               for q, t in cacm_queries.items()])
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(topic_set_name="all", collection_name="cacm", model_name="bm25",
                         depth=1000, source="titles")
    (chunk,) = RunChunk.objects.filter(run=run)
    # 64 queries x up to 1,000 documents: the number of SQL queries does not grow with them
    with django_assert_max_num_queries(25):
        chunk_retrieve(chunk.pk)
    run.refresh_from_db()
    assert (run.status, run.completed) == ("done", 64)
