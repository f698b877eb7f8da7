"""Judging tasks: the scales, and a task over a pool with its items and K slots per item."""
from __future__ import annotations

from typing import Iterable

import numpy as np
from django.db import transaction

from common.fileio import clean_name

from common import sql
from ..models import ITEM_TABLE, SLOT_TABLE
from .. import learned, priority, stopping
from ..models import NO_INTENT, JudgingItem, JudgingSlot, JudgingTask, JudgmentSet, TaskTopic
from .imports import rows_insert
from .refits import refits_create
from .sample_mode import drawn_in_order, sample_design_save, sample_draw

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
    sample_strata: str | None = None,
    sample_budget: str | int | None = None,
    sample_seed: int = 0,
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

    ``sample`` mode (:mod:`.sample_mode`) judges, against the topic statement, a
    stratified random sample of each topic's pool (``sample_strata``, e.g.
    ``depth:10,20,50``; ``sample_budget``, documents per topic or a share such as
    ``20%``; ``sample_seed``) in a random order, and keeps the design with the judgment
    set so that the measures can be estimated (``evaluate --estimator``). It takes the
    pool order (the items are numbered in the sample's random order) and no stopping
    rule or per-topic cut.
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
    sampled = mode == JudgingTask.MODE_SAMPLE
    if sampled:
        if sample_budget in (None, ""):
            raise ValueError("sample mode needs a budget per topic: documents (e.g. 60) or a "
                             "share of each topic's pool (e.g. 20%)")
        if order != JudgingTask.ORDER_POOL or stop_rule or per_topic is not None:
            raise ValueError("sample mode judges its sample in a random order to the end: no "
                             "other order, stopping rule or per-topic cut")
    elif sample_budget not in (None, "") or sample_strata:
        raise ValueError("strata and a sample budget are for sample mode (--mode sample)")
    assessors = sorted({clean_name(a.strip(), "assessor") for a in assessors if a.strip()})
    if JudgingTask.objects.filter(name=name).exists() or JudgmentSet.objects.filter(
            name=name).exists():
        raise ValueError(f"a judging task or judgment set named {name!r} already exists")
    if pool.status != "done":
        raise ValueError(f"pool {pool.label} is {pool.status}, not done; build it first")

    topics = {t.topic_id: t for t in topic_list(pool.topic_set.name)}
    docs_by_topic: dict[str, list[str]] = {}
    if sampled:
        units, spec, plan = sample_draw(pool, strata=sample_strata, budget=sample_budget,
                                        seed=sample_seed)
        docs_by_topic = {t: drawn_in_order(u) for t, u in units.items()}
        docs_by_topic = {t: d for t, d in docs_by_topic.items() if d}
    for d in () if sampled else pool_documents(pool):
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

    sources: dict[str, list[str]] = {}
    rankings = (_task_rankings(pool, docs_by_topic, sources)
                if order in priority.ADAPTIVE_ORDERS + learned.REFIT_ORDERS else {})
    with transaction.atomic():
        jset = JudgmentSet.objects.create(name=name, source=JudgmentSet.SOURCE_TASK,
                                          topic_set=pool.topic_set, format=mode)
        if sampled:
            sample_design_save(jset, units, spec, plan, sample_seed)
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
        rows_insert(JudgingItem, ("task", "topic_id", "docid", "position"), (
            (task.pk, topic_id, docid, pos)
            for topic_id, docs in docs_by_topic.items() for pos, docid in enumerate(docs, 1)))
        slots_create(task, redundancy, users if mode == JudgingTask.MODE_USER else None)
        if order in learned.REFIT_ORDERS:
            refits_create(task, sources)
    return task


def slots_create(task: JudgingTask, k: int, users: dict[str, list[str]] | None = None
                  ) -> None:
    """K free slots per item, in one INSERT … SELECT (no Python loop over items). With
    ``users`` (user mode), a topic's items get one slot per user of the topic: a topic
    with fewer users than K has no slot that no one may take."""
    numbers = " UNION ALL ".join(f"SELECT {n} AS n" for n in range(k))
    sql.execute(
        f"INSERT INTO {SLOT_TABLE} (task_id, item_id, topic_id, position, slot_no, state) "
        f"SELECT i.task_id, i.id, i.topic_id, i.position, k.n, %s "
        f"FROM {ITEM_TABLE} i CROSS JOIN ({numbers}) k WHERE i.task_id = %s",
        [JudgingSlot.FREE, task.pk])
    fewer: dict[int, list[str]] = {}
    for topic_id, who in (users or {}).items():
        if len(who) < k:
            fewer.setdefault(len(who), []).append(topic_id)
    for n, topic_ids in sorted(fewer.items()):
        for start in range(0, len(topic_ids), 500):
            part = topic_ids[start:start + 500]
            sql.execute(f"DELETE FROM {SLOT_TABLE} WHERE task_id = %s AND slot_no >= %s "
                       f"AND topic_id IN ({sql.placeholders(part)})", [task.pk, n, *part])


def _task_rankings(pool, docs_by_topic: dict[str, list[str]], sources: dict | None = None):
    """``{topic: (concatenated 0-based item positions, offsets)}`` of the contributing
    rankings, each cut at the pool depth and kept to the task's documents. ``sources``,
    when given, receives "user" or "system" per ranking of each topic."""
    from ..selectors import pool_contributing_rankings

    out = {}
    for topic_id, rankings in pool_contributing_rankings(pool, sources).items():
        n = len(docs_by_topic.get(topic_id, ()))
        if not n:
            continue
        kept = [r[r < n] for r in rankings]
        offsets = np.concatenate([[0], np.cumsum([len(r) for r in kept])]).astype(np.int64)
        flat = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        out[topic_id] = (flat, offsets)
    return out
