"""Evaluation's kind of job for the ledger (jobs.registry): an analysis."""
from __future__ import annotations

from jobs.registry import JobKind, lease_and_error_lines


def _lines(a: dict) -> list[str]:
    progress = f" {a['progress']:.0%}" if a["state"] == "running" else ""
    out = [f"analysis {a['id']} {a['kind']}: {a['state']}{progress}"
           + (f" (by {a['created_by']})" if a["created_by"] else "")]
    return out + lease_and_error_lines(a)


def kind() -> JobKind:
    from .models import Analysis
    from .selectors import analysis_job_list
    from .services import analyses_reconciled

    return JobKind(
        name="analysis", plural="analyses", model=Analysis,
        task="evaluation.tasks.analysis_run_task",
        listing_key="analyses", listing=analysis_job_list,
        json_fields=("id", "kind", "state", "progress", "error"),
        lines=_lines, reconciled=analyses_reconciled)
