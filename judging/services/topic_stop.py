"""The task's stopping rule applied to its topics: check, set the rule, resume a topic."""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from .. import stopping
from ..models import JudgingTask, TaskTopic
from ..selectors import task_judged_sequences

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
