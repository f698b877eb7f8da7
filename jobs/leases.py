"""Leases on units of work: the database is the ledger, the broker only carries wake-ups.

A unit of work (a retrieval chunk, a pool build, an analysis, an upload; every model
built on :class:`jobs.models.LeasedJob`) is a row with ``status`` (queued,
running, done, failed), ``attempts`` (how often it was claimed), ``holder`` (``host:pid``
of the process working on it), ``lease_expires``, ``woken`` / ``wakeups`` (when a wake-up
message was last sent, and how many were) and ``error``.

- :func:`claim` takes a unit for this process by compare-and-set: a queued unit, or a
  running one whose holder is gone (its lease expired, or it names a process of this host
  that no longer exists). A second delivery of a finished unit, or of one a live process
  holds, claims nothing, so every task is idempotent under duplicate delivery.
- :func:`held` locks the unit's row inside the transaction that commits its result and
  says whether this claim still holds it: a worker whose lease was taken over (expired,
  re-queued, claimed again) discards its result instead of committing it.
- :func:`renewing` renews the lease every third of ``JOB_LEASE_SECONDS`` while the work
  runs, from a thread, so only a dead or stuck holder lets it expire.
- :func:`release` ends a claim that raised: failed with the message, or queued again when
  the caller will retry. Only the holder's own running claim is touched, so a unit that
  another delivery finished (done) never becomes failed.
- :func:`reconcile` re-queues units whose holder is gone, fails them with the reason once
  they were claimed ``JOB_MAX_ATTEMPTS`` times, and wakes queued units whose wake-up
  message is older than ``JOB_WAKEUP_AFTER`` (doubling with each resend): a message lost
  by the broker, or a worker killed mid-task, never leaves work waiting for ever. When a
  worker starts, messages older than a lease are woken again (a worker killed with
  messages reserved leaves them unacknowledged until the broker's visibility timeout).
- :class:`LeasedTask` is the base of a task that works one unit: once its retries are
  exhausted it fails the unit left waiting for them, through the app's own service.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

from celery import Task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
STATUS_CHOICES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]
ERROR_MAX = 5000
WAKEUP_BACKOFF_MAX = 5  # the resend interval doubles at most this many times

# Errors after which a unit's task is retried with backoff (the database went away);
# any other error fails the unit with its message.
TRANSIENT = (OperationalError, InterfaceError)
# Celery options of a task that runs one leased unit (pool build, analysis, upload):
# late acks so a killed worker's message comes back, retries on TRANSIENT, an hour at most.
LEASED_TASK_OPTIONS = dict(
    bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT,
    retry_backoff=5, retry_backoff_max=300, retry_jitter=True, max_retries=5,
    soft_time_limit=55 * 60, time_limit=60 * 60,
)


def failure_sentence(exc: BaseException, *, stopped: str, again: str) -> str:
    """The sentence stored on a failed unit. Our own errors (``ValueError``) already say
    what to change; anything else is unexpected: say what stopped and what to do."""
    if isinstance(exc, ValueError):
        text = str(exc).strip()
        text = text[:1].upper() + text[1:]
        return text if text.endswith((".", "!", "?")) else text + "."
    return (f"{stopped} stopped on an unexpected error ({type(exc).__name__}: {exc}). "
            f"{again}; if it fails the same way, report this message.")


class Holder(str):
    """A claim: the holder name (``host:pid``) and the attempt it was granted as. Threads
    of one process share a name, so the attempt tells a claim from the one that took it
    over."""

    attempt: int

    def __new__(cls, name: str, attempt: int) -> "Holder":
        self = super().__new__(cls, name)
        self.attempt = attempt
        return self


def _mine(model, pk, holder: str):
    """The unit ``pk`` while ``holder`` (and, for a :class:`Holder`, its attempt) runs it."""
    rows = model.objects.filter(pk=pk, holder=holder, status=RUNNING)
    attempt = getattr(holder, "attempt", None)
    return rows if attempt is None else rows.filter(attempts=attempt)


def held(model, pk, holder: str) -> bool:
    """Lock unit ``pk`` and say whether ``holder`` still runs it. Call it inside the
    transaction that commits the unit's result and its done mark: the lock keeps a
    reconciler or another claim from taking the unit over until that commits, so a result
    is committed only while its lease is held, and only once."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("leases.held() locks the row until commit: call it inside "
                           "transaction.atomic()")
    # no ordering: a model ordered by a foreign key would join (and lock) the parent row too
    return bool(list(_mine(model, pk, holder).order_by().select_for_update(of=("self",))
                     .values_list("pk", flat=True)))


def holder_name() -> str:
    """This process as a lease holder: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_dead(holder: str) -> bool:
    """True when ``holder`` names a process of this host that no longer exists.

    A holder on another host is never known dead here: its lease has to expire.
    """
    host, _, pid = holder.rpartition(":")
    if not host or host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # a process of another user has that pid: alive
    try:  # a zombie (killed, not yet reaped by its parent) is dead too
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def lease_seconds() -> int:
    return max(3, int(settings.JOB_LEASE_SECONDS))


def _lost(row: dict, now) -> str:
    """Why the holder of a running unit is gone, or "" when it still holds it."""
    holder = row["holder"] or "an unknown worker"
    if row["holder"] and holder_dead(row["holder"]):
        return f"its worker process {holder} died"
    if row["lease_expires"] is None or row["lease_expires"] < now:
        return (f"the lease of {holder} expired (the worker stopped, was killed or "
                f"passed the task time limit)")
    return ""


def claim(model, pk, *, now=None) -> Holder | None:
    """Take unit ``pk`` of ``model`` for this process; returns the claim (the holder name
    and its attempt), or None when there is nothing to do (finished, failed, held by a
    live process, or given up)."""
    now = now or timezone.now()
    row = (model.objects.filter(pk=pk)
           .values("status", "holder", "lease_expires", "attempts").first())
    if row is None or row["status"] in (DONE, FAILED):
        return None
    if row["status"] == RUNNING:
        reason = _lost(row, now)
        if not reason:
            return None
        if row["attempts"] >= settings.JOB_MAX_ATTEMPTS:
            _give_up(model, pk, row, reason)
            return None
    me = holder_name()
    won = model.objects.filter(
        pk=pk, status=row["status"], holder=row["holder"], attempts=row["attempts"]
    ).update(status=RUNNING, holder=me, attempts=row["attempts"] + 1,
             lease_expires=now + timedelta(seconds=lease_seconds()))
    return Holder(me, row["attempts"] + 1) if won else None


def _give_up(model, pk, row, reason: str) -> bool:
    message = f"failed after {row['attempts']} attempt(s): {reason}"
    return bool(model.objects.filter(
        pk=pk, status=RUNNING, holder=row["holder"], attempts=row["attempts"]
    ).update(status=FAILED, holder="", lease_expires=None, error=message[:ERROR_MAX]))


def renew(model, pk, holder: str) -> bool:
    """Extend the lease; False when this holder no longer holds the unit."""
    until = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(_mine(model, pk, holder).update(lease_expires=until))


class Renewal:
    """Renews a lease from a thread every third of ``JOB_LEASE_SECONDS`` until stopped.

    Inside an open transaction (tests that roll back) no thread starts: a second
    connection would wait on the row our own transaction has locked.
    """

    def __init__(self, model, pk, holder: str):
        self.model, self.pk, self.holder = model, pk, holder
        self._stop = threading.Event()
        self._thread = None

    def start(self) -> "Renewal":
        if not connection.in_atomic_block:
            self._thread = threading.Thread(
                target=self._beat, name=f"lease-{self.model.__name__}-{self.pk}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=lease_seconds() / 3 + 5)

    def _beat(self):
        try:
            while not self._stop.wait(lease_seconds() / 3):
                try:
                    if not renew(self.model, self.pk, self.holder):
                        log.warning("%s %s: lease no longer held by %s",
                                    self.model.__name__, self.pk, self.holder)
                except Exception:  # a database hiccup: try again at the next beat
                    log.exception("renewing the lease of %s %s", self.model.__name__, self.pk)
                    # on a new connection: Django never reopens a dropped one by itself
                    connections.close_all()  # this thread's connections only
        finally:
            connections.close_all()  # this thread's connections only


@contextmanager
def renewing(model, pk, holder: str):
    """Renew the lease while the block runs (see :class:`Renewal`)."""
    renewal = Renewal(model, pk, holder).start()
    try:
        yield
    finally:
        renewal.stop()


def release(model, pk, holder: str, message: str, *, retry: bool) -> bool:
    """End this holder's claim after an error: queued again (``retry``; the caller sends
    the next wake-up) or failed with ``message``. A unit finished meanwhile by another
    delivery, or taken over, is left as it is."""
    now = timezone.now()
    mine = _mine(model, pk, holder)
    if retry:
        return bool(mine.update(status=QUEUED, holder="", lease_expires=None, woken=now,
                                error=f"will retry: {message}"[:ERROR_MAX]))
    return bool(mine.update(status=FAILED, holder="", lease_expires=None,
                            error=message[:ERROR_MAX]))


def fail_waiting(model, pk, message: str) -> bool:
    """Fail a unit that waits for a retry which will not come (retries exhausted)."""
    return bool(model.objects.filter(pk=pk, status=QUEUED)
                .update(status=FAILED, error=message[:ERROR_MAX]))


class LeasedTask(Task):
    """Base of a Celery task that works one unit, given its primary key (first argument,
    or the keyword ``unit_arg``).

    When the task fails for good (its retries on transient errors are exhausted), the
    unit waits queued for a retry that will not come: :meth:`on_failure` fails it by
    calling ``unit_fail(pk, message)``. Any other error was already recorded by the
    service, which failed the unit while it held it; ``unit_fail`` leaves such a unit as
    it is. The app's functions are named by dotted path and imported only on failure
    (``jobs`` never imports the apps built on it): ``unit_fail`` (the app's service,
    e.g. ``"pooling.services.pool_fail"``) and ``unit_failure_message`` (``exc`` -> the
    sentence stored; when empty, ``"<ExceptionType>: <message>"``).
    """

    unit_arg: str = ""
    unit_fail: str = ""
    unit_failure_message: str = ""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        pk = args[0] if args else kwargs.get(self.unit_arg)
        if pk is None:
            return
        fail = import_string(self.unit_fail)
        if self.unit_failure_message:
            message = import_string(self.unit_failure_message)(exc)
        else:
            message = f"{type(exc).__name__}: {exc}"
        fail(pk, message)


@dataclass
class Reconciled:
    """What :func:`reconcile` did, by primary key."""

    requeued: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    woken: list = field(default_factory=list)
    reasons: dict = field(default_factory=dict)

    def __bool__(self):
        return bool(self.requeued or self.failed or self.woken)


def reconcile(model, wake: Callable[[object], None], *, now=None,
              wake_after: float | None = None) -> Reconciled:
    """Re-queue or fail units whose holder is gone and wake queued units whose wake-up is
    older than ``wake_after`` seconds (default ``JOB_WAKEUP_AFTER``, doubling with each
    resend); ``wake(pk)`` sends a wake-up message once this transaction commits. Every
    change is a compare-and-set, so concurrent reconcilers and workers never undo each
    other."""
    now = now or timezone.now()
    done = Reconciled()
    after = timedelta(seconds=max(1.0, float(wake_after or settings.JOB_WAKEUP_AFTER)))
    with transaction.atomic():
        running = model.objects.filter(status=RUNNING).values(
            "pk", "holder", "lease_expires", "attempts")
        for row in running:
            reason = _lost(row, now)
            if not reason:
                continue
            done.reasons[row["pk"]] = reason
            if row["attempts"] >= settings.JOB_MAX_ATTEMPTS:
                if _give_up(model, row["pk"], row, reason):
                    done.failed.append(row["pk"])
                continue
            if model.objects.filter(
                pk=row["pk"], status=RUNNING, holder=row["holder"], attempts=row["attempts"]
            ).update(status=QUEUED, holder="", lease_expires=None, woken=now,
                     error=f"attempt {row['attempts']} lost: {reason}"[:ERROR_MAX]):
                done.requeued.append(row["pk"])
        stale = model.objects.filter(status=QUEUED).filter(
            Q(woken__isnull=True) | Q(woken__lt=now - after)).values("pk", "woken", "wakeups")
        for row in stale:
            wait = after * (2 ** min(row["wakeups"], WAKEUP_BACKOFF_MAX) // 2)
            if row["woken"] is not None and row["woken"] > now - wait:
                continue
            if model.objects.filter(pk=row["pk"], status=QUEUED, woken=row["woken"]).update(
                    woken=now, wakeups=row["wakeups"] + 1):
                done.woken.append(row["pk"])
        for pk in done.requeued + done.woken:
            transaction.on_commit(lambda pk=pk: wake(pk))
    for pk in done.requeued:
        log.warning("%s %s re-queued: %s", model.__name__, pk, done.reasons[pk])
    for pk in done.failed:
        log.error("%s %s failed: %s", model.__name__, pk, done.reasons[pk])
    return done
