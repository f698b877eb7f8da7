"""Reads of the judging app: judgment sets, qrels lines, tasks, progress, rankings.

Contract for pages and commands: getters raise ``ValueError`` naming what is known when
the name is unknown; nothing returns ``None`` on failure. Labels that count are the
``current`` ones (the latest revision not withdrawn) with a grade (a label the assessor
could not judge has none).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone as dt_timezone
from typing import Iterator

import numpy as np
from django.db.models import Count, Q
from django.utils import timezone

from . import aggregate as agg
from .labelfiles import QrelsLine
from .models import NO_INTENT, JudgingSlot, JudgingTask, JudgmentSet, Label, TaskAssessor

EXPORT_FORMATS = ("adhoc", "diversity", "ndeval", "raw")


def judgment_set_list():
    return JudgmentSet.objects.all()


def judgment_set_get(name: str) -> JudgmentSet:
    try:
        return JudgmentSet.objects.get(name=name)
    except JudgmentSet.DoesNotExist:
        known = ", ".join(JudgmentSet.objects.values_list("name", flat=True)[:20]) or "none"
        raise ValueError(f"no judgment set named {name!r} (known: {known})") from None


def task_list(assessor: str | None = None):
    """Tasks, newest first; with ``assessor``, those open to them (an empty assessor list
    is open to anyone the pages admit)."""
    qs = JudgingTask.objects.select_related("pool", "judgment_set")
    if assessor is None:
        return qs
    return [t for t in qs if not t.assessors or assessor in t.assessors]


def task_get(name: str) -> JudgingTask:
    try:
        return JudgingTask.objects.select_related("pool", "judgment_set").get(name=name)
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
        "revision", "current", "cannot_judge"))
    for t, i, d, a, g, s, c, r, cur, cj in rows.iterator(chunk_size=10000):
        yield (t, i or "0", d, a, g, s, c.astimezone(dt_timezone.utc).isoformat(), r,
               int(cur), " ".join(cj.split()))


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


# --- tasks: progress -------------------------------------------------------------------------


def task_progress(task: JudgingTask, *, now: datetime | None = None) -> dict:
    """``{"total": {...}, "topics": {topic: {...}}}`` where each entry has ``items``,
    ``slots`` (items × K), ``done``, ``leased`` (live leases) and ``remaining`` (free
    slots and expired leases). One aggregate query over the task's slots."""
    now = now or timezone.now()
    rows = (JudgingSlot.objects.filter(task=task).values("topic_id").annotate(
        slots=Count("id"),
        done=Count("id", filter=Q(state=JudgingSlot.DONE)),
        leased=Count("id", filter=Q(state=JudgingSlot.LEASED, lease_expires__gt=now)),
    ).order_by("topic_id"))
    topics = {}
    total = {"items": 0, "slots": 0, "done": 0, "leased": 0, "remaining": 0}
    for r in rows:
        entry = {"items": r["slots"] // task.redundancy, "slots": r["slots"],
                 "done": r["done"], "leased": r["leased"],
                 "remaining": r["slots"] - r["done"] - r["leased"]}
        topics[r["topic_id"]] = entry
        for k in total:
            total[k] += entry[k]
    return {"total": total, "topics": topics}


def assessor_progress(task: JudgingTask, assessor: str, *, now: datetime | None = None) -> dict:
    """``{"topic", "done", "leased", "topic_done", "topic_items"}`` for one assessor: their
    current topic, slots done and live leases over the task and within that topic."""
    now = now or timezone.now()
    ta = TaskAssessor.objects.filter(task=task, assessor=assessor).first()
    topic = ta.topic_id if ta else ""
    mine = JudgingSlot.objects.filter(task=task, assessor=assessor)
    done = mine.filter(state=JudgingSlot.DONE).count()
    leased = mine.filter(state=JudgingSlot.LEASED, lease_expires__gt=now).count()
    topic_done = mine.filter(state=JudgingSlot.DONE, topic_id=topic).count() if topic else 0
    topic_items = task.topics.filter(topic_id=topic).values_list("size", flat=True).first() or 0
    return {"topic": topic, "done": done, "leased": leased, "topic_done": topic_done,
            "topic_items": topic_items}


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
    that built the pool, cut at the pool depth, its documents as positions in the pool's
    order (documents the pool left out, e.g. beyond an RBP budget, dropped). Rankings in
    the order pooling reads them (topic, source, run, label)."""
    from pooling.selectors import pool_topic_arrays, ranking_contributions

    scope = {"collection_name": pool.collection.name} if pool.collection_id else {}
    _records, contributions, remap = ranking_contributions(
        pool.topic_set.name, pool.sources,
        model_name=pool.model.name if pool.model else None, depth=pool.depth, **scope)
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
