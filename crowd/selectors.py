"""Reads for the crowd app."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db.models import QuerySet

from crowd.models import QueryVariant, Topic, TopicSet

# --- topics and variants ---------------------------------------------------------------


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


def topic_list(topic_set_name: str) -> QuerySet[Topic]:
    """Topics of a set, by topic id, with statements and intents prefetched."""
    return (
        Topic.objects.filter(topic_set__name=topic_set_name)
        .order_by("topic_id")
        .prefetch_related("statements", "intents")
    )


def variant_list(topic_set_name: str) -> QuerySet[QueryVariant]:
    """Every query variant of a set, ordered by topic id, then the order stored."""
    return (
        QueryVariant.objects.filter(topic__topic_set__name=topic_set_name)
        .select_related("topic")
        .order_by("topic__topic_id", "id")
    )


def variant_groups(topic_set_name: str) -> list[VariantGroup]:
    """Per topic, the distinct normalised queries with summed counts (one SQL query).

    Ordered by topic id, then most frequent first, ties by normalised text.
    """
    rows = (
        QueryVariant.objects.filter(topic__topic_set__name=topic_set_name)
        .order_by("topic__topic_id", "id")
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
    result.sort(key=lambda g: (g.topic_id, -g.count, g.normalised))
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


# --- end of topics and variants ---


# --- studies ---
import statistics as _statistics  # noqa: E402
from datetime import timedelta as _timedelta  # noqa: E402

from django.db.models import Count as _Count, Q as _Q  # noqa: E402
from django.shortcuts import get_object_or_404 as _get_object_or_404  # noqa: E402
from django.utils import timezone as _timezone  # noqa: E402

from crowd.models import (  # noqa: E402
    Assignment as _Assignment,
    Participant as _Participant,
    Response as _Response,
    Study as _Study,
    StudyItem as _StudyItem,
)
from crowd.normalise import normalise_query as _normalise_query  # noqa: E402


def study_get_by_slug(slug: str) -> _Study:
    """The study behind a public entry URL, or 404."""
    return _get_object_or_404(_Study, slug=slug)


def participant_get_for_session(*, slug: str, participant_id, token: str) -> _Participant:
    """The participant this browser session holds, or 404 (never another worker's)."""
    return _get_object_or_404(
        _Participant.objects.select_related("study"),
        pk=participant_id, study__slug=slug, session_token=token,
    )


def participant_assignment_list(participant: _Participant) -> list[_Assignment]:
    """The participant's items in presentation order, each with its response if any."""
    return list(
        _Assignment.objects.filter(participant=participant)
        .select_related("item__statement", "response")
        .order_by("position")
    )


def participant_next_position(participant: _Participant) -> int | None:
    """Position of the first unanswered item, or None when all are answered."""
    return (
        _Assignment.objects.filter(participant=participant, response__isnull=True)
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )


def study_item_load(study: _Study, *, now=None) -> dict[str, int]:
    """Statement item id -> answers given plus assignments in flight (one query).

    Counted: answers of workers who have not failed, and unanswered assignments of
    workers still answering that are younger than the study's assignment timeout.
    Gold items and attention checks go to every worker and are not counted.
    """
    now = now or _timezone.now()
    cutoff = now - _timedelta(minutes=study.assignment_timeout_minutes)
    live = [_Participant.STATUS_ACTIVE, _Participant.STATUS_COMPLETED]
    rows = (
        _StudyItem.objects.filter(study=study, kind=_StudyItem.KIND_STATEMENT)
        .annotate(
            load=_Count(
                "assignments",
                filter=_Q(assignments__participant__status__in=live)
                & (_Q(assignments__response__isnull=False) | _Q(assignments__assigned__gte=cutoff)),
            )
        )
        .values_list("pk", "load")
    )
    return {str(pk): load for pk, load in rows}


def study_list():
    return _Study.objects.select_related("topic_set").annotate(
        n_participants=_Count("participants", distinct=True)
    )


def study_progress(study: _Study) -> dict:
    """Responses per item, workers by status and the median seconds per answer."""
    now = _timezone.now()
    cutoff = now - _timedelta(minutes=study.assignment_timeout_minutes)
    items = list(
        _StudyItem.objects.filter(study=study)
        .select_related("statement__topic")
        .annotate(
            n_answers=_Count(
                "assignments",
                filter=_Q(assignments__response__isnull=False)
                & ~_Q(assignments__participant__status=_Participant.STATUS_FAILED),
            ),
            n_in_flight=_Count(
                "assignments",
                filter=_Q(assignments__response__isnull=True)
                & _Q(assignments__participant__status=_Participant.STATUS_ACTIVE)
                & _Q(assignments__assigned__gte=cutoff),
            ),
            n_too_fast=_Count("assignments", filter=_Q(assignments__response__too_fast=True)),
        )
        .order_by("kind", "statement__topic__topic_id", "statement__position", "id")
    )
    statuses = dict(
        _Participant.objects.filter(study=study)
        .values_list("status")
        .annotate(n=_Count("id"))
        .values_list("status", "n")
    )
    seconds = list(
        _Response.objects.filter(assignment__participant__study=study, seconds__isnull=False)
        .values_list("seconds", flat=True)
    )
    return {
        "items": items,
        "statuses": {code: statuses.get(code, 0) for code, _ in _Participant.STATUS_CHOICES},
        "n_workers": sum(statuses.values()),
        "n_answers": len(seconds),
        "median_seconds": _statistics.median(seconds) if seconds else None,
    }


def study_variant_summary(study: _Study) -> list[dict]:
    """Per topic: distinct normalised variants with counts, and the share equal to the title.

    ``title_share`` = answers whose normalised text equals the normalised topic title,
    divided by all answers for the topic (counts summed).
    """
    rows = (
        _Response.objects.filter(assignment__participant__study=study, variant__isnull=False)
        .values_list(
            "variant__topic__topic_id", "variant__topic__title", "normalised", "raw",
            "variant__count",
        )
        .order_by("variant__topic__topic_id")
    )
    topics: dict[str, dict] = {}
    for topic_id, title, norm, raw, count in rows:
        t = topics.setdefault(
            topic_id,
            {"topic_id": topic_id, "title": title, "title_norm": _normalise_query(title),
             "counts": {}, "raws": {}, "total": 0, "title_matches": 0},
        )
        t["counts"][norm] = t["counts"].get(norm, 0) + count
        t["raws"].setdefault(norm, set()).add(raw)
        t["total"] += count
        if norm == t["title_norm"]:
            t["title_matches"] += count
    out = []
    for t in topics.values():
        raws = t.pop("raws")
        t["variants"] = [
            (norm, n, sorted(raws[norm]))
            for norm, n in sorted(t.pop("counts").items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        t["title_share"] = t["title_matches"] / t["total"] if t["total"] else 0.0
        out.append(t)
    return out


# "uncorrected": the normalised text before optional spell-correction ("" if none).
STUDY_EXPORT_FIELDS = ["topic", "variant_id", "worker", "raw", "normalised", "count", "estimate",
                       "uncorrected"]


def study_export_rows(study: _Study):
    """The study's collected variants as plain dicts (string ids), by topic then variant."""
    qs = (
        _Response.objects.filter(assignment__participant__study=study, variant__isnull=False)
        .select_related("variant__topic")
        .order_by("variant__topic__topic_id", "variant__id")
    )
    for r in qs.iterator(chunk_size=2000):
        v = r.variant
        yield {
            "topic": v.topic.topic_id,
            "variant_id": v.variant_id,
            "worker": v.worker_id,
            "raw": v.raw,
            "normalised": v.normalised,
            "count": v.count,
            "estimate": v.estimate,
            "uncorrected": v.uncorrected,
        }
