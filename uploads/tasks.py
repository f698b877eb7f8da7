"""Celery tasks: take ids, call one service, own retries. A message is only a wake-up."""
from __future__ import annotations

from celery import shared_task

from jobs.leases import LEASED_TASK_OPTIONS, TRANSIENT, LeasedTask


class UploadImportTask(LeasedTask):
    """Once retries are exhausted, fails the upload that waits for one (the service
    already failed it for any other error)."""

    unit_arg = "upload_id"
    unit_fail = "uploads.services.upload_fail"


@shared_task(base=UploadImportTask, **LEASED_TASK_OPTIONS)
def upload_import_task(self, upload_id: int) -> None:
    from .services import upload_run

    upload_run(upload_id, retry_on=TRANSIENT)
