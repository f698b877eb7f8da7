"""Reads of tasks: lists and links, the relevance the queue and the stopping rule read,
progress, the pool's contributing rankings, and what the judging pages show."""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime

import numpy as np
from django.db.models import Count, Q
from django.utils import timezone

from common import sql

from ..models import (ASSESSOR_TABLE, LABEL_TABLE, SLOT_TABLE, TOPIC_TABLE,
                     JudgingSlot, JudgingTask, Label, TaskTopic, TopicRefit)


# MTurk appends the worker, HIT and assignment ids (Prolific's placeholders: the crowd's)
MTURK_QUERY = "?workerId=…&hitId=…&assignmentId=…"


def task_crowd_links(task: JudgingTask, base_url: str = "") -> dict[str, str]:
    """``{"prolific": …, "mturk": …}``: the public links of a published task, as the
    organiser's task page shows them and ``publish_judging_task`` prints them: Prolific's
    study URL (with Prolific's placeholders) and the MTurk pattern. ``base_url`` (scheme
    and host) makes them absolute; without it they are paths."""
    from django.urls import reverse

    from crowd.selectors import PROLIFIC_QUERY

    if task.study_id is None:
        raise ValueError(f"task {task.name!r} is not published")
    entry = base_url.rstrip("/") + reverse("judging:crowd_entry",
                                           kwargs={"slug": task.study.slug})
    return {"prolific": entry + PROLIFIC_QUERY, "mturk": entry + MTURK_QUERY}


def task_list(assessor: str | None = None):
    """Tasks, newest first; with ``assessor``, those open to them (an empty assessor list
    is open to anyone the pages admit)."""
    qs = JudgingTask.objects.select_related("pool", "judgment_set")
    if assessor is None:
        return qs
    return [t for t in qs if not t.assessors or assessor in t.assessors]


def task_judged_by(task: JudgingTask, assessor: str) -> bool:
    """Whether the account ``assessor`` judges the task on the assessor pages and sees it
    in the API: the task lists it, or lists no one and is not published to the crowd (a
    published task is judged by crowd workers only)."""
    if task.assessors:
        return assessor in task.assessors
    return task.study_id is None


def task_list_judged_by(assessor: str) -> list[JudgingTask]:
    """The tasks :func:`task_judged_by` admits ``assessor`` to, newest first."""
    return [t for t in task_list().select_related("collection") if task_judged_by(t, assessor)]


def task_get(name: str) -> JudgingTask:
    try:
        return (JudgingTask.objects.select_related("pool", "judgment_set", "collection")
                .get(name=name))
    except JudgingTask.DoesNotExist:
        known = ", ".join(JudgingTask.objects.values_list("name", flat=True)[:20]) or "none"
        raise ValueError(f"no judging task named {name!r} (known: {known})") from None



def topic_relevance_known(task: JudgingTask, topic_id: str) -> dict[int, bool]:
    """``{0-based item position: relevant}`` for the topic's items judged so far: an
    assessor finds the item relevant when any of its grades is above 0; the item is
    relevant when at least half of its assessors do (a tie counts as relevant)."""
    votes: dict[int, dict[str, bool]] = defaultdict(dict)
    rows = (Label.objects.filter(judgment_set_id=task.judgment_set_id, topic_id=topic_id,
                                 current=True, grade__isnull=False, item__isnull=False)
            .values_list("item__position", "assessor", "grade"))
    for pos, assessor, grade in rows:
        v = votes[pos - 1]
        v[assessor] = v.get(assessor, False) or grade > 0
    return {p: 2 * sum(v.values()) >= len(v) for p, v in votes.items()}


def task_judged_sequences(task: JudgingTask, topic_id: str | None = None
                          ) -> dict[str, list[bool]]:
    """``{topic: [relevant, …]}``: each topic's judged items in the order they were first
    judged (the id of their first label), relevant as in :func:`topic_relevance_known`
    from the current labels; items with no current grade (undone, or cannot judge) are
    left out. With ``topic_id``, that topic only. One query."""
    rows = Label.objects.filter(judgment_set_id=task.judgment_set_id, item__isnull=False)
    if topic_id is not None:
        rows = rows.filter(topic_id=topic_id)
    first: dict[int, tuple[str, int]] = {}
    votes: dict[int, dict[str, bool]] = defaultdict(dict)
    for t, item, assessor, grade, current, label_id in rows.order_by("id").values_list(
            "topic_id", "item_id", "assessor", "grade", "current", "id"):
        first.setdefault(item, (t, label_id))
        if current and grade is not None:
            v = votes[item]
            v[assessor] = v.get(assessor, False) or grade > 0
    out: dict[str, list[bool]] = defaultdict(list)
    for item, (t, _) in sorted(first.items(), key=lambda kv: kv[1][1]):
        v = votes.get(item)
        if v:
            out[t].append(2 * sum(v.values()) >= len(v))
    return dict(out)


def task_topics_stopping(task: JudgingTask) -> dict[str, dict]:
    """``{topic: {"size", "stopped_at", "stop_note", "resumed"}}`` in topic id order."""
    return {t: {"size": size, "stopped_at": at, "stop_note": note, "resumed": resumed}
            for t, size, at, note, resumed in TaskTopic.objects.filter(task=task)
            .order_by("topic_id")
            .values_list("topic_id", "size", "stopped_at", "stop_note", "resumed")}


# --- tasks: progress -------------------------------------------------------------------------


def task_progress(task: JudgingTask, topic_id: str | None = None, *,
                  now: datetime | None = None) -> dict:
    """``{"total": {...}, "topics": {topic: {...}}}`` where each entry has ``items``,
    ``slots`` (items × K; in user mode, items × the topic's users), ``done``, ``leased``
    (live leases) and ``remaining`` (free slots and expired leases); with ``topic_id``,
    that topic only (and its total).

    Two queries that never scan the task's slots: ``done`` is the topics' count of done
    slots, which the services keep in the transaction that moves a slot into or out of
    ``done``; live leases are read from the index of leased slots (at most the
    assessors' batches)."""
    now = now or timezone.now()
    one = " AND topic_id = %s" if topic_id is not None else ""
    extra = [topic_id] if topic_id is not None else []
    leased = dict(sql.fetch(
        f"SELECT topic_id, COUNT(*) FROM {SLOT_TABLE} WHERE task_id = %s AND state = %s "
        f"AND lease_expires > %s{one} GROUP BY topic_id",
        [task.pk, JudgingSlot.LEASED, sql.db_time(now), *extra]))
    user_mode = task.mode == JudgingTask.MODE_USER
    users = ", users" if user_mode else ", NULL"
    rows = sql.fetch(f"SELECT topic_id, size, slots_done{users} FROM {TOPIC_TABLE} "
                    f"WHERE task_id = %s{one} ORDER BY topic_id", [task.pk, *extra])
    topics = {}
    total = {"items": 0, "slots": 0, "done": 0, "leased": 0, "remaining": 0}
    for t, size, done, who in rows:
        # user mode: one slot per item for each of the topic's users
        slots = size * (len(sql.loads_json(who) or ()) if user_mode else task.redundancy)
        entry = {"items": size, "slots": slots, "done": done, "leased": leased.get(t, 0),
                 "remaining": slots - done - leased.get(t, 0)}
        topics[t] = entry
        for k in total:
            total[k] += entry[k]
    return {"total": total, "topics": topics}


def assessor_progress(task: JudgingTask, assessor: str, *, now: datetime | None = None,
                      pace: bool = False) -> dict:
    """``{"topic", "done", "leased", "topic_done", "topic_items", "last_item"}`` for one
    assessor: their current topic, slots done and live leases over the task and within
    that topic, and the item of their latest judgment that counts (None: none). With
    ``pace``, also their pace today (since local midnight): ``today``, documents judged for
    the first time, and ``seconds``, the mean time on page per label (a page graded for
    several intents gives each of its labels the page's time; None before the day's first
    judgment). One query, over the assessor's own slots and labels."""

    now = now or timezone.now()
    midnight = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    mine = f"SELECT COUNT(*) FROM {SLOT_TABLE} s WHERE s.task_id = a.task_id AND s.assessor = %s"
    today = (f"FROM {LABEL_TABLE} l WHERE l.judgment_set_id = %s AND l.assessor = %s "
             f"AND l.created >= %s")
    found = sql.fetch(
        f"SELECT a.topic_id, ({mine} AND s.state = %s), "
        f"({mine} AND s.state = %s AND s.lease_expires > %s), "
        f"({mine} AND s.state = %s AND s.topic_id = a.topic_id), "
        f"(SELECT t.size FROM {TOPIC_TABLE} t WHERE t.task_id = a.task_id "
        f" AND t.topic_id = a.topic_id), "
        f"(SELECT l.item_id FROM {LABEL_TABLE} l WHERE l.judgment_set_id = %s "
        f" AND l.assessor = %s AND l.current = %s AND l.item_id IS NOT NULL "
        f" ORDER BY l.id DESC LIMIT 1)"
        + (f", (SELECT COUNT(DISTINCT l.item_id) {today} AND l.revision = 1 "
           f"  AND l.withdrawn = %s), (SELECT AVG(l.seconds) {today}) " if pace else " ")
        + f"FROM {ASSESSOR_TABLE} a WHERE a.task_id = %s AND a.assessor = %s",
        [assessor, JudgingSlot.DONE, assessor, JudgingSlot.LEASED, sql.db_time(now),
         assessor, JudgingSlot.DONE, task.judgment_set_id, assessor, True,
         *([task.judgment_set_id, assessor, sql.db_time(midnight), False,
            task.judgment_set_id, assessor, sql.db_time(midnight)] if pace else []),
         task.pk, assessor])
    row = found[0] if found else None
    topic, done, leased, topic_done, topic_items, last, *today = (
        row or ("", 0, 0, 0, 0, None) + ((0, None) if pace else ()))
    out = {"topic": topic, "done": done or 0, "leased": leased or 0,
           "topic_done": (topic_done or 0) if topic else 0,
           "topic_items": topic_items or 0, "last_item": last}
    if pace:
        out["today"] = today[0] or 0
        out["seconds"] = None if today[1] is None else float(today[1])
    return out


def assessor_recent_labels(task: JudgingTask, assessor: str, limit: int = 20) -> list[dict]:
    """The assessor's latest judged items, newest first (for back/undo): ``{"item_id",
    "topic_id", "docid", "revision", "grades": {intent: grade}, "cannot_judge"}``."""
    rows = (Label.objects.filter(judgment_set_id=task.judgment_set_id, assessor=assessor,
                                 current=True, item__isnull=False)
            .order_by("-id").values_list("item_id", "topic_id", "docid", "revision",
                                         "intent_id", "grade", "cannot_judge"))
    out: dict[int, dict] = {}
    for item_id, t, d, rev, intent, grade, cj in rows[: limit * 20]:
        if item_id not in out:
            if len(out) >= limit:
                break
            out[item_id] = {"item_id": item_id, "topic_id": t, "docid": d, "revision": rev,
                            "grades": {}, "cannot_judge": cj}
        out[item_id]["grades"][intent] = grade
    return list(out.values())


# --- pools: contributing rankings ------------------------------------------------------------


def pool_contributing_rankings(pool, sources: dict | None = None
                               ) -> dict[str, list[np.ndarray]]:
    """``{topic: [0-based pool positions of one contributing ranking, …]}``: every ranking
    of the runs that built the pool (those it recorded, never a newer run), cut at the pool depth, its documents as positions in the pool's
    order (documents the pool left out, e.g. beyond an RBP budget, dropped). Rankings in
    the order pooling reads them (topic, source, run, label). ``sources``, when given,
    receives ``{topic: ["user" or "system" per ranking]}``."""
    from pooling.selectors import pool_run_ids, pool_topic_arrays, ranking_contributions

    _records, contributions, remap = ranking_contributions(
        pool.topic_set.name, pool.sources, depth=pool.depth, run_ids=pool_run_ids(pool))
    by_topic: dict[str, list] = defaultdict(list)
    for c in contributions:
        by_topic[c.topic_id].append(c.docids)
        if sources is not None:
            sources.setdefault(c.topic_id, []).append(c.source)
    out: dict[str, list[np.ndarray]] = {}
    n_dense = len(remap.vocab)
    for t in pool_topic_arrays(pool):
        position = np.full(n_dense, -1, dtype=np.int64)
        position[remap.to_dense(t.docids)] = np.arange(len(t.docids))
        rankings = []
        for dense in by_topic.get(t.topic_id, []):
            p = position[np.asarray(dense, dtype=np.int64)]
            rankings.append(p[p >= 0])
        out[t.topic_id] = rankings
    return out


# --- pages: the document, the topic, per-topic progress, organisers' statistics ------------


def pool_topic_statements(pool) -> dict[str, str]:
    """``{topic: its title, description, narrative and statements in one text}`` for the
    topics of the pool's topic set (what a learned order takes for a relevant document)."""
    from topics.models import Topic

    out = {}
    for topic in (Topic.objects.filter(topic_set_id=pool.topic_set_id)
                  .prefetch_related("statements")):
        parts = [topic.title, topic.description, topic.narrative,
                 *(s.text for s in topic.statements.all())]
        out[topic.topic_id] = "\n".join(p for p in parts if p)
    return out


def pool_document_texts(pool, docids) -> dict[str, str]:
    """``{docid: text}`` from the pool's collection file; ValueError when the pool has no
    collection (it was built from imported runs only)."""
    from retrieval.selectors import collection_texts

    if pool.collection is None:
        raise ValueError(f"pool {pool.label} has no document collection (it was built from "
                         "imported runs): the text orders need the documents' text")
    return collection_texts(pool.collection, docids)


def task_collection(task: JudgingTask):
    """The collection the task's documents are read from: the task's, else its pool's."""
    collection = task.collection or task.pool.collection
    if collection is None:
        raise ValueError(f"task {task.name!r} has no document collection: its pool was built "
                         "from imported runs; choose the collection on the task's page")
    return collection


def task_document(task: JudgingTask, docid: str):
    """The document laid out for reading (:class:`judging.docfields.ReadableDocument`:
    title, fields, paragraphs), read from the index of :func:`task_collection`."""
    from retrieval.selectors import document_raw

    from ..docfields import readable_document

    collection = task_collection(task)
    if collection.status != "ready":
        raise ValueError(f"collection {collection.name!r} is {collection.status}, not ready")
    raw = document_raw(collection, docid)
    if raw is None:
        raise ValueError(f"collection {collection.name!r} has no document {docid!r}")
    return readable_document(raw, collection.format)


def task_topic(task: JudgingTask, topic_id: str):
    """The crowd topic of a task's topic, with its intents and statements."""
    from topics.models import Topic

    topic = (Topic.objects.filter(topic_set_id=task.pool.topic_set_id, topic_id=topic_id)
             .prefetch_related("intents", "statements").first())
    if topic is None:
        raise ValueError(f"topic {topic_id!r} is not in the task's topic set")
    return topic


def topic_query_texts(task: JudgingTask, topic_id: str) -> dict[str, list[str]]:
    """``{docid: [query text, …]}`` for the documents of the rankings (among those that
    built the pool, cut at its depth) of one topic: the queries that retrieved each —
    user variants by their text, system runs by the topic's title."""
    from pooling.selectors import pool_run_ids
    from retrieval.selectors import docid_strings, ranking_records
    from topics.selectors import variant_groups

    pool = task.pool
    sources = {"users": ("user",), "systems": ("system",)}.get(pool.sources, ("user", "system"))
    by_id: dict[int, set[str]] = defaultdict(set)
    user_labels: set[str] = set()
    for r in ranking_records(pool.topic_set.name, sources=sources, topic_ids=[topic_id],
                             run_ids=pool_run_ids(pool)):
        key = r.label if r.source == "user" else "\tsystem"
        if r.source == "user":
            user_labels.add(r.label)
        for d in r.docids[: pool.depth].tolist():
            by_id[d].add(key)
    if not by_id:
        return {}
    texts = {"\tsystem": task_topic(task, topic_id).title}
    if user_labels:
        texts.update({g.label: g.normalised for g in variant_groups(pool.topic_set.name)
                      if g.topic_id == topic_id and g.label in user_labels})
    names = docid_strings(list(by_id))
    return {names[d]: sorted(texts[k] for k in keys if texts.get(k))
            for d, keys in by_id.items()}


def document_query_texts(task: JudgingTask, topic_id: str, docid: str) -> list[str]:
    """The texts of the queries that retrieved the document (see :func:`topic_query_texts`)."""
    return topic_query_texts(task, topic_id).get(docid, [])


def task_progress_held(task: JudgingTask, topic_id: str | None = None, *,
                       now: datetime | None = None) -> dict:
    """:func:`task_progress`'s ``total`` or, with ``topic_id``, that topic's entry."""
    progress = task_progress(task, topic_id, now=now)
    if topic_id is None:
        return progress["total"]
    return progress["topics"].get(topic_id, {"items": 0, "slots": 0, "done": 0,
                                             "leased": 0, "remaining": 0})


def assessor_item_labels(task: JudgingTask, assessor: str, item_id: int) -> dict | None:
    """The assessor's current labels of an item: ``{"revision", "grades": {intent: grade},
    "cannot_judge", "rationale"}``, or None when they have none (not theirs, or undone)."""
    rows = list(Label.objects.filter(judgment_set_id=task.judgment_set_id, item_id=item_id,
                                     assessor=assessor, current=True)
                .values_list("intent_id", "grade", "revision", "cannot_judge", "rationale"))
    if not rows:
        return None
    return {"revision": rows[0][2], "grades": {i: g for i, g, *_ in rows},
            "cannot_judge": rows[0][3], "rationale": rows[0][4]}


def task_item_get(task: JudgingTask, item_id: int):
    from ..models import JudgingItem

    try:
        return JudgingItem.objects.get(task=task, pk=item_id)
    except JudgingItem.DoesNotExist:
        raise ValueError(f"task {task.name!r} has no item {item_id}") from None


#: timed judgments an assessor's pace waits for, while their labels span under a minute
PACE_MIN_TIMED = 2


def task_assessor_stats(task: JudgingTask) -> list[dict]:
    """Per assessor: ``items`` judged (current labels), ``labels`` (every revision),
    ``revisions`` (labels beyond the first of an item), ``cannot_judge`` items, ``first``
    and ``last`` label times, ``median_seconds`` and ``mean_seconds`` (time on page per
    submit), and ``per_hour``: items per hour between the first and the last label once
    they are a minute apart, before that 3600 / ``mean_seconds`` once
    :data:`PACE_MIN_TIMED` submits are timed (None until then, and ``per_hour_after``
    says how many more timed judgments it waits for)."""
    import statistics

    per: dict[str, dict] = {}
    rows = (Label.objects.filter(judgment_set_id=task.judgment_set_id)
            .values_list("assessor", "item_id", "revision", "current", "seconds", "created",
                         "cannot_judge", "submit_key"))
    keys: dict[str, dict[str, float | None]] = defaultdict(dict)
    for a, item, rev, cur, sec, created, cj, key in rows.iterator(chunk_size=10000):
        s = per.setdefault(a, {"assessor": a, "items": set(), "labels": 0, "revisions": 0,
                               "cannot_judge": set(), "first": created, "last": created})
        s["labels"] += 1
        s["revisions"] += rev > 1
        if cur:
            s["items"].add(item)
            if cj:
                s["cannot_judge"].add(item)
        s["first"], s["last"] = min(s["first"], created), max(s["last"], created)
        keys[a][key or f"{item}:{rev}"] = sec
    out = []
    for a in sorted(per):
        s = per[a]
        items = len(s["items"])
        span = (s["last"] - s["first"]).total_seconds()
        secs = [v for v in keys[a].values() if v is not None]
        mean = statistics.fmean(secs) if secs else None
        if span >= 60:
            per_hour = items / (span / 3600)
        elif len(secs) >= PACE_MIN_TIMED and mean:
            per_hour = 3600 / mean
        else:
            per_hour = None
        out.append({**s, "items": items, "cannot_judge": len(s["cannot_judge"]),
                    "per_hour": per_hour,
                    "per_hour_after": 0 if per_hour is not None else PACE_MIN_TIMED - len(secs),
                    "median_seconds": statistics.median(secs) if secs else None,
                    "mean_seconds": mean})
    return out


def task_intent_stats(task: JudgingTask) -> list[dict]:
    """Per (topic, intent): documents with a current grade, and how many are above 0."""
    rows = (Label.objects.filter(judgment_set_id=task.judgment_set_id, current=True,
                                 grade__isnull=False)
            .values("topic_id", "intent_id").annotate(
                labels=Count("id"), items=Count("item_id", distinct=True),
                relevant=Count("id", filter=Q(grade__gt=0)))
            .order_by("topic_id", "intent_id"))
    return list(rows)


def task_agreement(task: JudgingTask) -> list[dict]:
    """Agreement so far between each pair of the task's assessors over the (topic, intent,
    document) units both graded (current labels with a grade); see
    :func:`judging.overlap.pairwise_agreement`."""
    from ..overlap import pairwise_agreement

    grades: dict[str, dict[tuple, int]] = defaultdict(dict)
    rows = (Label.objects.filter(judgment_set_id=task.judgment_set_id, current=True,
                                 withdrawn=False, grade__isnull=False)
            .values_list("assessor", "topic_id", "intent_id", "docid", "grade"))
    for a, t, i, d, g in rows.iterator(chunk_size=10000):
        grades[a][(t, i, d)] = g
    return pairwise_agreement(grades)


def refit_job_list() -> list[dict]:
    """The refits of learned orders (:mod:`judging.services.refits`) that are queued,
    running or failed, as jobs (a task has one per topic: the done ones, most of them,
    are left out), newest task first."""
    rows = (TopicRefit.objects.exclude(status="done")
            .select_related("task_topic__task")
            .order_by("-task_topic__task__created", "task_topic__topic_id"))
    return [{
        "id": r.id,
        "task": r.task_topic.task.name,
        "topic": r.task_topic.topic_id,
        "order": r.task_topic.task.order,
        "state": r.status,
        "fits": r.fits,
        "fitted_labels": r.fitted_labels,
        "holder": r.holder,
        "expires": r.lease_expires,
        "attempts": r.attempts,
        "error": r.error,
    } for r in rows.defer("ranking")]
