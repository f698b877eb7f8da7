"""Writes for studies: set-up, a worker's arrival and consent, and answers.

Each function that writes owns its transaction.
"""
from __future__ import annotations

import secrets
from collections import namedtuple
from dataclasses import dataclass, field, replace
from datetime import timedelta

from django.db import connections, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from common.sql import (
    as_datetime, compiled_query, db_value, execute, fetch, for_update, from_row, insert_params,
    insert_sql,
)

from crowd import quality
from crowd.assignment import choose_statements, order_items
from crowd.models import MTURK_SUBMIT_HOSTS, Assignment, Participant, Response, Study, StudyItem
from crowd.selectors.studies import (
    ItemPage,
    item_page_from_rows,
    item_page_query,
    participant_get,
)
from topics.models import QueryVariant, Statement, TopicSet
from topics.normalise import normalise_query
from topics.services import spell_checked, topic_vocabularies


class StudyError(Exception):
    """A worker action the study does not allow; ``str()`` is safe to show the worker."""


class StudyClosed(StudyError):
    pass


class SessionMismatch(StudyError):
    pass


def study_create(*, topic_set: TopicSet, name: str, consent_text: str, completion_code: str,
                 attention_checks=(), gold=(), **options) -> Study:
    """A study over every statement of ``topic_set``.

    ``attention_checks``: (prompt, expected answer) pairs, e.g.
    ("Ignore the rest and type the word purple.", "purple").
    ``gold``: (statement, known good queries one per line) pairs; those statements are
    shown to every worker as gold items instead of being shared out.
    ``options``: any other Study field (responses_per_statement, statements_per_worker,
    question_text, question_choices, max_query_chars, min_seconds_per_answer, ...).
    """
    if not completion_code.strip():
        raise ValueError("a completion code is required")
    if not consent_text.strip():
        raise ValueError("consent text is required: workers must be told what they agree to")
    if options.get("question_choices", "").strip() and not options.get("question_text", "").strip():
        raise ValueError("question choices need a question (question_text) to go with them")
    with transaction.atomic():
        study = Study.objects.create(
            topic_set=topic_set, name=name, consent_text=consent_text,
            completion_code=completion_code, **options,
        )
        gold_by_statement = {s.pk: expected for s, expected in gold}
        statements = Statement.objects.filter(topic__topic_set=topic_set).order_by("pk")
        items = [
            StudyItem(
                study=study, statement=s,
                kind=StudyItem.KIND_GOLD if s.pk in gold_by_statement else StudyItem.KIND_STATEMENT,
                expected=gold_by_statement.get(s.pk, ""),
            )
            for s in statements
        ]
        items += [
            StudyItem(study=study, kind=StudyItem.KIND_ATTENTION, prompt=prompt, expected=expected)
            for prompt, expected in attention_checks
        ]
        StudyItem.objects.bulk_create(items, batch_size=1000)
    return study


def participant_arrive(*, study: Study, platform: str, worker_id: str, session_token: str = "",
                       external_study_id: str = "", external_session_id: str = "",
                       user=None, submit_to: str = "", simulated: bool = False) -> Participant:
    """The participant for ``worker_id`` in ``study``, created on first arrival
    (``simulated``: made by the demo's simulation, not a person).

    ``submit_to`` is MTurk's ``turkSubmitTo``: kept only when it is MTurk's production or
    sandbox site (any other value falls back to production), so the finished page never
    posts a worker's assignment anywhere else.

    Once a worker has consented, they are only handed back to the browser session that
    holds their token (or, for a signed-in account, to the same account): knowing a worker
    id is not enough to read that worker's assignments or answers.
    """
    worker_id = worker_id.strip()[:200]
    if not worker_id:
        raise StudyError("This link does not identify you; please use the link from the study page.")
    for value in (worker_id, external_study_id, external_session_id):
        if is_placeholder(value):
            raise StudyError(
                "This link still contains a placeholder instead of your id; please open the "
                "study from your recruitment platform's study page.")
    if platform != Participant.PLATFORM_ACCOUNT and worker_id.casefold().startswith(ACCOUNT_PREFIX):
        raise StudyError("This worker id is not valid; please open the study from your "
                         "recruitment platform's study page.")
    _check_external_study(study, platform, external_study_id.strip())
    existing = None
    if study.is_open:
        # One statement: the new participant, or nothing when the worker is already here
        # (also when the same worker arrives twice at once: the unique key decides).
        row = {"study_id": study.pk, "platform": platform, "worker_id": worker_id,
               "external_study_id": external_study_id[:200],
               "external_session_id": external_session_id[:200],
               "submit_to": _mturk_submit_to(submit_to) if platform == Participant.PLATFORM_MTURK else "",
               "user_id": user.pk if user is not None else None,
               "session_token": secrets.token_urlsafe(32), "simulated": simulated}
        created = fetch(insert_sql(Participant, suffix=_ARRIVE_SUFFIX),
                        insert_params(Participant, [row]))
        if created:
            p = from_row(Participant, row)
            p.pk = created[0][0]
            return p
    existing = participant_get(study_id=study.pk, worker_id=worker_id)
    if existing is None:
        raise StudyClosed("This study is not taking new participants.")
    same_session = bool(session_token) and secrets.compare_digest(existing.session_token, session_token)
    same_account = user is not None and existing.user_id is not None and existing.user_id == user.pk
    # Before consent nothing of the worker's is on record, so a second arrival (the link
    # opened twice at once, or in a new tab before starting) may share the session.
    not_started = existing.status == Participant.STATUS_ARRIVED
    if not (same_session or same_account or not_started):
        raise SessionMismatch(
            "You have already started this study in another browser; please continue there."
        )
    return existing


_ARRIVE_SUFFIX = ' ON CONFLICT ("study_id", "worker_id") DO NOTHING RETURNING "id"'


ACCOUNT_PREFIX = "account:"  # worker ids of signed-in accounts; never taken from a URL
_PLACEHOLDER_CHARS = frozenset("{}%<>$")


def is_placeholder(value: str) -> bool:
    """True for a recruitment platform's unfilled placeholder (``{{%PROLIFIC_PID%}}``,
    ``%PROLIFIC_PID%``, ``${workerId}``, ``<PID>``) or an id with whitespace or control
    characters: real worker ids carry none of these."""
    return any(c in _PLACEHOLDER_CHARS or c.isspace() or not c.isprintable() for c in value)


def _check_external_study(study: Study, platform: str, external_study_id: str) -> None:
    """Refuse a link copied into another Prolific study or MTurk HIT, when the organiser
    named the study's own (``Study.prolific_study_id``, ``Study.mturk_hit_ids``)."""
    if platform == Participant.PLATFORM_PROLIFIC and study.prolific_study_id:
        if external_study_id != study.prolific_study_id.strip():
            raise StudyError("This link belongs to a different Prolific study; please open "
                             "the study from its own Prolific page.")
    elif platform == Participant.PLATFORM_MTURK and study.mturk_hit_id_list():
        if external_study_id not in study.mturk_hit_id_list():
            raise StudyError("This link belongs to a different HIT; please open the study "
                             "from its own Mechanical Turk HIT.")


def _mturk_submit_to(value: str) -> str:
    value = value.strip().rstrip("/")
    return value if value in MTURK_SUBMIT_HOSTS else MTURK_SUBMIT_HOSTS[0]


_STATEMENT, _ATTENTION = StudyItem.KIND_STATEMENT, StudyItem.KIND_ATTENTION
_LIVE = (Participant.STATUS_ACTIVE, Participant.STATUS_COMPLETED)

# The study's rules, its row locked (see participant_consent).
_CONSENT_LOCK = ('SELECT "responses_per_statement", "statements_per_worker", '
                 '"assignment_timeout_minutes" FROM "crowd_study" WHERE "id" = %s')
# Every item of the study with, for statements, the answers given plus the assignments
# in flight (as crowd.selectors.study_item_load counts them); whether this worker had the
# item's statement in any study; and the participant's status, read after the lock. The
# load is counted from each item's assignments (its index), the participant found by key:
# a plan that cannot start from every participant of every study.
_CONSENT_ITEMS = f"""
SELECT i."id", i."kind",
  CASE WHEN i."kind" = '{_STATEMENT}' THEN (
    SELECT COUNT(*) FROM "crowd_assignment" a
    WHERE a."item_id" = i."id"
      AND (SELECT q."status" FROM "crowd_participant" q WHERE q."id" = a."participant_id")
          IN ('{_LIVE[0]}', '{_LIVE[1]}')
      AND (a."assigned" >= %s
           OR EXISTS (SELECT 1 FROM "crowd_response" r WHERE r."assignment_id" = a."id"))
  ) END,
  i."statement_id" IN (
    SELECT j."statement_id" FROM "crowd_assignment" b
    INNER JOIN "crowd_participant" w ON w."id" = b."participant_id"
    INNER JOIN "crowd_studyitem" j ON j."id" = b."item_id"
    WHERE w."worker_id" = %s AND j."statement_id" IS NOT NULL),
  (SELECT "status" FROM "crowd_participant" WHERE "id" = %s)
FROM "crowd_studyitem" i WHERE i."study_id" = %s ORDER BY i."id"
"""
_CONSENT_DONE = ('UPDATE "crowd_participant" SET "seed" = %s, "consented" = %s, "status" = %s, '
                 '"finished" = %s WHERE "id" = %s')


def participant_consent(*, participant: Participant, seed: int | None = None) -> Participant:
    """Record consent and hand out the worker's items (idempotent).

    The study row is locked for the assignment, so concurrent consents are served one
    after another and every choice sees the assignments made before it: a statement is
    never handed out beyond its quota by concurrent consents. A participant leaves
    ``arrived`` only here, under that lock, so the status read after it is current (a
    double-clicked consent finds the first one's work done). Statements this worker was
    given in any study are excluded; (participant, item) is unique as a backstop.

    Queries: the lock, one read of the items with their load, the assignments (one
    insert) and the participant's row.
    """
    with transaction.atomic():
        # NO KEY UPDATE: serialises assignment without blocking inserts that reference
        # the study (new participants), which only take KEY SHARE locks.
        quota, k, timeout = fetch(_CONSENT_LOCK + for_update(no_key=True),
                                  [participant.study_id])[0]
        now = timezone.now()
        cutoff = db_value(Assignment, "assigned", now - timedelta(minutes=timeout))
        items = fetch(_CONSENT_ITEMS, [cutoff, participant.worker_id, participant.pk,
                                       participant.study_id])
        status = items[0][4] if items else Participant.objects.values_list(
            "status", flat=True).get(pk=participant.pk)
        if status != Participant.STATUS_ARRIVED:
            return Participant.objects.get(pk=participant.pk)
        load = {str(pk): n for pk, kind, n, _, _ in items if kind == _STATEMENT}
        exclude = {str(pk) for pk, _, _, seen, _ in items if seen}
        p = participant
        p.seed = secrets.randbits(48) if seed is None else seed
        chosen = choose_statements(load, quota=quota, k=k, seed=p.seed, exclude=exclude)
        p.consented = now
        if not chosen:
            p.status, p.finished = Participant.STATUS_FULL, now
        else:
            extra = [str(pk) for pk, kind, _, _, _ in items
                     if kind != _STATEMENT and str(pk) not in exclude]
            checks = {str(pk) for pk, kind, _, _, _ in items if kind == _ATTENTION}
            order = order_items(chosen + extra, p.seed, not_first=checks)
            rows = [{"participant_id": p.pk, "item_id": int(pk), "position": i}
                    for i, pk in enumerate(order, 1)]
            execute(insert_sql(Assignment, len(rows)), insert_params(Assignment, rows))
            p.status = Participant.STATUS_ACTIVE
        execute(_CONSENT_DONE, [p.seed, db_value(Participant, "consented", now), p.status,
                                db_value(Participant, "finished", p.finished), p.pk])
        return p


# PostgreSQL: the item page and the start of the current item's clock in one statement.
# The clock starts only for the first unanswered item of an active worker (the one the
# page shows), and only once: a reload keeps it.
_PAGE_SHOW = """
WITH page AS ({page}),
shown AS (
  UPDATE "crowd_assignment" SET "shown" = %s
  WHERE "id" = (
    SELECT c."id" FROM page c
    WHERE c."position" = %s AND c."shown" IS NULL AND NOT c."answered"
      AND c."participant__status" = '{active}'
      AND NOT EXISTS (SELECT 1 FROM page e WHERE e."position" < c."position" AND NOT e."answered"))
  AND "shown" IS NULL
  RETURNING "id", "shown")
SELECT page.*, shown."id", shown."shown" FROM page LEFT JOIN shown ON shown."id" = page."id"
ORDER BY page."position"
"""


def item_page_show(*, slug: str, participant_id, token: str, position: int) -> ItemPage | None:
    """The item page of the participant this browser holds (see
    ``crowd.selectors.participant_item_page``), starting the clock of the item at
    ``position`` when the page shows it for the first time: one statement on PostgreSQL,
    the read and then the write elsewhere."""
    q = item_page_query()
    params = (int(participant_id), token, slug)
    now = timezone.now()
    if connections["default"].vendor == "postgresql":
        rows = fetch(_PAGE_SHOW.format(page=q.sql, active=Participant.STATUS_ACTIVE),
                     q.bind(params) + [now, position])
        started = {r[-2]: r[-1] for r in rows if r[-2] is not None}
        return item_page_from_rows(participant_id, q.convert([r[:-2] for r in rows]), started)
    page = item_page_from_rows(participant_id, q.convert(fetch(q.sql, q.bind(params))))
    if page is None or page.status != Participant.STATUS_ACTIVE:
        return page
    first_open = next((row for row in page.items if not row.answered), None)
    if first_open is None or first_open.position != position or first_open.shown is not None:
        return page
    assignment_mark_shown(first_open.assignment_id, now=now)
    items = [row._replace(shown=now) if row is first_open else row for row in page.items]
    return replace(page, items=items)


def assignment_mark_shown(assignment_id: int, *, now=None) -> None:
    """Start the answer clock the first time an item is shown (a reload keeps it)."""
    execute('UPDATE "crowd_assignment" SET "shown" = %s WHERE "id" = %s AND "shown" IS NULL',
            [db_value(Assignment, "shown", now or timezone.now()), assignment_id])


@dataclass
class SubmitResult:
    accepted: bool
    duplicate: bool = False
    out_of_order: bool = False  # an item after the first unanswered one
    problems: list = field(default_factory=list)
    status: str = ""
    next_position: int | None = None
    response: Response | None = None


_STUDY_RULES = ("max_query_chars", "copy_jaccard_threshold", "copy_min_tokens", "question_text",
                "question_choices", "spell_correct", "min_seconds_per_answer")
_Locked = namedtuple("_Locked", ("id", "status", "worker_id", "study_id", *_STUDY_RULES))
_Item = namedtuple("_Item", ("id", "position", "shown", "item__kind", "item__expected",
                             "item__statement_id", "item__statement__text",
                             "item__statement__topic_id", "answer"))


def _lock_query(participant_id, *checks: tuple[str, str]):
    """The participant's row, locked, with the study's answer rules; ``checks`` are
    (field, value) pairs the row must match (the browser's token, the study's slug)."""
    return (
        Participant.objects.select_for_update(of=("self",))
        .filter(pk=participant_id, **dict(checks))
        .order_by()
        .values_list("id", "status", "worker_id", "study_id",
                     *(f"study__{f}" for f in _STUDY_RULES))
    )


def _items_query(participant_id):
    # The answer's normalised text in the select list (None: unanswered), not a join:
    # PostgreSQL probes the response's key once per item, whatever the tables' sizes.
    answer = Response.objects.filter(assignment_id=OuterRef("pk")).values("normalised")
    return (
        Assignment.objects.filter(participant_id=participant_id)
        .annotate(answer=Subquery(answer))
        .order_by("position")
        .values_list(*_Item._fields)
    )


# PostgreSQL: the variant and the answer that points at it in one statement.
_VARIANT_CTE = "WITH v AS ({}) "
_FAIL = ('UPDATE "crowd_participant" SET "status" = %s, "fail_reason" = %s, "finished" = %s '
         'WHERE "id" = %s')
_COMPLETE = 'UPDATE "crowd_participant" SET "status" = %s, "finished" = %s WHERE "id" = %s'


def _answer_write(response: dict, variant: dict | None) -> None:
    """Insert the answer (and its variant): one statement on PostgreSQL, two elsewhere."""
    connection = connections["default"]
    if variant is None:
        execute(insert_sql(Response), insert_params(Response, [response]))
        return
    returning = ' RETURNING "id"'
    if connection.vendor == "postgresql":
        sql = (_VARIANT_CTE.format(insert_sql(QueryVariant, suffix=returning))
               + insert_sql(Response, expressions={"variant_id": "(SELECT id FROM v)"},
                            suffix=' RETURNING "variant_id"'))
        response["variant_id"] = fetch(sql, insert_params(QueryVariant, [variant])
                                       + insert_params(Response, [response], skip=["variant_id"]))[0][0]
        return
    response["variant_id"] = fetch(insert_sql(QueryVariant, suffix=returning),
                                   insert_params(QueryVariant, [variant]))[0][0]
    execute(insert_sql(Response), insert_params(Response, [response]))


def response_submit(*, participant_id, position: int, raw: str, estimate: str = "",
                    session_token: str | None = None, study_slug: str | None = None) -> SubmitResult:
    """Accept one answer for the participant's item at ``position`` (idempotent).

    The participant row is locked, so double submits and parallel tabs are served one at a
    time: a second POST for an answered item changes nothing and reports ``duplicate``;
    a POST for an item after the first unanswered one changes nothing and reports
    ``out_of_order`` (items are answered in their order). Refused answers (see
    ``crowd.quality``, including an ``estimate`` that does not answer the study's
    question) write nothing. An accepted answer to a statement becomes a QueryVariant
    (source crowd, count 1). Failing an attention check fails the worker and withdraws the
    variants they gave in this study.

    ``session_token`` / ``study_slug``, when given, must be the participant's (checked
    under the lock; a browser's request passes both), else ``Participant.DoesNotExist``.
    Raises ``Assignment.DoesNotExist`` for a position the participant does not have.
    Queries: the lock, the participant's items, and the inserts (pinned by a test).
    """
    with transaction.atomic():
        # compiled once (common.sql), plain values: this is the hot path of a study
        fields = [f for f, v in (("session_token", session_token), ("study__slug", study_slug))
                  if v is not None]
        values = [v for v in (session_token, study_slug) if v is not None]

        def build(pid, *checked):
            return _lock_query(pid, *zip(fields, checked))

        locked = compiled_query(f"response_submit.lock[{','.join(fields)}]", build,
                                (int(participant_id), *values), (-7301, *(f"\x01{f}" for f in fields)))
        if not locked:
            raise Participant.DoesNotExist(participant_id)
        p = _Locked(*locked[0])
        if p.status != Participant.STATUS_ACTIVE:  # not started, or finished
            return SubmitResult(accepted=False, duplicate=p.status != Participant.STATUS_ARRIVED,
                                status=p.status)
        study = Study(pk=p.study_id, max_query_chars=p.max_query_chars,
                      copy_jaccard_threshold=p.copy_jaccard_threshold,
                      copy_min_tokens=p.copy_min_tokens, question_text=p.question_text,
                      question_choices=p.question_choices, spell_correct=p.spell_correct,
                      min_seconds_per_answer=p.min_seconds_per_answer)
        items = [_Item(*row) for row in compiled_query(
            "response_submit.items", _items_query, (p.id,), (-7301,))]
        current = next((a for a in items if a.position == position), None)
        if current is None:
            raise Assignment.DoesNotExist(position)
        answered = {a.position for a in items if a.answer is not None}

        def next_pos():
            return next((a.position for a in items if a.position not in answered), None)

        if current.position in answered:
            return SubmitResult(accepted=False, duplicate=True, status=p.status,
                                next_position=next_pos())
        if position != next_pos():  # items are answered in order, none skipped
            return SubmitResult(accepted=False, out_of_order=True, status=p.status,
                                next_position=next_pos())
        kind = current.item__kind
        attention = kind == StudyItem.KIND_ATTENTION
        previous = [a.answer for a in items if a.position in answered]
        problems = quality.query_problems(
            raw, "" if attention else current.item__statement__text or "",
            max_chars=study.max_query_chars, jaccard_threshold=study.copy_jaccard_threshold,
            copy_min_tokens=study.copy_min_tokens, previous=() if attention else previous,
        ) + quality.estimate_problems(estimate, question=study.question_text,
                                      choices=study.question_choice_list())
        if problems:
            return SubmitResult(accepted=False, problems=problems, status=p.status,
                                next_position=position)
        now = timezone.now()
        shown = as_datetime(current.shown)
        seconds = (now - shown).total_seconds() if shown else None
        check_passed = None
        if attention:
            check_passed = quality.attention_passed(raw, current.item__expected)
        elif kind == StudyItem.KIND_GOLD:
            check_passed = quality.gold_passed(raw, current.item__expected)
        norm = normalise_query(raw)
        estimate = estimate.strip()[:50]
        variant = None
        if current.item__statement_id is not None:  # gold answers are variants too
            topic_pk = current.item__statement__topic_id
            variant_norm, uncorrected = spell_checked(
                norm, topic_vocabularies([topic_pk])[topic_pk] if study.spell_correct else None)
            variant = {"topic_id": topic_pk, "variant_id": f"S{study.pk}-P{p.id}-{position}",
                       "raw": raw, "normalised": variant_norm, "uncorrected": uncorrected,
                       "worker_id": p.worker_id, "count": 1, "estimate": estimate,
                       "source": QueryVariant.SOURCE_CROWD, "created": now}
        answer = {"assignment_id": current.id, "raw": raw, "normalised": norm,
                  "estimate": estimate, "seconds": seconds,
                  "too_fast": quality.is_too_fast(seconds, study.min_seconds_per_answer),
                  "check_passed": check_passed, "variant_id": None, "created": now}
        _answer_write(answer, variant)
        answered.add(position)
        status = p.status
        if attention and not check_passed:
            status = Participant.STATUS_FAILED
            execute(_FAIL, [status, "attention check", db_value(Participant, "finished", now), p.id])
            QueryVariant.objects.filter(response__assignment__participant_id=p.id).delete()
        elif next_pos() is None:
            status = Participant.STATUS_COMPLETED
            execute(_COMPLETE, [status, db_value(Participant, "finished", now), p.id])
        response = from_row(Response, answer)
        return SubmitResult(accepted=True, status=status, next_position=next_pos(),
                            response=response)
