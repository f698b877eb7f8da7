"""Judgments: submit (first or a revision) and undo, with the topic's done count."""
from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Mapping

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from common import sql
from ..models import (
    ITEM_TABLE, LABEL_TABLE, SLOT_TABLE, TOPIC_TABLE, JudgingSlot, JudgingTask, Label,
)
from .queue import LeaseLost, QueueError, check_assessor, locked_assessor
from .topic_stop import topic_stop_check

def judgment_submit(
    task: JudgingTask,
    assessor: str,
    item_id: int,
    grades: Mapping[str, int | None],
    *,
    submit_key: str,
    seconds: float | None = None,
    rationale: str = "",
    cannot_judge: str = "",
    simulated: bool = False,
    now: datetime | None = None,
) -> list[Label]:
    """Record the assessor's grades of one item: ``{intent id: grade}`` with every intent of
    the item's topic (``""`` in topic and user modes), each a value of the task's scale; or
    ``cannot_judge`` (a reason) with no grades. The first submit of an item completes the
    assessor's slot; a later one is a new revision (the previous stays in the history).
    ``simulated``: the grades come from the demo's simulated assessor, not a person (the
    labels say so).

    Idempotent: a submit whose ``submit_key`` was already recorded writes nothing and
    returns the labels recorded then. A submit after the lease expired is accepted while
    a slot of the item is still free or still the assessor's; else :class:`LeaseLost`.
    """
    check_assessor(task, assessor)
    if not submit_key or len(submit_key) > 100:
        raise QueueError("a submit key (1 to 100 characters) is required")
    if seconds is not None and (not math.isfinite(seconds) or seconds < 0):
        raise QueueError("seconds must be a non-negative number")
    now = now or timezone.now()
    with transaction.atomic():
        locked_assessor(task, assessor)
        # one query: the item, its topic's intents (and users), the submit key's first
        # use, the assessor's slot of the item and their latest revision of it
        row = sql.fetch(
            f"SELECT i.topic_id, i.docid, t.intents, t.users, "
            f"(SELECT l.item_id FROM {LABEL_TABLE} l WHERE l.judgment_set_id = %s "
            f" AND l.submit_key = %s ORDER BY l.id LIMIT 1), "
            f"(SELECT l.assessor FROM {LABEL_TABLE} l WHERE l.judgment_set_id = %s "
            f" AND l.submit_key = %s ORDER BY l.id LIMIT 1), "
            f"(SELECT s.state FROM {SLOT_TABLE} s WHERE s.item_id = i.id AND s.assessor = %s), "
            f"(SELECT max(l.revision) FROM {LABEL_TABLE} l WHERE l.item_id = i.id "
            f" AND l.assessor = %s) "
            f"FROM {ITEM_TABLE} i LEFT JOIN {TOPIC_TABLE} t ON t.task_id = i.task_id "
            f"AND t.topic_id = i.topic_id WHERE i.id = %s AND i.task_id = %s",
            [task.judgment_set_id, submit_key, task.judgment_set_id, submit_key, assessor,
             assessor, item_id, task.pk])
        row = row[0] if row else None
        if row is None or row[5] is not None:  # no such item, or a repeated submit key
            done = list(Label.objects.filter(judgment_set_id=task.judgment_set_id,
                                             submit_key=submit_key).order_by("id"))
            if done:
                if done[0].assessor != assessor or done[0].item_id != item_id:
                    raise QueueError("this submit key was used for another item or assessor")
                return done
            raise QueueError(f"task {task.name!r} has no item {item_id}")
        topic_id, docid, intents, users, _, _, slot_state, revision = row
        intents, users = sql.loads_json(intents), sql.loads_json(users)
        values = checked_grades(task, intents, grades, cannot_judge)
        completes = False
        if slot_state == JudgingSlot.DONE:  # a revision (a leased slot has no current label)
            sql.execute(f"UPDATE {LABEL_TABLE} SET current = %s WHERE item_id = %s "
                       f"AND assessor = %s AND current = %s", [False, item_id, assessor, True])
        else:
            # the assessor's lease, unless it expired and went back to the queue meanwhile
            completes = slot_state == JudgingSlot.LEASED and sql.execute(
                f"UPDATE {SLOT_TABLE} SET state = %s, done_at = %s WHERE item_id = %s "
                f"AND assessor = %s AND state = %s",
                [JudgingSlot.DONE, sql.db_time(now), item_id, assessor,
                 JudgingSlot.LEASED]) == 1
            if not completes:
                completes = _free_slot_take(task, item_id, assessor, users, now)
            if not completes:
                raise LeaseLost(f"your lease on document {docid} expired and it has "
                                "gone to other assessors; it needs no judgment from you")
        labels = Label.objects.bulk_create([
            Label(judgment_set_id=task.judgment_set_id, topic_id=topic_id, intent_id=intent,
                  docid=docid, assessor=assessor, grade=grade, cannot_judge=cannot_judge,
                  rationale=rationale, seconds=seconds, created=now,
                  revision=(revision or 0) + 1, current=True, submit_key=submit_key,
                  item_id=item_id, simulated=bool(simulated))
            for intent, grade in values])
        if completes:  # last: the topic's row is locked only until the commit
            done_count(task, topic_id, +1)
        if task.stop_rule:
            topic_stop_check(task, topic_id, now=now)
        return labels


def _free_slot_take(task: JudgingTask, item_id: int, assessor: str, users, now) -> bool:
    """A late submit: take a free slot of the item, done at once (not in user mode for a
    user who is not one of the topic's workers)."""
    if task.mode == JudgingTask.MODE_USER and assessor not in (users or []):
        return False
    slot_id = (JudgingSlot.objects.select_for_update(skip_locked=True)
               .filter(item_id=item_id, state=JudgingSlot.FREE).order_by("slot_no")
               .values_list("id", flat=True).first())
    return slot_id is not None and JudgingSlot.objects.filter(
        pk=slot_id, state=JudgingSlot.FREE).update(
            state=JudgingSlot.DONE, assessor=assessor, leased_at=now, done_at=now) == 1


def done_count(task: JudgingTask, topic_id: str, delta: int) -> None:
    """Keep the topic's count of done slots (in the caller's transaction)."""
    sql.execute(f"UPDATE {TOPIC_TABLE} SET slots_done = slots_done + %s WHERE task_id = %s "
            f"AND topic_id = %s", [delta, task.pk, topic_id])


def checked_grades(task, intents, grades, cannot_judge) -> list[tuple[str, int | None]]:
    if cannot_judge:
        if len(cannot_judge) > 200:
            raise QueueError("the reason for not judging is at most 200 characters")
        return [(i, None) for i in intents]
    allowed = {g["value"] for g in task.scale_grades}
    got = {str(k): v for k, v in grades.items()}
    missing = [i for i in intents if i not in got]
    extra = [k for k in got if k not in intents]
    if missing or extra:
        raise QueueError(
            "grade every intent of the topic exactly once"
            + (f"; missing {', '.join(repr(m) for m in missing)}" if missing else "")
            + (f"; not intents of the topic: {', '.join(repr(e) for e in extra)}" if extra else ""))
    out = []
    for i in intents:
        v = got[i]
        try:
            v = int(v)
        except (TypeError, ValueError):
            raise QueueError(f"grade {v!r} for intent {i!r} is not a number") from None
        if v not in allowed:
            raise QueueError(f"grade {v} is not on the task's scale ({sorted(allowed)})")
        out.append((i, v))
    return out


def judgment_undo(task: JudgingTask, assessor: str, item_id: int, *,
                  now: datetime | None = None) -> list[Label]:
    """Withdraw the assessor's current revision of an item (it stays in the history, no
    longer current). The revision before it counts again and is returned; with none, the
    item is leased to the assessor again for ``task.lease_minutes`` and ``[]`` returned."""
    check_assessor(task, assessor)
    now = now or timezone.now()
    with transaction.atomic():
        locked_assessor(task, assessor)
        labels = Label.objects.filter(item_id=item_id, assessor=assessor,
                                      judgment_set_id=task.judgment_set_id)
        current = list(labels.filter(current=True))
        if not current:
            raise QueueError("you have no judgment of this item to undo")
        rev = current[0].revision
        labels.filter(current=True).update(current=False, withdrawn=True)
        earlier = (labels.filter(revision__lt=rev, withdrawn=False)
                   .aggregate(m=Max("revision"))["m"])
        if earlier:
            labels.filter(revision=earlier).update(current=True)
            return list(labels.filter(current=True).order_by("id"))
        if JudgingSlot.objects.filter(item_id=item_id, assessor=assessor,
                                      state=JudgingSlot.DONE).update(
                state=JudgingSlot.LEASED, done_at=None, leased_at=now,
                lease_expires=now + timedelta(minutes=task.lease_minutes)):
            done_count(task, current[0].topic_id, -1)
        return []
