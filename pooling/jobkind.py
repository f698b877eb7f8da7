"""Pooling's kind of job for the ledger (jobs.registry): a pool build."""
from __future__ import annotations

from jobs.registry import JobKind, lease_and_error_lines


def _lines(p: dict) -> list[str]:
    progress = f" {p['progress']:.0%}" if p["state"] == "running" else ""
    out = [f"pool {p['id']} {p['name']}: {p['state']}{progress} ({p['topic_set']})"]
    return out + lease_and_error_lines(p)


def kind() -> JobKind:
    from .models import Pool
    from .selectors import pool_job_list
    from .services import pools_reconciled

    return JobKind(
        name="pool", plural="pools", model=Pool, task="pooling.tasks.pool_build_task",
        listing_key="pools", listing=pool_job_list, json_fields=("id", "name", "state", "error"),
        lines=_lines, reconciled=pools_reconciled)
