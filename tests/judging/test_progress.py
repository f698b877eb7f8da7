"""Progress from the kept counts equals a recount of the slots, after random leases,
submits (first and revisions), expiries, undos and late submits."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db.models import Count, Q
from django.utils import timezone

from judging import selectors, services
from judging.models import JudgingSlot, TaskTopic

from .conftest import make_pool

pytestmark = pytest.mark.django_db


def recount(task, now):
    """The progress counted from every slot of the task (what the counts must equal)."""
    rows = (JudgingSlot.objects.filter(task=task).values("topic_id").annotate(
        slots=Count("id"), done=Count("id", filter=Q(state="done")),
        leased=Count("id", filter=Q(state="leased", lease_expires__gt=now)))
        .order_by("topic_id"))
    topics, total = {}, {"items": 0, "slots": 0, "done": 0, "leased": 0, "remaining": 0}
    for r in rows:
        e = {"items": r["slots"] // task.redundancy, "slots": r["slots"], "done": r["done"],
             "leased": r["leased"], "remaining": r["slots"] - r["done"] - r["leased"]}
        topics[r["topic_id"]] = e
        for k in total:
            total[k] += e[k]
    return {"total": total, "topics": topics}


def recount_assessor(task, assessor, now):
    mine = JudgingSlot.objects.filter(task=task, assessor=assessor)
    topic = (task.task_assessors.filter(assessor=assessor)
             .values_list("topic_id", flat=True).first() or "")
    return {"topic": topic, "done": mine.filter(state="done").count(),
            "leased": mine.filter(state="leased", lease_expires__gt=now).count(),
            "topic_done": mine.filter(state="done", topic_id=topic).count() if topic else 0,
            "topic_items": TaskTopic.objects.filter(task=task, topic_id=topic)
            .values_list("size", flat=True).first() or 0}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_progress_counts_equal_a_recount_after_random_work(tmp_path, seed):
    rng = random.Random(seed)
    pool = make_pool(tmp_path, topics=("1", "2", "3"), docs=8)
    task = services.judging_task_create(pool=pool, name="p", mode="intent", redundancy=2,
                                        batch=3, lease_minutes=10)
    assessors = ["a", "b", "c", "d"]
    clock = timezone.now()
    held: dict[str, list] = {a: [] for a in assessors}
    judged: dict[str, list[int]] = {a: [] for a in assessors}
    done_ops = {"lease": 0, "submit": 0, "revise": 0, "undo": 0, "late": 0, "expire": 0}
    for step in range(160):
        a = rng.choice(assessors)
        op = rng.random()
        if op < 0.35:
            held[a] = services.batch_lease(task, a, now=clock)
            done_ops["lease"] += 1
        elif op < 0.7 and held[a]:
            x = held[a].pop(0)
            try:
                services.judgment_submit(task, a, x.item_id, {i: rng.choice([0, 1])
                                                              for i in x.intents},
                                         submit_key=f"{a}-{step}", now=clock)
                judged[a].append(x.item_id)
                done_ops["late" if x.lease_expires < clock else "submit"] += 1
            except services.LeaseLost:
                pass
            if rng.random() < 0.2:  # the same form posted again: nothing changes
                try:
                    services.judgment_submit(task, a, x.item_id, {i: 0 for i in x.intents},
                                             submit_key=f"{a}-{step}", now=clock)
                except services.QueueError:
                    pass
        elif op < 0.8 and judged[a]:
            item = rng.choice(judged[a])
            services.judgment_submit(task, a, item, {"1": 1, "2": 1},
                                     submit_key=f"{a}-{step}-r", now=clock)
            done_ops["revise"] += 1
        elif op < 0.9 and judged[a]:
            item = judged[a].pop()
            try:
                if services.judgment_undo(task, a, item, now=clock) == []:
                    held[a] = services.batch_lease(task, a, now=clock)
                done_ops["undo"] += 1
            except services.QueueError:
                pass
        else:
            clock += timedelta(minutes=rng.choice([1, 4, 11]))
            if rng.random() < 0.5:
                done_ops["expire"] += services.leases_expire(task, now=clock) > 0
        now = clock + timedelta(minutes=rng.choice([0, 0, 5, 12]))  # also: leases run out
        expected = recount(task, now)
        assert selectors.task_progress(task, now=now) == expected
        t = rng.choice(["1", "2", "3"])
        assert selectors.task_progress_held(task, t, now=now) == expected["topics"][t]
        assert selectors.task_progress_held(task, now=now) == expected["total"]
        got = selectors.assessor_progress(task, a, now=now)
        got.pop("last_item")
        assert got == recount_assessor(task, a, now)
    # the walk did every kind of change
    assert all(done_ops.values()), done_ops
    assert recount(task, clock)["total"]["done"] > 0


def test_the_migration_fills_the_counts_from_the_slots(tmp_path):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("judging.migrations.0004_queue_progress")
    pool = make_pool(tmp_path, topics=("1", "2"), docs=4)
    task = services.judging_task_create(pool=pool, name="m", mode="topic", batch=2)
    for x in services.batch_lease(task, "a"):
        services.judgment_submit(task, "a", x.item_id, {"": 1}, submit_key=f"k{x.item_id}")
    TaskTopic.objects.filter(task=task).update(slots_done=0)  # a task from before
    migration.count_done(apps, None)
    assert dict(TaskTopic.objects.filter(task=task).values_list("topic_id", "slots_done")) \
        == {"1": 2, "2": 0}
    assert selectors.task_progress(task) == recount(task, timezone.now())
