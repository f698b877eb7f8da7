"""The learned orders in the live queue: their models are refitted in the background.

``al-rank``, ``cal-text`` and ``cal`` (:mod:`judging.learned`) fit a logistic regression
on the judgments so far, which takes far longer than an assessor's request may. So each
topic of such a task has a :class:`~judging.models.TopicRefit`, a leased job of the
ledger (:mod:`jobs.leases`, kind ``refit``):

- :func:`refits_create` makes one per topic with the task, queued, and wakes them once
  the task commits: the first fit needs no judgments (``al-rank`` ranks by the rank
  fusion prior, the text orders by similarity to the topic statement).
- The queue (:func:`stored_ranking`, called while leasing) reads the topic's last
  ranking, one row, and never fits: before the first fit ends the topic goes in pool
  order. When the topic's done slots moved by :func:`refit_due` since the last fit was
  queued, it queues the next one (a compare-and-set on the row, so one of many concurrent
  requests does; the wake-up is sent on commit).
- :func:`topic_refit` (the Celery task :func:`judging.tasks.topic_refit_task`) claims the
  job, reads the topic's judgments (an item is relevant when the majority of its
  assessors gave some intent a grade above 0, as in the adaptive orders), fits, and
  stores the ranking with the done mark in one transaction, only while its lease is
  held; a fit whose lease was taken over is discarded. It computes with one BLAS thread,
  so a fit never takes every core from the processes that answer assessors.

``al-rank`` scores as the simulation does (:func:`judging.learned.learned_ranking`): the
mean of the topic's own model and of a model pooled across topics on the rank features,
which learns from the labelled items of this topic and of the task's other topics. To
keep a refit bounded on a big task (each other topic costs reading its rankings and
labels), the pooled model reads at most :data:`POOLED_TOPICS` other topics: those with the
most recent labels. Unlike the simulation's pooled model, which is refitted when the
judgments grew by 10%, it is fitted on the current labels at every refit.

A lost wake-up or a dead worker is the reconciler's (``jobs``) to repair, as for every
other kind of job. A revision does not move the done count, so it is read at the next
fit that new judgments bring.
"""
from __future__ import annotations

import logging
import math
from typing import Callable

import numpy as np
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone
from threadpoolctl import threadpool_limits

from jobs import leases, registry
from .. import learned, priority
from ..models import JudgingTask, Label, TaskTopic, TopicRefit

log = logging.getLogger(__name__)

#: the fewest new done slots of a topic that queue a refit (a batch's worth, by default)
REFIT_EVERY = 10
#: a refit is also due once the done slots grew by this share since the last one queued
REFIT_GROWTH = 0.1
#: the seed of the random negatives of the text orders (one fit is then a function of
#: the judgments)
REFIT_SEED = 0
#: the most other topics of the task whose labelled items an ``al-rank`` refit's model
#: pooled across topics learns from: those labelled most recently (the simulation pools
#: every topic; reading each topic's rankings at every refit would not stay bounded)
POOLED_TOPICS = 20


def refit_due(queued_done: int, slots_done: int) -> bool:
    """Whether a topic whose last fit was queued at ``queued_done`` done slots needs the
    next at ``slots_done``: it moved by :data:`REFIT_EVERY`, or by :data:`REFIT_GROWTH` of
    ``queued_done`` if that is more (fits grow sparser as the topic grows, as AutoTAR's
    batches do)."""
    return abs(slots_done - queued_done) >= max(REFIT_EVERY,
                                                math.ceil(REFIT_GROWTH * queued_done))


def refits_create(task: JudgingTask, sources: dict[str, list[str]]) -> None:
    """A queued refit for each topic of ``task`` (in the caller's transaction), woken
    once it commits. ``sources``: "user"/"system" per contributing ranking of a topic."""
    now = timezone.now()
    rows = [TopicRefit(task_topic=tt, sources=sources.get(tt.topic_id, []), woken=now,
                       wakeups=1)
            for tt in TaskTopic.objects.filter(task=task).only("id", "topic_id")]
    made = TopicRefit.objects.bulk_create(rows, batch_size=500)
    ids = [r.pk for r in made] if all(r.pk for r in made) else list(
        TopicRefit.objects.filter(task_topic__task=task).values_list("pk", flat=True))
    _wake_on_commit(ids)


def refits_requeue_failed(task: JudgingTask) -> int:
    """Queue again the failed refits of ``task`` (its document collection changed: a fit
    that found no text may find it now), woken once the caller's transaction commits;
    how many."""
    now = timezone.now()
    ids = list(TopicRefit.objects.filter(task_topic__task=task, status=leases.FAILED)
               .values_list("pk", flat=True))
    n = TopicRefit.objects.filter(pk__in=ids, status=leases.FAILED).update(
        status=leases.QUEUED, attempts=0, holder="", lease_expires=None, woken=now,
        wakeups=F("wakeups") + 1)
    _wake_on_commit(ids)
    return n


def _wake_on_commit(ids: list[int]) -> None:
    def wake_all():
        for pk in ids:
            registry.wake("refit", pk)

    transaction.on_commit(wake_all)


def stored_ranking(task: JudgingTask, topic: str, *, now=None) -> np.ndarray | None:
    """The topic's items (0-based positions) in its last fitted order, None before the
    first fit; queues the next fit when one is due (see the module docstring). Call it
    inside the lease's transaction: the wake-up is sent when that commits."""
    row = (TopicRefit.objects.filter(task_topic__task=task, task_topic__topic_id=topic)
           .values_list("pk", "status", "queued_done", "ranking", "task_topic__slots_done")
           .first())
    if row is None:
        raise ValueError(f"topic {topic} of task {task.name!r} has no refit job; the task "
                         f"was made before its order was learned in the background")
    pk, status, queued_done, ranking, slots_done = row
    if status in (leases.DONE, leases.FAILED) and refit_due(queued_done, slots_done):
        if TopicRefit.objects.filter(pk=pk, status=status, queued_done=queued_done).update(
                status=leases.QUEUED, queued_done=slots_done, attempts=0, holder="",
                lease_expires=None, woken=now or timezone.now(), wakeups=F("wakeups") + 1):
            transaction.on_commit(lambda: registry.wake("refit", pk))
    ranking = bytes(ranking or b"")
    return np.frombuffer(ranking, dtype="<i4") if ranking else None


def _graded(task: JudgingTask):
    """The task's current labels that count as votes (of an item, with a grade)."""
    return Label.objects.filter(judgment_set_id=task.judgment_set_id, current=True,
                                item__isnull=False, grade__isnull=False)


def topics_known(task: JudgingTask, topics) -> dict[str, dict[int, bool]]:
    """``{topic: {0-based item position: relevant}}`` from the current labels of
    ``topics`` (one query): relevant when at least half of the item's assessors with a
    grade gave some intent a grade above 0 (a label the assessor could not judge is no
    vote). A topic without such labels is absent."""
    votes: dict[str, dict[int, dict[str, bool]]] = {}
    for topic, pos, assessor, grade in (
            _graded(task).filter(topic_id__in=list(topics))
            .values_list("topic_id", "item__position", "assessor", "grade")):
        mine = votes.setdefault(topic, {}).setdefault(pos - 1, {})
        mine[assessor] = mine.get(assessor, False) or grade > 0
    return {topic: {item: 2 * sum(v.values()) >= len(v) for item, v in items.items()}
            for topic, items in votes.items()}


def topic_known(task: JudgingTask, topic: str) -> dict[int, bool]:
    """``{0-based item position: relevant}`` from the topic's current labels
    (:func:`topics_known`)."""
    return topics_known(task, [topic]).get(topic, {})


def _sources(sources: list[str], rankings: list) -> list[str] | None:
    """A topic's ranking sources, None (all system) when they do not match its rankings."""
    return sources if len(sources) == len(rankings) else None


def pooled_model(task: JudgingTask, topic: str) -> learned.PooledModel:
    """The model pooled across topics for an ``al-rank`` fit of ``topic``, holding the
    labelled items of at most :data:`POOLED_TOPICS` other topics of the task, those with
    the most recent labels first (:func:`judging.learned.learned_ranking` adds the
    topic's own)."""
    others = list(_graded(task).exclude(topic_id=topic).values("topic_id")
                  .annotate(last=Max("id")).order_by("-last", "topic_id")
                  .values_list("topic_id", flat=True)[:POOLED_TOPICS])
    known = topics_known(task, others)
    rows = {t: (size, ranks, offsets, sources) for t, size, ranks, offsets, sources in
            TaskTopic.objects.filter(task=task, topic_id__in=others).values_list(
                "topic_id", "size", "rankings", "offsets", "refit__sources")}
    model = learned.PooledModel()
    for other in others:
        if other not in rows or other not in known:
            continue
        size, ranks, offsets, sources = rows[other]
        rankings = priority.unpack_rankings(ranks, offsets)
        features, _ = learned.rank_features(rankings, size,
                                            _sources(sources or [], rankings))
        model.add_judged(features, known[other])
    return model


def _topic_texts(task: JudgingTask, topic: str, n_items: int) -> tuple[list[str], str]:
    """The texts of the topic's items in pool order and the topic statement."""
    from retrieval.selectors import collection_texts

    from ..selectors import pool_topic_statements, task_collection

    docids = [d for _, d in sorted(task.items.filter(topic_id=topic)
                                   .values_list("position", "docid"))]
    if len(docids) != n_items:
        raise ValueError(f"topic {topic} has {len(docids)} items, not {n_items}")
    collection = task_collection(task)
    texts = collection_texts(collection, docids)
    missing = [d for d in docids if d not in texts]
    if missing:
        raise ValueError(f"collection {collection.name} has no text for {len(missing)} "
                         f"document(s) of topic {topic} (e.g. {missing[0]!r})")
    return [texts[d] for d in docids], pool_topic_statements(task.pool).get(topic, "")


def refit_failure_message(exc: BaseException) -> str:
    return leases.failure_sentence(
        exc, stopped="The refit",
        again="The queue goes on with the topic's last order and queues a new fit as "
              "judgments come in")


def topic_refit(refit_id: int, *, retry_on: tuple[type[BaseException], ...] = (),
                fitted: Callable[[], None] | None = None) -> TopicRefit:
    """Fit the order of refit ``refit_id``'s topic on its judgments now and store the
    ranking (see the module docstring). Idempotent under duplicate delivery: a refit that
    is done, failed or held by a live process is returned untouched. On an error of a
    type in ``retry_on`` it is queued again (the caller retries); on any other it is
    failed with the message (the queue keeps the last ranking) and the error raised.
    ``fitted`` is called between the fit and its commit (a test stalls there)."""
    holder = leases.claim(TopicRefit, refit_id)
    refit = TopicRefit.objects.select_related("task_topic__task__pool").get(pk=refit_id)
    if holder is None:
        return refit
    tt = refit.task_topic
    task = tt.task
    try:
        with leases.renewing(TopicRefit, refit.pk, holder):
            done_now = TaskTopic.objects.filter(pk=tt.pk).values_list(
                "slots_done", flat=True).get()
            known = topic_known(task, tt.topic_id)
            rankings = priority.unpack_rankings(tt.rankings, tt.offsets)
            extra = {}
            if task.order in learned.TEXT_ORDERS:
                texts, statement = _topic_texts(task, tt.topic_id, tt.size)
                extra = {"texts": texts, "statement": statement}
            elif task.order == "al-rank":
                extra = {"pooled": pooled_model(task, tt.topic_id)}
            # one BLAS thread: the fit shares the machine with the assessors' requests
            with threadpool_limits(limits=1, user_api="blas"):
                ranking = learned.learned_ranking(
                    task.order, rankings, tt.size, known,
                    sources=_sources(refit.sources, rankings), seed=REFIT_SEED, **extra)
            if fitted is not None:
                fitted()
            with transaction.atomic():
                if not leases.held(TopicRefit, refit.pk, holder):
                    log.warning("refit %s: lease of %s (attempt %s) was taken over; fit "
                                "discarded", refit.pk, holder, holder.attempt)
                    return TopicRefit.objects.get(pk=refit.pk)
                TopicRefit.objects.filter(pk=refit.pk).update(
                    ranking=ranking.astype("<i4").tobytes(), fitted=timezone.now(),
                    fitted_done=done_now, fitted_labels=len(known), fits=F("fits") + 1,
                    status=leases.DONE, holder="", lease_expires=None, error="")
    except BaseException as exc:
        leases.release(TopicRefit, refit.pk, holder, refit_failure_message(exc),
                       retry=isinstance(exc, retry_on))
        raise
    refit.refresh_from_db()
    return refit


def refit_fail(refit_id: int, message: str) -> None:
    """Fail a refit that waits for a retry which will not come (retries exhausted)."""
    leases.fail_waiting(TopicRefit, refit_id, message)
