"""Celery tasks: take ids, call one service, own retries.

A message names a pool (a row of the ledger) and is only a wake-up: a duplicate delivery
finds the pool finished or held and returns without touching it.
"""
from __future__ import annotations

import logging

from celery import Task, shared_task

from jobs.leases import LEASED_TASK_OPTIONS, TRANSIENT

log = logging.getLogger(__name__)


class PoolBuildTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Retries exhausted: fail the pool that waits for one (the service already
        failed it for any other error)."""
        from .services import pool_fail, pool_failure_message

        pool_id = args[0] if args else kwargs.get("pool_id")
        if pool_id is not None:
            pool_fail(pool_id, pool_failure_message(exc))


@shared_task(base=PoolBuildTask, **LEASED_TASK_OPTIONS)
def pool_build_task(self, pool_id: int) -> None:
    """Build pool ``pool_id`` (see :func:`pooling.services.pool_build`).

    Database connection errors are retried with backoff; any other error marks the pool
    failed (the service records the message) and is not retried.
    """
    from .services import pool_build

    log.info("building pool %s (delivery %s)", pool_id, self.request.retries + 1)
    pool_build(pool_id, retry_on=TRANSIENT)
