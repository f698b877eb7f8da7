"""Judging's kind of job for the ledger (jobs.registry): the refit of a learned order's
model for one topic of a task."""
from __future__ import annotations

from jobs.registry import JobKind, lease_and_error_lines


def _lines(r: dict) -> list[str]:
    fitted = (f", last fit on {r['fitted_labels']} judged item(s)" if r["fits"] else
              ", not fitted yet")
    out = [f"refit {r['id']} task {r['task']} topic {r['topic']} ({r['order']}): "
           f"{r['state']}{fitted}"]
    return out + lease_and_error_lines(r)


def kind() -> JobKind:
    from .models import TopicRefit
    from .selectors import refit_job_list

    return JobKind(
        name="refit", plural="refits", model=TopicRefit,
        task="judging.tasks.topic_refit_task",
        listing_key="refits", listing=refit_job_list,
        json_fields=("id", "task", "topic", "order", "state", "fits", "error"),
        lines=_lines)
