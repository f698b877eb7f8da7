"""Analyses over the small stored collection of test_django_pools: growth, RBO, coverage,
the rank/weight scatter, and the staff pages that show them."""
from __future__ import annotations

import re
from xml.etree import ElementTree

import pytest
import rbo as rbo_reference  # the `rbo` package, an independent implementation
from django.urls import reverse

from judging.selectors import qrels_records
from judging.services import qrels_import
from pooling import analysis, services
from tests.pooling.test_django_pools import (  # noqa: F401  (fixture)
    SYSTEM_RANKINGS,
    TITLE_RANKINGS,
    USER_RANKINGS,
    rankings_db,
)


def build(**kwargs):
    pool = services.pool_create(topic_set_name="ts", **kwargs)
    return services.pool_build(pool.id)


@pytest.fixture
def small_qrels(db, tmp_path):
    f = tmp_path / "small.qrels"
    f.write_text(
        "1 1 doc-a 1\n"
        "1 1 doc-c 0\n"
        "1 2 doc-c 0\n"
        "1 1 doc-zzz 2\n"  # relevant, never retrieved
        "2 1 doc-b -2\n"  # junk: judged, not relevant
    )
    return qrels_import(f, format="diversity", name="small")


# --- coverage and scatter ----------------------------------------------------------------


@pytest.mark.django_db
def test_coverage_on_a_small_case(rankings_db, small_qrels):
    pool = build(sources="users", depth=2)  # topic 1: a b c f; topic 2: b d
    cov = analysis.pool_coverage(pool, qrels_records(small_qrels))
    rows = {r["topic"]: r for r in cov["rows"]}
    assert (rows["1"]["size"], rows["1"]["relevant"], rows["1"]["nonrelevant"],
            rows["1"]["unjudged"]) == (4, 1, 1, 2)
    assert (rows["1"]["pct_relevant"], rows["1"]["pct_nonrelevant"],
            rows["1"]["pct_unjudged"]) == (25.0, 25.0, 50.0)
    assert (rows["2"]["size"], rows["2"]["relevant"], rows["2"]["nonrelevant"],
            rows["2"]["unjudged"]) == (2, 0, 1, 1)
    mean = cov["mean"]
    assert mean["size"] == 3.0
    assert (mean["pct_relevant"], mean["pct_nonrelevant"], mean["pct_unjudged"]) == (
        12.5, 37.5, 50.0)


@pytest.mark.django_db
def test_rank_weight_points_mark_judged_documents(rankings_db, small_qrels):
    pool = build(sources="users", depth=2, strategy="rbp", p=0.5)
    points = {(pt["topic"], pt["docid"]): pt for pt in
              analysis.pool_rank_weight_points(pool, qrels_records(small_qrels))}
    assert points[("1", "doc-a")]["judged"] and points[("1", "doc-a")]["relevant"]
    assert points[("1", "doc-c")]["judged"] and not points[("1", "doc-c")]["relevant"]
    assert not points[("1", "doc-f")]["judged"]
    assert points[("1", "doc-c")]["min_rank"] == 1
    assert points[("1", "doc-c")]["weight"] == pytest.approx(2 * 0.5)
    assert len(analysis.pool_rank_weight_points(pool, qrels_records(small_qrels), limit=3)) == 3


# --- growth ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_user_growth_counts_answers_in_worker_order_and_random_orders(rankings_db):
    res = analysis.pool_growth_analysis("ts", sources="users", depths=[2], orders=200, seed=1)
    curve = res["curves"][2]
    # topic 1: w1 and w2 typed v1 (c a), w3 typed v2 (f b); topic 2: w1 typed v1 (b d).
    # No answers are listed by the crowd app here, so the run's worker ids give the order.
    assert res["contributors"] == {"1": 3, "2": 1} and res["contributor"] == "answer"
    assert curve["n"] == [1, 2, 3]
    assert curve["topics"] == [2, 1, 1]
    assert curve["ordered"] == [2.0, 2.0, 4.0]
    assert curve["random"][0] == 2.0 and curve["random"][2] == 4.0
    # after two answers: both of v1 with probability 1/3 (2 docs), else 4 docs
    assert curve["random"][1] == pytest.approx(10 / 3, abs=0.25)
    # topic 2 has one answer: no range of n that every topic reaches twice, no fit
    fit = res["fit"][2]
    assert fit["range"] == [1, 1] and fit["x"] is None and "only 1 contributor" in fit["note"]


@pytest.mark.django_db
def test_system_growth_by_run_name(rankings_db):
    res = analysis.pool_growth_analysis("ts", sources="systems", depths=[1, 2], orders=5)
    curve = res["curves"][2]
    # topic 1: sysA (d c) then sysB (c f): 2, 3; topic 2: sysA (a): 1
    assert curve["ordered"] == [1.5, 3.0] == curve["random"]
    assert curve["topics"] == [2, 1]
    # depth 1: topic 1 gets d then c; topic 2 gets a; n = 2 averages topic 1 alone
    assert res["curves"][1]["ordered"] == [1.0, 2.0]
    assert res["contributors"] == {"1": 2, "2": 1} and res["ordered_by"] == "run name"


@pytest.mark.django_db
def test_growth_refuses_combined_sources(rankings_db):
    with pytest.raises(ValueError, match="users or systems"):
        analysis.pool_growth_analysis("ts", sources="combined", depths=[2])


# --- RBO ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rbo_of_user_rankings_against_the_title_ranking(rankings_db):
    res = analysis.rbo_analysis("ts", p=0.9, reference="titles")
    got = {(r["topic"], r["a"]): r for r in res["user"]}
    assert set(got) == {("1", "v1"), ("1", "v2"), ("2", "v1")}
    for topic, variants in USER_RANKINGS.items():
        for label, (_, _, docids) in variants.items():
            want = rbo_reference.RankingSimilarity(docids, TITLE_RANKINGS[topic]).rbo_ext(p=0.9)
            assert got[(topic, label)]["ext"] == pytest.approx(want, abs=1e-9)
            assert got[(topic, label)]["b"] == "title"
    # system pairs: only topic 1 has two runs
    assert [(r["topic"], r["a"], r["b"]) for r in res["system"]] == [("1", "sysA", "sysB")]
    want = rbo_reference.RankingSimilarity(
        SYSTEM_RANKINGS["sysA"]["1"], SYSTEM_RANKINGS["sysB"]["1"]).rbo_ext(p=0.9)
    assert res["system"][0]["ext"] == pytest.approx(want, abs=1e-9)
    # one value per topic: only topic 1 has both user pairs and a system pair
    (row,) = res["per_topic"]
    assert row["topic"] == "1" and (row["user_pairs"], row["system_pairs"]) == (2, 1)
    assert row["user_mean"] == pytest.approx((got[("1", "v1")]["ext"] + got[("1", "v2")]["ext"]) / 2)
    assert row["system_mean"] == pytest.approx(res["system"][0]["ext"])
    test = res["test"]
    assert (test["level"], test["name"], test["topics"]) == ("topic", "Wilcoxon signed-rank", 1)
    # one topic: W+ is 0 (p = 1/2) or 1 (p = 1) under the exact null
    assert test["p_value"] == (0.5 if row["user_mean"] < row["system_mean"] else 1.0)
    assert res["summary"]["user"]["pairs"] == 3
    pair = analysis.rbo_analysis("ts", p=0.9, reference="titles", test="pair")["test"]
    assert (pair["level"], pair["n_user"], pair["n_system"]) == ("pair", 3, 1)
    assert "anti-conservative" in pair["note"] and 0.0 <= pair["p_value"] <= 1.0


@pytest.mark.django_db
def test_rbo_of_all_user_pairs(rankings_db):
    res = analysis.rbo_analysis("ts", p=0.8, reference="pairs")
    assert [(r["topic"], r["a"], r["b"]) for r in res["user"]] == [("1", "v1", "v2")]
    want = rbo_reference.RankingSimilarity(["doc-c", "doc-a", "doc-e"],
                                           ["doc-f", "doc-b"]).rbo_ext(p=0.8)
    assert res["user"][0]["ext"] == pytest.approx(want, abs=1e-9)
    assert res["reference_run"] is None


@pytest.mark.django_db
def test_rbo_against_titles_needs_a_title_run(rankings_db):
    from retrieval.models import Run

    Run.objects.filter(source="titles").update(status="failed")
    with pytest.raises(ValueError, match="no finished title-query run of model 'bm25'"):
        analysis.rbo_analysis("ts", reference="titles")
    with pytest.raises(ValueError, match="no finished user-variant run of model 'qld'"):
        analysis.rbo_analysis("ts", reference="titles", model_name="qld")


# --- pages -------------------------------------------------------------------------------


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_user("organiser", password="pw-organiser-1",
                                                 is_staff=True)
    client.force_login(user)
    return client


def page_urls(pool: int, qrels: str) -> list[str]:
    return [
        reverse("pooling:index"),
        reverse("pooling:pool_detail", args=[pool]),
        reverse("pooling:pool_detail", args=[pool]) + f"?qrels={qrels}",
        reverse("pooling:growth") + "?topic_set=ts&depths=1,2&orders=3&seed=0",
        reverse("pooling:rbo") + "?topic_set=ts&p=0.9&reference=titles",
        reverse("pooling:rbo") + "?topic_set=ts&p=0.9&reference=pairs",
        reverse("pooling:qrels_detail", args=[qrels]),
    ]


@pytest.mark.django_db
def test_pages_render_for_staff(rankings_db, small_qrels, staff_client):
    pool = build(sources="combined", depth=2, name="combined-2")
    for url in page_urls(pool.id, "small"):
        response = staff_client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert "<nav>" in body  # extends base.html
    detail = staff_client.get(reverse("pooling:pool_detail", args=["combined-2"]) +
                              "?qrels=small").content.decode()
    for svg in re.findall(r"<svg.*?</svg>", detail, flags=re.S):
        root = ElementTree.fromstring(svg)  # well-formed SVG
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    scatter = staff_client.get(reverse("pooling:pool_detail", args=["combined-2"]),
                               {"qrels": "small", "figure": "scatter", "format": "csv"})
    assert scatter["Content-Type"] == "text/csv; charset=utf-8"
    assert len(scatter.content.decode().splitlines()) == 1 + 8  # one point per pooled document
    assert detail.count("<svg") == 2 and "% unjudged" in detail and "combined-2" in detail
    growth = staff_client.get(page_urls(pool.id, "small")[3]).content.decode()
    assert "<svg" in growth and "users @2" in growth and "systems @2" in growth
    rbo_page = staff_client.get(page_urls(pool.id, "small")[4]).content.decode()
    assert "Wilcoxon signed-rank" in rbo_page and "<svg" in rbo_page
    pair_page = staff_client.get(page_urls(pool.id, "small")[4] + "&test=pair").content.decode()
    assert "Pair-level" in pair_page and "anti-conservative" in pair_page


@pytest.mark.django_db
def test_pages_report_bad_input_without_crashing(rankings_db, staff_client):
    r = staff_client.get(reverse("pooling:growth") + "?topic_set=nope&depths=2&orders=1&seed=0")
    # an unknown topic set is named as such (it once read "has no stored users rankings")
    assert r.status_code == 200 and "no topic set &#x27;nope&#x27;" in r.content.decode()
    # the growth page counts answers and shows the range every topic reaches
    r = staff_client.get(reverse("pooling:growth") + "?topic_set=ts&depths=2&orders=1&seed=0")
    assert "users (answers)" in r.content.decode() and "systems (runs)" in r.content.decode()
    r = staff_client.get(reverse("pooling:growth") + "?topic_set=ts&depths=x&orders=1&seed=0")
    assert r.status_code == 200 and "whole numbers" in r.content.decode()
    assert staff_client.get(reverse("pooling:pool_detail", args=[999])).status_code == 404


@pytest.mark.django_db
def test_analysis_links_need_only_the_topic_set(rankings_db, staff_client):
    growth = staff_client.get(reverse("pooling:growth") + "?topic_set=ts").content.decode()
    assert "This field is required" not in growth and "<svg" in growth
    rbo_page = staff_client.get(reverse("pooling:rbo") + "?topic_set=ts").content.decode()
    assert "This field is required" not in rbo_page


@pytest.mark.django_db
def test_pages_redirect_anonymous_and_refuse_non_staff(rankings_db, small_qrels, client,
                                                       django_user_model):
    pool = build(sources="users", depth=2)
    for url in page_urls(pool.id, "small"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    worker = django_user_model.objects.create_user("worker", password="pw-worker-1")
    client.force_login(worker)
    assert client.get(reverse("pooling:index")).status_code == 302


@pytest.mark.django_db
def test_rbo_with_tied_scores_uses_docid_strings_for_ties(rankings_db):
    """A system run with tied scores: the tie group must be read in docid string order
    (doc-b before doc-e), never in vocabulary-id order (doc-e has the smaller id)."""
    from pooling import rbo as rbo_maths
    from retrieval.models import Run, RunQuery
    from retrieval.services import docids_ensure
    from tests.pooling.test_django_pools import make_ranking

    ids = docids_ensure(["doc-e", "doc-b"])
    run = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=rankings_db, source="system",
                             tag="sysT", status="done")
    topic = rankings_db.topics.get(topic_id="1")
    RunQuery.objects.create(run=run, topic=topic, label="sysT",
                            ranking=make_ranking(ids, ["doc-b", "doc-e"], [1.0, 1.0]))
    res = analysis.rbo_analysis("ts", p=0.9, reference="pairs")
    got = {(r["a"], r["b"]): r for r in res["system"] if r["topic"] == "1"}
    assert set(got) == {("sysA", "sysB"), ("sysA", "sysT"), ("sysB", "sysT")}
    want = rbo_maths.rbo(SYSTEM_RANKINGS["sysA"]["1"], ["doc-b", "doc-e"], 0.9,
                         a_scores=[2.0, 1.0], b_scores=[1.0, 1.0])
    assert got[("sysA", "sysT")]["min"] == pytest.approx(want.min, abs=1e-12)
    assert got[("sysA", "sysT")]["res"] == pytest.approx(want.res, abs=1e-12)
    assert got[("sysA", "sysT")]["ext"] == pytest.approx(want.ext, abs=1e-12)


@pytest.mark.django_db
def test_build_form_queues_the_task_on_commit(rankings_db, staff_client,
                                              django_capture_on_commit_callbacks):
    from pooling.models import Pool

    data = {"topic_set": "ts", "sources": "users", "depth": 2, "strategy": "rbp", "p": 0.9,
            "budget_scope": "topic", "name": "from-page"}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_client.post(reverse("pooling:pool_build"), data)
    pool = Pool.objects.get(name="from-page")
    assert response.status_code == 302
    assert response["Location"] == reverse("pooling:pool_detail", args=[pool.pk])
    assert pool.status == "queued" and len(callbacks) == 1  # the task is sent after commit
    page = staff_client.get(response["Location"]).content.decode()
    assert 'http-equiv="refresh"' in page and "queued" in page

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        bad = staff_client.post(reverse("pooling:pool_build"),
                                {**data, "topic_set": "nope", "name": "other"})
    assert bad.status_code == 400 and "no topic set" in bad.content.decode()
    assert not callbacks and Pool.objects.count() == 1
    assert staff_client.get(reverse("pooling:pool_build")).status_code == 405


@pytest.mark.django_db
def test_page_query_counts_do_not_grow_with_pools(rankings_db, small_qrels, staff_client,
                                                  django_assert_max_num_queries):
    for depth in (1, 2, 3):
        build(sources="combined", depth=depth)
    with django_assert_max_num_queries(8):
        assert staff_client.get(reverse("pooling:index")).status_code == 200
    pool = build(sources="combined", depth=2)
    # pool topics are read in natural id order; one query for the runs it was built from
    with django_assert_max_num_queries(16):
        url = reverse("pooling:pool_detail", args=[pool.pk]) + "?qrels=small"
        assert staff_client.get(url).status_code == 200


@pytest.mark.django_db
def test_admin_lists_pools_and_qrels(rankings_db, small_qrels, admin_client):
    build(sources="users", depth=2)
    for name in ("pooling_pool", "pooling_pooltopic", "judging_judgmentset"):
        assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200
