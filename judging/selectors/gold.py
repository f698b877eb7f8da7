"""Crowd publication: a task's gold items, a worker's gold answers and standing."""
from __future__ import annotations

import threading
from typing import NamedTuple

from cachetools import LRUCache, cached
from django.db.models import Count, Q

from .. import aggregate as agg
from ..models import NO_INTENT, JudgingSlot, JudgingTask, TaskTopic
from .qrels import current_labels


class GoldItem(NamedTuple):
    topic_id: str
    docid: str
    expected: dict  # {intent id ("" = the topic): grade}


#: Tasks whose gold items this process keeps (least recently used dropped first).
GOLD_TASKS_KEPT = 64
_gold_cache: LRUCache[tuple[int, int, int], list[GoldItem]] = LRUCache(maxsize=GOLD_TASKS_KEPT)
_gold_lock = threading.Lock()  # threaded servers share this process's cache


def gold_items(task: JudgingTask) -> list[GoldItem]:
    """The documents of the task's gold judgment set that can be shown as gold items: of
    a topic of the task, with the set's (majority) grade for the intents the task grades —
    in topic and user modes the topic-level grade, else the largest grade of its intents.
    Cached per process (judgment sets are imported whole and never change)."""
    if task.gold_set_id is None:
        return []
    return _gold_items(task)


@cached(_gold_cache, key=lambda task: (task.pk, task.gold_set_id, task.gold_set.labels_count),
        lock=_gold_lock)
def _gold_items(task: JudgingTask) -> list[GoldItem]:
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
    from ..models import GoldAnswer

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

    from ..models import GoldAnswer

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
    from ..models import GoldAnswer

    rows = (GoldAnswer.objects.filter(task=task).values("assessor")
            .annotate(seen=Count("id"), passed=Count("id", filter=Q(passed=True)))
            .order_by("assessor"))
    return [{**r, "accuracy": r["passed"] / r["seen"]} for r in rows]

