"""Uploads' kind of job for the ledger (jobs.registry): the import of an uploaded file."""
from __future__ import annotations

from jobs.registry import JobKind, lease_and_error_lines


def _lines(u: dict) -> list[str]:
    out = [f"upload {u['id']} {u['kind']} {u['filename']}: {u['state']}"
           + (f" ({u['note']})" if u["note"] and u["state"] == "running" else "")]
    return out + lease_and_error_lines(u)


def kind() -> JobKind:
    from .models import Upload
    from .selectors import upload_job_list
    from .services import uploads_reconciled

    return JobKind(
        name="upload", plural="uploads", model=Upload, task="uploads.tasks.upload_import_task",
        listing_key="uploads", listing=upload_job_list,
        json_fields=("id", "kind", "filename", "state", "progress", "error"),
        lines=_lines, reconciled=uploads_reconciled)
