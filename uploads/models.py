"""A file an organiser uploaded, recorded before its import is queued: the ledger of the
background import (status, lease, attempts, error: jobs.models.LeasedJob), read by the progress page."""
from django.db import models

from jobs.models import LeasedJob


class Upload(LeasedJob):
    KIND_CHOICES = [("topics", "topics"), ("variants", "query variants"), ("run", "system run"),
                    ("qrels", "qrels"), ("collection", "collection")]

    kind = models.CharField(max_length=20, choices=KIND_CHOICES)
    params = models.JSONField(default=dict)
    filename = models.CharField(max_length=255)
    path = models.TextField(help_text="where the file waits for its import")
    size = models.PositiveBigIntegerField(default=0)
    progress = models.FloatField(default=0.0)
    note = models.TextField(blank=True, default="", help_text="the import's latest step")
    result = models.JSONField(null=True, blank=True)
    created_by = models.CharField(max_length=150, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["status", "lease_expires"], name="upload_status")]

    def __str__(self):
        return f"upload {self.pk} ({self.kind}: {self.filename})"
