"""Celery tasks of retrieval: thin wrappers that take ids, call one service and own retries.

The JVM starts lazily inside the worker child that runs the first task (never in the
prefork parent); each child keeps one searcher per index.
"""
from __future__ import annotations

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


class RetrievalTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from .services import run_fail

        run_id = args[0] if args else kwargs.get("run_id")
        if run_id is not None:
            run_fail(run_id, f"{type(exc).__name__}: {exc}")


@shared_task(
    base=RetrievalTask,
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
def rankings_retrieve_task(self, run_id: int, keys: list[str]) -> int:
    from .services import rankings_retrieve

    return rankings_retrieve(run_id, keys)
