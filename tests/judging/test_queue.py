"""The assignment queue as a service: batches, K, one topic at a time, lease expiry,
double submits, revisions and undo, adaptive orders. Runs on PostgreSQL and SQLite."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from judging import selectors, services
from judging.models import JudgingSlot, Label
from pooling.selectors import pool_documents

from .conftest import make_pool

pytestmark = pytest.mark.django_db


def task(pool, **kw):
    args = dict(pool=pool, name="t", mode="intent", redundancy=2, batch=2, lease_minutes=30)
    args.update(kw)
    return services.judging_task_create(**args)


def docs(batch):
    return [(x.topic_id, x.docid) for x in batch]


def pool_order(pool, topic):
    return [d.docid for d in pool_documents(pool) if d.topic_id == topic]


def grades(value=1, intents=("1", "2")):
    return {i: value for i in intents}


def test_create_task_items_and_slots(small_pool):
    t = task(small_pool)
    assert t.items_count == 12 and t.judgment_set.name == "t"
    assert JudgingSlot.objects.filter(task=t).count() == 24
    assert selectors.task_progress(t)["total"] == {
        "items": 12, "slots": 24, "done": 0, "leased": 0, "remaining": 24}
    with pytest.raises(ValueError, match="already exists"):
        task(small_pool)


def test_batches_follow_pool_order_one_topic_at_a_time_and_k(small_pool):
    t = task(small_pool)
    order1, order2 = pool_order(small_pool, "1"), pool_order(small_pool, "2")
    a = services.batch_lease(t, "a")
    assert docs(a) == [("1", d) for d in order1[:2]]
    assert docs(services.batch_lease(t, "a")) == docs(a)  # the live batch again
    # b goes to the topic nobody works on; c back to topic 1 (second slot of the same items)
    assert docs(services.batch_lease(t, "b")) == [("2", d) for d in order2[:2]]
    assert docs(services.batch_lease(t, "c")) == [("1", d) for d in order1[:2]]
    services.batch_lease(t, "d")
    # e: both topics have two assessors; topic 1's first items are full (K = 2)
    assert docs(services.batch_lease(t, "e")) == [("1", d) for d in order1[2:4]]


def test_leases_release_hands_items_back_and_can_leave_the_topic(small_pool):
    t = task(small_pool, redundancy=1)
    order1, order2 = pool_order(small_pool, "1"), pool_order(small_pool, "2")
    assert docs(services.batch_lease(t, "a")) == [("1", d) for d in order1[:2]]
    assert services.leases_release(t, "a") == 2
    assert selectors.task_progress(t)["total"]["leased"] == 0
    # still on topic 1: the same items again
    assert docs(services.batch_lease(t, "a")) == [("1", d) for d in order1[:2]]
    assert services.leases_release(t, "a", leave_topic=True) == 2
    # left topic 1: the next batch comes from topic 2, and b gets topic 1's first items
    assert docs(services.batch_lease(t, "a")) == [("2", d) for d in order2[:2]]
    assert docs(services.batch_lease(t, "b")) == [("1", d) for d in order1[:2]]
    assert services.leases_release(t, "nobody") == 0


def test_submit_double_submit_revision_and_undo(small_pool):
    t = task(small_pool, redundancy=1)
    first = services.batch_lease(t, "a")[0]
    labels = services.judgment_submit(t, "a", first.item_id, grades(2), submit_key="k1",
                                      seconds=4.5)
    assert [(x.intent_id, x.grade, x.revision) for x in labels] == [("1", 2, 1), ("2", 2, 1)]
    again = services.judgment_submit(t, "a", first.item_id, grades(0), submit_key="k1")
    assert [x.pk for x in again] == [x.pk for x in labels]  # retried: nothing written
    assert Label.objects.count() == 2
    # the next batch holds the remaining leased item only
    assert [x.item_id for x in services.batch_lease(t, "a")] != [first.item_id]
    services.judgment_submit(t, "a", first.item_id, grades(0), submit_key="k2")
    cur = Label.objects.filter(current=True, item_id=first.item_id)
    assert sorted(cur.values_list("grade", "revision")) == [(0, 2), (0, 2)]
    assert Label.objects.filter(item_id=first.item_id).count() == 4  # history kept
    assert services.judgment_undo(t, "a", first.item_id)[0].grade == 2  # revision 1 again
    assert services.judgment_undo(t, "a", first.item_id) == []  # back in a's batch
    slot = JudgingSlot.objects.get(item_id=first.item_id)
    assert (slot.state, slot.assessor) == ("leased", "a")
    assert not Label.objects.filter(current=True).exists()
    services.judgment_submit(t, "a", first.item_id, grades(1), submit_key="k3")
    assert Label.objects.get(current=True, intent_id="1").revision == 3
    with pytest.raises(services.QueueError, match="used for another item"):
        services.judgment_submit(t, "a", first.item_id + 1, grades(1), submit_key="k3")


def test_submit_checks_intents_scale_and_cannot_judge(small_pool):
    t = task(small_pool, redundancy=1, scale="binary")
    item = services.batch_lease(t, "a")[0]
    with pytest.raises(services.QueueError, match="missing '2'"):
        services.judgment_submit(t, "a", item.item_id, {"1": 1}, submit_key="x")
    with pytest.raises(services.QueueError, match="not on the task's scale"):
        services.judgment_submit(t, "a", item.item_id, grades(3), submit_key="x")
    labels = services.judgment_submit(t, "a", item.item_id, {}, submit_key="x",
                                      cannot_judge="page did not load")
    assert [x.grade for x in labels] == [None, None]
    with pytest.raises(services.QueueError, match="not an assessor"):
        services.batch_lease(task(small_pool, name="closed", assessors=["ann"]), "bob")


def test_expired_leases_return_and_late_submits(tmp_path):
    t = task(make_pool(tmp_path, topics=("1",)), redundancy=1, batch=1)
    t0 = timezone.now()
    a = services.batch_lease(t, "a", now=t0)[0]
    later = t0 + timedelta(minutes=31)
    b = services.batch_lease(t, "b", now=later)
    assert docs(b) == docs([a])  # a's lease expired: its item went to b
    with pytest.raises(services.LeaseLost):
        services.judgment_submit(t, "a", a.item_id, grades(), submit_key="late", now=later)
    # a late submit is still accepted while the item's slot is free
    c = services.batch_lease(t, "c", now=later)[0]
    services.leases_expire(t, now=later + timedelta(minutes=31))
    services.judgment_submit(t, "c", c.item_id, grades(), submit_key="c1",
                             now=later + timedelta(minutes=32))
    assert JudgingSlot.objects.get(item_id=c.item_id).state == "done"


def test_an_item_never_goes_twice_to_one_assessor(small_pool):
    t = task(small_pool, redundancy=3, batch=4)
    seen = []
    while batch := services.batch_lease(t, "a"):
        for x in batch:
            seen.append(x.item_id)
            services.judgment_submit(t, "a", x.item_id, grades(0), submit_key=f"a{x.item_id}")
    assert len(seen) == len(set(seen)) == 12
    assert selectors.assessor_progress(t, "a")["done"] == 12


def test_mtf_reacts_to_judgments_of_other_assessors(small_pool):
    t = task(small_pool, redundancy=1, batch=1, order="mtf", mode="topic")
    # rankings: r1 = d1..d6, r2 = d6..d1. MTF starts with r1
    a = services.batch_lease(t, "a")[0]
    assert a.docid == "t1d1" and a.intents == ("",)
    services.judgment_submit(t, "a", a.item_id, {"": 0}, submit_key="1")  # r1 drops
    b = services.batch_lease(t, "b")[0]  # b works on topic 2: its own replay
    assert b.docid == "t2d1"
    nxt = services.batch_lease(t, "a")[0]
    assert nxt.docid == "t1d6"  # r2 in front now
    services.judgment_submit(t, "a", nxt.item_id, {"": 1}, submit_key="2")
    assert services.batch_lease(t, "a")[0].docid == "t1d5"  # relevant: r2 stays in front


def test_bandit_order(small_pool):
    t = task(small_pool, redundancy=1, batch=3, order="bandit", mode="topic")
    assert [x.docid for x in services.batch_lease(t, "a")] == ["t1d1", "t1d2", "t1d3"]


def test_create_judging_task_command(small_pool):
    call_command("create_judging_task", "--pool", "p", "--name", "cmd", "--mode", "topic",
                 "--scale", "custom", "--grades", "0:no:n,1:yes:y", "--redundancy", "3",
                 "--order", "mtf", "--batch", "5", "--lease-minutes", "10",
                 "--assessors", "ann,bob")
    t = selectors.task_get("cmd")
    assert (t.redundancy, t.order, t.batch, t.assessors) == (3, "mtf", 5, ["ann", "bob"])
    assert [g["key"] for g in t.scale_grades] == ["n", "y"]
    with pytest.raises(CommandError, match="key 'n' is used twice|value 0 or key"):
        call_command("create_judging_task", "--pool", "p", "--name", "bad", "--mode", "topic",
                     "--scale", "custom", "--grades", "0:no:n,1:yes:n")


def test_lease_and_submit_take_a_handful_of_queries(small_pool, django_assert_num_queries):
    """Pinned (the test run adds a SAVEPOINT and its RELEASE to each call): a live batch
    is expire, assessor, batch; a claim adds the claim, its update and the batch; a
    submit is assessor, item, slot, labels and the topic's count."""
    t = task(small_pool, batch=3)
    batch = services.batch_lease(t, "a")  # a's first: their row is made
    with django_assert_num_queries(2 + 3):
        assert services.batch_lease(t, "a") == batch
    with django_assert_num_queries(2 + 5):
        services.judgment_submit(t, "a", batch[0].item_id, grades(), submit_key="q1")
    with django_assert_num_queries(2 + 4):  # a revision
        services.judgment_submit(t, "a", batch[0].item_id, grades(0), submit_key="q2")
    with django_assert_num_queries(2 + 3):  # a repeated submit: nothing written
        services.judgment_submit(t, "a", batch[0].item_id, grades(0), submit_key="q2")
    for x in batch[1:]:
        services.judgment_submit(t, "a", x.item_id, grades(), submit_key=f"k{x.item_id}")
    with django_assert_num_queries(2 + 6):  # the next batch, same topic
        assert len(services.batch_lease(t, "a")) == 3


@pytest.mark.parametrize("order", ["mtf", "bandit", "bandit-discounted", "hedge"])
def test_adaptive_orders_hand_out_every_slot_with_redundancy(small_pool, order):
    # K = 2: once one assessor has judged an item, its second slot must still be handed
    # out, or the task never finishes
    t = task(small_pool, redundancy=2, batch=2, order=order, mode="topic")
    for who in ("a", "b", "a", "b", "c"):
        while batch := services.batch_lease(t, who):
            for x in batch:
                services.judgment_submit(t, who, x.item_id, {"": 1 if x.docid.endswith(("1", "2")) else 0},
                                         submit_key=f"{who}{x.item_id}")
    assert JudgingSlot.objects.filter(task=t).exclude(state=JudgingSlot.DONE).count() == 0
    per_item = {}
    for item_id, assessor in Label.objects.filter(judgment_set=t.judgment_set).values_list(
            "item_id", "assessor"):
        per_item.setdefault(item_id, set()).add(assessor)
    assert len(per_item) == 12 and all(len(v) == 2 for v in per_item.values())
