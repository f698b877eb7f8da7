"""Writes of the job ledger: one reconciler over every registered kind of job.

:func:`reconcile_all` runs when a worker starts, every ``JOB_RECONCILE_SECONDS`` under
celery beat and on demand (``manage.py recover``); each pass is recorded as a
:class:`Reconciliation`, which is how ``jobs --check-beat`` knows beat is alive.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.utils import timezone

from . import leases, registry
from .models import Reconciliation

log = logging.getLogger(__name__)

#: Reconciliation records older than this are deleted by the next pass.
RECONCILIATION_KEEP = timedelta(days=7)


class ReconcileError(RuntimeError):
    """A kind of job could not be reconciled (the others were)."""


def reconcile_all(*, origin: str, wake_after: float | None = None) -> dict[str, leases.Reconciled]:
    """Reconcile every registered kind (:func:`jobs.leases.reconcile`, then the kind's own
    follow-up) and record the pass. Returns the result of each kind by its plural name.

    A kind that raises does not stop the others; its error is recorded and
    :class:`ReconcileError` is raised at the end.
    """
    if origin not in dict(Reconciliation.ORIGIN_CHOICES):
        raise ValueError(f"unknown reconciliation origin {origin!r}")
    record = Reconciliation.objects.create(started=timezone.now(), origin=origin)
    found: dict[str, leases.Reconciled] = {}
    errors: list[str] = []
    for kind in registry.kinds():
        try:
            result = leases.reconcile(
                kind.model, lambda pk, name=kind.name: registry.wake(name, pk),
                wake_after=wake_after)
            kind.reconciled(result)
        except Exception as exc:
            log.exception("reconciling %s", kind.plural)
            errors.append(f"{kind.plural}: {type(exc).__name__}: {exc}")
            continue
        found[kind.plural] = result
    now = timezone.now()
    Reconciliation.objects.filter(pk=record.pk).update(
        finished=now, error="\n".join(errors)[:leases.ERROR_MAX],
        counts={plural: {"requeued": len(r.requeued), "failed": len(r.failed),
                         "woken": len(r.woken)} for plural, r in found.items()})
    Reconciliation.objects.filter(started__lt=now - RECONCILIATION_KEEP).delete()
    if errors:
        raise ReconcileError("; ".join(errors))
    return found
