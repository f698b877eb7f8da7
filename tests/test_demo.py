"""`manage.py demo --from CACM` end to end on PostgreSQL with the Celery worker the demo
starts on Redis; the stored rows are checked, and its evaluation against pytrec_eval on
the exported run and qrels."""
import io
from collections import Counter
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from crowd.models import Participant, Study
from crowd.simulated import content_words, simulated_query
from judging.models import JudgingSlot, JudgingTask, Label
from pooling.models import Pool
from pooling.selectors import pool_docids_by_topic
from retrieval.models import Run
from topics.models import QueryVariant, Statement, Topic

REDIS_DB = 13


def test_simulated_query_is_seeded_and_drawn_from_the_statement():
    s = "What articles exist which deal with TSS (Time Sharing System), an operating system?"
    assert content_words(s) == ["tss", "time", "sharing", "system", "operating"]
    q = simulated_query(s, seed=1, worker="sim-01", topic="1")
    assert q == simulated_query(s, seed=1, worker="sim-01", topic="1")
    assert 2 <= len(q.split()) <= 5 and set(q.split()) <= set(content_words(s))
    others = {simulated_query(s, seed=1, worker=f"sim-{w:02d}", topic="1") for w in range(20)}
    assert len(others) > 5
    with pytest.raises(ValueError, match="topic 9"):
        simulated_query("the of and", seed=1, worker="sim-01", topic="9")


def test_demo_from_a_missing_folder_names_from(tmp_path):
    with pytest.raises(CommandError, match="--from"):
        call_command("demo", "--from", str(tmp_path / "nope"), stdout=io.StringIO())
    (tmp_path / "cacm.all").write_text(".I 1\n.T\nx\n")
    with pytest.raises(CommandError, match="query.text"):
        call_command("demo", "--from", str(tmp_path), stdout=io.StringIO())


@pytest.fixture
def broker(celery_on_redis, settings, tmp_path):
    """The app on Redis with a queue of its own: the demo starts its worker there."""
    settings.INDEX_ROOT = tmp_path / "indexes"
    return celery_on_redis(REDIS_DB, "demo-test")


def _trec(path: Path) -> dict:
    out: dict = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 6:  # run
            out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
        else:  # qrels
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


@pytest.mark.integration
@pytest.mark.slow
def test_demo_end_to_end(broker, shared_data, tmp_path, admin_client):
    import pytrec_eval

    cacm = shared_data / "small-corpora" / "cacm"
    if not (cacm / "cacm.all").is_file():
        pytest.skip(f"CACM not found in {cacm}")
    out = io.StringIO()
    call_command("demo", "--from", str(cacm), stdout=out)
    text = out.getvalue()
    for n in range(1, 10):
        assert f"[{n}/9]" in text
    assert "http://127.0.0.1:8000/judging/manage/demo-simulated-judging/" in text

    # topics and statements: the first 10 judged CACM queries
    topics = list(Topic.objects.filter(topic_set__name="demo").values_list("topic_id", flat=True))
    assert sorted(topics, key=int) == [str(i) for i in range(1, 11)]
    assert Statement.objects.filter(topic__topic_set__name="demo").count() == 10

    # a study flagged simulated, 5 sim- workers, 50 variants made by the documented procedure
    study = Study.objects.get(topic_set__name="demo")
    assert "SIMULATED" in study.name and "SIMULATED" in study.instructions
    workers = list(Participant.objects.filter(study=study).values_list("worker_id", "status"))
    assert sorted(workers) == [(f"sim-{w:02d}", "completed") for w in range(1, 6)]
    variants = list(QueryVariant.objects.filter(topic__topic_set__name="demo")
                    .select_related("topic"))
    assert len(variants) == 50 and all(v.worker_id.startswith("sim-") for v in variants)
    for v in variants:
        statement = v.topic.statements.get().text
        assert v.raw in {simulated_query(statement, seed=42, worker=v.worker_id,
                                         topic=v.topic.topic_id, attempt=a) for a in range(20)}

    # runs: BM25 and SDM over titles and variants, done through the worker; 2 system runs
    runs = Run.objects.filter(topic_set__name="demo")
    assert sorted((r.kind, r.model.name if r.model else r.tag, r.source, r.status)
                  for r in runs) == [
        ("retrieval", "bm25", "titles", "done"), ("retrieval", "bm25", "variants", "done"),
        ("retrieval", "sdm", "titles", "done"), ("retrieval", "sdm", "variants", "done"),
        ("system", "demo-bm25", "system", "done"), ("system", "demo-sdm", "system", "done")]
    assert all(r.tasks_done == r.tasks_total >= 1 for r in runs if r.kind == "retrieval")

    # pools: combined is the union of users and systems, per topic
    pools = {p.sources: p for p in Pool.objects.filter(topic_set__name="demo")}
    assert set(pools) == {"users", "systems", "combined"}
    assert all(p.status == "done" and p.depth == 10 for p in pools.values())
    docs = {k: pool_docids_by_topic(p) for k, p in pools.items()}
    for t in topics:
        assert set(docs["combined"][t]) == set(docs["users"][t]) | set(docs["systems"][t])

    # judging: half of every topic of the combined pool, graded from CACM's qrels by
    # sim-assessor, whose leases all end with the demo
    task = JudgingTask.objects.get(name="demo-simulated-judging")
    assert task.items_count == sum(len(d) for d in docs["combined"].values())
    labels = list(Label.objects.filter(judgment_set=task.judgment_set))
    per_topic = Counter(lb.topic_id for lb in labels)
    assert per_topic == {t: max(1, round(len(docs["combined"][t]) * 0.5)) for t in topics}
    assert not JudgingSlot.objects.filter(task=task, state=JudgingSlot.LEASED).exists()
    assert "(means over 10 topics: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)" in text
    assert {lb.assessor for lb in labels} == {"sim-assessor"}
    assert all(lb.simulated for lb in labels)  # flagged in the database, not only by name
    qrels_all: dict = {}
    for line in (cacm / "cacm.qrels").read_text().splitlines():
        q, _, d, r = line.split()
        qrels_all.setdefault(str(int(q)), {})[d] = int(r)
    for lb in labels:
        assert lb.grade == (1 if qrels_all.get(lb.topic_id, {}).get(lb.docid) else 0)
    assert any(lb.grade == 1 for lb in labels)

    # evaluation: the printed means equal pytrec_eval on the exported run and qrels
    qrels_file, measures = tmp_path / "demo.qrels", {"map", "P_10", "ndcg_cut_10"}
    call_command("export_qrels", "--judgments", task.name, "--format", "adhoc",
                 "--out", str(qrels_file), stdout=io.StringIO())
    qrels = _trec(qrels_file)
    for model in ("bm25", "sdm"):
        run_file = tmp_path / f"{model}.run"
        call_command("export_run", "--topic-set", "demo", "--tag", f"demo-{model}",
                     "--out", str(run_file), stdout=io.StringIO())
        per = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(_trec(run_file))
        mean = {m: sum(v[m] for v in per.values()) / len(per) for m in measures}
        printed = re.search(rf"demo-{model}: AP ([\d.]+), P@10 ([\d.]+), nDCG@10 ([\d.]+)", text)
        assert printed, text
        for got, m in zip(printed.groups(), ("map", "P_10", "ndcg_cut_10")):
            assert float(got) == pytest.approx(mean[m], abs=5e-5), (model, m)
        assert mean["map"] > 0

    # the pages say simulated: the study by its name, the judging task by its assessor
    pages = re.findall(r"  (study \(simulated workers\)|judging task): http://[^/]+(\S+)", text)
    assert len(pages) == 2
    for label, url in pages:
        page = admin_client.get(url).content.decode()
        assert ("SIMULATED" if label.startswith("study") else "sim-assessor") in page, url

    # a second demo under the same name stops before touching anything
    with pytest.raises(CommandError, match="already exists.*--name NEW"):
        call_command("demo", "--from", str(cacm), "--no-worker", stdout=io.StringIO())


def test_printed_addresses_follow_port(monkeypatch):
    from projects.management.commands.demo import Command

    monkeypatch.setenv("PORT", "9123")
    options = Command().create_parser("manage.py", "demo").parse_args([])
    assert options.base_url == "http://127.0.0.1:9123"
    monkeypatch.delenv("PORT")
    options = Command().create_parser("manage.py", "demo").parse_args([])
    assert options.base_url == "http://127.0.0.1:8000"
