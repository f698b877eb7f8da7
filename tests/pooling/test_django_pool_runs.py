"""A pool records the runs it was built from: its build, the judging orders that replay its
rankings, its analyses and their manifests read exactly those, whatever run is imported or
finished later. A topic set with system runs only gets its system-pair RBO."""
from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from judging.models import TaskTopic
from judging.selectors import pool_contributing_rankings, topic_query_texts
from judging.services import judging_task_create
from pooling import analysis, rbo as rbo_maths, selectors, services
from pooling.models import Pool, PoolRun
from retrieval.models import RetrievalModel, Run, RunQuery
from retrieval.services import docids_ensure
from tests.common.manifest_checks import verify
from tests.pooling.test_django_pools import (  # noqa: F401  (fixture)
    VOCAB,
    expected_depth_union,
    make_ranking,
    make_topic_set,
    rankings_db,
)

# runs that arrive after the pool: a newer variants run of the same model and collection
# (the one "the newest finished run" would now pick) and one more system run
NEWER_USERS = {"1": {"v1": ["doc-f", "doc-e"], "v2": ["doc-a"]}, "2": {"v1": ["doc-a", "doc-c"]}}
SYSTEM_C = {"1": ["doc-b", "doc-a"], "2": ["doc-c"]}


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def later_runs(ts) -> list[Run]:
    """A newer finished variants run of bm25 and a new system run sysC, stored as the
    retrieval app stores them."""
    ids = docids_ensure(VOCAB)
    topics = {t.topic_id: t for t in ts.topics.all()}
    users = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, source="variants",
                               model=RetrievalModel.objects.get(name="bm25"), status="done")
    for topic_id, variants in NEWER_USERS.items():
        for label, docids in variants.items():
            RunQuery.objects.create(run=users, topic=topics[topic_id], label=label,
                                    query_text=label, weight=1, users="w9",
                                    ranking=make_ranking(ids, docids))
    system = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=ts, source="system",
                                tag="sysC", status="done")
    for topic_id, docids in SYSTEM_C.items():
        RunQuery.objects.create(run=system, topic=topics[topic_id], label="sysC",
                                ranking=make_ranking(ids, docids))
    return [users, system]


def first_runs() -> list[int]:
    """The runs of rankings_db a combined pool is built from: the variants run and the two
    system runs (never the title run)."""
    return sorted(Run.objects.filter(source__in=["variants", "system"]).values_list("id", flat=True))


def docs(pool) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for d in selectors.pool_documents(pool):
        out.setdefault(d.topic_id, set()).add(d.docid)
    return out


def task_rankings(task) -> dict[str, tuple[bytes, bytes]]:
    return {t.topic_id: (bytes(t.rankings), bytes(t.offsets))
            for t in TaskTopic.objects.filter(task=task)}


def as_lists(rankings: dict[str, list[np.ndarray]]) -> dict[str, list[list[int]]]:
    return {t: [r.tolist() for r in rs] for t, rs in rankings.items()}


@pytest.mark.django_db
def test_a_run_finished_after_the_pool_was_created_is_not_in_its_build(rankings_db):
    pool = services.pool_create(topic_set_name="ts", sources="combined", depth=2)
    first = first_runs()
    sys_a, sys_b = first[1:]
    assert selectors.pool_run_ids(pool) == first
    newer_users, sys_c = later_runs(rankings_db)  # finished before the build, after creation
    built = services.pool_build(pool.id)
    assert selectors.pool_run_ids(built) == first
    assert docs(built) == expected_depth_union("combined", 2)
    # a pool created now is built from the newer runs: different documents
    fresh = services.pool_build(services.pool_create(topic_set_name="ts", sources="combined",
                                                     depth=2).id)
    assert selectors.pool_run_ids(fresh) == [sys_a, sys_b, newer_users.id, sys_c.id]
    assert docs(fresh) != docs(built)
    # a build delivered again (after a failed attempt) reads the same runs
    built.topics.all().delete()
    Pool.objects.filter(pk=built.pk).update(status=Pool.STATUS_QUEUED)
    assert docs(services.pool_build(built.pk)) == expected_depth_union("combined", 2)


@pytest.mark.django_db
def test_later_runs_change_neither_the_adaptive_orders_nor_the_analyses(rankings_db, tmp_path):
    pool = services.pool_build(services.pool_create(topic_set_name="ts", sources="combined",
                                                    depth=2, name="p").id)
    before = as_lists(pool_contributing_rankings(pool))
    task = judging_task_create(pool=pool, name="mtf-before", mode="topic", order="mtf")
    texts = {t: topic_query_texts(task, t) for t in ("1", "2")}
    assert texts["1"]["doc-b"] == []  # only a user variant (no text stored here) found it
    growth = run("pool_analysis", "growth", "--pool", "p", "--depths", "1", "2")
    rbo = run("pool_analysis", "rbo", "--pool", "p", "--reference", "pairs")
    assert json.loads(rbo)["runs"] == first_runs()
    assert {s: r["runs"] for s, r in json.loads(growth).items()} == {
        "users": first_runs()[:1], "systems": first_runs()[1:]}

    later_runs(rankings_db)

    assert as_lists(pool_contributing_rankings(pool)) == before
    after = judging_task_create(pool=pool, name="mtf-after", mode="topic", order="bandit")
    assert task_rankings(after) == task_rankings(task)
    assert {t: topic_query_texts(task, t) for t in ("1", "2")} == texts  # sysC not shown
    assert run("pool_analysis", "growth", "--pool", "p", "--depths", "1", "2") == growth
    assert run("pool_analysis", "rbo", "--pool", "p", "--reference", "pairs") == rbo
    # the same analyses of the topic set read the newer runs: they differ
    assert run("pool_analysis", "rbo", "--topic-set", "ts", "--reference", "pairs") != rbo
    # a pool built now replays other rankings
    fresh = services.pool_build(services.pool_create(topic_set_name="ts", sources="combined",
                                                     depth=2).id)
    assert as_lists(pool_contributing_rankings(fresh)) != before


@pytest.mark.django_db
def test_the_manifest_records_the_runs_so_verifying_ignores_later_runs(rankings_db, tmp_path):
    out = tmp_path / "rbo.json"
    call_command("pool_analysis", "rbo", "--topic-set", "ts", "--reference", "titles",
                 "--out", str(out), "--manifest", stdout=StringIO(), stderr=StringIO())
    manifest = json.loads((tmp_path / "rbo.json.manifest.json").read_text())
    title = Run.objects.get(source="titles").id
    pinned = manifest["argv"][manifest["argv"].index("--runs") + 1:][:4]
    assert sorted(map(int, pinned)) == sorted(first_runs() + [title])
    assert json.loads(out.read_text())["runs"] == sorted(first_runs() + [title])
    later_runs(rankings_db)
    # recomputed from the topic set now, the system pairs include sysC ...
    now = json.loads(run("pool_analysis", "rbo", "--topic-set", "ts"))
    assert now != json.loads(out.read_text())
    # ... but the manifest names the runs it read, and they still give the same file
    assert "OK:" in verify(tmp_path / "rbo.json.manifest.json")


@pytest.mark.django_db
def test_growth_manifest_pins_the_runs_and_the_sources(rankings_db, tmp_path):
    out = tmp_path / "growth.json"
    call_command("pool_analysis", "growth", "--topic-set", "ts", "--depths", "2",
                 "--out", str(out), "--manifest", stdout=StringIO(), stderr=StringIO())
    manifest = json.loads((tmp_path / "growth.json.manifest.json").read_text())
    assert manifest["parameters"]["runs"] == first_runs()
    assert manifest["parameters"]["sources"] == ["users", "systems"]
    later_runs(rankings_db)
    assert "OK:" in verify(tmp_path / "growth.json.manifest.json")


# --- the runs, listed ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_and_the_pool_page_list_the_runs(rankings_db, client, django_user_model):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    pool = services.pool_build(services.pool_create(topic_set_name="ts", sources="combined",
                                                    depth=2, name="p").id)
    users, sys_a, sys_b = first_runs()
    later_runs(rankings_db)
    want = [{"id": users, "kind": "retrieval", "tag": "", "model": "bm25", "source": "variants"},
            {"id": sys_a, "kind": "system", "tag": "sysA", "model": None, "source": "system"},
            {"id": sys_b, "kind": "system", "tag": "sysB", "model": None, "source": "system"}]
    staff = django_user_model.objects.create_user("organiser", password="pw-organiser-1",
                                                  is_staff=True)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff).key}")
    assert api.get(f"/api/pools/{pool.id}/").json()["runs"] == want
    assert api.get("/api/pools/p/").json()["runs"] == want
    assert [p["runs"] for p in api.get("/api/pools/").json()["results"]] == [want]
    client.force_login(staff)
    page = client.get(reverse("pooling:pool_detail", args=[pool.id])).content.decode()
    assert "Runs it was built from" in page and "sysA" in page and "sysC" not in page


# --- RBO with system runs only ---------------------------------------------------------------


@pytest.fixture
def systems_only(db):
    """A topic set with two finished system runs and no user-variant run."""
    ids = docids_ensure(VOCAB)
    ts, topics = make_topic_set("sys", ("1", "2"))
    rankings = {"sysA": {"1": ["doc-a", "doc-b", "doc-c"], "2": ["doc-d", "doc-e"]},
                "sysB": {"1": ["doc-b", "doc-a", "doc-f"], "2": ["doc-d", "doc-f"]}}
    for tag, by_topic in rankings.items():
        r = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=ts, source="system", tag=tag,
                               status="done")
        for topic_id, docids in by_topic.items():
            RunQuery.objects.create(run=r, topic=topics[topic_id], label=tag,
                                    ranking=make_ranking(ids, docids))
    return rankings


@pytest.mark.django_db
@pytest.mark.parametrize("reference", ["titles", "pairs"])
def test_system_pair_rbo_for_a_topic_set_with_system_runs_only(systems_only, reference):
    res = analysis.rbo_analysis("sys", p=0.9, reference=reference)
    assert res["user"] == [] and res["test"] is None
    assert "system-run pairs only" in res["test_note"]
    got = {r["topic"]: (r["a"], r["b"], r["ext"]) for r in res["system"]}
    want = {}
    for t in ("1", "2"):
        a, b = systems_only["sysA"][t], systems_only["sysB"][t]
        want[t] = ("sysA", "sysB", rbo_maths.rbo(a, b, 0.9).ext)
    assert got.keys() == want.keys()
    for t in want:
        assert got[t][:2] == want[t][:2] and got[t][2] == pytest.approx(want[t][2], abs=1e-12)
    # topic 1: the same two documents on top, swapped; the value is neither 0 nor 1
    assert 0.5 < got["1"][2] < 1.0
    assert res["runs"] == sorted(Run.objects.values_list("id", flat=True))
    assert json.loads(run("pool_analysis", "rbo", "--topic-set", "sys"))["system"] == res["system"]


@pytest.mark.django_db
def test_rbo_still_names_a_missing_user_run_when_a_model_is_asked_for(systems_only):
    with pytest.raises(ValueError, match="no finished user-variant run of model 'bm25'"):
        analysis.rbo_analysis("sys", model_name="bm25")
    make_topic_set("empty", ("1",))
    with pytest.raises(CommandError, match="no finished user-variant run and no finished "
                                           "system run"):
        run("pool_analysis", "rbo", "--topic-set", "empty")


@pytest.mark.django_db
def test_rbo_of_a_systems_pool_reads_its_runs(systems_only):
    pool = services.pool_build(services.pool_create(topic_set_name="sys", sources="systems",
                                                    depth=2, name="sp").id)
    res = json.loads(run("pool_analysis", "rbo", "--pool", "sp"))
    assert res["runs"] == selectors.pool_run_ids(pool) and len(res["system"]) == 2
    with pytest.raises(CommandError, match="has no run 999999"):
        run("pool_analysis", "rbo", "--pool", "sp", "--runs", "999999")


# --- a run in a pool ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_run_in_a_pool_cannot_be_deleted_alone_but_goes_with_its_topic_set(rankings_db):
    from django.db.models import RestrictedError

    pool = services.pool_create(topic_set_name="ts", sources="systems", depth=2)
    with pytest.raises(RestrictedError):
        Run.objects.get(tag="sysA").delete()
    rankings_db.delete()
    assert not Pool.objects.filter(pk=pool.pk).exists() and not PoolRun.objects.exists()


# --- the data migration ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_existing_pools_with_the_runs_their_build_used():
    """Pools made before pools recorded runs get the runs their build read: the newest
    finished variants run of their model and collection and every finished system run, as
    they stood when the pool was built (runs finished later are left out)."""
    import datetime as dt

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    # every other app at its latest (its tables are as they are now), pooling before runs;
    # the apps the topics move touched at their last migration before it (the move's state
    # changes depend on pooling's latest)
    moved = [("crowd", "0009_topic_sort_key"), ("retrieval", "0006_chunks_for_unfinished_runs"),
             ("judging", "0007_task_stop_rule"), ("topics", None)]
    others = [n for n in executor.loader.graph.leaf_nodes()
              if n[0] not in {"pooling", *(app for app, _ in moved)}] + moved
    before = [("pooling", "0004_pooltopic_uncompressed_arrays"), *others]
    after = [("pooling", "0006_pool_runs_fill"), *others]
    executor.migrate(before)
    try:
        apps = executor.loader.project_state([n for n in before if n[1] is not None]).apps
        TopicSet = apps.get_model("crowd", "TopicSet")
        OldRun = apps.get_model("retrieval", "Run")
        OldPool = apps.get_model("pooling", "Pool")
        model = apps.get_model("retrieval", "RetrievalModel").objects.get(name="bm25")
        qld = apps.get_model("retrieval", "RetrievalModel").objects.get(name="qld")
        ts = TopicSet.objects.create(name="old")
        t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

        def at(hours):
            return t0 + dt.timedelta(hours=hours)

        def make_run(hours_finished, **kw):
            r = OldRun.objects.create(topic_set=ts, finished=at(hours_finished), **kw)
            OldRun.objects.filter(pk=r.pk).update(created=at(hours_finished - 1))
            return r.pk

        older = make_run(1, kind="retrieval", source="variants", model=model, status="done")
        used = make_run(2, kind="retrieval", source="variants", model=model, status="done")
        make_run(3, kind="retrieval", source="variants", model=qld, status="done")
        make_run(2, kind="retrieval", source="titles", model=model, status="done")
        make_run(2, kind="retrieval", source="variants", model=model, status="failed")
        newer = make_run(6, kind="retrieval", source="variants", model=model, status="done")
        sys_a = make_run(1, kind="system", source="system", tag="a", status="done")
        sys_late = make_run(7, kind="system", source="system", tag="late", status="done")
        make_run(2, kind="system", source="system", tag="half", status="running")
        combined = OldPool.objects.create(topic_set=ts, sources="combined", depth=5,
                                          model=model, status="done", finished=at(4))
        users = OldPool.objects.create(topic_set=ts, sources="users", depth=5, model=model,
                                       status="done", finished=at(8))
        systems = OldPool.objects.create(topic_set=ts, sources="systems", depth=5,
                                         status="queued")
        no_model = OldPool.objects.create(topic_set=ts, sources="users", depth=5,
                                          status="failed", finished=at(4))
        assert older < used
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        PoolRun = executor.loader.project_state(
            [n for n in after if n[1] is not None]).apps.get_model("pooling", "PoolRun")

        def runs(pool):
            return sorted(PoolRun.objects.filter(pool_id=pool.pk).values_list("run_id", flat=True))

        assert runs(combined) == [used, sys_a]
        assert runs(users) == [newer]
        assert runs(systems) == [sys_a, sys_late]
        assert runs(no_model) == []
    finally:
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_the_analysis_pages_read_a_pools_runs(rankings_db, client, django_user_model):
    pool = services.pool_build(services.pool_create(topic_set_name="ts", sources="combined",
                                                    depth=2, name="p").id)
    client.force_login(django_user_model.objects.create_user(
        "organiser", password="pw-organiser-1", is_staff=True))
    url = reverse("pooling:rbo") + f"?pool={pool.pk}&reference=pairs&p=0.9"
    before = client.get(url)
    assert before.status_code == 200 and before.context["result"]["runs"] == first_runs()
    growth_url = reverse("pooling:growth") + f"?pool={pool.pk}&depths=1,2&orders=2"
    growth_before = client.get(growth_url).context["fits"]
    assert len(growth_before) == 4  # users and systems, two depths each
    later_runs(rankings_db)
    after = client.get(url)
    assert after.context["result"] == before.context["result"]
    assert client.get(growth_url).context["fits"] == growth_before
    # by topic set, the page reads the newer runs
    assert client.get(reverse("pooling:rbo") + "?topic_set=ts&reference=pairs&p=0.9"
                      ).context["result"]["runs"] != first_runs()
    bad = client.get(reverse("pooling:rbo") + "?pool=nope").content.decode()
    assert "no pool" in bad
    both = client.get(reverse("pooling:rbo") + "?p=0.9").content.decode()
    assert "give a topic set or a pool" in both


@pytest.mark.django_db
def test_the_admin_shows_a_pools_runs_read_only(rankings_db, admin_client):
    pool = services.pool_create(topic_set_name="ts", sources="systems", depth=2)
    page = admin_client.get(reverse("admin:pooling_pool_change", args=[pool.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    for run_ in Run.objects.all():
        shown = f">{run_}<" in html  # the run's link (not "PoolRun object (n)")
        assert shown == (run_.id in selectors.pool_run_ids(pool)), run_.tag


@pytest.mark.django_db
def test_listing_pools_reads_their_runs_in_one_query(rankings_db, django_assert_num_queries):
    for depth in (1, 2, 3):
        services.pool_create(topic_set_name="ts", sources="combined", depth=depth)
    with django_assert_num_queries(2):  # the pools, then the runs of all of them
        listed = [selectors.pool_run_list(p) for p in selectors.pool_list()]
    assert listed == [listed[0]] * 3 and [r["id"] for r in listed[0]] == first_runs()
