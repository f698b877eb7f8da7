"""Celery tasks: take ids, call one service, own retries. A message is only a wake-up."""
from __future__ import annotations

from celery import Task, shared_task

from jobs.leases import LEASED_TASK_OPTIONS, TRANSIENT


class UploadImportTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from .services import upload_fail

        upload_id = args[0] if args else kwargs.get("upload_id")
        if upload_id is not None:
            upload_fail(upload_id, f"{type(exc).__name__}: {exc}")


@shared_task(base=UploadImportTask, **LEASED_TASK_OPTIONS)
def upload_import_task(self, upload_id: int) -> None:
    from .services import upload_run

    upload_run(upload_id, retry_on=TRANSIENT)
