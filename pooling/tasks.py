"""Celery tasks: take ids, call one service, own retries.

A message names a pool (a row of the ledger) and is only a wake-up: a duplicate delivery
finds the pool finished or held and returns without touching it.
"""
from __future__ import annotations

import logging

from celery import shared_task

from jobs.leases import LEASED_TASK_OPTIONS, TRANSIENT, LeasedTask

log = logging.getLogger(__name__)


class PoolBuildTask(LeasedTask):
    """Once retries are exhausted, fails the pool that waits for one (the service
    already failed it for any other error)."""

    unit_arg = "pool_id"
    unit_fail = "pooling.services.pool_fail"
    unit_failure_message = "pooling.services.pool_failure_message"


@shared_task(base=PoolBuildTask, **LEASED_TASK_OPTIONS)
def pool_build_task(self, pool_id: int) -> None:
    """Build pool ``pool_id`` (see :func:`pooling.services.pool_build`).

    Database connection errors are retried with backoff; any other error marks the pool
    failed (the service records the message) and is not retried.
    """
    from .services import pool_build

    log.info("building pool %s (delivery %s)", pool_id, self.request.retries + 1)
    pool_build(pool_id, retry_on=TRANSIENT)
