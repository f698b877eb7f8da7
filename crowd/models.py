"""Topics, their information-need statements and intents, and query variants.

Ids that come from outside (topic ids, intent ids, worker ids) are strings.
"""
from django.db import models


class TopicSet(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Topic(models.Model):
    topic_set = models.ForeignKey(TopicSet, on_delete=models.CASCADE, related_name="topics")
    topic_id = models.CharField(max_length=100)
    title = models.TextField(blank=True, default="")
    description = models.TextField(blank=True, default="")
    narrative = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["topic_set", "topic_id"], name="uniq_topic_in_set"),
        ]
        ordering = ["topic_set", "topic_id"]

    def __str__(self):
        return f"{self.topic_set.name}:{self.topic_id}"


class Statement(models.Model):
    """An information-need statement ("backstory") shown to crowd workers."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="statements")
    position = models.PositiveIntegerField(default=0)
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["topic", "position"], name="uniq_statement_position"),
        ]
        ordering = ["topic", "position"]


class Intent(models.Model):
    """A subtopic of a topic; judgments are made per intent."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="intents")
    intent_id = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    kind = models.CharField(max_length=20, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["topic", "intent_id"], name="uniq_intent_in_topic"),
        ]
        ordering = ["topic", "intent_id"]


class QueryVariant(models.Model):
    """One query a person wrote for a topic: raw text with its normalised form.

    ``count`` is how many times this exact answer was given (imported sets such as UQV100
    carry counts; an answer collected here has count 1). Duplicates are counted, never
    dropped: retrieval runs each distinct normalised text once and weights it by the sum of
    counts.
    """

    SOURCE_CROWD = "crowd"
    SOURCE_IMPORT = "import"
    SOURCE_CHOICES = [(SOURCE_CROWD, "collected here"), (SOURCE_IMPORT, "imported")]

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="variants")
    variant_id = models.CharField(max_length=100, blank=True, default="")
    raw = models.TextField()
    normalised = models.TextField(db_index=False)
    worker_id = models.CharField(max_length=200, blank=True, default="")
    count = models.PositiveIntegerField(default=1)
    estimate = models.CharField(max_length=50, blank=True, default="")
    source = models.CharField(max_length=10, choices=SOURCE_CHOICES, default=SOURCE_IMPORT)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "id"]
        indexes = [models.Index(fields=["topic", "normalised"], name="variant_topic_norm")]
