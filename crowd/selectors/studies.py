"""Reads of studies: the worker flow, progress and exports for organisers."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.shortcuts import get_object_or_404
from django.utils import timezone

from crowd.compiled import as_datetime, compiled_query
from crowd.models import Assignment, Participant, Response, Study, StudyItem
from crowd.naturalsort import natural_key
from crowd.normalise import normalise_query

def study_get_by_slug(slug: str) -> Study:
    """The study behind a public entry URL, or 404."""
    return get_object_or_404(Study, slug=slug)


def participant_get_for_session(*, slug: str, participant_id, token: str) -> Participant:
    """The participant this browser session holds, or 404 (never another worker's)."""
    return get_object_or_404(
        Participant.objects.select_related("study"),
        pk=participant_id, study__slug=slug, session_token=token,
    )


@dataclass(frozen=True)
class ItemRow:
    """One of a worker's items as the item page needs it."""

    assignment_id: int
    position: int
    kind: str
    text: str
    shown: datetime | None
    answered: bool


@dataclass(frozen=True)
class ItemPage:
    """What a worker's item page needs: their status, the study and their items in order."""

    participant_id: int
    status: str
    study: Study
    items: list[ItemRow]


# Study fields the worker's pages use (title, instructions, the question, the limits).
_PAGE_STUDY_FIELDS = ("id", "slug", "name", "title", "instructions", "question_text",
                      "question_choices", "max_query_chars")


def _item_page_query(participant_id, token, slug):
    return (
        Assignment.objects.filter(participant_id=participant_id, participant__session_token=token,
                                  participant__study__slug=slug)
        .order_by("position")
        .values_list("id", "position", "item__kind", "item__prompt", "item__statement__text",
                     "shown", "response__assignment_id", "participant__status",
                     *(f"participant__study__{f}" for f in _PAGE_STUDY_FIELDS))
    )


def participant_item_page(*, slug: str, participant_id, token: str) -> ItemPage | None:
    """The item page of the participant this browser holds, in one query of plain values
    (the hot path of a study: compiled once, no model instances per item); None when the
    participant has no items yet or the token does not match."""
    rows = compiled_query("participant_item_page", _item_page_query,
                          (int(participant_id), token, slug), (-7301, "\x01token", "\x01slug"))
    if not rows:
        return None
    study = Study(**dict(zip(_PAGE_STUDY_FIELDS, rows[0][8:])))
    items = [ItemRow(assignment_id=r[0], position=r[1], kind=r[2], text=r[3] or r[4] or "",
                     shown=as_datetime(r[5]), answered=r[6] is not None) for r in rows]
    return ItemPage(participant_id=int(participant_id), status=rows[0][7], study=study, items=items)


def participant_next_position(participant: Participant) -> int | None:
    """Position of the first unanswered item, or None when all are answered."""
    return (
        Assignment.objects.filter(participant=participant, response__isnull=True)
        .order_by("position")
        .values_list("position", flat=True)
        .first()
    )


def study_item_load(study: Study, *, now=None) -> dict[str, int]:
    """Statement item id -> answers given plus assignments in flight (one query).

    Counted: answers of workers who have not failed, and unanswered assignments of
    workers still answering that are younger than the study's assignment timeout.
    Gold items and attention checks go to every worker and are not counted.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=study.assignment_timeout_minutes)
    live = [Participant.STATUS_ACTIVE, Participant.STATUS_COMPLETED]
    rows = (
        StudyItem.objects.filter(study=study, kind=StudyItem.KIND_STATEMENT)
        .annotate(
            load=Count(
                "assignments",
                filter=Q(assignments__participant__status__in=live)
                & (Q(assignments__response__isnull=False) | Q(assignments__assigned__gte=cutoff)),
            )
        )
        .values_list("pk", "load")
    )
    return {str(pk): load for pk, load in rows}


def study_list():
    return Study.objects.select_related("topic_set").annotate(
        n_participants=Count("participants", distinct=True)
    )


def study_progress(study: Study) -> dict:
    """Responses per item, workers by status and the median seconds per answer."""
    now = timezone.now()
    cutoff = now - timedelta(minutes=study.assignment_timeout_minutes)
    items = list(
        StudyItem.objects.filter(study=study)
        .select_related("statement__topic")
        .annotate(
            n_answers=Count(
                "assignments",
                filter=Q(assignments__response__isnull=False)
                & ~Q(assignments__participant__status=Participant.STATUS_FAILED),
            ),
            n_in_flight=Count(
                "assignments",
                filter=Q(assignments__response__isnull=True)
                & Q(assignments__participant__status=Participant.STATUS_ACTIVE)
                & Q(assignments__assigned__gte=cutoff),
            ),
            n_too_fast=Count("assignments", filter=Q(assignments__response__too_fast=True)),
        )
    )
    items.sort(key=lambda it: (
        it.kind, natural_key(it.statement.topic.topic_id) if it.statement_id else ((), ""),
        it.statement.position if it.statement_id else 0, it.pk,
    ))
    statuses = dict(
        Participant.objects.filter(study=study)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    seconds = list(
        Response.objects.filter(assignment__participant__study=study, seconds__isnull=False)
        .values_list("seconds", flat=True)
    )
    return {
        "items": items,
        "statuses": {code: statuses.get(code, 0) for code, _ in Participant.STATUS_CHOICES},
        "n_workers": sum(statuses.values()),
        "n_answers": len(seconds),
        "median_seconds": statistics.median(seconds) if seconds else None,
    }


def study_variant_summary(study: Study) -> list[dict]:
    """Per topic: distinct normalised variants with counts, and the share equal to the title.

    ``title_share`` = answers whose normalised text equals the normalised topic title,
    divided by all answers for the topic (counts summed).
    """
    rows = (
        Response.objects.filter(assignment__participant__study=study, variant__isnull=False)
        .values_list(
            "variant__topic__topic_id", "variant__topic__title", "normalised", "raw",
            "variant__count",
        )
    )
    topics: dict[str, dict] = {}
    for topic_id, title, norm, raw, count in rows:
        t = topics.setdefault(
            topic_id,
            {"topic_id": topic_id, "title": title, "title_norm": normalise_query(title),
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
    out.sort(key=lambda t: natural_key(t["topic_id"]))
    return out


# "uncorrected": the normalised text before optional spell-correction ("" if none).
STUDY_EXPORT_FIELDS = ["topic", "variant_id", "worker", "raw", "normalised", "count", "estimate",
                       "uncorrected"]


def study_export_rows(study: Study):
    """The study's collected variants as plain dicts (string ids), by topic (natural
    order) then variant."""
    rows = list(
        Response.objects.filter(assignment__participant__study=study, variant__isnull=False)
        .order_by("variant__id")
        .values_list("variant__topic__topic_id", "variant__variant_id", "variant__worker_id",
                     "variant__raw", "variant__normalised", "variant__count",
                     "variant__estimate", "variant__uncorrected")
    )
    rows.sort(key=lambda r: natural_key(r[0]))  # stable: variants keep their stored order
    for row in rows:
        yield dict(zip(STUDY_EXPORT_FIELDS, row))
