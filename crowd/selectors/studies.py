"""Reads of studies: the worker flow, progress and exports for organisers."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db.models import Count, Exists, OuterRef, Q
from django.http import Http404
from django.utils import timezone

from common.naturalsort import natural_key
from common.sql import Compiled, as_datetime, compile_query, compiled_query, fetch
from crowd.models import Assignment, Participant, Response, Study, StudyItem
from topics.normalise import normalise_query
from topics.selectors import VARIANT_EXPORT_FIELDS

_STUDY_FIELDS = [f.attname for f in Study._meta.concrete_fields]
_PARTICIPANT_FIELDS = [f.attname for f in Participant._meta.concrete_fields]


def _study_by_slug_query(slug):
    return Study.objects.filter(slug=slug).order_by().values_list(*_STUDY_FIELDS)


def study_get_by_slug(slug: str) -> Study:
    """The study behind a public entry URL, or 404 (one compiled, prepared query)."""
    rows = compiled_query("study_get_by_slug", _study_by_slug_query, (slug,), ("\x01slug",))
    if not rows:
        raise Http404("No study at this address.")
    return Study.from_db("default", _STUDY_FIELDS, rows[0])


def _participant_query(study_id, worker_id):
    return (Participant.objects.filter(study_id=study_id, worker_id=worker_id).order_by()
            .values_list(*_PARTICIPANT_FIELDS))


def participant_get(*, study_id: int, worker_id: str) -> Participant | None:
    """The participant for ``worker_id`` in the study, if any (one prepared query)."""
    rows = compiled_query("participant_get", _participant_query, (study_id, worker_id),
                          (-7301, "\x01worker"))
    return Participant.from_db("default", _PARTICIPANT_FIELDS, rows[0]) if rows else None


def _session_query(participant_id, token, slug):
    return (
        Participant.objects.filter(pk=participant_id, session_token=token, study__slug=slug)
        .order_by()
        .values_list(*_PARTICIPANT_FIELDS, *(f"study__{f}" for f in _STUDY_FIELDS))
    )


def participant_get_for_session(*, slug: str, participant_id, token: str) -> Participant:
    """The participant this browser session holds, with its study, or 404 (never another
    worker's). One compiled, prepared query."""
    rows = compiled_query("participant_get_for_session", _session_query,
                          (int(participant_id), token, slug), (-7301, "\x01token", "\x01slug"))
    if not rows:
        raise Http404("No study in progress in this browser.")
    n = len(_PARTICIPANT_FIELDS)
    p = Participant.from_db("default", _PARTICIPANT_FIELDS, rows[0][:n])
    p.study = Study.from_db("default", _STUDY_FIELDS, rows[0][n:])
    return p


class ItemRow(NamedTuple):
    """One of a worker's items as the item page needs it (a named tuple: a page builds one
    per item of the worker on every request, at a third of a frozen dataclass's cost)."""

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


def _answered():
    # In the select list, not a join: PostgreSQL then probes the response's key once per
    # item of the worker, instead of possibly hashing every response of every study.
    return Exists(Response.objects.filter(assignment_id=OuterRef("pk")))


def _item_page_query(participant_id, token, slug):
    return (
        Assignment.objects.filter(participant_id=participant_id, participant__session_token=token,
                                  participant__study__slug=slug)
        .annotate(answered=_answered())
        .order_by("position")
        .values_list("id", "position", "item__kind", "item__prompt", "item__statement__text",
                     "shown", "answered", "participant__status",
                     *(f"participant__study__{f}" for f in _PAGE_STUDY_FIELDS))
    )


def item_page_query() -> Compiled:
    """The compiled item-page query; parameters (participant id, token, slug)."""
    return compile_query("participant_item_page", _item_page_query, (-7301, "\x01token", "\x01slug"))


def item_page_from_rows(participant_id, rows, shown=None) -> ItemPage | None:
    """The ItemPage of the item-page query's rows; ``shown``: clocks started by this
    request (assignment id -> time), which the rows (read before) do not show."""
    if not rows:
        return None
    shown = shown or {}
    study = Study(**dict(zip(_PAGE_STUDY_FIELDS, rows[0][8:16])))
    items = [ItemRow(assignment_id=r[0], position=r[1], kind=r[2], text=r[3] or r[4] or "",
                     shown=shown.get(r[0]) or as_datetime(r[5]), answered=bool(r[6]))
             for r in rows]
    return ItemPage(participant_id=int(participant_id), status=rows[0][7], study=study, items=items)


def participant_item_page(*, slug: str, participant_id, token: str) -> ItemPage | None:
    """The item page of the participant this browser holds, in one query of plain values
    (the hot path of a study: compiled once, no model instances per item); None when the
    participant has no items yet or the token does not match."""
    q = item_page_query()
    rows = q.convert(fetch(q.sql, q.bind((int(participant_id), token, slug))))
    return item_page_from_rows(participant_id, rows)


def _positions_query(participant_id):
    return (Assignment.objects.filter(participant_id=participant_id).annotate(answered=_answered())
            .order_by("position").values_list("position", "answered"))


def participant_next_position(participant: Participant) -> int | None:
    """Position of the first unanswered item, or None when all are answered."""
    rows = compiled_query("participant_next_position", _positions_query, (participant.pk,), (-7301,))
    return next((position for position, answered in rows if not answered), None)


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
        n_participants=Count("participants", distinct=True),
        n_simulated=Count("participants", filter=Q(participants__simulated=True), distinct=True),
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
        "n_simulated": Participant.objects.filter(study=study, simulated=True).count(),
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


# appended to a study's (or a published judging task's) entry address for Prolific, which
# fills in its placeholders
PROLIFIC_QUERY = ("?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                  "&SESSION_ID={{%SESSION_ID%}}")

# a study's export also says whether the worker who gave the answer was simulated
STUDY_EXPORT_FIELDS = [*VARIANT_EXPORT_FIELDS, "simulated"]


def study_export_rows(study: Study):
    """The study's collected variants as plain dicts (string ids), by topic (natural
    order) then variant."""
    rows = list(
        Response.objects.filter(assignment__participant__study=study, variant__isnull=False)
        .order_by("variant__id")
        .values_list("variant__topic__topic_id", "variant__variant_id", "variant__worker_id",
                     "variant__raw", "variant__normalised", "variant__count",
                     "variant__estimate", "variant__uncorrected",
                     "assignment__participant__simulated")
    )
    rows.sort(key=lambda r: natural_key(r[0]))  # stable: variants keep their stored order
    for row in rows:
        yield dict(zip(STUDY_EXPORT_FIELDS, row))
