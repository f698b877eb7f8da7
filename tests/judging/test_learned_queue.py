"""The learned orders (al-rank, cal-text, cal) in the live queue: the queue hands items out
from the ranking the topic's last background fit stored (pool order before the first),
with K and the one-slot-per-assessor rule as for every order; judgments queue the next
fit; the request never fits. Runs on PostgreSQL and SQLite."""
from __future__ import annotations

import io
import json
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from jobs import leases
from judging import learned, priority, services
from judging.models import JudgingSlot, TaskTopic, TopicRefit
from judging.services import refits
from pooling.selectors import pool_documents

from .conftest import make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def woken(monkeypatch):
    sent = []
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: sent.append((kind, pk)))
    return sent


def task(pool, **kw):
    args = dict(pool=pool, name="t", mode="topic", redundancy=2, batch=3, lease_minutes=30,
                order="al-rank")
    args.update(kw)
    return services.judging_task_create(**args)


def refit_of(t, topic) -> TopicRefit:
    return TopicRefit.objects.get(task_topic__task=t, task_topic__topic_id=topic)


def pool_order(pool, topic):
    return [d.docid for d in pool_documents(pool) if d.topic_id == topic]


def docids(batch):
    return [x.docid for x in batch]


def chosen(batch):
    """The documents of a batch (which the page shows in pool order)."""
    return sorted(x.docid for x in batch)


def picks(docs, positions):
    return sorted(docs[i] for i in positions)


def submit(t, assessor, item, grade, key):
    services.judgment_submit(t, assessor, item.item_id, {"": grade}, submit_key=key)


def test_a_learned_task_queues_one_refit_per_topic_and_goes_in_pool_order_until_fitted(
        tmp_path, woken, django_capture_on_commit_callbacks):
    pool = make_pool(tmp_path, docs=8)
    with django_capture_on_commit_callbacks(execute=True):
        t = task(pool)
    rows = {r.task_topic.topic_id: r for r in TopicRefit.objects.filter(task_topic__task=t)}
    assert sorted(rows) == ["1", "2"]
    assert all(r.status == "queued" and r.ranking in (b"", memoryview(b"")) for r in rows.values())
    assert sorted(woken) == sorted(("refit", r.pk) for r in rows.values())
    assert rows["1"].sources == ["system", "system"]
    # no fit yet: pool order
    assert docids(services.batch_lease(t, "a")) == pool_order(pool, "1")[:3]


def test_items_follow_the_stored_ranking_with_k_and_no_duplicates(tmp_path, woken):
    pool = make_pool(tmp_path, topics=("1",), docs=8)
    t = task(pool)
    docs = pool_order(pool, "1")
    stored = [5, 2, 7, 0, 1, 3, 4, 6]  # as a fit would store it (0-based positions)
    TopicRefit.objects.filter(pk=refit_of(t, "1").pk).update(
        status="done", ranking=np.asarray(stored, "<i4").tobytes())
    a = services.batch_lease(t, "a")
    assert chosen(a) == picks(docs, stored[:3])
    # b gets the same items (K = 2: the second slot of each)
    assert chosen(services.batch_lease(t, "b")) == picks(docs, stored[:3])
    # c: those items are full; the next ones of the ranking
    assert chosen(services.batch_lease(t, "c")) == picks(docs, stored[3:6])
    # nobody holds two slots of an item, no item has more than K holders
    held = list(JudgingSlot.objects.filter(task=t).exclude(state="free")
                .values_list("item_id", "assessor"))
    assert len(held) == len(set(held)) == 9
    per_item = {}
    for item, _ in held:
        per_item[item] = per_item.get(item, 0) + 1
    assert max(per_item.values()) == 2
    # a judges its batch and asks again: the ranking goes on past what a and c hold
    for n, item in enumerate(a):
        submit(t, "a", item, 1, f"a{n}")
    assert chosen(services.batch_lease(t, "a")) == picks(docs, stored[3:6])


def test_the_worker_fits_from_the_judgments_and_the_queue_follows(tmp_path, woken):
    pool = make_pool(tmp_path, topics=("1",), docs=8)
    t = task(pool, redundancy=1, batch=4)
    refit = refits.topic_refit(refit_of(t, "1").pk)
    assert (refit.status, refit.fits, refit.fitted_labels, refit.holder) == ("done", 1, 0, "")
    first = np.frombuffer(bytes(refit.ranking), "<i4")
    tt = refit.task_topic
    ranks = np.frombuffer(bytes(tt.rankings), "<i4")
    offsets = np.frombuffer(bytes(tt.offsets), "<i4")
    rankings = [ranks[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]
    assert first.tolist() == learned.learned_ranking(
        "al-rank", rankings, 8, {}, sources=["system", "system"]).tolist()
    docs = pool_order(pool, "1")
    batch = services.batch_lease(t, "a")
    assert chosen(batch) == picks(docs, first[:4])
    # judgments: the first two relevant, the others not; the fit reads them
    pos = {d: i for i, d in enumerate(docs)}
    known = {}
    for n, item in enumerate(batch):
        submit(t, "a", item, 1 if n < 2 else 0, f"k{n}")
        known[pos[item.docid]] = n < 2
    TopicRefit.objects.filter(pk=refit.pk).update(status="queued")
    refit = refits.topic_refit(refit.pk)
    assert refit.fitted_labels == 4 and refit.fitted_done == 4 and refit.fits == 2
    again = np.frombuffer(bytes(refit.ranking), "<i4")
    assert again.tolist() == learned.learned_ranking(
        "al-rank", rankings, 8, known, sources=["system", "system"]).tolist()
    assert sorted(again.tolist()) == list(range(8))
    assert set(again[4:].tolist()) == set(known)  # judged items last
    assert chosen(services.batch_lease(t, "a")) == picks(docs, again[:4])


def rankings_of(t, topic):
    tt = TaskTopic.objects.get(task=t, topic_id=topic)
    return priority.unpack_rankings(tt.rankings, tt.offsets)


def label(t, topic, known):
    """Judge the topic's items at the 0-based positions of ``known`` (relevant or not)."""
    ids = dict(t.items.filter(topic_id=topic).values_list("position", "id"))
    for pos, rel in known.items():
        services.judgment_submit(t, "a", ids[pos + 1], {"": int(rel)},
                                 submit_key=f"{topic}-{pos}")


def test_al_rank_refits_pool_the_other_topics_labels_as_the_simulation_does(tmp_path, woken):
    pool = make_pool(tmp_path, topics=("1", "2", "3"), docs=10)
    t = task(pool, redundancy=1)
    sources = ["system", "system"]
    # pool positions go by the best rank (r1 has d1..d10, r2 d10..d1): 0 and 1 are first
    # in some ranking, 8 and 9 fifth in both. Topic 1: the middle of both rankings
    # relevant, their tops not; topic 2: one label, too few for a model of its own;
    # topic 3: none
    known1 = {0: False, 1: False, 2: False, 3: False, 8: True, 9: True}
    known2 = {2: True}
    label(t, "1", known1)
    label(t, "2", known2)
    stored = {}
    for topic in ("1", "2"):
        refit = refits.topic_refit(refit_of(t, topic).pk)
        assert refit.status == "done"
        stored[topic] = np.frombuffer(bytes(refit.ranking), "<i4").tolist()
    features = {topic: learned.rank_features(rankings_of(t, topic), 10, sources)
                for topic in ("1", "2")}

    # the simulation's scoring on the same labels: topic 2's first document is the one
    # the simulation (learned_order, its model shared with topic 1) would judge next
    shared = learned.PooledModel()
    for pos, rel in known1.items():
        shared.add(features["1"][0][pos], rel)
    assert stored["2"][0] == next(learned.learned_order(
        "al-rank", rankings_of(t, "2"), 10, dict(known2), sources=sources, pooled=shared))
    # and the whole stored order is its scores drawn out to the topic
    for topic, other, known, known_other in (("2", "1", known2, known1),
                                             ("1", "2", known1, known2)):
        pooled = learned.PooledModel()
        pooled.add_judged(features[other][0], known_other)
        assert stored[topic] == learned.learned_ranking(
            "al-rank", rankings_of(t, topic), 10, known, sources=sources,
            pooled=pooled).tolist()

    # the topic's own model alone (topic 2's cannot be fitted: the fusion prior) would
    # start at the tops of the rankings; the model pooled with topic 1 starts mid-way
    X2, per_ranking = features["2"]
    alone = learned._al_rank_scores(X2, np.hstack([X2, per_ranking]), known2, [2], None)
    open_ = np.ones(10, dtype=bool)
    open_[2] = False
    assert learned._explored(alone, X2[:, 0], open_, 9, 1)[:2] == [0, 1]
    assert stored["2"][:2] == [8, 9]


def test_the_pooled_model_reads_the_most_recently_labelled_other_topics(
        tmp_path, woken, monkeypatch):
    pool = make_pool(tmp_path, topics=("1", "2", "3"), docs=6)
    t = task(pool, redundancy=1)
    label(t, "3", {0: True, 1: False})
    label(t, "1", {0: True, 1: False, 2: False})
    label(t, "2", {5: True})
    assert refits.pooled_model(t, "2").labels == [1, 0, 0, 1, 0]  # topic 1's, then 3's
    monkeypatch.setattr(refits, "POOLED_TOPICS", 1)
    assert refits.pooled_model(t, "2").labels == [1, 0, 0]  # topic 1: labelled last
    assert refits.pooled_model(t, "1").labels == [1]  # topic 2


def test_judgments_queue_the_next_fit_and_the_request_never_fits(
        tmp_path, woken, monkeypatch, django_capture_on_commit_callbacks):
    pool = make_pool(tmp_path, topics=("1",), docs=2 * refits.REFIT_EVERY + 2)
    t = task(pool, redundancy=1, batch=refits.REFIT_EVERY)
    pk = refit_of(t, "1").pk
    refits.topic_refit(pk)
    woken.clear()

    def no_fit(*args, **kwargs):
        raise AssertionError("a model was fitted inside an assessor's request")

    for name in ("_fit", "_text_matrix", "learned_ranking", "rank_features"):
        monkeypatch.setattr(learned, name, no_fit)
    with django_capture_on_commit_callbacks(execute=True):
        batch = services.batch_lease(t, "a")
    assert len(batch) == refits.REFIT_EVERY and woken == []
    for n, item in enumerate(batch[:-1]):
        submit(t, "a", item, n % 2, f"k{n}")
    with django_capture_on_commit_callbacks(execute=True):
        assert services.batch_lease(t, "a")  # the live batch (one item left)
    assert woken == [] and refit_of(t, "1").status == "done"  # one short: not due yet
    submit(t, "a", batch[-1], 1, "last")
    with django_capture_on_commit_callbacks(execute=True):
        nxt = services.batch_lease(t, "a")
    assert len(nxt) == refits.REFIT_EVERY
    row = refit_of(t, "1")
    assert (row.status, row.queued_done, row.fits) == ("queued", refits.REFIT_EVERY, 1)
    assert woken == [("refit", pk)]
    # another request while it waits queues nothing more
    with django_capture_on_commit_callbacks(execute=True):
        services.batch_lease(t, "b")
    assert woken == [("refit", pk)]
    monkeypatch.undo()
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: None)
    assert refits.topic_refit(pk).fitted_labels == refits.REFIT_EVERY


def test_refit_due_grows_with_the_topic():
    assert not refits.refit_due(0, refits.REFIT_EVERY - 1)
    assert refits.refit_due(0, refits.REFIT_EVERY)
    assert refits.refit_due(10, 10 - refits.REFIT_EVERY)  # undone judgments count too
    assert not refits.refit_due(200, 215) and refits.refit_due(200, 220)


def test_a_fit_whose_lease_was_taken_over_is_discarded(tmp_path, woken):
    pool = make_pool(tmp_path, topics=("1",), docs=6)
    t = task(pool)
    pk = refit_of(t, "1").pk
    taken = []

    def take_over():  # the lease runs out while the fit runs; the next attempt claims it
        TopicRefit.objects.filter(pk=pk).update(
            lease_expires=timezone.now() - timedelta(seconds=1))
        taken.append(leases.claim(TopicRefit, pk))

    refit = refits.topic_refit(pk, fitted=take_over)
    assert taken[0] is not None and taken[0].attempt == 2
    assert (refit.status, refit.attempts, refit.fits) == ("running", 2, 0)
    assert bytes(refit.ranking) == b""
    # the second claim still runs it; a duplicate delivery now does nothing
    assert refits.topic_refit(pk).fits == 0


def test_a_text_order_fits_the_documents_text_or_says_what_is_missing(
        tmp_path, woken, django_capture_on_commit_callbacks):
    from retrieval.models import Collection

    pool = make_pool(tmp_path, topics=("1",), docs=6)
    t = task(pool, order="cal-text")
    pk = refit_of(t, "1").pk
    with pytest.raises(ValueError, match="has no document collection"):
        refits.topic_refit(pk)
    row = refit_of(t, "1")
    assert row.status == "failed" and "choose the collection" in row.error
    # the jobs listing shows it (the refits not done)
    out = io.StringIO()
    call_command("jobs", "--json", stdout=out)
    (listed,) = json.loads(out.getvalue())["refits"]
    assert (listed["id"], listed["task"], listed["topic"], listed["order"], listed["state"]) \
        == (pk, "t", "1", "cal-text", "failed")
    out = io.StringIO()
    call_command("jobs", stdout=out)
    assert f"refit {pk} task t topic 1 (cal-text): failed, not fitted yet" in out.getvalue()
    # the queue goes on in pool order
    assert docids(services.batch_lease(t, "a")) == pool_order(pool, "1")[:3]
    # a collection with the documents' text: the failed fit is queued again, and fits
    words = {3: "statement about the topic", 5: "the topic statement again"}
    f = tmp_path / "docs.all"
    f.write_text("".join(f".I t1d{d}\n.T\n{words.get(d, f'unrelated words number {d}')}\n"
                         for d in range(1, 7)))
    Collection.objects.create(name="c", format="smart", source_path=str(f))
    woken.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.judging_task_collection_set(t, "c")
    assert woken == [("refit", pk)] and refit_of(t, "1").status == "queued"
    refit = refits.topic_refit(pk)
    assert (refit.status, refit.fits, refit.error) == ("done", 1, "")
    docs = pool_order(pool, "1")
    ranking = np.frombuffer(bytes(refit.ranking), "<i4")
    assert {docs[i] for i in ranking[:2]} == {"t1d3", "t1d5"}  # nearest the statement
    texts = [words.get(int(d[3:]), f"unrelated words number {d[3:]}") for d in docs]
    assert ranking.tolist() == learned.learned_ranking(
        "cal-text", [], 6, {}, texts=texts, statement="topic 1\nstatement 1").tolist()


def test_the_command_offers_the_learned_orders(small_pool, woken):
    from judging.models import JudgingTask

    offered = [o for o, _ in JudgingTask.ORDER_CHOICES]
    assert set(learned.REFIT_ORDERS) <= set(offered)
    for order in learned.REFIT_ORDERS:
        call_command("create_judging_task", "--pool", "p", "--name", order, "--mode", "topic",
                     "--order", order)
        t = JudgingTask.objects.get(name=order)
        assert t.order == order
        assert TopicRefit.objects.filter(task_topic__task=t, status="queued").count() == 2
    # hedge and the others have no refit job
    call_command("create_judging_task", "--pool", "p", "--name", "h", "--mode", "topic",
                 "--order", "hedge")
    assert not TopicRefit.objects.filter(task_topic__task__name="h").exists()
    with pytest.raises(ValueError, match="a refitted order must be one of"):
        learned.learned_ranking("hedge", [], 0, {})


def test_every_slot_is_handed_out_with_k_2(tmp_path, woken):
    # a judged item's second slot comes before the ranking's next unjudged items
    pool = make_pool(tmp_path, topics=("1",), docs=8)
    t = task(pool)
    stored = [5, 2, 7, 0, 1, 3, 4, 6]
    TopicRefit.objects.filter(pk=refit_of(t, "1").pk).update(
        status="done", ranking=np.asarray(stored, "<i4").tobytes())
    docs = pool_order(pool, "1")
    a = services.batch_lease(t, "a")
    for n, item in enumerate(a):
        submit(t, "a", item, 1, f"a{n}")
    assert chosen(services.batch_lease(t, "b")) == picks(docs, stored[:3])
    for who in ("b", "a", "b", "c"):
        while batch := services.batch_lease(t, who):
            for item in batch:
                submit(t, who, item, 0, f"{who}-item{item.item_id}")
    assert not JudgingSlot.objects.filter(task=t).exclude(state="done").exists()
