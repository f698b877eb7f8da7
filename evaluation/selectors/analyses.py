"""Reads of the evaluation app's own rows (analyses recorded for the pages)."""
from __future__ import annotations

from ..models import Analysis


def analysis_list(kind: str | None = None):
    qs = Analysis.objects.all()
    return qs.filter(kind=kind) if kind else qs


def analysis_get(analysis_id: int) -> Analysis:
    try:
        return Analysis.objects.get(pk=analysis_id)
    except Analysis.DoesNotExist:
        raise ValueError(f"no analysis with id {analysis_id}") from None


def analysis_job_list() -> list[dict]:
    """Every analysis as a job: state, progress, lease (holder, expiry, attempts) and the
    last error, newest first."""
    return [{
        "id": a.id, "kind": a.kind, "created_by": a.created_by, "state": a.status,
        "progress": a.progress, "holder": a.holder, "expires": a.lease_expires,
        "attempts": a.attempts, "error": a.error,
    } for a in Analysis.objects.defer("params", "result").order_by("-created", "-id")]
