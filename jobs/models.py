"""The job ledger: the lease fields every unit of background work shares, and a record of
each reconciliation (so whether beat is alive can be read from the database)."""
from django.db import models

from .leases import QUEUED, STATUS_CHOICES


class LeasedJob(models.Model):
    """A unit of background work: the row is the ledger, a Celery message only a wake-up.

    ``status`` (queued, running, done, failed), ``attempts`` (claims so far), ``holder``
    (``host:pid`` of the process working on it) and ``lease_expires``, ``woken`` /
    ``wakeups`` (the last wake-up message and how many were sent) and the last ``error``;
    :mod:`jobs.leases` claims, renews, releases and reconciles them. Retrieval chunks,
    pool builds, analyses and uploads are built on it (their columns predate it and are
    unchanged).
    """

    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    holder = models.CharField(max_length=300, blank=True, default="")
    lease_expires = models.DateTimeField(null=True, blank=True)
    woken = models.DateTimeField(null=True, blank=True)
    wakeups = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")

    class Meta:
        abstract = True


class Reconciliation(models.Model):
    """One pass of :func:`jobs.services.reconcile_all`: when, asked by whom, what it did.

    ``counts`` maps each job kind to ``{"requeued": n, "failed": n, "woken": n}``;
    ``error`` is set when a kind could not be reconciled. ``manage.py jobs --check-beat``
    reads the newest scheduled one.
    """

    ORIGIN_BEAT = "beat"
    ORIGIN_START = "start"
    ORIGIN_COMMAND = "command"
    ORIGIN_CHOICES = [(ORIGIN_BEAT, "scheduled (celery beat)"),
                      (ORIGIN_START, "a worker started"),
                      (ORIGIN_COMMAND, "manage.py recover")]

    started = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)
    origin = models.CharField(max_length=10, choices=ORIGIN_CHOICES)
    counts = models.JSONField(default=dict)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started", "-id"]
        indexes = [models.Index(fields=["origin", "started"], name="reconciliation_origin")]

    def __str__(self):
        return f"reconciliation {self.pk} ({self.origin}, {self.started:%Y-%m-%d %H:%M:%S})"
