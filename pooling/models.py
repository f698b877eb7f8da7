"""Pools of documents to judge. (Imported relevance judgments, qrels, are judgment sets of
the judging app: the pooling analyses take them as plain records.)

Pooled documents are stored compactly: one :class:`PoolTopic` row per pool and topic with
packed little-endian arrays in priority order (``docids``: int32 ids into the retrieval
docid vocabulary; ``weights``: float64; ``min_rank``, ``users``, ``systems``: int32), never
one row per document — a depth-1000 pool over 10k variants holds millions of documents.

A pool records the runs it was built from (:class:`PoolRun`) when it is created; nothing
it builds or replays looks up "the newest run" again.
"""
from django.db import models

from jobs.models import LeasedJob


class Pool(LeasedJob):
    """A pool built from the stored rankings of a topic set."""

    SOURCES_USERS = "users"
    SOURCES_SYSTEMS = "systems"
    SOURCES_COMBINED = "combined"
    SOURCES_CHOICES = [
        (SOURCES_USERS, "user query variants"),
        (SOURCES_SYSTEMS, "system runs"),
        (SOURCES_COMBINED, "users and systems"),
    ]
    STRATEGY_CHOICES = [("depth", "depth-d union"), ("rbp", "RBP-weighted priority")]
    SCOPE_CHOICES = [("topic", "per topic"), ("global", "over all topics")]
    STATUS_QUEUED = "queued"
    STATUS_RUNNING = "running"
    STATUS_DONE = "done"
    STATUS_FAILED = "failed"
    STATUS_CHOICES = [
        (STATUS_QUEUED, "queued"),
        (STATUS_RUNNING, "running"),
        (STATUS_DONE, "done"),
        (STATUS_FAILED, "failed"),
    ]

    name = models.CharField(max_length=100, unique=True, null=True, blank=True)
    topic_set = models.ForeignKey("topics.TopicSet", on_delete=models.CASCADE, related_name="pools")
    sources = models.CharField(max_length=10, choices=SOURCES_CHOICES)
    strategy = models.CharField(max_length=10, choices=STRATEGY_CHOICES, default="depth")
    depth = models.PositiveIntegerField()
    p = models.FloatField(default=0.95)
    budget = models.PositiveIntegerField(null=True, blank=True)
    budget_scope = models.CharField(max_length=10, choices=SCOPE_CHOICES, default="topic")
    collection = models.ForeignKey(
        "retrieval.Collection", null=True, blank=True, on_delete=models.PROTECT
    )
    model = models.ForeignKey(
        "retrieval.RetrievalModel", null=True, blank=True, on_delete=models.PROTECT
    )
    # The runs whose rankings build the pool, fixed when it is created: its build, the
    # judging orders that replay its rankings and its analyses read exactly these.
    runs = models.ManyToManyField("retrieval.Run", through="PoolRun", related_name="pools",
                                  blank=True)
    # status, error and the build's lease: LeasedJob (the row is the ledger, a message a
    # wake-up; see jobs.leases)
    progress = models.FloatField(default=0.0)
    topics_count = models.PositiveIntegerField(default=0)
    documents_count = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return self.label

    @property
    def label(self) -> str:
        """The name given to the pool, else ``pool-<id>``."""
        return self.name or f"pool-{self.pk}"


class PoolRun(models.Model):
    """A run a pool was built from. A run in a pool cannot be deleted on its own (the pool
    could no longer be rebuilt or replayed); it goes with its pool or topic set."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="pool_runs")
    run = models.ForeignKey("retrieval.Run", on_delete=models.RESTRICT, related_name="pool_runs")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "run"], name="uniq_pool_run"),
        ]
        ordering = ["pool", "run"]


class PoolTopic(models.Model):
    """The documents of one topic of a pool, in priority order, as packed arrays."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="topics")
    topic_id = models.CharField(max_length=100)
    size = models.PositiveIntegerField(default=0)
    docids = models.BinaryField()
    weights = models.BinaryField()
    min_rank = models.BinaryField()
    users = models.BinaryField()
    systems = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "topic_id"], name="uniq_pool_topic"),
        ]
        ordering = ["pool", "topic_id"]
