"""Reads of topics, their statements and intents, and query variants."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db.models import Count, OuterRef, QuerySet, Subquery, Sum

from crowd.models import QueryVariant, Topic, TopicSet
from crowd.naturalsort import natural_key


@dataclass(frozen=True)
class VariantGroup:
    """One distinct normalised query of a topic.

    ``count`` sums the counts of every answer with this normalised text; ``worker_ids``
    are the distinct non-empty worker ids that gave it, sorted; ``first_variant_id`` is
    the variant id of the earliest stored answer (may be empty); ``label`` is
    :func:`variant_label` of the normalised text.
    """

    topic_id: str
    normalised: str
    count: int
    worker_ids: tuple[str, ...]
    first_variant_id: str
    label: str


def variant_label(normalised: str) -> str:
    """A stable label for a distinct normalised query: ``v`` + 10 hex digits of its SHA-1.

    It depends only on the text, so adding or removing other variants never relabels a
    query, and runs made earlier keep their query ids.
    """
    return "v" + hashlib.sha1(normalised.encode("utf-8")).hexdigest()[:10]


def topic_set_get(topic_set_name: str) -> TopicSet:
    """The topic set of that name, or a ValueError naming the known sets."""
    try:
        return TopicSet.objects.get(name=topic_set_name)
    except TopicSet.DoesNotExist:
        known = ", ".join(TopicSet.objects.values_list("name", flat=True)[:20]) or "none"
        raise ValueError(f"no topic set named {topic_set_name!r} (known: {known})") from None


def topic_set_list() -> QuerySet[TopicSet]:
    """Every topic set with its number of topics and of answers (sum of variant counts)."""
    return TopicSet.objects.annotate(
        n_topics=Count("topics", distinct=True),
        n_answers=Subquery(
            QueryVariant.objects.filter(topic__topic_set=OuterRef("pk"))
            .values("topic__topic_set").annotate(n=Sum("count")).values("n")[:1]
        ),
    ).order_by("name")


def topic_summary_list(topic_set: TopicSet) -> list[Topic]:
    """The topics of a set in natural topic-id order, each with ``n_statements``,
    ``n_intents`` and ``n_answers`` (sum of its variants' counts)."""
    topics = list(
        Topic.objects.filter(topic_set=topic_set).annotate(
            n_statements=Count("statements", distinct=True),
            n_intents=Count("intents", distinct=True),
            n_answers=Subquery(
                QueryVariant.objects.filter(topic=OuterRef("pk")).values("topic")
                .annotate(n=Sum("count")).values("n")[:1]
            ),
        )
    )
    topics.sort(key=lambda t: natural_key(t.topic_id))
    return topics


def topic_list(topic_set_name: str) -> list[Topic]:
    """Topics of a set in natural topic-id order, with statements and intents prefetched."""
    topics = list(
        Topic.objects.filter(topic_set__name=topic_set_name)
        .prefetch_related("statements", "intents")
    )
    topics.sort(key=lambda t: natural_key(t.topic_id))
    return topics


def variant_list(topic_set_name: str) -> QuerySet[QueryVariant]:
    """Every query variant of a set in the order stored (a query set, for streaming);
    :func:`variant_list_by_topic` gives them in natural topic-id order."""
    return (
        QueryVariant.objects.filter(topic__topic_set__name=topic_set_name)
        .select_related("topic")
        .order_by("id")
    )


def variant_list_by_topic(topic_set_name: str) -> list[QueryVariant]:
    """Every query variant of a set, in natural topic-id order, then the order stored."""
    variants = list(variant_list(topic_set_name))
    variants.sort(key=lambda v: natural_key(v.topic.topic_id))  # stable: keeps id order
    return variants


def variant_groups(topic_set_name: str) -> list[VariantGroup]:
    """Per topic, the distinct normalised queries with summed counts (one SQL query).

    Ordered by topic id (natural order), then most frequent first, ties by normalised text.
    """
    rows = (
        QueryVariant.objects.filter(topic__topic_set__name=topic_set_name)
        .order_by("id")
        .values_list("topic__topic_id", "normalised", "count", "worker_id", "variant_id")
    )
    groups: dict[tuple[str, str], list] = {}
    for topic_id, normalised, count, worker_id, variant_id in rows.iterator(chunk_size=5000):
        group = groups.get((topic_id, normalised))
        if group is None:
            group = groups[(topic_id, normalised)] = [0, set(), variant_id]
        group[0] += count
        if worker_id:
            group[1].add(worker_id)
    result = [
        VariantGroup(
            topic_id=topic_id,
            normalised=normalised,
            count=count,
            worker_ids=tuple(sorted(workers)),
            first_variant_id=first,
            label=variant_label(normalised),
        )
        for (topic_id, normalised), (count, workers, first) in groups.items()
    ]
    result.sort(key=lambda g: (natural_key(g.topic_id), -g.count, g.normalised))
    return result


def variant_stats(topic_set_name: str) -> dict:
    """Counts for a topic set.

    - ``topics``: topics in the set (with or without variants);
    - ``raw_variants``: every answer including repeats, i.e. the sum of counts;
    - ``unique_variants``: distinct normalised texts per topic, summed over topics;
    - ``workers``: distinct non-empty worker ids;
    - ``per_topic``: min, mean and max of raw answers (sum of counts) per topic, over every
      topic of the set (a topic without variants counts 0); all 0 for an empty set.
    """
    per_topic = dict.fromkeys(
        Topic.objects.filter(topic_set__name=topic_set_name).values_list("topic_id", flat=True),
        0,
    )
    unique: set[tuple[str, str]] = set()
    workers: set[str] = set()
    rows = QueryVariant.objects.filter(topic__topic_set__name=topic_set_name).values_list(
        "topic__topic_id", "normalised", "count", "worker_id"
    )
    for topic_id, normalised, count, worker_id in rows.iterator(chunk_size=5000):
        per_topic[topic_id] += count
        unique.add((topic_id, normalised))
        if worker_id:
            workers.add(worker_id)
    answers = list(per_topic.values())
    return {
        "topics": len(per_topic),
        "raw_variants": sum(answers),
        "unique_variants": len(unique),
        "workers": len(workers),
        "per_topic": {
            "min": min(answers, default=0),
            "mean": sum(answers) / len(answers) if answers else 0.0,
            "max": max(answers, default=0),
        },
    }
