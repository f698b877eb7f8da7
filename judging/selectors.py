"""Reads of the judging app: judgment sets, qrels lines, tasks, progress, rankings.

Contract for pages and commands: getters raise ``ValueError`` naming what is known when
the name is unknown; nothing returns ``None`` on failure. Labels that count are the
``current`` ones (the latest revision not withdrawn) with a grade (a label the assessor
could not judge has none).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone as dt_timezone
from typing import Iterator, NamedTuple

import numpy as np
from django.db.models import Count, Q
from django.utils import timezone

from . import aggregate as agg
from .labelfiles import QrelsLine
from .models import NO_INTENT, JudgingSlot, JudgingTask, JudgmentSet, Label, TaskTopic

EXPORT_FORMATS = ("adhoc", "diversity", "ndeval", "raw")


def judgment_set_list():
    return JudgmentSet.objects.all()


def judgment_set_get(name: str) -> JudgmentSet:
    try:
        return JudgmentSet.objects.get(name=name)
    except JudgmentSet.DoesNotExist:
        known = ", ".join(JudgmentSet.objects.values_list("name", flat=True)[:20]) or "none"
        raise ValueError(f"no judgment set named {name!r} (known: {known})") from None


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


# --- labels and qrels ----------------------------------------------------------------------


def current_labels(jset: JudgmentSet) -> dict[tuple[str, str, str], list[tuple[str, int]]]:
    """``{(topic, intent, docid): [(assessor, grade), …]}`` of the labels that count, keys
    in the order of their earliest stored label that counts (file order for imports)."""
    out: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    rows = (Label.objects.filter(judgment_set=jset, current=True, grade__isnull=False)
            .order_by("id").values_list("topic_id", "intent_id", "docid", "assessor", "grade"))
    for t, i, d, a, g in rows.iterator(chunk_size=10000):
        out.setdefault((t, i, d), []).append((a, g))
    return out


def qrels_lines(jset: JudgmentSet, fmt: str, *, aggregate: str = "majority",
                adhoc_intent: str | None = None) -> list[QrelsLine]:
    """The qrels of a judgment set, one line per (topic, intent, docid) in the order of
    :func:`current_labels`, the K labels combined by ``aggregate`` (:mod:`judging.aggregate`).

    ``diversity``: ``topic intent docid grade`` for the labels made per intent.
    ``ndeval``: the same with negative grades (junk) as 0 and dropping every (topic,
    intent) with no grade above 0 — how NIST made ``qrels-for-ndeval.txt``.
    ``adhoc``: ``topic 0 docid grade`` from the labels made against the topic as a whole,
    or with ``adhoc_intent`` from that intent's labels (NIST's ``qrels.adhoc.txt`` is
    intent 1 of ``qrels.diversity.txt``).
    """
    if fmt not in ("adhoc", "diversity", "ndeval"):
        raise ValueError(f"qrels format must be adhoc, diversity or ndeval, not {fmt!r}")
    agg.check_rule(aggregate)
    if adhoc_intent is not None and fmt != "adhoc":
        raise ValueError("--adhoc-intent is only for --format adhoc")
    labels = current_labels(jset)
    if fmt == "adhoc":
        want = NO_INTENT if adhoc_intent in (None, "0", "") else str(adhoc_intent)
        labels = {k: v for k, v in labels.items() if k[1] == want}
        if not labels:
            raise ValueError(
                f"judgment set {jset.name!r} has no labels "
                + ("for the topic as a whole; give --adhoc-intent I" if want == NO_INTENT
                   else f"for intent {want!r}"))
    else:
        labels = {k: v for k, v in labels.items() if k[1] != NO_INTENT}
        if not labels:
            raise ValueError(f"judgment set {jset.name!r} has no per-intent labels; "
                             "export it as adhoc")
    grades = agg.aggregate(labels, aggregate)
    lines = []
    for (t, i, d), g in grades.items():
        if fmt == "adhoc":
            lines.append(QrelsLine(t, "0", d, g))
        elif fmt == "ndeval":
            lines.append(QrelsLine(t, i, d, max(g, 0)))
        else:
            lines.append(QrelsLine(t, i, d, g))
    if fmt == "ndeval":
        relevant = {(line.topic_id, line.second) for line in lines if line.grade > 0}
        lines = [line for line in lines if (line.topic_id, line.second) in relevant]
    return lines


def raw_rows(jset: JudgmentSet) -> Iterator[tuple]:
    """Every label with its history, in the order stored (columns of
    :data:`judging.labelfiles.RAW_COLUMNS`)."""
    rows = (Label.objects.filter(judgment_set=jset).order_by("id").values_list(
        "topic_id", "intent_id", "docid", "assessor", "grade", "seconds", "created",
        "revision", "current", "cannot_judge", "simulated"))
    for t, i, d, a, g, s, c, r, cur, cj, sim in rows.iterator(chunk_size=10000):
        yield (t, i or "0", d, a, g, s, c.astimezone(dt_timezone.utc).isoformat(), r,
               int(cur), " ".join(cj.split()), int(sim))


def relevance_by_topic(jset: JudgmentSet) -> dict[str, set[str]]:
    """``{topic: {docid, …}}`` of documents relevant to the topic: some intent (or the
    topic itself) has an aggregated (majority) grade above 0."""
    out: dict[str, set[str]] = defaultdict(set)
    for (t, _i, d), g in agg.aggregate(current_labels(jset), "majority").items():
        if g > 0:
            out[t].add(d)
    return out


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
    from . import sql

    now = now or timezone.now()
    one = " AND topic_id = %s" if topic_id is not None else ""
    extra = [topic_id] if topic_id is not None else []
    leased = dict(sql.rows(
        f"SELECT topic_id, COUNT(*) FROM {sql.SLOT} WHERE task_id = %s AND state = %s "
        f"AND lease_expires > %s{one} GROUP BY topic_id",
        [task.pk, JudgingSlot.LEASED, sql.db_time(now), *extra]))
    user_mode = task.mode == JudgingTask.MODE_USER
    users = ", users" if user_mode else ", NULL"
    rows = sql.rows(f"SELECT topic_id, size, slots_done{users} FROM {sql.TOPIC} "
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


def assessor_progress(task: JudgingTask, assessor: str, *, now: datetime | None = None) -> dict:
    """``{"topic", "done", "leased", "topic_done", "topic_items", "last_item"}`` for one
    assessor: their current topic, slots done and live leases over the task and within
    that topic, and the item of their latest judgment that counts (None: none). One
    query, over the assessor's own slots."""
    from . import sql

    now = now or timezone.now()
    mine = f"SELECT COUNT(*) FROM {sql.SLOT} s WHERE s.task_id = a.task_id AND s.assessor = %s"
    found = sql.rows(
        f"SELECT a.topic_id, ({mine} AND s.state = %s), "
        f"({mine} AND s.state = %s AND s.lease_expires > %s), "
        f"({mine} AND s.state = %s AND s.topic_id = a.topic_id), "
        f"(SELECT t.size FROM {sql.TOPIC} t WHERE t.task_id = a.task_id "
        f" AND t.topic_id = a.topic_id), "
        f"(SELECT l.item_id FROM {sql.LABEL} l WHERE l.judgment_set_id = %s "
        f" AND l.assessor = %s AND l.current = %s AND l.item_id IS NOT NULL "
        f" ORDER BY l.id DESC LIMIT 1) "
        f"FROM {sql.ASSESSOR} a WHERE a.task_id = %s AND a.assessor = %s",
        [assessor, JudgingSlot.DONE, assessor, JudgingSlot.LEASED, sql.db_time(now),
         assessor, JudgingSlot.DONE, task.judgment_set_id, assessor, True, task.pk,
         assessor])
    row = found[0] if found else None
    topic, done, leased, topic_done, topic_items, last = row or ("", 0, 0, 0, 0, None)
    return {"topic": topic, "done": done or 0, "leased": leased or 0,
            "topic_done": (topic_done or 0) if topic else 0,
            "topic_items": topic_items or 0, "last_item": last}


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


def pool_contributing_rankings(pool) -> dict[str, list[np.ndarray]]:
    """``{topic: [0-based pool positions of one contributing ranking, …]}``: every ranking
    of the runs that built the pool (those it recorded, never a newer run), cut at the pool depth, its documents as positions in the pool's
    order (documents the pool left out, e.g. beyond an RBP budget, dropped). Rankings in
    the order pooling reads them (topic, source, run, label)."""
    from pooling.selectors import pool_run_ids, pool_topic_arrays, ranking_contributions

    _records, contributions, remap = ranking_contributions(
        pool.topic_set.name, pool.sources, depth=pool.depth, run_ids=pool_run_ids(pool))
    by_topic: dict[str, list] = defaultdict(list)
    for c in contributions:
        by_topic[c.topic_id].append(c.docids)
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


def task_collection(task: JudgingTask):
    """The collection the task's documents are read from: the task's, else its pool's."""
    collection = task.collection or task.pool.collection
    if collection is None:
        raise ValueError(f"task {task.name!r} has no document collection: its pool was built "
                         "from imported runs; choose the collection on the task's page")
    return collection


def task_document(task: JudgingTask, docid: str):
    """The document as readable text (:class:`judging.doctext.DocumentText`), read from the
    index of :func:`task_collection`."""
    from retrieval.selectors import document_raw

    from .doctext import document_text

    collection = task_collection(task)
    if collection.status != "ready":
        raise ValueError(f"collection {collection.name!r} is {collection.status}, not ready")
    raw = document_raw(collection, docid)
    if raw is None:
        raise ValueError(f"collection {collection.name!r} has no document {docid!r}")
    return document_text(raw)


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
    from .models import JudgingItem

    try:
        return JudgingItem.objects.get(task=task, pk=item_id)
    except JudgingItem.DoesNotExist:
        raise ValueError(f"task {task.name!r} has no item {item_id}") from None


def task_assessor_stats(task: JudgingTask) -> list[dict]:
    """Per assessor: ``items`` judged (current labels), ``labels`` (every revision),
    ``revisions`` (labels beyond the first of an item), ``cannot_judge`` items, ``first``
    and ``last`` label times, ``per_hour`` (items per hour between first and last; None
    under a minute) and ``median_seconds`` (time on page per judged item)."""
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
        out.append({**s, "items": items, "cannot_judge": len(s["cannot_judge"]),
                    "per_hour": items / (span / 3600) if span >= 60 else None,
                    "median_seconds": statistics.median(secs) if secs else None})
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


# --- crowd publication: gold items and a worker's standing ---------------------------------


class GoldItem(NamedTuple):
    topic_id: str
    docid: str
    expected: dict  # {intent id ("" = the topic): grade}


_gold_cache: dict[tuple[int, int, int], list[GoldItem]] = {}


def gold_items(task: JudgingTask) -> list[GoldItem]:
    """The documents of the task's gold judgment set that can be shown as gold items: of
    a topic of the task, with the set's (majority) grade for the intents the task grades —
    in topic and user modes the topic-level grade, else the largest grade of its intents.
    Cached per process (judgment sets are imported whole and never change)."""
    if task.gold_set_id is None:
        return []
    key = (task.pk, task.gold_set_id, task.gold_set.labels_count)
    if key in _gold_cache:
        return _gold_cache[key]
    from .models import TaskTopic

    intents = dict(TaskTopic.objects.filter(task=task).values_list("topic_id", "intents"))
    by_doc: dict[tuple[str, str], dict[str, int]] = {}
    for (t, i, d), g in agg.aggregate(current_labels(task.gold_set), "majority").items():
        if t in intents:
            by_doc.setdefault((t, d), {})[i] = g
    out = []
    for (t, d), grades in by_doc.items():
        if task.mode == JudgingTask.MODE_INTENT:
            expected = {i: grades[i] for i in intents[t] if i in grades}
        elif NO_INTENT in grades:
            expected = {NO_INTENT: grades[NO_INTENT]}
        else:
            expected = {NO_INTENT: max(grades.values())}
        if expected:
            out.append(GoldItem(t, d, expected))
    _gold_cache[key] = out
    return out


def gold_passed(expected: dict, grades: dict) -> bool:
    """A gold answer passes when, for every intent the gold set grades, the worker agrees
    on relevance (grade above 0, or not); a document the worker could not judge fails."""
    for intent, want in expected.items():
        got = grades.get(intent)
        if got is None or (int(got) > 0) != (want > 0):
            return False
    return True


def crowd_worker_status(task: JudgingTask, assessor: str) -> dict:
    """``{"judged", "gold_seen", "gold_passed", "accuracy", "status"}`` of a crowd worker:
    ``completed`` after ``task.crowd_judgments`` judgments with gold accuracy at least
    ``task.gold_min_accuracy`` (and at least one gold item when the task uses gold),
    ``failed`` when the accuracy falls short then, else ``working``."""
    from .models import GoldAnswer

    judged = JudgingSlot.objects.filter(task=task, assessor=assessor,
                                        state=JudgingSlot.DONE).count()
    gold = list(GoldAnswer.objects.filter(task=task, assessor=assessor)
                .values_list("passed", flat=True))
    seen, passed = len(gold), sum(gold)
    accuracy = passed / seen if seen else None
    status = "working"
    uses_gold = task.gold_set_id is not None and task.gold_rate > 0
    if task.crowd_judgments and judged >= task.crowd_judgments:
        if not uses_gold:
            status = "completed"
        elif seen:
            status = "completed" if accuracy >= task.gold_min_accuracy else "failed"
    return {"judged": judged, "gold_seen": seen, "gold_passed": passed,
            "accuracy": accuracy, "status": status}


def gold_next(task: JudgingTask, assessor: str, status: dict) -> GoldItem | None:
    """The gold item to show the worker now, or None. Gold items make up ``gold_rate`` of
    the pages: the n-th page (1-based) is gold when the worker has seen fewer than
    ⌊n × rate⌋; a worker who reached the judgments needed with no gold yet gets one. Each
    worker sees the gold items in an order of their own (a hash of worker and document)."""
    import hashlib
    import math

    from .models import GoldAnswer

    if task.gold_set_id is None or task.gold_rate <= 0:
        return None
    n = status["judged"] + status["gold_seen"] + 1
    due = status["gold_seen"] < math.floor(n * task.gold_rate + 1e-9) or (
        task.crowd_judgments and status["judged"] >= task.crowd_judgments
        and status["gold_seen"] == 0)
    if not due:
        return None
    answered = set(GoldAnswer.objects.filter(task=task, assessor=assessor)
                   .values_list("topic_id", "docid"))
    left = [g for g in gold_items(task) if (g.topic_id, g.docid) not in answered]
    if not left:
        return None
    return min(left, key=lambda g: hashlib.sha256(
        f"{assessor}\t{g.topic_id}\t{g.docid}".encode()).hexdigest())


def task_gold_accuracy(task: JudgingTask) -> list[dict]:
    """Per worker: gold answers seen and passed, and the accuracy."""
    from .models import GoldAnswer

    rows = (GoldAnswer.objects.filter(task=task).values("assessor")
            .annotate(seen=Count("id"), passed=Count("id", filter=Q(passed=True)))
            .order_by("assessor"))
    return [{**r, "accuracy": r["passed"] / r["seen"]} for r in rows]
