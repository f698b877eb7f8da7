"""Celery tasks: take ids, call one service, own retries."""
from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError, InterfaceError

log = logging.getLogger(__name__)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=5,
    soft_time_limit=55 * 60,
    time_limit=60 * 60,
)
def pool_build_task(self, pool_id: int) -> None:
    """Build pool ``pool_id`` (see :func:`pooling.services.pool_build`).

    Database connection errors are retried with backoff; any other error marks the pool
    failed (the service records the message) and is not retried.
    """
    from .services import pool_build

    log.info("building pool %s (attempt %s)", pool_id, self.request.retries + 1)
    pool_build(pool_id)
