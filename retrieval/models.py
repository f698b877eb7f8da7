"""Collections, retrieval models, rankings and runs.

Rankings are stored compactly: one row per ranking with two packed little-endian arrays
(``docids``: int32 ids into :class:`Docid`; ``scores``: float64), never one row per
ranked entry. UQV100 scale (≈22M ranked entries) is ≈22k rows of ≈12 KB.
"""
from django.db import models

from jobs.models import LeasedJob


class Collection(models.Model):
    FORMAT_CHOICES = [("jsonl", "JSON lines"), ("trec", "TREC SGML"), ("smart", "SMART tagged")]
    STATUS_CHOICES = [
        ("indexing", "indexing"),
        ("ready", "ready"),
        ("failed", "failed"),
    ]

    name = models.CharField(max_length=100, unique=True)
    format = models.CharField(max_length=10, choices=FORMAT_CHOICES)
    source_path = models.TextField()
    index_path = models.TextField(blank=True, default="")
    doc_count = models.PositiveIntegerField(default=0)
    anserini_version = models.CharField(max_length=50, blank=True, default="")
    analyzer = models.CharField(max_length=200, blank=True, default="")
    checksum = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default="indexing")
    error = models.TextField(blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Docid(models.Model):
    """Vocabulary of external document ids; rankings store these integer ids."""

    id = models.AutoField(primary_key=True)  # int32: rankings pack ids as int32
    docid = models.CharField(max_length=255, unique=True)


class RetrievalModel(models.Model):
    """A retrieval model with its parameters (BM25, QL with Dirichlet smoothing, SDM)."""

    KIND_CHOICES = [("bm25", "BM25"), ("qld", "QL, Dirichlet"), ("sdm", "SDM")]
    BASE_CHOICES = [("bm25", "BM25"), ("qld", "QL, Dirichlet")]

    name = models.CharField(max_length=50, unique=True)
    kind = models.CharField(max_length=10, choices=KIND_CHOICES)
    k1 = models.FloatField(default=0.9)
    b = models.FloatField(default=0.4)
    mu = models.FloatField(default=1000.0)
    sdm_base = models.CharField(max_length=10, choices=BASE_CHOICES, default="bm25")
    term_weight = models.FloatField(default=0.85)
    ordered_weight = models.FloatField(default=0.1)
    unordered_weight = models.FloatField(default=0.05)
    description = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Ranking(models.Model):
    """One ranked list, shared by every query whose retrieval key is the same.

    ``key`` identifies (collection, model parameters, normalised query) for retrieved
    rankings, so an identical variant is retrieved once; system-run rankings have no key.
    """

    key = models.CharField(max_length=64, unique=True, null=True, blank=True)
    collection = models.ForeignKey(Collection, null=True, blank=True, on_delete=models.CASCADE)
    model = models.ForeignKey(RetrievalModel, null=True, blank=True, on_delete=models.PROTECT)
    query_text = models.TextField(blank=True, default="")
    depth = models.PositiveIntegerField(default=0)
    length = models.PositiveIntegerField(default=0)
    docids = models.BinaryField()
    scores = models.BinaryField()
    empty_reason = models.TextField(blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)


class Run(models.Model):
    """A set of rankings for a topic set: retrieved (collection + model) or imported."""

    KIND_RETRIEVAL = "retrieval"
    KIND_SYSTEM = "system"
    KIND_CHOICES = [(KIND_RETRIEVAL, "retrieved here"), (KIND_SYSTEM, "imported system run")]
    SOURCE_CHOICES = [
        ("titles", "topic titles"),
        ("descriptions", "topic descriptions"),
        ("variants", "user query variants"),
        ("system", "system run"),
    ]
    STATUS_CHOICES = [
        ("queued", "queued"),
        ("running", "running"),
        ("done", "done"),
        ("failed", "failed"),
    ]

    kind = models.CharField(max_length=10, choices=KIND_CHOICES)
    topic_set = models.ForeignKey("topics.TopicSet", on_delete=models.CASCADE, related_name="runs")
    collection = models.ForeignKey(Collection, null=True, blank=True, on_delete=models.CASCADE)
    model = models.ForeignKey(RetrievalModel, null=True, blank=True, on_delete=models.PROTECT)
    source = models.CharField(max_length=20, choices=SOURCE_CHOICES)
    tag = models.CharField(max_length=100, blank=True, default="")
    depth = models.PositiveIntegerField(default=1000)
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default="queued")
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    tasks_total = models.PositiveIntegerField(default=0)
    tasks_done = models.PositiveIntegerField(default=0)
    tasks_failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]


class RunQuery(models.Model):
    """One query of a run (a title, a description, a distinct user variant, or a topic of a
    system run) and the ranking it got. ``weight`` counts the people who typed it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="queries")
    topic = models.ForeignKey("topics.Topic", on_delete=models.CASCADE)
    label = models.CharField(max_length=200)
    query_text = models.TextField(blank=True, default="")
    key = models.CharField(max_length=64, blank=True, default="")
    weight = models.PositiveIntegerField(default=1)
    users = models.TextField(blank=True, default="")
    note = models.TextField(blank=True, default="")  # e.g. why the text was truncated
    ranking = models.ForeignKey(Ranking, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "topic", "label"], name="uniq_runquery"),
        ]
        indexes = [
            models.Index(fields=["run", "key"], name="runquery_run_key"),
            models.Index(fields=["key"], name="runquery_key"),  # queries waiting on a ranking
        ]


class RunChunk(LeasedJob):
    """A unit of retrieval work: up to ``RETRIEVAL_CHUNK_SIZE`` ranking keys of a run.

    The row is the ledger (status, lease, attempts, last error: :class:`LeasedJob`,
    :mod:`jobs.leases`); the Celery message that names it is only a wake-up. A run's
    progress and status are recounted from its chunks and queries, never incremented.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    keys = models.JSONField(default=list)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="uniq_runchunk"),
        ]
        indexes = [models.Index(fields=["status", "lease_expires"], name="runchunk_status")]
