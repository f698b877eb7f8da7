"""Reads of the job ledger: is the scheduled reconciler (celery beat) alive?"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from .models import Reconciliation

#: Beat counts as gone once its newest pass is older than this many intervals.
BEAT_LATE_INTERVALS = 3


def reconcile_interval() -> float:
    """Seconds between scheduled reconciliations (``JOB_RECONCILE_SECONDS``)."""
    return max(1.0, float(settings.JOB_RECONCILE_SECONDS))


@dataclass(frozen=True)
class BeatState:
    alive: bool
    message: str


def beat_state(now=None) -> BeatState:
    """Whether a scheduled reconciliation started within the last
    ``BEAT_LATE_INTERVALS`` × ``JOB_RECONCILE_SECONDS``, with a sentence saying so."""
    now = now or timezone.now()
    interval = reconcile_interval()
    last = (Reconciliation.objects.filter(origin=Reconciliation.ORIGIN_BEAT)
            .order_by("-started").values("started", "finished", "error").first())
    start_beat = "start it with `celery -A config beat` (bin/serve and docker/compose.yml run it)"
    if last is None:
        return BeatState(False, "beat has never run a scheduled reconciliation: " + start_beat)
    age = (now - last["started"]).total_seconds()
    limit = BEAT_LATE_INTERVALS * interval
    if age > limit:
        return BeatState(False, (
            f"beat is not running: the last scheduled reconciliation started {age:.0f} s ago "
            f"({last['started']:%Y-%m-%d %H:%M:%S} UTC), more than {BEAT_LATE_INTERVALS} × "
            f"JOB_RECONCILE_SECONDS={interval:g} s; {start_beat}, and check that a worker "
            f"listens on the default queue"))
    note = f"; it reported: {last['error']}" if last["error"] else ""
    return BeatState(True, f"beat is alive: the last scheduled reconciliation started "
                           f"{age:.0f} s ago (every {interval:g} s){note}")
