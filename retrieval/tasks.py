"""Celery tasks of retrieval: thin wrappers that take ids, call one service and own retries.

A message names a chunk (a row of the ledger) and is only a wake-up: a duplicate delivery
finds the chunk finished or held and returns. The JVM starts lazily inside the worker
process that runs the first task (never in a prefork parent); each process keeps one
searcher per index.
"""
from __future__ import annotations

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


class ChunkTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Retries exhausted: fail the chunk that waits for one (the service already
        failed it for any other error)."""
        from .services import chunk_fail

        chunk_id = args[0] if args else kwargs.get("chunk_id")
        if chunk_id is not None:
            chunk_fail(chunk_id, f"{type(exc).__name__}: {exc}")


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
