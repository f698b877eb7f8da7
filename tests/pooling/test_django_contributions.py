"""Who contributes to pools and analyses: finished runs only, one ranking per variant and
model, every person (answer) counted once — in pools, RBP weights, growth and RBO alike.

The crowd answers here are stored as the crowd app stores them (one QueryVariant per
answer, with its answer time), and the runs as the retrieval app stores them.
"""
from __future__ import annotations

import datetime as dt
import json
import math
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from pooling import analysis, selectors, services
from pooling.models import Pool
from retrieval.models import Collection, RetrievalModel, Run, RunQuery
from retrieval.services import docids_ensure
from tests.pooling.test_django_pools import make_ranking, make_topic_set
from topics.models import QueryVariant
from topics.selectors import variant_label

T0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.timezone.utc)

# topic -> [(normalised text, worker, minutes after T0)]: one crowd answer each
ANSWERS = {
    "1": [("alpha", "wa", 10), ("alpha", "wb", 20), ("beta", "wc", 5)],
    "2": [("gamma", "wa", 30)],
}
# the rankings each run gives each distinct text (d1 is in every ranking of topic 1)
RANKINGS = {
    "old": {"alpha": ["d1", "d2"], "beta": ["d4", "d1", "d5"], "gamma": ["d6"]},
    "new": {"alpha": ["d3", "d1"], "beta": ["d4", "d1", "d5"], "gamma": ["d6", "d7"]},
    "sdm": {"alpha": ["d1", "d8"], "beta": ["d1", "d4"], "gamma": ["d7"]},
    "unfinished": {"alpha": ["d9"], "beta": ["d9"], "gamma": ["d9"]},
}


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def collection(name: str) -> Collection:
    return Collection.objects.create(name=name, format="jsonl", source_path="-",
                                     status="ready")


def variants_run(ts, topics, ids, *, model: str, coll: Collection | None, rankings: str,
                 status: str = "done", minutes: int = 0) -> Run:
    """A variants run over the answers, as run_create stores one (label, weight = answers,
    users = worker ids)."""
    r = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, collection=coll,
                           model=RetrievalModel.objects.get(name=model), source="variants",
                           status=status, depth=1000)
    Run.objects.filter(pk=r.pk).update(created=T0 + dt.timedelta(minutes=minutes))
    for topic_id, answers in ANSWERS.items():
        by_text: dict[str, list[str]] = {}
        for text, worker, _ in answers:
            by_text.setdefault(text, []).append(worker)
        for text, workers in by_text.items():
            RunQuery.objects.create(
                run=r, topic=topics[topic_id], label=variant_label(text), query_text=text,
                weight=len(workers), users="\n".join(sorted(workers)),
                ranking=make_ranking(ids, RANKINGS[rankings][text]))
    return r


def system_run(ts, topics, ids, tag: str, by_topic: dict, status: str = "done") -> Run:
    r = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=ts, source="system", tag=tag,
                           status=status)
    for topic_id, docids in by_topic.items():
        RunQuery.objects.create(run=r, topic=topics[topic_id], label=tag,
                                ranking=make_ranking(ids, docids))
    return r


@pytest.fixture
def crowd_db(db):
    """Answers collected in a study; BM25 run twice over c1 (the newer run is the one that
    counts), SDM once, and BM25 runs that are still running or failed (never counted)."""
    ids = docids_ensure([f"d{i}" for i in range(1, 10)])
    ts, topics = make_topic_set("cs", ("1", "2"))
    for topic_id, answers in ANSWERS.items():
        for text, worker, minutes in answers:
            v = QueryVariant.objects.create(topic=topics[topic_id], raw=text, normalised=text,
                                            worker_id=worker, source="crowd")
            QueryVariant.objects.filter(pk=v.pk).update(
                created=T0 + dt.timedelta(minutes=minutes))
    c1 = collection("c1")
    variants_run(ts, topics, ids, model="bm25", coll=c1, rankings="old", minutes=1)
    variants_run(ts, topics, ids, model="bm25", coll=c1, rankings="new", minutes=2)
    variants_run(ts, topics, ids, model="sdm", coll=c1, rankings="sdm", minutes=3)
    variants_run(ts, topics, ids, model="bm25", coll=c1, rankings="unfinished",
                 status="running", minutes=4)
    variants_run(ts, topics, ids, model="bm25", coll=c1, rankings="unfinished",
                 status="failed", minutes=5)
    system_run(ts, topics, ids, "sysA", {"1": ["d1", "d4"], "2": ["d6"]})
    system_run(ts, topics, ids, "sysB", {"1": ["d2", "d1"]})
    system_run(ts, topics, ids, "sysHalf", {"1": ["d9"]}, status="running")
    return ts, topics, ids


def pool_docs(pool) -> dict[str, dict[str, selectors.PooledDocument]]:
    out: dict[str, dict] = {}
    for d in selectors.pool_documents(pool):
        out.setdefault(d.topic_id, {})[d.docid] = d
    return out


# --- who contributes -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("sources", ["users", "combined"])
def test_build_pool_without_a_model_names_the_models(crowd_db, sources):
    with pytest.raises(CommandError, match=r"more than one model \(bm25, sdm\)"):
        run("build_pool", "--topic-set", "cs", "--sources", sources, "--depth", "10")
    assert not Pool.objects.exists()  # refused before anything is stored
    # system pools need no model
    run("build_pool", "--topic-set", "cs", "--sources", "systems", "--depth", "10")


@pytest.mark.django_db
def test_build_pool_without_a_collection_names_the_collections(crowd_db):
    ts, topics, ids = crowd_db
    variants_run(ts, topics, ids, model="bm25", coll=collection("c2"), rankings="sdm",
                 minutes=6)
    with pytest.raises(CommandError, match=r"more than one collection \(c1, c2\)"):
        run("build_pool", "--topic-set", "cs", "--sources", "users", "--depth", "10",
            "--model", "bm25")
    got = json.loads(run("build_pool", "--topic-set", "cs", "--sources", "users", "--depth",
                         "10", "--model", "bm25", "--collection", "c2", "--json"))
    assert got["sizes"] == {"1": 3, "2": 1}  # c2's rankings: alpha d1 d8, beta d1 d4; gamma d7
    pool = Pool.objects.get()
    assert (pool.model.name, pool.collection.name) == ("bm25", "c2")


@pytest.mark.django_db
def test_a_rerun_and_a_second_model_count_every_person_once(crowd_db):
    run("build_pool", "--topic-set", "cs", "--sources", "combined", "--depth", "10",
        "--model", "bm25", "--strategy", "rbp", "--p", "0.5", "--name", "b")
    pool = Pool.objects.get(name="b")
    assert (pool.model.name, pool.collection.name, pool.status) == ("bm25", "c1", "done")
    docs = pool_docs(pool)
    # only the newest finished BM25 run: its d3 is pooled; the older run's d2 comes from
    # sysB alone; nothing of the running or failed runs (d9) nor of SDM (d8)
    assert set(docs["1"]) == {"d1", "d2", "d3", "d4", "d5"}
    assert set(docs["2"]) == {"d6", "d7"}
    d1 = docs["1"]["d1"]
    # three answers (alpha twice, beta once) and two system runs, each counted once:
    # alpha ranks d1 2nd (2 answers), beta 2nd, sysA 1st, sysB 2nd
    assert (d1.users, d1.systems, d1.min_rank) == (3, 2, 1)
    assert d1.weight == pytest.approx(2 * 0.25 + 0.25 + 0.5 + 0.25)
    assert docs["1"]["d3"].weight == pytest.approx(2 * 0.5)


@pytest.mark.django_db
def test_unfinished_runs_never_contribute(crowd_db):
    pool = services.pool_build(services.pool_create(
        topic_set_name="cs", sources="systems", depth=10).id)
    assert "d9" not in pool_docs(pool)["1"]  # sysHalf is still running
    # a topic set whose only variants run is unfinished has no user rankings
    Run.objects.filter(kind=Run.KIND_RETRIEVAL, status="done").update(status="failed")
    with pytest.raises(CommandError, match="no finished user-variant rankings"):
        run("build_pool", "--topic-set", "cs", "--sources", "users", "--depth", "10")


@pytest.mark.django_db
def test_pools_growth_and_rbo_agree_on_the_people(crowd_db):
    run("build_pool", "--topic-set", "cs", "--sources", "users", "--depth", "3",
        "--model", "bm25", "--name", "u")
    pool = Pool.objects.get(name="u")
    docs = pool_docs(pool)
    res = analysis.pool_growth_analysis("cs", sources="users", depths=[3], model_name="bm25",
                                        orders=4)
    # people = answers: a text typed by two workers counts two, in pools and in growth
    assert res["contributors"] == {"1": 3, "2": 1}
    assert docs["1"]["d1"].users == res["contributors"]["1"]  # d1 is in every ranking
    # the growth curve ends at the pool: after every answer, the pool of that depth
    sizes = selectors.pool_sizes(pool)
    curve = res["curves"][3]
    assert curve["random"][-1] == curve["ordered"][-1] == sizes["1"]
    assert curve["ordered"][0] == np.mean([3, 2])  # topic 1 starts with beta, topic 2 gamma
    # RBO: two user rankings of topic 1 (alpha, beta), one pair — not one per run or model
    rbo = analysis.rbo_analysis("cs", reference="pairs", model_name="bm25")
    assert [(r["topic"], {r["a"], r["b"]}) for r in rbo["user"]] == [
        ("1", {variant_label("alpha"), variant_label("beta")})]
    assert rbo["model"] == "bm25" and rbo["collection"] == "c1"
    with pytest.raises(ValueError, match=r"more than one model \(bm25, sdm\)"):
        analysis.rbo_analysis("cs", reference="pairs")
    with pytest.raises(ValueError, match=r"more than one model \(bm25, sdm\)"):
        analysis.pool_growth_analysis("cs", sources="users", depths=[3])


# --- orders of the growth curves -----------------------------------------------------------


@pytest.mark.django_db
def test_ordered_growth_follows_answer_time_in_a_study(crowd_db):
    res = analysis.pool_growth_analysis("cs", sources="users", depths=[1, 10],
                                        model_name="bm25", orders=3)
    # topic 1 answers arrive: beta (wc, +5 min: d4 d1 d5), alpha (wa, +10: d3 d1), alpha
    # (wb, +20); in worker-id order alpha would come first (2 documents, not 3)
    deep = res["curves"][10]
    assert deep["topics"] == [2, 1, 1]
    assert deep["ordered"] == [np.mean([3, 2]), 4.0, 4.0]
    assert res["curves"][1]["ordered"] == [1.0, 2.0, 2.0]  # d4, then d3
    assert "answer time" in res["ordered_by"]


@pytest.mark.django_db
def test_ordered_growth_follows_worker_ids_in_an_imported_set(db):
    ids = docids_ensure(["d1", "d2", "d3", "d4"])
    ts, topics = make_topic_set("imp", ("1",))
    # stored in this order; worker ids sort w1 < w2, and an answer naming no worker
    # (count 2) comes after the named ones
    for text, worker, count in [("b", "w2", 1), ("c", "", 2), ("a", "w1", 1)]:
        QueryVariant.objects.create(topic=topics["1"], raw=text, normalised=text,
                                    worker_id=worker, count=count, source="import")
    r = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts,
                           model=RetrievalModel.objects.get(name="bm25"), source="variants",
                           status="done")
    for text, weight, users, docids in [("a", 1, "w1", ["d1"]), ("b", 1, "w2", ["d2", "d1"]),
                                        ("c", 2, "", ["d3", "d4"])]:
        RunQuery.objects.create(run=r, topic=topics["1"], label=variant_label(text),
                                weight=weight, users=users, ranking=make_ranking(ids, docids))
    res = analysis.pool_growth_analysis("imp", sources="users", depths=[2], orders=2)
    # w1 (d1), w2 (d2 d1), then the two anonymous answers of c (d3 d4)
    assert res["contributors"] == {"1": 4}
    assert res["curves"][2]["ordered"] == [1.0, 2.0, 4.0, 4.0]


# --- the growth fit --------------------------------------------------------------------------


def _ols(xs, ys):
    """Least squares y = a + b x, and R², by the textbook formulas."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return a, b, 1 - ss_res / ss_tot


@pytest.mark.django_db
def test_growth_fit_over_the_range_every_topic_reaches(db):
    names = [f"d{i}" for i in range(1, 20)]
    ids = docids_ensure(names)
    ts, topics = make_topic_set("fit", ("A", "B", "C"))
    # depth 2. A: three runs of disjoint documents (2, 4, 6 in any order); B: three
    # identical runs (2, 2, 2); C: four disjoint runs (2, 4, 6, 8)
    runs = {
        "r1": {"A": ["d1", "d2"], "B": ["d1", "d2"], "C": ["d1", "d2"]},
        "r2": {"A": ["d3", "d4"], "B": ["d1", "d2"], "C": ["d3", "d4"]},
        "r3": {"A": ["d5", "d6"], "B": ["d1", "d2"], "C": ["d5", "d6"]},
        "r4": {"C": ["d7", "d8"]},
    }
    for tag, by_topic in runs.items():
        system_run(ts, topics, ids, tag, by_topic)
    res = analysis.pool_growth_analysis("fit", sources="systems", depths=[2], orders=5)
    curve, fit = res["curves"][2], res["fit"][2]
    assert curve["n"] == [1, 2, 3, 4] and curve["topics"] == [3, 3, 3, 1]
    assert curve["random"] == pytest.approx([2, 10 / 3, 14 / 3, 8])
    # fitted over n = 1..3, where every topic has a value: log v = log(2c) + x log n
    assert fit["range"] == [1, 3]
    a, b, r2 = _ols([math.log(n) for n in (1, 2, 3)],
                    [math.log(v) for v in (2, 10 / 3, 14 / 3)])
    assert fit["x"] == pytest.approx(b, rel=1e-12)
    assert fit["c"] == pytest.approx(math.exp(a) / 2, rel=1e-12)
    assert fit["r2"] == pytest.approx(r2, rel=1e-12) and 0.9 < r2 < 1
    # per topic over the same range: A and C grow linearly (x = 1), B stays flat (x = 0)
    assert fit["per_topic"] == {"A": pytest.approx(1.0), "B": pytest.approx(0.0, abs=1e-12),
                                "C": pytest.approx(1.0)}
    # mean 2/3, s = sqrt(1/3); t(0.975, 2 df) = 0.95 sqrt(2 / (4 * 0.975 * 0.025))
    half = 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025)) * math.sqrt(1 / 3) / math.sqrt(3)
    assert fit["x_mean"] == pytest.approx(2 / 3)
    assert fit["x_ci95"] == pytest.approx([2 / 3 - half, 2 / 3 + half])


# --- strategies ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_strategies_order_the_pool_and_rbp_defaults_to_the_stored_depth(crowd_db):
    run("build_pool", "--topic-set", "cs", "--sources", "combined", "--model", "bm25",
        "--strategy", "rbp", "--p", "0.5", "--name", "r")
    rbp = Pool.objects.get(name="r")
    assert rbp.depth == 3  # the longest stored ranking (beta: d4 d1 d5)
    run("build_pool", "--topic-set", "cs", "--sources", "combined", "--model", "bm25",
        "--depth", "3", "--p", "0.5", "--name", "d")
    depth = Pool.objects.get(name="d")
    # topic 1 weights (p = 1/2): d1 1.5, d3 1, d4 0.75, d2 0.5, d5 0.125; shallowest ranks:
    # d1 (sysA), d2 (sysB), d3, d4 at rank 1, d5 at rank 3 — here both orders agree
    order = {p.name: [d.docid for d in selectors.pool_documents(p, ["1"])] for p in (rbp, depth)}
    assert order == {"r": ["d1", "d3", "d4", "d2", "d5"], "d": ["d1", "d3", "d4", "d2", "d5"]}
    assert [d.weight for d in selectors.pool_documents(rbp, ["1"])] == pytest.approx(
        [1.5, 1.0, 0.75, 0.5, 0.125])


@pytest.mark.django_db
def test_depth_and_rbp_budgets_cut_different_documents(crowd_db):
    # users only, topic 1, p = 1/2: alpha (2 answers) d3 d1; beta d4 d1 d5
    # weights: d3 1, d1 0.5 + 0.25 = 0.75, d4 0.5, d5 0.125; shallowest: d3 1, d4 1, d1 2, d5 3
    for strategy in ("depth", "rbp"):
        run("build_pool", "--topic-set", "cs", "--sources", "users", "--model", "bm25",
            "--depth", "3", "--p", "0.5", "--strategy", strategy, "--budget", "2",
            "--name", strategy)
    got = {s: [d.docid for d in selectors.pool_documents(Pool.objects.get(name=s), ["1"])]
           for s in ("depth", "rbp")}
    assert got == {"depth": ["d3", "d4"], "rbp": ["d3", "d1"]}


# --- a failed pool ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_failed_pool_page_shows_a_sentence(crowd_db, admin_client):
    pool = services.pool_create(topic_set_name="cs", sources="users", depth=5,
                                model_name="qld")
    with pytest.raises(ValueError):
        services.pool_build(pool.id)
    page = admin_client.get(reverse("pooling:pool_detail", args=[pool.pk])).content.decode()
    assert "has no finished user-variant rankings of model &#x27;qld&#x27;" in page
    # the page says what to do in the browser, with a link to the page that does it
    assert "run_retrieval" not in page and "ValueError" not in page
    assert f'href="{reverse("projects:organiser_retrieval_launch")}">launch retrieval</a>' in page
    assert services.pool_failure_message(KeyError("x")).startswith(
        "The build stopped on an unexpected error (KeyError: 'x'). Build the pool again")


# --- RBO significance --------------------------------------------------------------------------


@pytest.mark.django_db
def test_rbo_test_defaults_to_one_value_per_topic(db):
    import rbo as rbo_reference  # the `rbo` package, an independent implementation
    from scipy import stats as scipy_stats

    ids = docids_ensure(["x1", "x2", "x3", "x4", "x5"])
    ts, topics = make_topic_set("rb", ("1", "2", "3"))
    bm25 = RetrievalModel.objects.get(name="bm25")
    users = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, model=bm25,
                               source="variants", status="done")
    titles = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, model=bm25,
                                source="titles", status="done")
    user_rankings = {"u1": ["x1", "x2"], "u2": ["x3", "x4"], "u3": ["x2", "x5"]}
    for t, topic in topics.items():
        for label, docids in list(user_rankings.items())[: 1 + int(t)]:  # 2, 3, 3 rankings
            RunQuery.objects.create(run=users, topic=topic, label=label,
                                    ranking=make_ranking(ids, docids))
        RunQuery.objects.create(run=titles, topic=topic, label="title",
                                ranking=make_ranking(ids, ["x1", "x5"]))
    for tag in ("sA", "sB"):  # the same ranking twice: system-pair RBO is 1 on every topic
        system_run(ts, topics, ids, tag, {t: ["x1", "x2"] for t in topics})
    res = analysis.rbo_analysis("rb", p=0.9)
    want = {label: rbo_reference.RankingSimilarity(docids, ["x1", "x5"]).rbo_ext(p=0.9)
            for label, docids in user_rankings.items()}
    means = {r["topic"]: r for r in res["per_topic"]}
    assert means["1"]["user_mean"] == pytest.approx((want["u1"] + want["u2"]) / 2, abs=1e-9)
    assert means["3"]["user_mean"] == pytest.approx(sum(want.values()) / 3, abs=1e-9)
    assert [(m["user_pairs"], m["system_pairs"]) for m in res["per_topic"]] == [
        (2, 1), (3, 1), (3, 1)]
    assert all(m["system_mean"] == pytest.approx(1.0) for m in res["per_topic"])
    # three topics, every user mean below its system mean: W+ = 0, exact p = 1/2^3
    test = res["test"]
    assert (test["level"], test["topics"], test["statistic"]) == ("topic", 3, 0.0)
    assert test["p_value"] == pytest.approx(1 / 8)
    # the pair-level test is still there, labelled as such: 8 user pairs against 3
    pair = analysis.rbo_analysis("rb", p=0.9, test="pair")["test"]
    exts = ([r["ext"] for r in res["user"]], [r["ext"] for r in res["system"]])
    ref = scipy_stats.mannwhitneyu(*exts, alternative="less")
    assert (pair["level"], pair["n_user"], pair["n_system"]) == ("pair", 8, 3)
    assert (pair["statistic"], pair["p_value"]) == (pytest.approx(ref.statistic),
                                                   pytest.approx(ref.pvalue))
    assert "anti-conservative" in pair["note"]
    out = json.loads(run("pool_analysis", "rbo", "--topic-set", "rb", "--test", "pair"))
    assert out["test"]["level"] == "pair"


@pytest.mark.django_db
def test_build_form_takes_a_collection_and_leaves_rbp_depth_to_the_rankings(
        crowd_db, admin_client, django_capture_on_commit_callbacks):
    data = {"topic_set": "cs", "sources": "users", "strategy": "rbp", "p": 0.9,
            "budget_scope": "topic", "model": "bm25", "collection": "c1", "name": "form-rbp"}
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post(reverse("pooling:pool_build"), data)
    assert response.status_code == 302
    pool = Pool.objects.get(name="form-rbp")
    assert (pool.depth, pool.model.name, pool.collection.name) == (3, "bm25", "c1")
    bad = admin_client.post(reverse("pooling:pool_build"),
                            {**data, "strategy": "depth", "name": "form-depth"})
    assert bad.status_code == 400 and "give a depth" in bad.content.decode()
    bad = admin_client.post(reverse("pooling:pool_build"),
                            {**data, "model": "", "name": "form-any"})
    assert bad.status_code == 400 and "more than one model (bm25, sdm)" in bad.content.decode()
    assert Pool.objects.count() == 1
