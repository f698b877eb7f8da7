"""A task's document collection, and its publication to crowd workers (gold answers)."""
from __future__ import annotations

from datetime import datetime
from typing import Mapping

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import JudgingTask, JudgmentSet, TaskTopic
from .judgments import checked_grades
from .queue import QueueError, check_assessor

def judging_task_collection_set(task: JudgingTask, collection_name: str) -> JudgingTask:
    """Read the task's documents from this collection (a pool built from imported runs
    names none). A learned text order's failed refits (no text) are queued again."""
    from retrieval.selectors import collection_get

    from .refits import refits_requeue_failed

    collection = collection_get(collection_name)
    with transaction.atomic():
        JudgingTask.objects.filter(pk=task.pk).update(collection=collection)
        refits_requeue_failed(task)
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

    from ..selectors import gold_items

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
    from ..models import GoldAnswer
    from ..selectors import gold_items, gold_passed

    check_assessor(task, assessor)
    if not submit_key or len(submit_key) > 100:
        raise QueueError("a submit key (1 to 100 characters) is required")
    gold = {(g.topic_id, g.docid): g for g in gold_items(task)}.get((topic_id, docid))
    if gold is None:
        raise QueueError(f"document {docid} of topic {topic_id} is not a gold item of the task")
    intents = TaskTopic.objects.get(task=task, topic_id=topic_id).intents
    values = dict(checked_grades(task, intents, grades, cannot_judge))
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
