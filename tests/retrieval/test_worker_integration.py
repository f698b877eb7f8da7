"""A real Celery worker (prefork, 2 children) on Redis, against the PostgreSQL test database:
BM25 and SDM for CACM's 64 queries at depth 1000, stored rankings equal to Anserini's own
searcher on the same index, and MAP pinned where pytrec_eval and trec_eval agree."""
import io
import stat
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command

from retrieval import anserini
from retrieval.models import Collection, Ranking, Run, RunQuery
from retrieval.selectors import run_rankings
from retrieval.services import run_create
from tests.retrieval.test_reference_map import CACM_MAP
from topics.models import Topic, TopicSet

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 3

# MAP on CACM (52 judged queries, depth 1000) as trec_eval prints it for an independent run:
# Anserini's own indexer and SimpleSearcher, scored by the trec_eval inside the Anserini jar
# (tests/retrieval/test_reference_map.py checks that run against ours query by query).
MAP_BM25 = float(CACM_MAP["bm25"])
MAP_SDM = float(CACM_MAP["sdm"])


@pytest.fixture
def worker(celery_on_redis):
    return celery_on_redis(REDIS_DB, "retrieval-test").worker(pool="prefork", concurrency=2)


def _wait(run_ids, worker, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(id__in=run_ids))
        if any(r.status == "failed" for r in runs):
            pytest.fail("run failed: " + "; ".join(r.error for r in runs if r.error))
        if all(r.status == "done" for r in runs):
            return runs
        if not worker.alive:
            pytest.fail("worker exited:\n" + worker.tail())
        time.sleep(0.5)
    pytest.fail(f"runs not done after {timeout} s: "
                + ", ".join(f"{r.status} {r.completed}/{r.total}" for r in runs))


def _trec_eval_binary(tmp_path) -> Path | None:
    jar = anserini.jar_path()
    name = "trec_eval/trec_eval-linux-amd64"
    with zipfile.ZipFile(jar) as z:
        if name not in z.namelist():
            return None
        out = tmp_path / "trec_eval"
        out.write_bytes(z.read(name))
    out.chmod(out.stat().st_mode | stat.S_IEXEC)
    return out


def test_worker_runs_bm25_and_sdm_like_anserini(worker, settings, tmp_path, cacm_dir,
                                                cacm_queries):
    import pytrec_eval

    settings.INDEX_ROOT = tmp_path / "indexes"
    settings.RETRIEVAL_CHUNK_SIZE = 16
    call_command("import_collection", "cacm", str(cacm_dir / "cacm.all"), "--format", "smart",
                 stdout=io.StringIO())
    collection = Collection.objects.get(name="cacm")
    ts = TopicSet.objects.create(name="cacm")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=q, title=t)
                               for q, t in cacm_queries.items()])
    t0 = time.monotonic()
    runs = [run_create(topic_set_name="cacm", collection_name="cacm", model_name=m,
                       depth=1000, source="titles") for m in ("bm25", "sdm")]
    assert [r.tasks_total for r in runs] == [4, 4]
    runs = _wait([r.id for r in runs], worker)
    elapsed = time.monotonic() - t0
    assert all((r.completed, r.total, r.tasks_done) == (64, 64, 4) for r in runs)
    assert Ranking.objects.filter(collection=collection).count() == 128

    qrels: dict[str, dict[str, int]] = {}
    for line in (cacm_dir / "cacm.qrels").read_text().splitlines():
        q, _, d, rel = line.split()
        qrels.setdefault(str(int(q)), {})[d] = int(rel)
    trec_eval = _trec_eval_binary(tmp_path)
    qrels_file = tmp_path / "qrels"
    qrels_file.write_text("".join(f"{q} 0 {d} {r}\n" for q, ds in qrels.items()
                                  for d, r in ds.items()))
    maps = {}
    for run in sorted(runs, key=lambda r: r.model.name):
        spec = anserini.ModelSpec(run.model.kind)
        stored = {qid: (docids, scores) for qid, docids, scores in run_rankings(run)}
        assert len(stored) == 64
        assert len(stored["1"][0]) == 1000 and all(len(d) <= 1000 for d, _ in stored.values())
        reference = anserini.searcher_reference(collection.index_path, cacm_queries, spec, k=1000)
        for qid, text in cacm_queries.items():
            assert stored[qid][0] == reference[qid][0], (run.model.name, qid)
        # pytrec_eval
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map"})
        per_query = evaluator.evaluate({q: dict(zip(d, s)) for q, (d, s) in stored.items()})
        judged = [q for q in per_query if q in qrels]
        map_pytrec = sum(per_query[q]["map"] for q in judged) / len(judged)
        assert len(judged) == 52
        maps[run.model.name] = map_pytrec
        if trec_eval is not None:
            run_file = tmp_path / f"{run.model.name}.run"
            call_command("export_run", "--topic-set", "cacm", "--collection", "cacm",
                         "--model", run.model.name, "--out", str(run_file),
                         stdout=io.StringIO())
            out = subprocess.run([str(trec_eval), "-m", "map", str(qrels_file), str(run_file)],
                                 capture_output=True, text=True, timeout=60, check=True).stdout
            map_trec_eval = float(out.split()[2])
            print(f"{run.model.name}: trec_eval {map_trec_eval} pytrec_eval {map_pytrec:.6f}")
            assert abs(map_trec_eval - map_pytrec) < 1e-4, (map_trec_eval, map_pytrec)
    print(f"CACM MAP bm25={maps['bm25']:.6f} sdm={maps['sdm']:.6f}; 128 queries in {elapsed:.1f} s")
    assert maps["bm25"] == pytest.approx(MAP_BM25, abs=1e-4)
    assert maps["sdm"] == pytest.approx(MAP_SDM, abs=1e-4)

    # A second identical run is served from stored rankings without any task.
    again = run_create(topic_set_name="cacm", collection_name="cacm", model_name="bm25",
                       depth=1000, source="titles")
    assert (again.status, again.tasks_total, again.completed) == ("done", 0, 64)
    assert RunQuery.objects.filter(ranking__isnull=True).count() == 0


def test_worker_cli_wait_and_failure_recorded(worker, settings, tmp_path, cacm_dir, cacm_queries):
    settings.INDEX_ROOT = tmp_path / "indexes"
    call_command("import_collection", "cacm", str(cacm_dir / "cacm.all"), "--format", "smart",
                 stdout=io.StringIO())
    ts = TopicSet.objects.create(name="cacm")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=q, title=t)
                               for q, t in list(cacm_queries.items())[:8]])
    out = io.StringIO()
    call_command("run_retrieval", "--topic-set", "cacm", "--collection", "cacm", "--model", "qld",
                 "--depth", "100", "--wait", "--timeout", "120", stdout=out)
    assert "done 8/8 queries" in out.getvalue()
    # An index that has gone missing: the task fails and the run records why.
    Collection.objects.create(name="ghost", format="trec", source_path="x", status="ready",
                              index_path=str(tmp_path / "missing-index"))
    with pytest.raises(Exception, match="no Lucene index"):
        call_command("run_retrieval", "--topic-set", "cacm", "--collection", "ghost",
                     "--model", "bm25", "--wait", "--timeout", "120", stdout=io.StringIO())
    failed = Run.objects.get(collection__name="ghost")
    assert failed.status == "failed" and failed.tasks_failed == 1
    assert "AnseriniError" in failed.error
