"""The assignment queue: leases, an assessor's next batch, the claim of free slots."""
from __future__ import annotations

import itertools

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from common import sql
from ..models import ASSESSOR_TABLE, ITEM_TABLE, SLOT_TABLE, TOPIC_TABLE
from .. import learned, priority
from ..models import NO_INTENT, JudgingSlot, JudgingTask, TaskAssessor, TaskTopic
from . import refits
from .adaptive import adaptive_order

class QueueError(ValueError):
    """A request the queue refuses (not an assessor of the task, item not theirs, …)."""


class LeaseLost(QueueError):
    """The assessor's lease on the item expired and its slots went to other assessors."""

@dataclass(frozen=True)
class LeasedItem:
    """One item of an assessor's batch: grade it for each of ``intents`` ("" = the topic
    statement) before ``lease_expires``."""

    slot_id: int
    item_id: int
    topic_id: str
    docid: str
    position: int
    intents: tuple[str, ...]
    lease_expires: datetime


def check_assessor(task: JudgingTask, assessor: str) -> str:
    if not assessor or not str(assessor).strip():
        raise QueueError("an assessor name is required")
    if task.assessors and assessor not in task.assessors:
        raise QueueError(f"{assessor!r} is not an assessor of task {task.name!r}")
    return assessor


def locked_assessor(task: JudgingTask, assessor: str) -> TaskAssessor:
    """The assessor's row, created on first use, locked until the transaction ends."""
    query = (f"SELECT id, topic_id, finished_topics FROM {ASSESSOR_TABLE} "
             f"WHERE task_id = %s AND assessor = %s{sql.for_update()}")
    rows = sql.fetch(query, [task.pk, assessor])
    if not rows:
        try:
            with transaction.atomic():
                TaskAssessor.objects.create(task=task, assessor=assessor)
        except IntegrityError:
            pass  # created concurrently by another request of the same assessor
        rows = sql.fetch(query, [task.pk, assessor])
    pk, topic_id, finished = rows[0]
    return TaskAssessor(id=pk, task_id=task.pk, assessor=assessor, topic_id=topic_id,
                        finished_topics=sql.loads_json(finished))


def leases_expire(task: JudgingTask, now: datetime | None = None) -> int:
    """Return leases past their expiry to the queue; the number returned. Rows another
    transaction holds are skipped (they are being judged or claimed right now)."""
    with transaction.atomic():
        return _expire(task, now or timezone.now())


def _expire(task: JudgingTask, now: datetime) -> int:
    """:func:`leases_expire` inside the caller's transaction."""
    ids = [r[0] for r in sql.fetch(
        f"SELECT id FROM {SLOT_TABLE} WHERE task_id = %s AND state = %s AND lease_expires < %s"
        f"{sql.for_update(skip_locked=True)}", [task.pk, JudgingSlot.LEASED, sql.db_time(now)])]
    if not ids:
        return 0
    return JudgingSlot.objects.filter(id__in=ids, state=JudgingSlot.LEASED).update(
        state=JudgingSlot.FREE, assessor=None, leased_at=None, lease_expires=None)


def leases_release(task: JudgingTask, assessor: str, *, leave_topic: bool = False) -> int:
    """Return the assessor's leased items to the queue now (they stop judging); the number
    released. With ``leave_topic`` the assessor also leaves the topic they were on, so
    their next batch comes from a topic they have not finished."""
    with transaction.atomic():
        ta = locked_assessor(task, assessor)
        n = JudgingSlot.objects.filter(task=task, assessor=assessor,
                                       state=JudgingSlot.LEASED).update(
            state=JudgingSlot.FREE, assessor=None, leased_at=None, lease_expires=None)
        if leave_topic and ta.topic_id:
            ta.finished_topics = sorted(set(ta.finished_topics) | {ta.topic_id})
            ta.topic_id = ""
            ta.save(update_fields=["topic_id", "finished_topics"])
    return n


def _leased_items(task: JudgingTask, where: str, params) -> list[LeasedItem]:
    """The items of the slots ``where`` selects (SQL on slot ``s``) with their topics'
    intents, in the order of the batch; one query."""
    rows = sql.fetch(
        f"SELECT s.id, s.item_id, s.topic_id, i.docid, s.position, t.intents, "
        f"s.lease_expires FROM {SLOT_TABLE} s JOIN {ITEM_TABLE} i ON i.id = s.item_id "
        f"LEFT JOIN {TOPIC_TABLE} t ON t.task_id = s.task_id AND t.topic_id = s.topic_id "
        f"WHERE s.task_id = %s AND {where} "
        f"ORDER BY s.topic_id, s.leased_at, s.position, s.id", [task.pk, *params])
    return [LeasedItem(sid, i, t, d, p, tuple(sql.loads_json(n) or [NO_INTENT]),
                       sql.as_datetime(e)) for sid, i, t, d, p, n, e in rows]


def batch_lease(task: JudgingTask, assessor: str, *, now: datetime | None = None
                ) -> list[LeasedItem]:
    """The assessor's batch (see the module docstring). The assessor stays on one topic
    until it has nothing left for them, then moves to the topic with the fewest assessors
    working on it (ties by topic id), topics they have not finished first."""
    check_assessor(task, assessor)
    now = now or timezone.now()
    with transaction.atomic():
        _expire(task, now)
        ta = locked_assessor(task, assessor)
        live = _leased_items(task, "s.assessor = %s AND s.state = %s AND s.lease_expires > %s",
                             [assessor, JudgingSlot.LEASED, sql.db_time(now)])
        if live:
            return live
        tried: set[str] = set()
        topic = ta.topic_id
        while True:
            if topic:
                tried.add(topic)
                slot_ids = _claim(task, topic, assessor, now)
                if slot_ids:
                    if ta.topic_id != topic:
                        ta.topic_id = topic
                        ta.save(update_fields=["topic_id", "finished_topics"])
                    return _leased_items(
                        task, f"s.id IN ({sql.placeholders(slot_ids)})", slot_ids)
                if topic not in ta.finished_topics:
                    ta.finished_topics = sorted(set(ta.finished_topics) | {topic})
            topic = _next_topic(task, ta, tried)
            if topic is None:
                ta.topic_id = ""
                ta.save(update_fields=["topic_id", "finished_topics"])
                return []


def _next_topic(task: JudgingTask, ta: TaskAssessor, tried: set[str]) -> str | None:
    free = JudgingSlot.objects.filter(task=task, topic_id=OuterRef("topic_id"),
                                      state=JudgingSlot.FREE)
    topics = TaskTopic.objects.filter(task=task).annotate(has_free=Exists(free)).filter(
        has_free=True)
    if task.stop_rule:  # topics the rule stopped hand out nothing
        topics = topics.filter(stopped_at__isnull=True)
    if task.mode == JudgingTask.MODE_USER:
        candidates = [t for t, u in topics.values_list("topic_id", "users") if ta.assessor in u]
    else:
        candidates = list(topics.values_list("topic_id", flat=True))
    load = dict(TaskAssessor.objects.filter(task=task).exclude(topic_id="").exclude(
        pk=ta.pk).values_list("topic_id").annotate(n=Count("id")).values_list("topic_id", "n"))
    finished = set(ta.finished_topics)
    candidates = [t for t in candidates if t not in tried]
    if not candidates:
        return None
    return min(candidates, key=lambda t: (t in finished, load.get(t, 0), t))


def _free_for(task: JudgingTask, topic: str, assessor: str):
    """Free slots of the topic on items the assessor holds no slot of (see ``_claim``)."""
    mine = JudgingSlot.objects.filter(task_id=task.pk, assessor=assessor, topic_id=topic)
    return (JudgingSlot.objects.filter(task=task, topic_id=topic, state=JudgingSlot.FREE)
            .exclude(item_id__in=mine.values("item_id")))


def _claim(task: JudgingTask, topic: str, assessor: str, now: datetime) -> list[int]:
    """Lease up to ``task.batch`` items of a topic to the assessor; their slot ids. None
    of a topic the task's stopping rule stopped. A learned order refitted in the
    background (:mod:`.refits`) reads its stored ranking (and may queue the next fit);
    nothing is fitted here."""
    want = task.batch
    if task.stop_rule and TaskTopic.objects.filter(
            task=task, topic_id=topic, stopped_at__isnull=False).exists():
        return []
    ranking = (refits.stored_ranking(task, topic, now=now)
               if task.order in learned.REFIT_ORDERS else None)
    if task.order in priority.ADAPTIVE_ORDERS:
        # an adaptive order gives only items nobody has judged yet: with K > 1 the other
        # slots of a judged item come first (as pool order fills an item's K slots before
        # the next), or they would never be handed out and the task would never finish
        chosen = _pick_ordered(task, topic, assessor, want, itertools.chain(
            _judged_with_free_slots(task, topic, assessor, want),
            adaptive_order(task, topic)))
    elif ranking is not None:  # a learned order once fitted: its stored ranking
        chosen = _pick_ordered(task, topic, assessor, want, itertools.chain(
            _judged_with_free_slots(task, topic, assessor, want), (int(i) for i in ranking)))
    else:  # pool order; a learned order before its first fit too
        # free slots in priority order, on items the assessor holds no slot of: NOT IN
        # their items of the topic (read once, hashed), not NOT EXISTS per slot, which
        # PostgreSQL ran as a loop over every held slot (28 ms a claim at 1M items)
        rows = sql.fetch(
            f"SELECT id, item_id FROM {SLOT_TABLE} WHERE task_id = %s AND topic_id = %s "
            f"AND state = %s AND item_id NOT IN (SELECT item_id FROM {SLOT_TABLE} "
            f"WHERE task_id = %s AND assessor = %s AND topic_id = %s) "
            f"ORDER BY position, slot_no LIMIT %s{sql.for_update(skip_locked=True)}",
            [task.pk, topic, JudgingSlot.FREE, task.pk, assessor, topic,
             want * task.redundancy])
        chosen = _first_per_item(rows, want)
    if not chosen:
        return []
    updated = sql.execute(
        f"UPDATE {SLOT_TABLE} SET state = %s, assessor = %s, leased_at = %s, "
        f"lease_expires = %s WHERE state = %s AND id IN ({sql.placeholders(chosen)})",
        [JudgingSlot.LEASED, assessor, sql.db_time(now),
         sql.db_time(now + timedelta(minutes=task.lease_minutes)), JudgingSlot.FREE, *chosen])
    if updated != len(chosen):  # only possible without row locks; the caller may retry
        raise QueueError("the queue changed while leasing; ask again")
    return chosen


def _judged_with_free_slots(task: JudgingTask, topic: str, assessor: str, want: int
                            ) -> list[int]:
    """Up to ``want`` items (0-based positions, in pool order) that an assessor has
    judged and that still have a slot free for this assessor; none when K = 1."""
    if task.redundancy < 2:
        return []
    judged = JudgingSlot.objects.filter(task_id=task.pk, topic_id=topic,
                                        state=JudgingSlot.DONE).values("item_id")
    positions = (_free_for(task, topic, assessor).filter(item_id__in=judged)
                 .order_by("position").values_list("position", flat=True).distinct())
    return [p - 1 for p in positions[:want]]


def _first_per_item(rows, want: int) -> list[int]:
    chosen, items = [], set()
    for slot_id, item_id in rows:
        if item_id not in items:
            items.add(item_id)
            chosen.append(slot_id)
            if len(chosen) >= want:
                break
    return chosen


def _pick_ordered(task: JudgingTask, topic: str, assessor: str, want: int, order
                  ) -> list[int]:
    """Up to ``want`` free slots (one per item) of the items ``order`` gives (0-based
    positions, best first), read in growing chunks."""
    chosen: list[int] = []
    items: set[int] = set()
    chunk = max(4 * want, 32)
    while len(chosen) < want:
        positions = [p + 1 for _, p in zip(range(chunk), order)]
        if not positions:
            break
        rank_of = {p: r for r, p in enumerate(positions)}
        rows = list(_free_for(task, topic, assessor).filter(position__in=positions)
                    .select_for_update(skip_locked=True)
                    .values_list("id", "item_id", "position", "slot_no"))
        rows.sort(key=lambda r: (rank_of[r[2]], r[3]))
        for slot_id, item_id, _, _ in rows:
            if item_id not in items:
                items.add(item_id)
                chosen.append(slot_id)
                if len(chosen) >= want:
                    break
        chunk *= 2
    return chosen
