"""Pools built from rankings stored in the database, checked against hand-computed values.

The docid vocabulary is created in reverse string order (``doc-f`` gets the smallest id),
so any tie broken by vocabulary id instead of by docid string shows up as a failure.
"""
from __future__ import annotations

from io import StringIO

import numpy as np
import pytest

from retrieval.models import Ranking, RetrievalModel, Run, RunQuery
from retrieval.rankings import pack
from retrieval.services import docids_ensure
from topics.models import Topic, TopicSet

VOCAB = ["doc-f", "doc-e", "doc-d", "doc-c", "doc-b", "doc-a"]  # ids ascend, strings descend

# topic -> label -> (weight, users, ranking)
USER_RANKINGS = {
    "1": {
        "v1": (2, ["w2", "w1"], ["doc-c", "doc-a", "doc-e"]),
        "v2": (1, ["w3"], ["doc-f", "doc-b"]),
    },
    "2": {"v1": (1, ["w1"], ["doc-b", "doc-d"])},
}
TITLE_RANKINGS = {"1": ["doc-a", "doc-c", "doc-b"], "2": ["doc-d", "doc-b"]}
SYSTEM_RANKINGS = {
    "sysA": {"1": ["doc-d", "doc-c"], "2": ["doc-a"]},
    "sysB": {"1": ["doc-c", "doc-f"]},
}


def make_ranking(ids: dict[str, int], docids: list[str], scores=None) -> Ranking:
    if scores is None:
        scores = [float(len(docids) - i) for i in range(len(docids))]
    d, s = pack(np.array([ids[x] for x in docids]), np.array(scores))
    return Ranking.objects.create(docids=d, scores=s, length=len(docids), depth=1000)


def make_topic_set(name="ts", topic_ids=("1", "2")):
    ts = TopicSet.objects.create(name=name)
    topics = {t: Topic.objects.create(topic_set=ts, topic_id=t, title=f"topic {t}") for t in topic_ids}
    return ts, topics


@pytest.fixture
def rankings_db(db):
    """The small collection of rankings above, stored as the retrieval app stores them."""
    ids = docids_ensure(VOCAB)
    assert ids["doc-f"] < ids["doc-a"]  # vocabulary order is the reverse of string order
    ts, topics = make_topic_set()
    bm25 = RetrievalModel.objects.get(name="bm25")
    users = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, model=bm25,
                               source="variants", status="done")
    for topic_id, variants in USER_RANKINGS.items():
        for label, (weight, workers, docids) in variants.items():
            RunQuery.objects.create(run=users, topic=topics[topic_id], label=label,
                                    query_text=label, weight=weight, users="\n".join(workers),
                                    ranking=make_ranking(ids, docids))
    titles = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, model=bm25,
                                source="titles", status="done")
    for topic_id, docids in TITLE_RANKINGS.items():
        RunQuery.objects.create(run=titles, topic=topics[topic_id], label="title",
                                ranking=make_ranking(ids, docids))
    for tag, by_topic in SYSTEM_RANKINGS.items():
        run = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=ts, source="system", tag=tag,
                                 status="done")
        for topic_id, docids in by_topic.items():
            RunQuery.objects.create(run=run, topic=topics[topic_id], label=tag,
                                    ranking=make_ranking(ids, docids))
    return ts


def contributions(sources: str):
    """(topic, weight, is_user, ranking) for every contributing ranking, from the constants."""
    out = []
    if sources in ("users", "combined"):
        for t, variants in USER_RANKINGS.items():
            out += [(t, w, True, docids) for w, _, docids in variants.values()]
    if sources in ("systems", "combined"):
        for by_topic in SYSTEM_RANKINGS.values():
            out += [(t, 1, False, docids) for t, docids in by_topic.items()]
    return out


def expected_depth_union(sources: str, depth: int) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t, _, _, docids in contributions(sources):
        out.setdefault(t, set()).update(docids[:depth])
    return out


def expected_rbp(sources: str, depth: int, p: float) -> dict[str, list[tuple[str, float]]]:
    """RBP priority: sum over rankings of weight * (1 - p) * p**(rank - 1) within depth,
    ordered by (-weight, docid string)."""
    weights: dict[str, dict[str, float]] = {}
    for t, w, _, docids in contributions(sources):
        for r, d in enumerate(docids[:depth], start=1):
            weights.setdefault(t, {}).setdefault(d, 0.0)
            weights[t][d] += w * (1 - p) * p ** (r - 1)
    return {t: sorted(ws.items(), key=lambda kv: (-round(kv[1], 12), kv[0]))
            for t, ws in weights.items()}


# --- building pools ------------------------------------------------------------------------

from pooling import selectors, services  # noqa: E402
from pooling.models import Pool  # noqa: E402


def build(**kwargs) -> Pool:
    kwargs.setdefault("topic_set_name", "ts")
    pool = services.pool_create(**kwargs)
    return services.pool_build(pool.id)


def docs_by_topic(pool) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in selectors.pool_documents(pool):
        out.setdefault(d.topic_id, []).append(d)
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("sources", ["users", "systems", "combined"])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_depth_pool_is_the_union_of_the_top_d(rankings_db, sources, depth):
    pool = build(sources=sources, depth=depth)
    assert pool.status == Pool.STATUS_DONE and pool.progress == 1.0
    got = {t: {d.docid for d in docs} for t, docs in docs_by_topic(pool).items()}
    assert got == expected_depth_union(sources, depth)
    assert selectors.pool_sizes(pool) == {t: len(v) for t, v in got.items()}
    assert pool.documents_count == sum(len(v) for v in got.values())


@pytest.mark.django_db
def test_title_rankings_never_enter_a_user_pool(rankings_db):
    pool = build(sources="users", depth=1)
    # the title ranking of topic 2 starts with doc-d; no user variant retrieves it at depth 1
    assert "doc-d" not in {d.docid for d in selectors.pool_documents(pool, ["2"])}


@pytest.mark.django_db
def test_combined_pool_counts_users_systems_and_shallowest_rank(rankings_db):
    pool = build(sources="combined", depth=2)
    docs = {d.docid: d for d in docs_by_topic(pool)["1"]}
    # doc-c: rank 1 of v1 (typed by 2 people) and of sysB, rank 2 of sysA
    assert (docs["doc-c"].min_rank, docs["doc-c"].users, docs["doc-c"].systems) == (1, 2, 2)
    assert (docs["doc-a"].min_rank, docs["doc-a"].users, docs["doc-a"].systems) == (2, 2, 0)
    assert (docs["doc-f"].min_rank, docs["doc-f"].users, docs["doc-f"].systems) == (1, 1, 1)
    assert (docs["doc-d"].min_rank, docs["doc-d"].users, docs["doc-d"].systems) == (1, 0, 1)
    assert (docs["doc-b"].min_rank, docs["doc-b"].users, docs["doc-b"].systems) == (2, 1, 0)


@pytest.mark.django_db
@pytest.mark.parametrize("sources", ["users", "combined"])
def test_rbp_priority_order_breaks_ties_by_docid_string(rankings_db, sources):
    pool = build(sources=sources, depth=2, strategy="rbp", p=0.5)
    expected = expected_rbp(sources, 2, 0.5)
    got = docs_by_topic(pool)
    assert set(got) == set(expected)
    for t, docs in got.items():
        assert [d.docid for d in docs] == [d for d, _ in expected[t]], t
        assert [d.weight for d in docs] == pytest.approx([w for _, w in expected[t]])
        assert [d.rank for d in docs] == list(range(1, len(docs) + 1))
    # users, topic 1: doc-a and doc-f tie at 0.5; doc-f has the smaller vocabulary id but
    # doc-a sorts first as a string
    if sources == "users":
        assert [d.docid for d in got["1"]] == ["doc-c", "doc-a", "doc-f", "doc-b"]


@pytest.mark.django_db
def test_rbp_budget_per_topic_keeps_the_highest_priority_documents(rankings_db):
    full = expected_rbp("users", 3, 0.5)
    pool = build(sources="users", depth=3, strategy="rbp", p=0.5, budget=2)
    got = {t: [d.docid for d in docs] for t, docs in docs_by_topic(pool).items()}
    assert got == {t: [d for d, _ in v[:2]] for t, v in full.items()}


@pytest.mark.django_db
def test_build_without_rankings_marks_the_pool_failed(db):
    make_topic_set("empty")
    pool = services.pool_create(topic_set_name="empty", sources="users", depth=10)
    with pytest.raises(ValueError, match="no finished user-variant rankings"):
        services.pool_build(pool.id)
    pool.refresh_from_db()
    assert pool.status == Pool.STATUS_FAILED
    assert pool.error == ("Topic set 'empty' has no finished user-variant rankings: run "
                          "retrieval over the variants (run_retrieval --source variants) "
                          "first, or choose another model.")


@pytest.mark.django_db
def test_invalid_parameters_are_refused_before_anything_is_stored(rankings_db):
    for kwargs, message in [
        (dict(sources="everyone", depth=10), "sources"),
        (dict(sources="users", depth=0), "depth"),
        (dict(sources="users", depth=10, strategy="rbp", p=1.0), "persistence"),
        (dict(sources="users", depth=10, topic_set_name="nope"), "no topic set"),
        (dict(sources="users", depth=10, model_name="nope"), "no retrieval model"),
        (dict(sources="users", depth=10, name="evil\u202etxt.exe"), r"pool name .* \(U\+202E\)"),
        (dict(sources="users", depth=10, name="../../etc"), "must not be '.' or '..' nor contain"),
        (dict(sources="users", depth=10, name=".."), "must not be '.' or '..'"),
        (dict(sources="users", depth=10, name="a b"), "contains a space"),
        (dict(sources="users", depth=10**20), "depth must be between 1 and 10000"),
        (dict(sources="users", depth=10, budget=10**20), "budget must be an integer from 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            services.pool_create(**{"topic_set_name": "ts", **kwargs})
    assert Pool.objects.count() == 0


@pytest.mark.django_db
def test_rebuilding_replaces_the_stored_topics(rankings_db):
    pool = build(sources="users", depth=2)
    again = services.pool_build(pool.id)
    assert selectors.pool_sizes(again) == {"1": 4, "2": 2}


@pytest.mark.django_db
def test_pool_documents_query_count_is_bounded(rankings_db, django_assert_max_num_queries):
    pool = build(sources="combined", depth=3)
    pool = selectors.pool_get(pool.id)
    # topic ids, the topic rows, one docid lookup for all (small) topics together
    with django_assert_max_num_queries(3):
        docs = list(selectors.pool_documents(pool))
    assert len(docs) == pool.documents_count
    with django_assert_max_num_queries(1):
        selectors.pool_sizes(pool)


@pytest.mark.django_db
def test_pool_get_by_name_or_id(rankings_db):
    first = build(sources="users", depth=1)
    named = build(sources="users", depth=2, name=str(first.id))  # a name that looks like an id
    other = build(sources="systems", depth=1, name="sys-1")
    assert selectors.pool_get(str(first.id)) == named  # a name match wins
    assert selectors.pool_get("sys-1") == other
    assert selectors.pool_get(other.id) == other
    with pytest.raises(ValueError, match="no pool"):
        selectors.pool_get("missing")


@pytest.mark.django_db
def test_pools_list_topics_in_natural_order(db):
    ids = docids_ensure(["doc-a", "doc-b"])
    ts, topics = make_topic_set("nat", ("10", "9", "1", "UQV.2", "UQV.10"))
    run = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=ts, source="system", tag="s",
                             status="done")
    for topic in topics.values():
        RunQuery.objects.create(run=run, topic=topic, label="s",
                                ranking=make_ranking(ids, ["doc-a", "doc-b"]))
    pool = build(topic_set_name="nat", sources="systems", depth=1)
    natural = ["1", "9", "10", "UQV.2", "UQV.10"]
    assert list(selectors.pool_sizes(pool)) == natural
    assert [d.topic_id for d in selectors.pool_documents(pool)] == natural


@pytest.mark.django_db
@pytest.mark.parametrize("sources", ["users", "combined"])
@pytest.mark.parametrize("strategy, budget, scope", [
    ("depth", None, "topic"), ("rbp", 2, "topic"), ("depth", 3, "global"), ("rbp", 3, "global")])
def test_stored_pool_equals_the_pool_of_rankings_remapped_first(rankings_db, monkeypatch,
                                                                 sources, strategy, budget, scope):
    """A build sums the weights over the stored vocabulary ids and remaps only the pooled
    documents to string order (or, with ids beyond the maths' lookup table, every ranking
    first): either way the stored arrays are, byte for byte, those of the pool of the
    rankings remapped beforehand."""
    from pooling import pools as pool_maths

    _, contribs, remap = selectors.ranking_contributions("ts", sources, depth=2)
    params = dict(strategy=strategy, depth=2, p=0.8, budget=budget, budget_scope=scope)
    expected = pool_maths.pool_compute(contribs, **params)
    assert expected
    for large_ids in (False, True):
        if large_ids:
            monkeypatch.setattr(pool_maths, "ID_TABLE_MAX", 0)
        pool = build(sources=sources, **params)
        assert pool.status == Pool.STATUS_DONE, pool.error
        got = {t.topic_id: t for t in selectors.pool_topic_arrays(pool)}
        assert sorted(got) == sorted(expected)
        for t, tp in expected.items():
            assert got[t].docids.tolist() == remap.to_vocab(tp.docids).tolist(), (large_ids, t)
            for f in ("weights", "min_rank", "users", "systems"):
                assert getattr(got[t], f).tobytes() == getattr(tp, f).astype(
                    getattr(got[t], f).dtype).tobytes(), (large_ids, t, f)


@pytest.mark.django_db
def test_pool_found_by_the_label_the_service_prints(rankings_db, tmp_path):
    """An unnamed pool prints as pool-<id>; that label finds it (export_pool pool-2), a
    named pool keeps its name, and an unknown label names itself in the error."""
    from django.core.management import CommandError, call_command

    pool = build(sources="users", depth=2)
    assert pool.label == f"pool-{pool.id}"
    assert selectors.pool_get(pool.label).id == pool.id
    out = tmp_path / "p.txt"
    call_command("export_pool", pool.label, "--out", str(out), stderr=StringIO())
    assert out.read_text().count("\n") == pool.documents_count
    with pytest.raises(ValueError, match=r"no pool 'pool-999999'"):
        selectors.pool_get("pool-999999")
    with pytest.raises(CommandError, match=r"no pool 'pool-x'"):
        call_command("export_pool", "pool-x", "--out", str(out))
    with pytest.raises(ValueError, match=r"no pool '99999999999999999999'"):
        selectors.pool_get("99999999999999999999")
