"""Reads of topics, their statements and intents, and query variants."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.db.models import Count, F, Max, Min, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from common.naturalsort import natural_key, natural_sort_key
from common.spreadsheet import spreadsheet_writer
from topics.models import Intent, QueryVariant, Statement, Topic, TopicSet


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
    """Every topic set with its number of topics (stored: a set of a million topics is not
    counted on each page) and of answers (sum of variant counts)."""
    return TopicSet.objects.annotate(
        n_topics=F("topics_count"),
        n_answers=Coalesce(Subquery(
            QueryVariant.objects.filter(topic__topic_set=OuterRef("pk")).order_by()
            .values("topic__topic_set").annotate(n=Sum("count")).values("n")[:1]
        ), 0),
    ).order_by("name")


def topic_sets_holding(topic_ids) -> list[TopicSet]:
    """The topic sets that hold every one of ``topic_ids`` (none for no ids), by name: how
    an imported file with no topic set named finds the set it judges."""
    ids = {str(t) for t in topic_ids}
    if not ids:
        return []
    counts: dict[int, int] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), 1000):  # bounded query parameters
        for row in (Topic.objects.filter(topic_id__in=ordered[start:start + 1000]).order_by()
                    .values("topic_set").annotate(n=Count("pk"))):
            counts[row["topic_set"]] = counts.get(row["topic_set"], 0) + row["n"]
    held = [pk for pk, n in counts.items() if n == len(ids)]
    return list(TopicSet.objects.filter(pk__in=held).order_by("name"))


#: Topics on one page of the topic set page.
TOPIC_PAGE_SIZE = 100


def _count_of(model, **filters):
    return Coalesce(Subquery(
        model.objects.filter(**filters).order_by().values("topic").annotate(n=Count("pk"))
        .values("n")[:1]
    ), 0)


def topic_page(topic_set: TopicSet, *, after: str | None = None,
               size: int | None = None) -> tuple[list[Topic], str | None]:
    """One page of the topics of a set in natural topic-id order, each with
    ``n_statements``, ``n_intents`` and ``n_answers`` (sum of its variants' counts).

    Keyset pagination: the page starts after the topic id ``after`` (which need not be in
    the set), so the thousandth page costs what the first does. Returns the topics and the
    id to give as ``after`` for the next page, or None on the last page.
    """
    size = size or TOPIC_PAGE_SIZE
    topics = Topic.objects.filter(topic_set=topic_set)
    if after:
        topics = topics.filter(sort_key__gt=natural_sort_key(after))
    rows = list(topics.order_by("sort_key").annotate(
        n_statements=_count_of(Statement, topic=OuterRef("pk")),
        n_intents=_count_of(Intent, topic=OuterRef("pk")),
        n_answers=Coalesce(Subquery(
            QueryVariant.objects.filter(topic=OuterRef("pk")).order_by().values("topic")
            .annotate(n=Sum("count")).values("n")[:1]
        ), 0),
    )[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return rows, (rows[-1].topic_id if more else None)


def topic_list(topic_set_name: str) -> list[Topic]:
    """Topics of a set in natural topic-id order, with statements and intents prefetched
    (every topic: for the services that need them all; pages use :func:`topic_page`)."""
    return list(
        Topic.objects.filter(topic_set__name=topic_set_name).order_by("sort_key")
        .prefetch_related("statements", "intents")
    )


def topic_get(topic_set: TopicSet, topic_id: str) -> Topic:
    """One topic with statements and intents, or a ValueError naming it."""
    topic = (Topic.objects.filter(topic_set=topic_set, topic_id=topic_id)
             .prefetch_related("statements", "intents").first())
    if topic is None:
        raise ValueError(f"topic set {topic_set.name!r} has no topic {topic_id!r}")
    return topic


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

    The number of topics is the set's stored one; the rest is counted
    in the database (a few aggregate queries over the set's variants, nothing per topic
    in Python).
    """
    topic_set = TopicSet.objects.filter(name=topic_set_name).first()
    n_topics = topic_set.topics_count if topic_set else 0
    variants = QueryVariant.objects.filter(topic__topic_set=topic_set)
    per_topic = variants.values("topic").annotate(n=Sum("count")).order_by()
    spread = per_topic.aggregate(low=Min("n"), high=Max("n"), with_answers=Count("topic"))
    raw = variants.aggregate(n=Sum("count"))["n"] or 0
    return {
        "topics": n_topics,
        "raw_variants": raw,
        "unique_variants": variants.values("topic", "normalised").order_by().distinct().count(),
        "workers": variants.exclude(worker_id="").values("worker_id").order_by()
        .distinct().count(),
        "per_topic": {
            "min": (spread["low"] or 0) if spread["with_answers"] >= n_topics else 0,
            "mean": raw / n_topics if n_topics else 0.0,
            "max": spread["high"] or 0,
        },
    }


# "uncorrected": the normalised text before optional spell-correction ("" if none).
VARIANT_EXPORT_FIELDS = ["topic", "variant_id", "worker", "raw", "normalised", "count",
                         "estimate", "uncorrected"]
VARIANT_EXPORT_FORMATS = ("tsv", "csv", "json", "queries")

_BREAKS = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


def _one_line(value) -> str:
    return str(value).translate(_BREAKS)


def variants_write(fh, topic_set_name: str, fmt: str) -> int:
    """Write every variant of the set to ``fh`` as ``fmt`` (one of
    :data:`VARIANT_EXPORT_FORMATS`; see the ``export_variants`` command for the columns);
    returns the number of lines (``queries``) or rows written."""
    if fmt not in VARIANT_EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(VARIANT_EXPORT_FORMATS)}, not {fmt!r}")
    if fmt == "queries":
        groups = variant_groups(topic_set_name)
        for g in groups:
            fh.write(f"{g.topic_id}/{g.label}\t{g.normalised}\n")
        return len(groups)
    rows = [
        [v.topic.topic_id, v.variant_id, v.worker_id, v.raw, v.normalised, v.count, v.estimate,
         v.uncorrected]
        for v in variant_list_by_topic(topic_set_name)
    ]
    columns = VARIANT_EXPORT_FIELDS  # a study's export adds "simulated"
    if fmt == "json":
        records = [dict(zip(columns, r)) for r in rows]
        fh.write(json.dumps(records, ensure_ascii=False, indent=1) + "\n")
    elif fmt == "csv":
        writer = spreadsheet_writer(fh, columns)
        writer.writeheader()
        writer.writerows(rows)
    else:
        fh.write("\t".join(columns) + "\n")
        for r in rows:
            fh.write("\t".join(_one_line(c) for c in r) + "\n")
    return len(rows)
