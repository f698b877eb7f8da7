"""The ledger of analyses run for the evaluation pages."""
from django.db import models

from jobs.models import LeasedJob


class Analysis(LeasedJob):
    """One analysis asked for on a page: its kind and parameters, its state, and its result.

    The row is the ledger (status, lease, attempts, error: :class:`LeasedJob`);
    the Celery message that names it is only a wake-up. ``result`` is the JSON the
    analysis returned, the same the matching command prints with ``--json``.
    """

    KIND_EVALUATE = "evaluate"
    KIND_AGREEMENT = "agreement"
    KIND_INTENTS = "intents"
    KIND_RANK_CORRELATION = "rank_correlation"
    KIND_VARIANCE = "variance"
    KIND_VARIABILITY = "variability"
    KIND_CHOICES = [
        (KIND_EVALUATE, "effectiveness of runs"),
        (KIND_AGREEMENT, "agreement between assessors"),
        (KIND_INTENTS, "intent properties"),
        (KIND_RANK_CORRELATION, "rank correlation of two evaluations"),
        (KIND_VARIANCE, "variance components and allocation"),
        (KIND_VARIABILITY, "user query variability"),
    ]

    kind = models.CharField(max_length=20, choices=KIND_CHOICES)
    params = models.JSONField(default=dict)
    progress = models.FloatField(default=0.0)
    result = models.JSONField(null=True, blank=True)
    created_by = models.CharField(max_length=150, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name_plural = "analyses"

    def __str__(self):
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"
