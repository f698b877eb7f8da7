"""Celery tasks: take ids, call one service, own retries.

A message names a topic's refit (a row of the ledger) and is only a wake-up: a duplicate
delivery finds the refit finished or held and returns without touching it.
"""
from __future__ import annotations

import logging

from celery import shared_task

from jobs.leases import LEASED_TASK_OPTIONS, TRANSIENT, LeasedTask

log = logging.getLogger(__name__)


class TopicRefitTask(LeasedTask):
    """Once retries are exhausted, fails the refit that waits for one (the service
    already failed it for any other error)."""

    unit_arg = "refit_id"
    unit_fail = "judging.services.refit_fail"
    unit_failure_message = "judging.services.refit_failure_message"


@shared_task(base=TopicRefitTask, **LEASED_TASK_OPTIONS)
def topic_refit_task(self, refit_id: int) -> None:
    """Refit the learned order of one topic of a judging task
    (:func:`judging.services.refits.topic_refit`).

    Database connection errors are retried with backoff; any other error marks the refit
    failed (the service records the message; the queue keeps the topic's last order).
    """
    from .services import topic_refit

    log.info("refitting %s (delivery %s)", refit_id, self.request.retries + 1)
    topic_refit(refit_id, retry_on=TRANSIENT)
