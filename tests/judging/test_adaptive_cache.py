"""The adaptive orders' per-process cache (rankings, votes and the replay at its
frontier) gives exactly what a full replay of the judgments in the database gives, whoever
made them. Runs on PostgreSQL and SQLite."""
from __future__ import annotations

import random
from itertools import islice

import numpy as np
import pytest

from judging import priority, selectors, services
from judging.services import adaptive
from judging.models import JudgingItem, JudgingSlot, Label, TaskTopic

from .conftest import make_pool

pytestmark = pytest.mark.django_db


def full_replay(task, topic, k=None):
    """The order from scratch: rankings from the table, relevance from the selector."""
    tt = TaskTopic.objects.get(task=task, topic_id=topic)
    ranks = np.frombuffer(bytes(tt.rankings), dtype="<i4")
    offsets = np.frombuffer(bytes(tt.offsets), dtype="<i4")
    rankings = [ranks[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    known = selectors.topic_relevance_known(task, topic)
    return list(islice(priority.adaptive_order(task.order, rankings, tt.size, known), k))


def cached_replay(task, topic, k=None):
    entry = adaptive._topic_replay(task, topic)
    changed = entry.sync(task, topic)
    assert entry.known == selectors.topic_relevance_known(task, topic)
    return list(islice(entry.replay.items(dict(entry.known), changed), k))


@pytest.mark.parametrize("order", ["mtf", "bandit-discounted", "hedge"])
def test_cached_order_equals_full_replay_through_submits_revisions_and_undos(tmp_path, order):
    adaptive._adaptive_cache.clear()
    pool = make_pool(tmp_path, topics=("1",), docs=25)
    task = services.judging_task_create(pool=pool, name="t", mode="intent", redundancy=2,
                                        batch=2, lease_minutes=30, order=order)
    rng = random.Random(order)
    done: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    kinds = set()
    for step in range(120):
        who = rng.choice(sorted(done))
        r = rng.random()
        if r < 0.15 and done[who]:
            kinds.add("revise")
            item = rng.choice(done[who])
            services.judgment_submit(task, who, item, {"1": rng.choice([0, 2]), "2": 0},
                                     submit_key=f"s{step}")
        elif r < 0.25 and done[who]:
            kinds.add("undo")
            item = rng.choice(done[who])
            if not services.judgment_undo(task, who, item):  # leased to them again
                done[who].remove(item)
        else:
            batch = services.batch_lease(task, who)
            for x in batch:
                if rng.random() < 0.1:
                    kinds.add("cannot")
                    services.judgment_submit(task, who, x.item_id, {}, cannot_judge="blank",
                                             submit_key=f"s{step}-{x.item_id}")
                else:
                    services.judgment_submit(
                        task, who, x.item_id, {"1": rng.choice([0, 0, 1]), "2": 0},
                        submit_key=f"s{step}-{x.item_id}")
                if x.item_id not in done[who]:
                    done[who].append(x.item_id)
        assert cached_replay(task, "1") == full_replay(task, "1"), step
    assert kinds == {"revise", "undo", "cannot"}
    assert Label.objects.filter(withdrawn=True).exists()
    entry = adaptive._topic_replay(task, "1")
    assert entry.replay.full_replays < 60  # most leases resumed from the frontier


def test_judgments_written_elsewhere_are_seen(small_pool):
    """Another process's writes reach this process only through the database: labels
    written directly (a judgment, one committed late with an id below one already read,
    an undo) must all change the cached order."""
    adaptive._adaptive_cache.clear()
    task = services.judging_task_create(pool=small_pool, name="t", mode="topic",
                                        redundancy=1, batch=1, lease_minutes=30, order="mtf")
    first = services.batch_lease(task, "a")[0]
    assert first.docid == "t1d1"
    initial = cached_replay(task, "1")
    assert initial == full_replay(task, "1")
    items = {i.docid: i for i in JudgingItem.objects.filter(task=task, topic_id="1")}

    def label(docid, grade, **kw):
        return Label.objects.create(
            judgment_set_id=task.judgment_set_id, topic_id="1", intent_id="", docid=docid,
            assessor="elsewhere", grade=grade, created=task.created,
            item=items[docid], **kw)

    top = Label.objects.order_by("-id").values_list("id", flat=True).first() or 0
    high = label("t1d1", 0, id=top + 1000)
    before = cached_replay(task, "1")
    assert before == full_replay(task, "1")
    assert before[0] != initial[0]  # t1d1 not relevant: the other ranking moves to the front
    label("t1d6", 0, id=high.id - 500)  # committed after ``high`` was read
    assert cached_replay(task, "1") == full_replay(task, "1")
    Label.objects.filter(pk=high.pk).update(current=False, withdrawn=True)  # an undo
    after = cached_replay(task, "1")
    assert after == full_replay(task, "1") != before
    assert JudgingSlot.objects.filter(task=task, assessor="a").count() == 1
