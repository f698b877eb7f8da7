"""The reconciler as a Celery task: beat sends it every ``JOB_RECONCILE_SECONDS`` and a
worker sends it when it starts (config.celery_app)."""
from __future__ import annotations

from celery import shared_task

# Explicit soft and hard limits: a task with only a hard limit inherits the global soft
# limit (CELERY_TASK_SOFT_TIME_LIMIT, 55 min), and Celery refuses to send a task whose
# soft limit passes its hard one -- beat logged a SchedulingError every minute.
RECONCILE_SOFT_LIMIT = 4 * 60
RECONCILE_TIME_LIMIT = 5 * 60


@shared_task(ignore_result=True, soft_time_limit=RECONCILE_SOFT_LIMIT,
             time_limit=RECONCILE_TIME_LIMIT)
def reconcile_all_task(origin: str = "beat") -> dict:
    """Re-queue work of dead workers, fail work claimed too often, wake work whose message
    was lost, for every kind of job. A worker that starts (``origin="start"``) also wakes
    messages older than a lease: a killed worker may have left them reserved."""
    from .leases import lease_seconds
    from .services import reconcile_all

    found = reconcile_all(origin=origin,
                          wake_after=lease_seconds() if origin == "start" else None)
    return {plural: {"requeued": len(r.requeued), "failed": len(r.failed), "woken": len(r.woken)}
            for plural, r in found.items()}
