"""Writes of the judging app: imports, judging tasks, the assignment queue, judgments.

The contract pages and commands rely on (every function raises ``ValueError`` subclasses
with a message a person can act on, never returns ``None`` on failure):

- :func:`judgments_import` — a judgment file into a new judgment set, all or nothing.
- :func:`judging_task_create` — a task over a pool: its judgment set, items and K slots
  per item.
- :func:`batch_lease` — the assessor's current batch: the live leases they hold, else the
  next ``task.batch`` items of their topic in the task's priority order, leased for
  ``task.lease_minutes``. An empty list means nothing is left for this assessor.
- :func:`judgment_submit` — the grades of one leased (or already judged: a revision) item;
  idempotent per ``submit_key`` (give every rendered form a fresh key: a double or retried
  submit of that form writes nothing and returns the labels of the first).
- :func:`judgment_undo` — withdraw the assessor's latest revision of an item: the previous
  revision counts again, or, if there was none, the item is leased to them again.
- :func:`leases_expire` — return expired leases to the queue (also done by every lease).
- :func:`topic_stop_check`, :func:`judging_task_stop_rule_set`, :func:`topic_resume` — the
  task's stopping rule (:mod:`judging.stopping`): a topic it stops hands out no more
  items until the organiser resumes it.

Guarantees of the queue, on PostgreSQL under any concurrency and on SQLite (where writers
are serialised): an item is held (leased or done) by at most K assessors, because it has K
slot rows; never twice by one assessor (unique (item, assessor) on slots); slots are
claimed with ``SELECT … FOR UPDATE SKIP LOCKED`` and the claim only updates rows still
free, so two assessors never get the same slot; one assessor's requests are serialised by
locking their :class:`~judging.models.TaskAssessor` row. An expired lease is forgotten:
its slot returns to the queue and may go to anyone, the same assessor included (they
never judged it).

Progress is read without scanning slots: each topic's count of done slots
(``TaskTopic.slots_done``) changes only here, in the transaction that moves a slot into
``done`` (a first submit) or out of it (an undo), so it always equals a recount.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, Max, OuterRef
from django.utils import timezone

from common.fileio import clean_name, file_sha256

from . import labelfiles, priority, sql, stopping
from .selectors import task_judged_sequences
from .models import (
    NO_INTENT,
    JudgingItem,
    JudgingSlot,
    JudgingTask,
    JudgmentSet,
    Label,
    TaskAssessor,
    TaskTopic,
)

LABEL_BATCH = 5000
MAX_REDUNDANCY = 50

SCALES: dict[str, list[dict]] = {
    "trec-web": [
        {"value": -2, "label": "junk", "key": "j"},
        {"value": 0, "label": "not relevant", "key": "0"},
        {"value": 1, "label": "relevant", "key": "1"},
        {"value": 2, "label": "highly relevant", "key": "2"},
        {"value": 3, "label": "key", "key": "3"},
        {"value": 4, "label": "navigational", "key": "4"},
    ],
    "binary": [
        {"value": 0, "label": "not relevant", "key": "0"},
        {"value": 1, "label": "relevant", "key": "1"},
    ],
    "graded3": [
        {"value": 0, "label": "not relevant", "key": "0"},
        {"value": 1, "label": "relevant", "key": "1"},
        {"value": 2, "label": "highly relevant", "key": "2"},
    ],
}


class QueueError(ValueError):
    """A request the queue refuses (not an assessor of the task, item not theirs, …)."""


class LeaseLost(QueueError):
    """The assessor's lease on the item expired and its slots went to other assessors."""


# --- imports ------------------------------------------------------------------------------


def judgments_import(path, *, format: str, name: str, topic_set_name: str | None = None,
                     assessor: str = "nist") -> JudgmentSet:
    """A judgment file (see :mod:`judging.labelfiles`) as a new judgment set.

    All or nothing: the whole file is read and checked before anything is stored; the first
    bad line raises :class:`common.fileio.InputError` naming the file and line. With
    ``topic_set_name`` every topic must be a topic of that set (and every intent one of
    its intents). A repeated label by the same assessor is a later revision.
    """
    name = clean_name(name, "judgment set name")
    if JudgmentSet.objects.filter(name=name).exists():
        raise ValueError(f"a judgment set named {name!r} already exists")
    path = Path(path)
    records = list(labelfiles.read_labels(path, format, assessor=assessor))
    if not records:
        raise ValueError(f"{path}: no judgments found")
    topic_set = None
    if topic_set_name is not None:
        from topics.selectors import topic_list, topic_set_get

        topic_set = topic_set_get(topic_set_name)
        intents = {t.topic_id: {i.intent_id for i in t.intents.all()}
                   for t in topic_list(topic_set_name)}
        for r in records:
            if r.topic_id not in intents:
                raise ValueError(f"{path}, line {r.line}: topic {r.topic_id!r} is not in topic "
                                 f"set {topic_set_name!r}")
            if r.intent_id and r.intent_id not in intents[r.topic_id]:
                raise ValueError(f"{path}, line {r.line}: topic {r.topic_id!r} of topic set "
                                 f"{topic_set_name!r} has no intent {r.intent_id!r}")
    # revisions: the n-th label of one key by one assessor is revision n; the last counts
    count: dict[tuple, int] = {}
    for r in records:
        key = (r.topic_id, r.intent_id, r.docid, r.assessor)
        count[key] = count.get(key, 0) + 1
    seen: dict[tuple, int] = {}
    now = timezone.now()
    checksum = file_sha256(path)
    with transaction.atomic():
        jset = JudgmentSet.objects.create(
            name=name, source=JudgmentSet.SOURCE_IMPORT, topic_set=topic_set, format=format,
            source_file=path.name, checksum=checksum, labels_count=len(records))

        def rows():
            for r in records:
                key = (r.topic_id, r.intent_id, r.docid, r.assessor)
                rev = seen[key] = seen.get(key, 0) + 1
                yield (jset.pk, r.topic_id, r.intent_id, r.docid, r.assessor, r.grade, "", "",
                       now, rev, rev == count[key], False, r.line, False)

        _rows_insert(Label, ("judgment_set", "topic_id", "intent_id", "docid", "assessor",
                             "grade", "cannot_judge", "rationale", "created", "revision",
                             "current", "withdrawn", "line", "simulated"), rows())
    return jset


def _rows_insert(model, fields: tuple[str, ...], rows: Iterable[tuple]) -> None:
    """Insert many rows (values in ``fields`` order; foreign keys as ids). PostgreSQL:
    one COPY (Django's ``bulk_create`` builds an object and parameters per row, ~10x
    slower); elsewhere ``bulk_create`` in batches."""
    columns = [model._meta.get_field(f).column for f in fields]
    if connection.vendor != "postgresql":
        batch = []
        for row in rows:
            batch.append(model(**dict(zip(columns, row))))
            if len(batch) >= LABEL_BATCH:
                model.objects.bulk_create(batch)
                batch = []
        model.objects.bulk_create(batch)
        return
    ops = connection.ops
    sql = (f"COPY {ops.quote_name(model._meta.db_table)} "
           f"({', '.join(ops.quote_name(c) for c in columns)}) FROM STDIN")
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def judgment_set_delete(jset: JudgmentSet) -> None:
    if hasattr(jset, "task"):
        raise ValueError(f"judgment set {jset.name!r} belongs to judging task "
                         f"{jset.task.name!r}; delete the task first")
    with transaction.atomic():
        jset.delete()


# --- tasks --------------------------------------------------------------------------------


def scale_grades(scale: str, custom: str | None = None) -> list[dict]:
    """The grades of a named scale, or of ``custom`` = ``"value:label:key,…"`` (scale
    ``custom``). Values and keys must be unique; keys are single characters."""
    if scale != "custom":
        if custom:
            raise ValueError("--grades is only for --scale custom")
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(SCALES)} or custom, not {scale!r}")
        return [dict(g) for g in SCALES[scale]]
    if not custom:
        raise ValueError("a custom scale needs its grades: value:label:key,… "
                         "(e.g. '0:not relevant:n,1:relevant:r')")
    grades, values, keys = [], set(), set()
    for n, part in enumerate(custom.split(","), 1):
        bits = part.split(":")
        if len(bits) != 3:
            raise ValueError(f"grade {n} ({part!r}) must be value:label:key")
        value_s, label, key = (b.strip() for b in bits)
        try:
            value = int(value_s)
        except ValueError:
            raise ValueError(f"grade {n}: value {value_s!r} is not a whole number") from None
        if not -32768 <= value <= 32767:
            raise ValueError(f"grade {n}: value {value} is out of range")
        if not label:
            raise ValueError(f"grade {n}: empty label")
        if len(key) != 1 or key.isspace():
            raise ValueError(f"grade {n}: key {key!r} must be one character")
        if value in values or key in keys:
            raise ValueError(f"grade {n}: value {value} or key {key!r} is used twice")
        values.add(value)
        keys.add(key)
        grades.append({"value": value, "label": label, "key": key})
    if len(grades) < 2:
        raise ValueError("a scale needs at least two grades")
    return grades


def judging_task_create(
    *,
    pool,
    name: str,
    mode: str = JudgingTask.MODE_INTENT,
    scale: str = "trec-web",
    custom_grades: str | None = None,
    redundancy: int | None = None,
    order: str = JudgingTask.ORDER_POOL,
    batch: int = 10,
    lease_minutes: int = 30,
    assessors: Iterable[str] = (),
    per_topic: int | None = None,
    stop_rule: str = "",
) -> JudgingTask:
    """A judging task over a finished pool, with its judgment set (same name), one item per
    pooled document (the first ``per_topic`` of each topic when given; required in user
    mode) and ``redundancy`` slots per item (default 1).

    ``intent`` mode needs every topic to have intents (imported with the topics);
    ``topic`` mode grades each document once against the topic statement. ``user`` mode
    grades against the statement a worker wrote a query for: only the topic's workers
    (variant worker ids; a signed-in account's ``account:`` prefix is dropped, as the
    judging pages know it by its user name) may lease its items, and every one of them
    judges the same ``per_topic`` documents: a topic's items get one slot per worker of
    the topic, and ``redundancy`` (leave it out, or 0) is set to the largest number of
    workers of a topic. ``stop_rule`` (:func:`judging.stopping.parse_rule`; empty: none)
    stops a topic when it fires (:func:`topic_stop_check`).
    """
    from crowd.services import ACCOUNT_PREFIX
    from pooling.selectors import pool_documents
    from topics.selectors import topic_list

    name = clean_name(name, "task name")
    modes = [m for m, _ in JudgingTask.MODE_CHOICES]
    if mode not in modes:
        raise ValueError(f"mode must be one of {', '.join(modes)}, not {mode!r}")
    orders = [o for o, _ in JudgingTask.ORDER_CHOICES]
    if order not in orders:
        raise ValueError(f"order must be one of {', '.join(orders)}, not {order!r}")
    grades = scale_grades(scale, custom_grades)
    for value, what, low in ((batch, "batch", 1), (lease_minutes, "lease minutes", 1)):
        if int(value) < low:
            raise ValueError(f"{what} must be at least {low}")
    if per_topic is not None and per_topic < 1:
        raise ValueError("per-topic must be at least 1")
    stop_rule = str(stopping.parse_rule(stop_rule)) if stop_rule else ""
    if mode == JudgingTask.MODE_USER and per_topic is None:
        raise ValueError("user mode needs --per-topic N: every user of a topic judges its first N")
    assessors = sorted({clean_name(a.strip(), "assessor") for a in assessors if a.strip()})
    if JudgingTask.objects.filter(name=name).exists() or JudgmentSet.objects.filter(
            name=name).exists():
        raise ValueError(f"a judging task or judgment set named {name!r} already exists")
    if pool.status != "done":
        raise ValueError(f"pool {pool.label} is {pool.status}, not done; build it first")

    topics = {t.topic_id: t for t in topic_list(pool.topic_set.name)}
    docs_by_topic: dict[str, list[str]] = {}
    for d in pool_documents(pool):
        docs = docs_by_topic.setdefault(d.topic_id, [])
        if per_topic is None or len(docs) < per_topic:
            docs.append(d.docid)
    if not docs_by_topic:
        raise ValueError(f"pool {pool.label} has no documents")
    intents: dict[str, list[str]] = {}
    users: dict[str, list[str]] = {}
    for topic_id in docs_by_topic:
        topic = topics.get(topic_id)
        if mode == JudgingTask.MODE_INTENT:
            ids = [i.intent_id for i in topic.intents.all()] if topic else []
            if not ids:
                raise ValueError(f"topic {topic_id} has no intents; import the topics with "
                                 "their intents, or use --mode topic")
            intents[topic_id] = ids
        else:
            intents[topic_id] = [NO_INTENT]
        if mode == JudgingTask.MODE_USER:
            users[topic_id] = sorted({v.worker_id.removeprefix(ACCOUNT_PREFIX)
                                      for v in topic.variants.all() if v.worker_id}
                                     if topic else set())
    if mode == JudgingTask.MODE_USER:
        if not any(users.values()):
            raise ValueError("user mode needs query variants with worker ids; none found")
        if redundancy not in (None, 0):
            raise ValueError("user mode: every writer of a topic judges its documents; "
                             "leave the redundancy out")
        redundancy = max(len(u) for u in users.values())
    redundancy = 1 if redundancy is None else int(redundancy)
    if not 1 <= redundancy <= MAX_REDUNDANCY:
        raise ValueError(f"redundancy must be between 1 and {MAX_REDUNDANCY}")

    rankings = _task_rankings(pool, docs_by_topic) if order in priority.ADAPTIVE_ORDERS else {}
    with transaction.atomic():
        jset = JudgmentSet.objects.create(name=name, source=JudgmentSet.SOURCE_TASK,
                                          topic_set=pool.topic_set, format=mode)
        task = JudgingTask.objects.create(
            name=name, pool=pool, judgment_set=jset, mode=mode, scale=scale,
            scale_grades=grades, redundancy=redundancy, order=order, batch=batch,
            lease_minutes=lease_minutes, per_topic=per_topic, assessors=assessors,
            stop_rule=stop_rule, items_count=sum(len(d) for d in docs_by_topic.values()))
        for topic_id, docs in docs_by_topic.items():
            ranks, offsets = rankings.get(topic_id, ([], [0]))
            TaskTopic.objects.create(
                task=task, topic_id=topic_id, size=len(docs), intents=intents[topic_id],
                users=users.get(topic_id, []),
                rankings=np.asarray(ranks, dtype="<i4").tobytes(),
                offsets=np.asarray(offsets, dtype="<i4").tobytes())
        _rows_insert(JudgingItem, ("task", "topic_id", "docid", "position"), (
            (task.pk, topic_id, docid, pos)
            for topic_id, docs in docs_by_topic.items() for pos, docid in enumerate(docs, 1)))
        _slots_create(task, redundancy, users if mode == JudgingTask.MODE_USER else None)
    return task


def _slots_create(task: JudgingTask, k: int, users: dict[str, list[str]] | None = None
                  ) -> None:
    """K free slots per item, in one INSERT … SELECT (no Python loop over items). With
    ``users`` (user mode), a topic's items get one slot per user of the topic: a topic
    with fewer users than K has no slot that no one may take."""
    numbers = " UNION ALL ".join(f"SELECT {n} AS n" for n in range(k))
    sql.update(
        f"INSERT INTO {sql.SLOT} (task_id, item_id, topic_id, position, slot_no, state) "
        f"SELECT i.task_id, i.id, i.topic_id, i.position, k.n, %s "
        f"FROM {sql.ITEM} i CROSS JOIN ({numbers}) k WHERE i.task_id = %s",
        [JudgingSlot.FREE, task.pk])
    fewer: dict[int, list[str]] = {}
    for topic_id, who in (users or {}).items():
        if len(who) < k:
            fewer.setdefault(len(who), []).append(topic_id)
    for n, topic_ids in sorted(fewer.items()):
        for start in range(0, len(topic_ids), 500):
            part = topic_ids[start:start + 500]
            sql.update(f"DELETE FROM {sql.SLOT} WHERE task_id = %s AND slot_no >= %s "
                       f"AND topic_id IN ({sql.placeholders(part)})", [task.pk, n, *part])


def _task_rankings(pool, docs_by_topic: dict[str, list[str]]):
    """``{topic: (concatenated 0-based item positions, offsets)}`` of the contributing
    rankings, each cut at the pool depth and kept to the task's documents."""
    from .selectors import pool_contributing_rankings

    out = {}
    for topic_id, rankings in pool_contributing_rankings(pool).items():
        n = len(docs_by_topic.get(topic_id, ()))
        if not n:
            continue
        kept = [r[r < n] for r in rankings]
        offsets = np.concatenate([[0], np.cumsum([len(r) for r in kept])]).astype(np.int64)
        flat = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        out[topic_id] = (flat, offsets)
    return out


# --- the queue ----------------------------------------------------------------------------


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


def _check_assessor(task: JudgingTask, assessor: str) -> str:
    if not assessor or not str(assessor).strip():
        raise QueueError("an assessor name is required")
    if task.assessors and assessor not in task.assessors:
        raise QueueError(f"{assessor!r} is not an assessor of task {task.name!r}")
    return assessor


def _locked_assessor(task: JudgingTask, assessor: str) -> TaskAssessor:
    """The assessor's row, created on first use, locked until the transaction ends."""
    query = (f"SELECT id, topic_id, finished_topics FROM {sql.ASSESSOR} "
             f"WHERE task_id = %s AND assessor = %s{sql.lock()}")
    rows = sql.rows(query, [task.pk, assessor])
    if not rows:
        try:
            with transaction.atomic():
                TaskAssessor.objects.create(task=task, assessor=assessor)
        except IntegrityError:
            pass  # created concurrently by another request of the same assessor
        rows = sql.rows(query, [task.pk, assessor])
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
    ids = [r[0] for r in sql.rows(
        f"SELECT id FROM {sql.SLOT} WHERE task_id = %s AND state = %s AND lease_expires < %s"
        f"{sql.lock(skip_locked=True)}", [task.pk, JudgingSlot.LEASED, sql.db_time(now)])]
    if not ids:
        return 0
    return JudgingSlot.objects.filter(id__in=ids, state=JudgingSlot.LEASED).update(
        state=JudgingSlot.FREE, assessor=None, leased_at=None, lease_expires=None)


def leases_release(task: JudgingTask, assessor: str, *, leave_topic: bool = False) -> int:
    """Return the assessor's leased items to the queue now (they stop judging); the number
    released. With ``leave_topic`` the assessor also leaves the topic they were on, so
    their next batch comes from a topic they have not finished."""
    with transaction.atomic():
        ta = _locked_assessor(task, assessor)
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
    rows = sql.rows(
        f"SELECT s.id, s.item_id, s.topic_id, i.docid, s.position, t.intents, "
        f"s.lease_expires FROM {sql.SLOT} s JOIN {sql.ITEM} i ON i.id = s.item_id "
        f"LEFT JOIN {sql.TOPIC} t ON t.task_id = s.task_id AND t.topic_id = s.topic_id "
        f"WHERE s.task_id = %s AND {where} "
        f"ORDER BY s.topic_id, s.leased_at, s.position, s.id", [task.pk, *params])
    return [LeasedItem(sid, i, t, d, p, tuple(sql.loads_json(n) or [NO_INTENT]),
                       sql.py_time(e)) for sid, i, t, d, p, n, e in rows]


def batch_lease(task: JudgingTask, assessor: str, *, now: datetime | None = None
                ) -> list[LeasedItem]:
    """The assessor's batch (see the module docstring). The assessor stays on one topic
    until it has nothing left for them, then moves to the topic with the fewest assessors
    working on it (ties by topic id), topics they have not finished first."""
    _check_assessor(task, assessor)
    now = now or timezone.now()
    with transaction.atomic():
        _expire(task, now)
        ta = _locked_assessor(task, assessor)
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
    of a topic the task's stopping rule stopped."""
    want = task.batch
    if task.stop_rule and TaskTopic.objects.filter(
            task=task, topic_id=topic, stopped_at__isnull=False).exists():
        return []
    if task.order in priority.ADAPTIVE_ORDERS:
        chosen = _pick_adaptive(task, topic, assessor, want)
    else:
        # free slots in priority order, on items the assessor holds no slot of: NOT IN
        # their items of the topic (read once, hashed), not NOT EXISTS per slot, which
        # PostgreSQL ran as a loop over every held slot (28 ms a claim at 1M items)
        rows = sql.rows(
            f"SELECT id, item_id FROM {sql.SLOT} WHERE task_id = %s AND topic_id = %s "
            f"AND state = %s AND item_id NOT IN (SELECT item_id FROM {sql.SLOT} "
            f"WHERE task_id = %s AND assessor = %s AND topic_id = %s) "
            f"ORDER BY position, slot_no LIMIT %s{sql.lock(skip_locked=True)}",
            [task.pk, topic, JudgingSlot.FREE, task.pk, assessor, topic,
             want * task.redundancy])
        chosen = _first_per_item(rows, want)
    if not chosen:
        return []
    updated = sql.update(
        f"UPDATE {sql.SLOT} SET state = %s, assessor = %s, leased_at = %s, "
        f"lease_expires = %s WHERE state = %s AND id IN ({sql.placeholders(chosen)})",
        [JudgingSlot.LEASED, assessor, sql.db_time(now),
         sql.db_time(now + timedelta(minutes=task.lease_minutes)), JudgingSlot.FREE, *chosen])
    if updated != len(chosen):  # only possible without row locks; the caller may retry
        raise QueueError("the queue changed while leasing; ask again")
    return chosen


def _first_per_item(rows, want: int) -> list[int]:
    chosen, items = [], set()
    for slot_id, item_id in rows:
        if item_id not in items:
            items.add(item_id)
            chosen.append(slot_id)
            if len(chosen) >= want:
                break
    return chosen


class _TopicReplay:
    """One topic's adaptive order kept between leases in this process: its contributing
    rankings (fixed when the task is made), the votes of the labels read so far and the
    replay (:class:`priority.AdaptiveReplay`) at its frontier.

    Every lease reads, in one statement, the topic's labels with an id above the last one
    read and the topic's count of labels and of withdrawn ones. Labels are only ever added
    (a submit or a revision) or withdrawn (an undo), so when the count grew by exactly the
    rows read and none was withdrawn, the new rows are all that changed: each
    (item, assessor) among them has its latest submit there, and that replaces its vote.
    Otherwise (an undo anywhere, or a label whose transaction committed after a higher id
    was read) the topic's labels are read again from scratch. Judgments made by any
    process are therefore seen at the next lease; the cache only saves work."""

    def __init__(self, order: str, rankings: list, n_items: int):
        self.replay = priority.AdaptiveReplay(order, rankings, n_items)
        self._reset()

    def _reset(self) -> None:
        self.last_id, self.total, self.withdrawn = 0, 0, 0
        self.votes: dict[int, dict[str, bool]] = {}
        self.known: dict[int, bool] = {}

    def sync(self, task: JudgingTask, topic: str, *, again: bool = False) -> set[int] | None:
        """Bring the votes up to date; the items whose relevance changed (None: all
        labels were read again). ``again``: read them all again."""
        if again:
            self._reset()
        rows = self._read(task, topic)
        withdrawn, total = (rows[-1][0] or 0), rows[-1][1]
        rows = rows[:-1]
        full = again or self.last_id == 0
        if total != self.total + len(rows) or withdrawn != self.withdrawn:
            if not full:  # something besides new labels: read them all again
                return self.sync(task, topic, again=True)
            full = True
        latest: dict[tuple[int, str], list[int]] = {}
        touched: set[tuple[int, str]] = set()
        for label_id, pos, assessor, grade, current, _ in rows:
            self.last_id = max(self.last_id, label_id)
            if pos is None:
                continue
            touched.add((pos - 1, assessor))
            if current:
                latest.setdefault((pos - 1, assessor), []).append(grade)
        if not full and touched - latest.keys():  # not without an undo; to be safe
            return self.sync(task, topic, again=True)
        self.total, self.withdrawn = total, withdrawn
        changed = set()
        for item, assessor in touched:
            grades = [g for g in latest.get((item, assessor), ()) if g is not None]
            votes = self.votes.setdefault(item, {})
            if grades:
                votes[assessor] = any(g > 0 for g in grades)
            else:  # cannot judge: no vote
                votes.pop(assessor, None)
            rel = 2 * sum(votes.values()) >= len(votes) if votes else None
            if not votes:
                del self.votes[item]
            if self.known.get(item) != rel:
                changed.add(item)
                if rel is None:
                    del self.known[item]
                else:
                    self.known[item] = rel
        return None if full else changed

    def _read(self, task: JudgingTask, topic: str) -> list[tuple]:
        """The labels above ``last_id`` (id, item position, assessor, grade, current),
        then (withdrawn count, count, ...) over all the topic's labels; one statement, so
        one snapshot."""
        return sql.rows(
            f"SELECT l.id, i.position, l.assessor, l.grade, l.current, 0 AS agg "
            f"FROM {sql.LABEL} l LEFT JOIN {sql.ITEM} i ON i.id = l.item_id "
            f"WHERE l.judgment_set_id = %s AND l.topic_id = %s AND l.id > %s "
            f"UNION ALL SELECT SUM(CASE WHEN withdrawn THEN 1 ELSE 0 END), COUNT(*), "
            f"NULL, NULL, NULL, 1 FROM {sql.LABEL} WHERE judgment_set_id = %s AND topic_id = %s "
            f"ORDER BY agg",
            [task.judgment_set_id, topic, self.last_id, task.judgment_set_id, topic])


#: Topics whose adaptive order this process keeps (least recently used dropped first).
ADAPTIVE_CACHE_TOPICS = 32
_adaptive_cache: OrderedDict[tuple, _TopicReplay] = OrderedDict()
_adaptive_lock = threading.Lock()


def _topic_replay(task: JudgingTask, topic: str) -> _TopicReplay:
    """The topic's cached replay, made (rankings read and decoded) on first use. Keyed by
    the task's id, creation time and order and the topic: a task's rankings never change
    once it is made."""
    key = (task.pk, task.created, task.order, topic)
    entry = _adaptive_cache.get(key)
    if entry is not None:
        _adaptive_cache.move_to_end(key)
        return entry
    tt = TaskTopic.objects.only("size", "rankings", "offsets").get(task=task, topic_id=topic)
    ranks = np.frombuffer(bytes(tt.rankings), dtype="<i4")
    offsets = np.frombuffer(bytes(tt.offsets), dtype="<i4")
    rankings = [ranks[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]
    entry = _adaptive_cache[key] = _TopicReplay(task.order, rankings, tt.size)
    while len(_adaptive_cache) > ADAPTIVE_CACHE_TOPICS:
        _adaptive_cache.popitem(last=False)
    return entry


def _pick_adaptive(task: JudgingTask, topic: str, assessor: str, want: int) -> list[int]:
    with _adaptive_lock:  # threads of one process share the cache
        entry = _topic_replay(task, topic)
        changed = entry.sync(task, topic)
        order = entry.replay.items(dict(entry.known), changed)
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


# --- judgments ----------------------------------------------------------------------------


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
    _check_assessor(task, assessor)
    if not submit_key or len(submit_key) > 100:
        raise QueueError("a submit key (1 to 100 characters) is required")
    if seconds is not None and (not math.isfinite(seconds) or seconds < 0):
        raise QueueError("seconds must be a non-negative number")
    now = now or timezone.now()
    with transaction.atomic():
        _locked_assessor(task, assessor)
        # one query: the item, its topic's intents (and users), the submit key's first
        # use, the assessor's slot of the item and their latest revision of it
        row = sql.rows(
            f"SELECT i.topic_id, i.docid, t.intents, t.users, "
            f"(SELECT l.item_id FROM {sql.LABEL} l WHERE l.judgment_set_id = %s "
            f" AND l.submit_key = %s ORDER BY l.id LIMIT 1), "
            f"(SELECT l.assessor FROM {sql.LABEL} l WHERE l.judgment_set_id = %s "
            f" AND l.submit_key = %s ORDER BY l.id LIMIT 1), "
            f"(SELECT s.state FROM {sql.SLOT} s WHERE s.item_id = i.id AND s.assessor = %s), "
            f"(SELECT max(l.revision) FROM {sql.LABEL} l WHERE l.item_id = i.id "
            f" AND l.assessor = %s) "
            f"FROM {sql.ITEM} i LEFT JOIN {sql.TOPIC} t ON t.task_id = i.task_id "
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
        values = _checked_grades(task, intents, grades, cannot_judge)
        completes = False
        if slot_state == JudgingSlot.DONE:  # a revision (a leased slot has no current label)
            sql.update(f"UPDATE {sql.LABEL} SET current = %s WHERE item_id = %s "
                       f"AND assessor = %s AND current = %s", [False, item_id, assessor, True])
        else:
            # the assessor's lease, unless it expired and went back to the queue meanwhile
            completes = slot_state == JudgingSlot.LEASED and sql.update(
                f"UPDATE {sql.SLOT} SET state = %s, done_at = %s WHERE item_id = %s "
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
            _done_count(task, topic_id, +1)
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


def _done_count(task: JudgingTask, topic_id: str, delta: int) -> None:
    """Keep the topic's count of done slots (in the caller's transaction)."""
    sql.update(f"UPDATE {sql.TOPIC} SET slots_done = slots_done + %s WHERE task_id = %s "
            f"AND topic_id = %s", [delta, task.pk, topic_id])


def _checked_grades(task, intents, grades, cannot_judge) -> list[tuple[str, int | None]]:
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
    _check_assessor(task, assessor)
    now = now or timezone.now()
    with transaction.atomic():
        _locked_assessor(task, assessor)
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
            _done_count(task, current[0].topic_id, -1)
        return []


# --- pages: the document collection; publishing a task to crowd workers ----------------------


# --- stopping -------------------------------------------------------------------------------


def topic_stop_check(task: JudgingTask, topic_id: str, *, now: datetime | None = None
                     ) -> bool:
    """Apply the task's stopping rule to the topic's judgments so far (in the order they
    were made); when it fires, mark the topic stopped (the queue then hands out none of
    its items) with a note of what the rule saw. A topic the organiser resumed is left
    alone. Whether the topic is stopped now. Called by :func:`judgment_submit` in its
    transaction, so the judgment and the stop commit together."""
    if not task.stop_rule:
        return False
    rule = stopping.parse_rule(task.stop_rule)
    with transaction.atomic():
        row = (TaskTopic.objects.select_for_update().filter(task=task, topic_id=topic_id)
               .values_list("size", "stopped_at", "resumed").first())
        if row is None:
            raise ValueError(f"task {task.name!r} has no topic {topic_id!r}")
        size, stopped_at, resumed = row
        if stopped_at is not None or resumed:
            return stopped_at is not None
        seq = task_judged_sequences(task, topic_id).get(topic_id, [])
        if not stopping.fires(rule, seq, size):
            return False
        note = f"{rule}: {sum(seq)} relevant in {len(seq)} of {size} judged"
        TaskTopic.objects.filter(task=task, topic_id=topic_id, stopped_at__isnull=True).update(
            stopped_at=now or timezone.now(), stop_note=note[:200])
        return True


def judging_task_stop_rule_set(task: JudgingTask, rule: str) -> JudgingTask:
    """Set (``""``: clear) the task's stopping rule; each topic is checked against the new
    rule at its next judgment. Clearing it lets the queue hand out stopped topics again."""
    rule = str(stopping.parse_rule(rule)) if rule.strip() else ""
    with transaction.atomic():
        JudgingTask.objects.filter(pk=task.pk).update(stop_rule=rule)
        if rule != task.stop_rule:  # a new rule: the stops and resumptions of the old go
            TaskTopic.objects.filter(task=task).update(stopped_at=None, stop_note="",
                                                       resumed=False)
    task.stop_rule = rule
    return task


def topic_resume(task: JudgingTask, topic_id: str) -> None:
    """The organiser goes on judging a stopped topic: the queue hands out its items again
    and the rule no longer applies to it."""
    if not TaskTopic.objects.filter(task=task, topic_id=topic_id).update(
            stopped_at=None, resumed=True):
        raise ValueError(f"task {task.name!r} has no topic {topic_id!r}")


def judging_task_collection_set(task: JudgingTask, collection_name: str) -> JudgingTask:
    """Read the task's documents from this collection (a pool built from imported runs
    names none)."""
    from retrieval.selectors import collection_get

    collection = collection_get(collection_name)
    with transaction.atomic():
        JudgingTask.objects.filter(pk=task.pk).update(collection=collection)
    task.collection = collection
    return task


def judging_task_publish(task: JudgingTask, *, completion_code: str, consent_text: str,
                         judgments: int, gold_set: JudgmentSet | None = None,
                         gold_rate: float = 0.0, gold_min_accuracy: float = 0.7,
                         title: str = "", prolific_study_id: str = "",
                         mturk_hit_ids: str = "") -> JudgingTask:
    """Open the task to crowd workers like a study: a crowd study (``crowd.Study``) gives
    the public link, the worker identity (Prolific/MTurk parameters, placeholder refusal,
    one browser per worker), the consent text and the completion code, which a worker gets
    after ``judgments`` judgments with gold accuracy at least ``gold_min_accuracy``. Gold
    items (documents graded in ``gold_set``) make up ``gold_rate`` of the pages. The study
    hands out no statements of its own. Workers judge as ``platform:worker id``."""
    from crowd.services import study_create

    from .selectors import gold_items

    if task.study_id is not None:
        raise ValueError(f"task {task.name!r} is already published")
    if task.mode == JudgingTask.MODE_USER:
        raise ValueError("user-mode tasks are judged by the workers who wrote the queries; "
                         "publish an intent- or topic-mode task")
    if task.assessors:
        raise ValueError(f"task {task.name!r} lists its assessors; crowd workers could not "
                         "judge it (create the task without --assessors)")
    if int(judgments) < 1:
        raise ValueError("judgments (the number a worker makes for the code) must be at least 1")
    if not 0 <= float(gold_rate) < 1:
        raise ValueError("the gold rate must be at least 0 and below 1")
    if not 0 <= float(gold_min_accuracy) <= 1:
        raise ValueError("the gold accuracy needed must be between 0 and 1")
    if gold_rate and gold_set is None:
        raise ValueError("a gold rate needs a gold judgment set")
    with transaction.atomic():
        study = study_create(
            topic_set=task.pool.topic_set, name=f"judging: {task.name}", title=title,
            consent_text=consent_text, completion_code=completion_code,
            prolific_study_id=prolific_study_id, mturk_hit_ids=mturk_hit_ids,
            statements_per_worker=0, responses_per_statement=0)
        task.study = study
        task.gold_set = gold_set
        task.gold_rate = float(gold_rate)
        task.gold_min_accuracy = float(gold_min_accuracy)
        task.crowd_judgments = int(judgments)
        task.save(update_fields=["study", "gold_set", "gold_rate", "gold_min_accuracy",
                                 "crowd_judgments"])
        if gold_set is not None and not gold_items(task):
            raise ValueError(f"judgment set {gold_set.name!r} grades no document of the "
                             "task's topics (for the intents the task grades)")
    return task


def gold_answer_submit(task: JudgingTask, assessor: str, *, topic_id: str, docid: str,
                       grades: Mapping[str, int | None], submit_key: str,
                       seconds: float | None = None, cannot_judge: str = "",
                       now: datetime | None = None):
    """Record a crowd worker's answer to a gold item (apart from the task's labels);
    idempotent per ``submit_key``, and one answer per worker and document (a repeat
    returns the first)."""
    from .models import GoldAnswer
    from .selectors import gold_items, gold_passed

    _check_assessor(task, assessor)
    if not submit_key or len(submit_key) > 100:
        raise QueueError("a submit key (1 to 100 characters) is required")
    gold = {(g.topic_id, g.docid): g for g in gold_items(task)}.get((topic_id, docid))
    if gold is None:
        raise QueueError(f"document {docid} of topic {topic_id} is not a gold item of the task")
    intents = TaskTopic.objects.get(task=task, topic_id=topic_id).intents
    values = dict(_checked_grades(task, intents, grades, cannot_judge))
    with transaction.atomic():
        done = GoldAnswer.objects.filter(task=task, submit_key=submit_key).first() or \
            GoldAnswer.objects.filter(task=task, assessor=assessor, topic_id=topic_id,
                                      docid=docid).first()
        if done is not None:
            if done.assessor != assessor:
                raise QueueError("this submit key was used by another assessor")
            return done
        try:
            with transaction.atomic():
                return GoldAnswer.objects.create(
                    task=task, assessor=assessor, topic_id=topic_id, docid=docid,
                    grades=values, expected=gold.expected, cannot_judge=cannot_judge,
                    passed=not cannot_judge and gold_passed(gold.expected, values),
                    seconds=seconds, submit_key=submit_key, created=now or timezone.now())
        except IntegrityError:  # the same answer posted twice at once
            return GoldAnswer.objects.get(task=task, assessor=assessor, topic_id=topic_id,
                                          docid=docid)
