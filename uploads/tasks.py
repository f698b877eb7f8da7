"""Celery tasks: take ids, call one service, own retries. A message is only a wake-up."""
from __future__ import annotations

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

TRANSIENT = (OperationalError, InterfaceError)


class UploadImportTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from .services import upload_fail

        upload_id = args[0] if args else kwargs.get("upload_id")
        if upload_id is not None:
            upload_fail(upload_id, f"{type(exc).__name__}: {exc}")


@shared_task(base=UploadImportTask, bind=True, acks_late=True, reject_on_worker_lost=True,
             autoretry_for=TRANSIENT, retry_backoff=5, retry_backoff_max=300, retry_jitter=True,
             max_retries=5, soft_time_limit=55 * 60, time_limit=60 * 60)
def upload_import_task(self, upload_id: int) -> None:
    from .services import upload_run

    upload_run(upload_id, retry_on=TRANSIENT)


@shared_task
def uploads_reconcile_task() -> None:
    from .services import uploads_reconcile

    uploads_reconcile()
