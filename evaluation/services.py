"""Writes of the evaluation app: analyses recorded, run under a lease, failed, reconciled.

The database is the ledger: an analysis row is written (queued) before its task is
queued, on commit; the task claims the row (:mod:`jobs.leases`) so a duplicate
delivery does nothing, and the row holds the progress, the result or the error. A result
commits only while its claim still holds the lease.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from django.db import transaction
from django.utils import timezone

from jobs import leases, registry

from .models import Analysis
from .reports import COMPUTE

log = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 1.0


def analysis_create(kind: str, params: dict, *, created_by: str = "") -> Analysis:
    """Record an analysis (queued) and wake a worker for it once the row is committed."""
    if kind not in COMPUTE:
        raise ValueError(f"unknown analysis {kind!r} ({', '.join(COMPUTE)})")
    with transaction.atomic():
        analysis = Analysis.objects.create(kind=kind, params=params, created_by=created_by,
                                           woken=timezone.now(), wakeups=1)
        transaction.on_commit(lambda: registry.wake("analysis", analysis.pk))
    return analysis


def analysis_failure_message(exc: BaseException) -> str:
    """The sentence stored on a failed analysis: what went wrong and what to do about it."""
    return leases.failure_sentence(exc, stopped="The analysis", again="Run it again")


def analysis_run(analysis_id: int, *, retry_on: tuple[type[BaseException], ...] = (),
                 compute: Callable[[dict, Callable[[float], None]], dict] | None = None) -> Analysis:
    """Run a recorded analysis and store its result.

    Idempotent under duplicate delivery: an analysis that is done, failed or held by a
    live process is returned untouched, and a finished one never becomes failed. The
    result commits only while this claim holds the lease; a claim that was taken over
    discards it. On an
    error of a type in ``retry_on`` the analysis is queued again (the caller retries); on
    any other it is failed with the message, and the error is raised again.
    """
    holder = leases.claim(Analysis, analysis_id)
    analysis = Analysis.objects.get(pk=analysis_id)
    if holder is None:
        return analysis
    Analysis.objects.filter(pk=analysis_id, holder=holder).update(progress=0.0, started=timezone.now())
    renewal = leases.Renewal(Analysis, analysis_id, holder).start()
    last = [0.0]

    def progress(fraction: float) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS:
            last[0] = now
            Analysis.objects.filter(pk=analysis_id, holder=holder, status=leases.RUNNING).update(
                progress=max(0.0, min(1.0, float(fraction))))

    try:
        result = (compute or COMPUTE[analysis.kind])(analysis.params, progress)
        with transaction.atomic():
            if not leases.held(Analysis, analysis_id, holder):
                # taken over (lease expired, re-queued) or finished by another delivery
                log.warning("analysis %s: lease of %s (attempt %s) was taken over; result "
                            "discarded", analysis_id, holder, holder.attempt)
                return Analysis.objects.get(pk=analysis_id)
            Analysis.objects.filter(pk=analysis_id).update(
                status=leases.DONE, progress=1.0, result=result, error="", holder="",
                lease_expires=None, finished=timezone.now())
    except BaseException as exc:
        retry = isinstance(exc, retry_on)
        if leases.release(Analysis, analysis_id, holder, analysis_failure_message(exc), retry=retry) \
                and not retry:
            Analysis.objects.filter(pk=analysis_id).update(finished=timezone.now())
        if not isinstance(exc, ValueError):
            log.exception("analysis %s failed", analysis_id)
        raise
    finally:
        renewal.stop()
    analysis.refresh_from_db()
    return analysis


def analysis_fail(analysis_id: int, message: str) -> None:
    """Fail an analysis whose retries are exhausted (it waits queued for a retry that will
    not come); a finished or running analysis is left as it is."""
    if leases.fail_waiting(Analysis, analysis_id, message):
        Analysis.objects.filter(pk=analysis_id).update(finished=timezone.now())


def analyses_reconciled(result: leases.Reconciled) -> None:
    """After a reconciliation of the analyses: one it failed gets its finish time."""
    if result.failed:
        Analysis.objects.filter(pk__in=result.failed).update(finished=timezone.now())
