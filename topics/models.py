"""Topics, their information-need statements and intents, and query variants.

Ids that come from outside (topic ids, intent ids, worker ids) are strings. The tables keep
the names they had when these models lived in the crowd app (``crowd_topic`` ...).
"""
from django.db import models

from common.naturalsort import natural_sort_key


class TopicSet(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    # Kept by the imports that add topics and statements (topics.services), so pages and the
    # API show the size of a set of a million topics without counting it.
    topics_count = models.PositiveIntegerField(default=0, editable=False)
    statements_count = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        db_table = "crowd_topicset"
        ordering = ["name"]

    def __str__(self):
        return self.name


class TopicQuerySet(models.QuerySet):
    """Topics are created with their :attr:`Topic.sort_key` (derived from the id), and
    their set's :attr:`TopicSet.topics_count` grows, however they are created: ``create``,
    ``get_or_create`` and ``bulk_create`` do both (the importer's own bulk insert does the
    same in SQL)."""

    def create(self, **kwargs):
        if kwargs.get("topic_id") is not None and not kwargs.get("sort_key"):
            kwargs["sort_key"] = natural_sort_key(kwargs["topic_id"])
        topic = super().create(**kwargs)
        TopicSet.objects.filter(pk=topic.topic_set_id).update(
            topics_count=models.F("topics_count") + 1)
        return topic

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        for topic in objs:
            if not topic.sort_key:
                topic.sort_key = natural_sort_key(topic.topic_id)
        done = super().bulk_create(objs, *args, **kwargs)
        per_set: dict[int, int] = {}
        for topic in objs:
            per_set[topic.topic_set_id] = per_set.get(topic.topic_set_id, 0) + 1
        for set_pk, n in per_set.items():
            TopicSet.objects.filter(pk=set_pk).update(topics_count=models.F("topics_count") + n)
        return done


class Topic(models.Model):
    topic_set = models.ForeignKey(TopicSet, on_delete=models.CASCADE, related_name="topics")
    topic_id = models.CharField(max_length=100)
    # common.naturalsort.natural_sort_key(topic_id): the natural order as one string, so
    # pages of a large set are read by keyset (``sort_key > last``) in that order.
    sort_key = models.TextField(editable=False, default="")
    title = models.TextField(blank=True, default="")
    description = models.TextField(blank=True, default="")
    narrative = models.TextField(blank=True, default="")
    # The topic's type where the file gives one (TREC Web track: "faceted", "ambiguous").
    kind = models.CharField(max_length=20, blank=True, default="")

    objects = TopicQuerySet.as_manager()

    class Meta:
        db_table = "crowd_topic"
        constraints = [
            models.UniqueConstraint(fields=["topic_set", "topic_id"], name="uniq_topic_in_set"),
            models.UniqueConstraint(fields=["topic_set", "sort_key"], name="uniq_topic_sort_key"),
        ]
        ordering = ["topic_set", "sort_key"]

    def __str__(self):
        return f"{self.topic_set.name}:{self.topic_id}"


class Statement(models.Model):
    """An information-need statement ("backstory") shown to crowd workers."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="statements")
    position = models.PositiveIntegerField(default=0)
    text = models.TextField()

    class Meta:
        db_table = "crowd_statement"
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
        db_table = "crowd_intent"
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
    # The normalised text before optional spell-correction (topics.spelling); empty when
    # correction was off or changed nothing.
    uncorrected = models.TextField(blank=True, default="")
    worker_id = models.CharField(max_length=200, blank=True, default="")
    count = models.PositiveIntegerField(default=1)
    estimate = models.CharField(max_length=50, blank=True, default="")
    source = models.CharField(max_length=10, choices=SOURCE_CHOICES, default=SOURCE_IMPORT)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "crowd_queryvariant"
        ordering = ["topic", "id"]
        indexes = [models.Index(fields=["topic", "normalised"], name="variant_topic_norm")]
