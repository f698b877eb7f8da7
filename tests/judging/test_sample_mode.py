"""A judging task in sample mode, end to end: the draw is the design's (judging.sampling)
on the pool, the items are the drawn documents in a random order, the judgment set keeps
every pooled document's stratum and exports TREC's prels and sample_eval qrels, and
``evaluate --estimator`` gives from the stored set the numbers it gives from the exported
files and from the design and estimators called directly; the evaluation page shows the
intervals."""
from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from evaluation import reports
from evaluation.estimators import estimate_runs, parse_estimated_measures, ranking_order
from evaluation.measures.runs import read_run_rankings
from judging import sampling, selectors, services
from judging.models import JudgingItem, SampleDesign, SampleUnit
from judging.prels import TopicSample, read_prels
from pooling.selectors import pool_documents, pool_get

pytestmark = pytest.mark.django_db

TOPICS = [str(t) for t in range(101, 107)]
RUNS = ("fair", "good", "noisy", "weak")
DEPTH = 25


@pytest.fixture
def web(shared_data, tmp_path):
    """Four Web 2011 runs cut to six topics and depth 25, a depth-25 pool of them, and
    NIST's grades of the pooled documents."""
    from topics.models import Topic, TopicSet

    ts = TopicSet.objects.create(name="web")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=t, title=f"topic {t}",
                                     description=f"statement {t}") for t in TOPICS])
    paths = {}
    for name in RUNS:
        tag, per = read_run_rankings(shared_data / "eval-oracles" / "web2011" / "runs" / f"{name}.run")
        path = tmp_path / f"{name}.run"
        with open(path, "w") as fh:
            for t in TOPICS:
                docs, scores, _ = per[t]
                for r, d in enumerate(ranking_order(docs, scores)[:DEPTH], 1):
                    fh.write(f"{t} Q0 {d} {r} {100 - r} {tag}\n")
        call_command("import_run", str(path), "--topic-set", "web", "--tag", name)
        paths[name] = path
    call_command("build_pool", "--topic-set", "web", "--sources", "systems", "--depth", str(DEPTH),
                 "--name", "wp")
    grades: dict = {}
    for line in open(shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"):
        t, _, d, g = line.split()
        if t in TOPICS:
            grades.setdefault(t, {})[d] = int(g)
    return pool_get("wp"), paths, grades


def _judge_all(task, grades, *, limit=None, assessor="ann"):
    """Judge the task's items through the queue, NIST's grade for each (0 if NIST did
    not judge it); at most ``limit`` items."""
    done = 0
    while limit is None or done < limit:
        batch = services.batch_lease(task, assessor)
        if not batch:
            break
        for item in batch:
            if limit is not None and done >= limit:
                services.leases_release(task, assessor)
                return done
            g = grades.get(item.topic_id, {}).get(item.docid, 0)
            services.judgment_submit(task, assessor, item.item_id, {"": g},
                                     submit_key=f"{item.item_id}")
            done += 1
    return done


def _evaluate(*args) -> dict:
    out = io.StringIO()
    call_command("evaluate", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_task_judges_the_designs_sample(web):
    pool, _, _ = web
    task = services.judging_task_create(pool=pool, name="s", mode="sample", scale="trec-web",
                                        sample_budget="20%", sample_strata="depth:5,10",
                                        sample_seed=7)
    assert task.mode == "sample" and task.order == "pool"
    design = SampleDesign.objects.get(judgment_set=task.judgment_set)
    assert (design.strata, design.budget, design.seed) == ("depth:5,10", "20%", 7)
    pooled: dict = {}
    for d in pool_documents(pool):
        pooled.setdefault(d.topic_id, []).append(d)
    assert SampleUnit.objects.filter(judgment_set=task.judgment_set).count() == sum(
        len(v) for v in pooled.values())
    for topic, docs in pooled.items():
        want = sampling.draw_topic(topic, [d.docid for d in docs], [d.min_rank for d in docs],
                                   [d.weight for d in docs], spec=sampling.parse_strata("depth:5,10"),
                                   budget=sampling.parse_budget("20%"), seed=7)
        units = list(SampleUnit.objects.filter(judgment_set=task.judgment_set, topic_id=topic)
                     .order_by("position"))
        assert [(u.docid, u.stratum, u.drawn, u.stratum_size, u.drawn_in_stratum) for u in units] == [
            (w.docid, w.stratum, w.drawn, w.stratum_size, w.drawn_in_stratum) for w in want]
        assert all(u.probability == u.drawn_in_stratum / u.stratum_size for u in units)
        # the items: the drawn documents, numbered in the design's random order
        items = list(JudgingItem.objects.filter(task=task, topic_id=topic).order_by("position")
                     .values_list("docid", "position"))
        drawn = sorted((w for w in want if w.drawn), key=lambda w: w.order)
        assert items == [(w.docid, w.order) for w in drawn]
        assert len(drawn) == -(-len(docs) // 5)  # 20%, rounded up
    assert task.items_count == JudgingItem.objects.filter(task=task).count()
    assert selectors.task_export_formats("sample") == ("adhoc", "prels", "sample-eval", "raw")


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="sample"), "needs a budget"),
    (dict(mode="sample", sample_budget="20%", order="mtf"), "no other order"),
    (dict(mode="sample", sample_budget="20%", stop_rule="knee"), "no other order, stopping rule"),
    (dict(mode="sample", sample_budget="0%"), "above 0%"),
    (dict(mode="sample", sample_budget="20%", sample_strata="depth:9,3"), "increasing"),
    (dict(mode="topic", sample_budget="20%"), "are for sample mode"),
])
def test_sample_mode_refusals(web, kwargs, message):
    with pytest.raises(ValueError, match=message):
        services.judging_task_create(pool=web[0], name="x", **kwargs)


def test_estimates_from_the_stored_set_the_exports_and_the_design_agree(web, tmp_path):
    pool, paths, grades = web
    task = services.judging_task_create(pool=pool, name="s", mode="sample", sample_budget="30%",
                                        sample_seed=1)
    assert _judge_all(task, grades) == task.items_count
    measures = "AP nDCG nDCG@10 P@5"
    runs = [a for name in RUNS for a in ("--run", str(paths[name]))]
    for estimator in ("xinf", "statap"):
        stored = _evaluate(*runs, "--judgments", "s", "--estimator", estimator, "--measures", measures)
        assert stored["estimator"] == estimator and stored["confidence"] == 0.95
        for fmt in ("sample-eval", "prels"):
            out = tmp_path / f"s.{fmt}"
            call_command("export_qrels", "--judgments", "s", "--format", fmt, "--out", str(out),
                         stdout=io.StringIO())
            if fmt == "prels" and estimator == "xinf":
                with pytest.raises(CommandError, match="need every pooled document"):
                    _evaluate(*runs, "--prels", str(out), "--prels-format", fmt, "--estimator", estimator,
                              "--measures", measures)
                continue
            from_file = _evaluate(*runs, "--prels", str(out), "--prels-format", fmt, "--estimator",
                                  estimator, "--measures", measures)
            if fmt == "sample-eval":
                assert from_file["runs"] == stored["runs"]
            else:  # a group's size is read back as n/π: the last bits may differ
                assert _flat(from_file["runs"]) == pytest.approx(_flat(stored["runs"]), abs=1e-12)
        # the design and the estimators called directly, on the same pool and grades
        samples = {}
        for topic, units in _units_by_topic(pool, seed=1, budget="30%").items():
            s = TopicSample(strata={u.docid: str(u.stratum) for u in units})
            for u in units:
                if u.drawn:
                    s.grades[u.docid] = max(0, grades.get(topic, {}).get(u.docid, 0))
                    s.probability[u.docid] = u.probability
            samples[topic] = s
        direct = estimate_runs(
            [(tag, {t: ranking_order(d, sc) for t, (d, sc, _) in per.items()})
             for tag, per in (read_run_rankings(paths[n]) for n in RUNS)],
            samples, parse_estimated_measures(measures), estimator)
        assert json.loads(json.dumps(direct)) == stored["runs"]
    # stored runs: the same
    stored_runs = _evaluate("--topic-set", "web", *[a for n in RUNS for a in ("--tag", n)],
                            "--judgments", "s", "--estimator", "xinf", "--measures", "AP")
    files = _evaluate(*runs, "--judgments", "s", "--estimator", "xinf", "--measures", "AP")
    assert stored_runs["runs"] == files["runs"]


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _units_by_topic(pool, *, seed, budget):
    pooled: dict = {}
    for d in pool_documents(pool):
        pooled.setdefault(d.topic_id, []).append(d)
    return {t: sampling.draw_topic(t, [d.docid for d in docs], [d.min_rank for d in docs],
                                   [d.weight for d in docs], spec=sampling.parse_strata(None),
                                   budget=sampling.parse_budget(budget), seed=seed)
            for t, docs in pooled.items()}


def test_a_sample_judged_in_part_uses_the_judged_share(web, tmp_path):
    pool, paths, grades = web
    task = services.judging_task_create(pool=pool, name="s", mode="sample", sample_budget="40%",
                                        sample_seed=2, batch=5)
    judged = _judge_all(task, grades, limit=12)  # the first topic's first items only
    assert judged == 12
    sample = selectors.judgment_set_sample(task.judgment_set)
    topic = next(t for t, s in sample.items() if s.grades)
    s = sample[topic]
    assert len(s.grades) == 12 and sum(len(x.grades) for x in sample.values()) == 12
    for doc, p in s.probability.items():
        stratum = s.strata[doc]
        members = [d for d, h in s.strata.items() if h == stratum]
        assert p == sum(d in s.grades for d in members) / len(members)
    out = tmp_path / "s.sample-eval"
    call_command("export_qrels", "--judgments", "s", "--format", "sample-eval", "--out", str(out),
                 stdout=io.StringIO())
    lines = out.read_text().splitlines()
    assert len(lines) == SampleUnit.objects.filter(judgment_set=task.judgment_set).count()
    assert sum(not line.endswith(" -1") for line in lines) == 12
    assert read_prels(out, "sample-eval")[topic].grades == s.grades


def test_refusals_of_evaluate_and_export(web, tmp_path):
    pool, paths, grades = web
    services.judging_task_create(pool=pool, name="full", mode="topic")
    run = ("--run", str(paths["fair"]))
    with pytest.raises(CommandError, match="is not a sample"):
        _evaluate(*run, "--judgments", "full", "--estimator", "xinf", "--measures", "AP")
    with pytest.raises(CommandError, match="is not a sample"):
        call_command("export_qrels", "--judgments", "full", "--format", "prels", "--out",
                     str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()
    with pytest.raises(CommandError, match="read by an estimator"):
        _evaluate(*run, "--prels", str(tmp_path / "x"), "--measures", "AP")
    with pytest.raises(CommandError, match="cannot be estimated"):
        _evaluate(*run, "--judgments", "full", "--estimator", "xinf", "--measures", "RR")


@pytest.fixture
def staff(client):
    user = User.objects.create_user("org", password="pw", is_staff=True)
    client.force_login(user)
    return client


def test_the_evaluation_page_shows_the_intervals(web, staff, django_capture_on_commit_callbacks):
    from evaluation.models import Analysis
    from evaluation.tasks import analysis_run_task

    pool, _, grades = web
    task = services.judging_task_create(pool=pool, name="s", mode="sample", sample_budget="30%")
    _judge_all(task, grades)
    services.judging_task_create(pool=pool, name="full", mode="topic")
    data = {"topic_set": "web", "runs": [f"web/{n}" for n in RUNS], "measures": "AP nDCG@10",
            "order": "trec_eval", "estimator": "xinf"}
    refused = staff.post("/evaluation/new/evaluate/", {**data, "source": "judgments:full"})
    assert refused.status_code == 200 and "was not judged as a sample" in refused.content.decode()
    refused = staff.post("/evaluation/new/evaluate/", {**data, "source": "judgments:s", "measures": "RR"})
    assert "cannot be estimated" in refused.content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        r = staff.post("/evaluation/new/evaluate/", {**data, "source": "judgments:s"})
    assert r.status_code == 302, r.content.decode()[:2000]
    analysis = Analysis.objects.get()
    analysis_run_task(analysis.pk)
    analysis.refresh_from_db()
    assert analysis.status == "done", analysis.error
    command = _evaluate("--topic-set", "web", *[a for n in RUNS for a in ("--tag", n)],
                        "--judgments", "s", "--estimator", "xinf", "--measures", "AP nDCG@10")
    assert analysis.result["runs"] == command["runs"]
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    good = analysis.result["runs"]["good"]["mean"]["AP"]
    assert "Estimated mean over topics" in page and "AP (xinfAP)" in page
    for value in (good["estimate"], good["low"], good["high"]):
        assert f'<td class="num">{value:.4f}</td>' in page
    assert "<svg" in page  # the estimates with their intervals
    tables, plots = reports.present("evaluate", analysis.result)
    assert tables[0].columns[:4] == ["run", "AP", "AP_low", "AP_high"]
    assert set(plots) == {"intervals"}


def test_the_task_page_offers_the_sample_exports(web, staff):
    pool, _, grades = web
    task = services.judging_task_create(pool=pool, name="s", mode="sample", sample_budget="30%")
    _judge_all(task, grades, limit=7)
    page = staff.get("/judging/manage/s/").content.decode()
    assert "strata <code>depth:10,20,50</code>, budget 30% per topic, seed 0" in page
    for fmt in ("prels", "sample-eval"):
        assert f"/judging/manage/s/export/{fmt}/" in page
        r = staff.get(f"/judging/manage/s/export/{fmt}/")
        assert r.status_code == 200
        assert r.content.decode() == _exported(task, fmt)


def _exported(task, fmt) -> str:
    out = io.StringIO()
    selectors.sample_export_write(out, task.judgment_set, fmt)
    return out.getvalue()
