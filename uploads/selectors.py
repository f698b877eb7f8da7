from .models import Upload


def upload_get(upload_id: int) -> Upload:
    try:
        return Upload.objects.get(pk=upload_id)
    except Upload.DoesNotExist:
        raise ValueError(f"no upload with id {upload_id}") from None


def upload_list():
    return Upload.objects.all()


def upload_job_list() -> list[dict]:
    """Every upload's import as a job: state, progress, latest step, lease (holder, expiry,
    attempts) and the last error, newest first."""
    return [{
        "id": u.id, "kind": u.kind, "filename": u.filename, "state": u.status,
        "progress": u.progress, "note": u.note, "holder": u.holder,
        "expires": u.lease_expires, "attempts": u.attempts, "error": u.error,
    } for u in Upload.objects.defer("params", "result").order_by("-id")]
