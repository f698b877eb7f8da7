"""Celery tasks: take ids, call one service, own retries.

A message names an analysis (a row of the ledger) and is only a wake-up: a duplicate
delivery finds it finished or held and returns without touching it.
"""
from __future__ import annotations

import logging

from celery import shared_task

from jobs.leases import LEASED_TASK_OPTIONS, TRANSIENT, LeasedTask

log = logging.getLogger(__name__)


class AnalysisTask(LeasedTask):
    """Once retries are exhausted, fails the analysis that waits for one (the service
    already failed it for any other error)."""

    unit_arg = "analysis_id"
    unit_fail = "evaluation.services.analysis_fail"
    unit_failure_message = "evaluation.services.analysis_failure_message"


@shared_task(base=AnalysisTask, **LEASED_TASK_OPTIONS)
def analysis_run_task(self, analysis_id: int) -> None:
    """Run analysis ``analysis_id`` (see :func:`evaluation.services.analysis_run`).

    Database connection errors are retried with backoff; any other error fails the
    analysis with its message and is not retried."""
    from .services import analysis_run

    log.info("analysis %s (delivery %s)", analysis_id, self.request.retries + 1)
    try:
        analysis_run(analysis_id, retry_on=TRANSIENT)
    except ValueError:
        pass  # recorded on the analysis: a bad parameter, not a worker failure
