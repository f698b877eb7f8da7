"""Celery tasks of retrieval: thin wrappers that take ids, call one service and own retries.

A message names a chunk (a row of the ledger) and is only a wake-up: a duplicate delivery
finds the chunk finished or held and returns. The JVM starts lazily inside the worker
process that runs the first task (never in a prefork parent); each process keeps one
searcher per index.
"""
from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from jobs.leases import LeasedTask

# Wider than jobs.leases.TRANSIENT (database errors only) on purpose: a chunk is also
# retried after an OS-level connection error or timeout, with its own shorter backoff.
TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


class ChunkTask(LeasedTask):
    """Once retries are exhausted, fails the chunk that waits for one (the service
    already failed it for any other error)."""

    unit_arg = "chunk_id"
    unit_fail = "retrieval.services.chunk_fail"


@shared_task(
    base=ChunkTask,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=5,
    soft_time_limit=30 * 60,
    time_limit=35 * 60,
)
def chunk_retrieve_task(self, chunk_id: int) -> int:
    from .services import chunk_retrieve

    return chunk_retrieve(chunk_id, retry_on=TRANSIENT)
