"""Writes for the crowd app. Each function that writes owns its transaction."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from django.db import transaction

from crowd import spelling
from crowd.models import Intent, QueryVariant, Statement, Topic, TopicSet
from crowd.normalise import normalise_query
from crowd.topicfiles import TopicRecord
from crowd.variantfiles import VariantRecord

# --- topics and variants ---------------------------------------------------------------


class ImportRejected(ValueError):
    """An import was refused as a whole; nothing was written."""


def _where(record) -> str:
    if record.source and record.line:
        return f"{record.source}, line {record.line}: "
    if record.source:
        return f"{record.source}: "
    return ""


def _check_length(record, value: str, model, field: str, what: str) -> None:
    limit = model._meta.get_field(field).max_length
    if len(value) > limit:
        raise ImportRejected(f"{_where(record)}{what} is {len(value)} characters (at most {limit})")


def topic_vocabularies(topic_pks: Iterable[int], answers: Iterable[tuple[int, str, int]] = ()
                       ) -> dict[int, Counter]:
    """Word support of each topic for spell-correction (:func:`crowd.spelling.topic_vocabulary`):
    its title, description, narrative, statements and intents, the variants already
    stored for it, and ``answers`` ``(topic pk, normalised text, count)`` not yet stored."""
    texts: dict[int, list[str]] = {pk: [] for pk in topic_pks}
    given: dict[int, list[tuple[str, int]]] = {pk: [] for pk in texts}
    pks = list(texts)
    for pk, *fields in Topic.objects.filter(pk__in=pks).values_list(
            "pk", "title", "description", "narrative"):
        texts[pk].extend(fields)
    for pk, text in Statement.objects.filter(topic_id__in=pks).values_list("topic_id", "text"):
        texts[pk].append(text)
    for pk, text in Intent.objects.filter(topic_id__in=pks).values_list("topic_id", "description"):
        texts[pk].append(text)
    stored = QueryVariant.objects.filter(topic_id__in=pks).values_list("topic_id", "normalised", "count")
    for pk, text, count in stored.iterator(chunk_size=5000):
        given[pk].append((text, count))
    for pk, text, count in answers:
        given[pk].append((text, count))
    return {pk: spelling.topic_vocabulary((normalise_query(t) for t in ts), given[pk])
            for pk, ts in texts.items()}


def spell_checked(norm: str, support: Counter | None) -> tuple[str, str]:
    """``(normalised, uncorrected)`` of a normalised query; ``support`` is the topic's word
    support when spell-correction is on, else None. ``uncorrected`` is empty unless
    correction changed the text."""
    if support is None:
        return norm, ""
    corrected = spelling.spell_correct(norm, support)
    return (corrected, norm) if corrected != norm else (norm, "")


@transaction.atomic
def topics_import(
    topic_set_name: str, records: Sequence[TopicRecord], *, replace: bool = False
) -> dict:
    """Create the topics of ``records`` in the topic set (created if missing).

    All or nothing. A topic id already in the set is an error listing every such id,
    unless ``replace`` is true: then that topic's title, description and narrative are
    overwritten and its statements and intents replaced by the file's. Its query variants
    are kept. Topics of the set that are not in ``records`` are left alone.

    Returns ``{"created": n, "replaced": m}``.
    """
    if not topic_set_name:
        raise ImportRejected("a topic set name is required")
    _check_length_plain(topic_set_name, TopicSet, "name", "topic set name")
    seen: dict[str, TopicRecord] = {}
    for r in records:
        if not r.topic_id:
            raise ImportRejected(f"{_where(r)}empty topic id")
        _check_length(r, r.topic_id, Topic, "topic_id", f"topic id {r.topic_id[:20]!r}...")
        _check_length(r, r.kind, Topic, "kind", "the topic type")
        for intent in r.intents:
            _check_length(r, intent.intent_id, Intent, "intent_id", "an intent id")
            _check_length(r, intent.kind, Intent, "kind", "an intent kind")
        if r.topic_id in seen:
            raise ImportRejected(
                f"{_where(r)}topic id {r.topic_id!r} repeated "
                f"(first at line {seen[r.topic_id].line})"
            )
        seen[r.topic_id] = r
    topic_set, _ = TopicSet.objects.get_or_create(name=topic_set_name)
    existing = {
        t.topic_id: t
        for t in Topic.objects.select_for_update().filter(
            topic_set=topic_set, topic_id__in=list(seen)
        )
    }
    if existing and not replace:
        clash = sorted(existing, key=_id_sort_key)
        raise ImportRejected(
            f"{len(clash)} topic(s) already in set {topic_set_name!r}: {', '.join(clash)} "
            "(import with replace to overwrite them)"
        )
    if existing:
        for r in records:
            topic = existing.get(r.topic_id)
            if topic is not None:
                topic.title = r.title
                topic.description = r.description
                topic.narrative = r.narrative
                topic.kind = r.kind
        Topic.objects.bulk_update(
            list(existing.values()), ["title", "description", "narrative", "kind"], batch_size=500
        )
        Statement.objects.filter(topic__in=list(existing.values())).delete()
        Intent.objects.filter(topic__in=list(existing.values())).delete()
    new = [
        Topic(
            topic_set=topic_set,
            topic_id=r.topic_id,
            title=r.title,
            description=r.description,
            narrative=r.narrative,
            kind=r.kind,
        )
        for r in records
        if r.topic_id not in existing
    ]
    Topic.objects.bulk_create(new, batch_size=500)
    by_id = {
        t.topic_id: t
        for t in Topic.objects.filter(topic_set=topic_set, topic_id__in=list(seen)).only(
            "id", "topic_id"
        )
    }
    Statement.objects.bulk_create(
        [
            Statement(topic=by_id[r.topic_id], position=i, text=text)
            for r in records
            for i, text in enumerate(r.statements)
        ],
        batch_size=1000,
    )
    Intent.objects.bulk_create(
        [
            Intent(
                topic=by_id[r.topic_id],
                intent_id=intent.intent_id,
                description=intent.description,
                kind=intent.kind,
            )
            for r in records
            for intent in r.intents
        ],
        batch_size=1000,
    )
    return {"created": len(new), "replaced": len(existing)}


def _check_length_plain(value: str, model, field: str, what: str) -> None:
    limit = model._meta.get_field(field).max_length
    if len(value) > limit:
        raise ImportRejected(f"{what} is {len(value)} characters (at most {limit})")


def _id_sort_key(topic_id: str) -> tuple:
    """Numeric ids in numeric order, then the rest as text ("2" < "10" < "UQV100.001")."""
    return (0, int(topic_id), "") if topic_id.isdigit() else (1, 0, topic_id)


@transaction.atomic
def variants_import(
    topic_set_name: str,
    records: Iterable[VariantRecord],
    *,
    create_topics: bool = False,
    replace: bool = False,
    batch_size: int = 2000,
    spell_correct: bool = False,
) -> dict:
    """Add imported query variants to the topics of a topic set.

    All or nothing. Raw text, its normalised form (:func:`crowd.normalise.normalise_query`),
    worker id, count and estimate are kept for every record; duplicates are never merged.
    Topics missing from the set are an error listing all of them, unless
    ``create_topics`` is true: then they are created with their id only (and the set too,
    if it does not exist). With ``replace`` the imported (not crowd-collected) variants
    already stored for the topics named in ``records`` are deleted first, so re-importing
    a file does not double its counts.

    With ``spell_correct`` a word of the normalised text is corrected towards a word one
    edit away that the topic's texts or other answers use (:mod:`crowd.spelling`); the
    text before correction is kept as ``uncorrected``.

    Rows are written with ``bulk_create`` in batches of ``batch_size``.
    Returns ``{"variants": n, "topics_created": m, "replaced": k, "corrected": c}``.
    """
    records = list(records)
    if not records:
        raise ImportRejected("no query variants to import")
    topic_ids: dict[str, VariantRecord] = {}
    for r in records:
        _check_length(r, r.topic_id, Topic, "topic_id", "the topic id")
        _check_length(r, r.variant_id, QueryVariant, "variant_id", "the variant id")
        _check_length(r, r.worker_id, QueryVariant, "worker_id", "the worker id")
        _check_length(r, r.estimate, QueryVariant, "estimate", "the estimate")
        if r.count < 1:
            raise ImportRejected(f"{_where(r)}count {r.count} is not positive")
        topic_ids.setdefault(r.topic_id, r)
    topic_set = TopicSet.objects.filter(name=topic_set_name).first()
    if topic_set is None:
        if not create_topics:
            raise ImportRejected(
                f"topic set {topic_set_name!r} does not exist "
                "(import its topics first, or create topics from the variants)"
            )
        _check_length_plain(topic_set_name, TopicSet, "name", "topic set name")
        topic_set = TopicSet.objects.create(name=topic_set_name)
    by_id = dict(
        Topic.objects.filter(topic_set=topic_set, topic_id__in=list(topic_ids)).values_list(
            "topic_id", "id"
        )
    )
    missing = sorted((t for t in topic_ids if t not in by_id), key=_id_sort_key)
    if missing and not create_topics:
        raise ImportRejected(
            f"{len(missing)} topic(s) not in set {topic_set_name!r}: {', '.join(missing)} "
            f"(first: {_where(topic_ids[missing[0]])}topic {missing[0]}; "
            "import the topics first, or create them from the variants)"
        )
    if missing:
        Topic.objects.bulk_create(
            [Topic(topic_set=topic_set, topic_id=t) for t in missing], batch_size=500
        )
        by_id = dict(
            Topic.objects.filter(topic_set=topic_set, topic_id__in=list(topic_ids)).values_list(
                "topic_id", "id"
            )
        )
    replaced = 0
    if replace:
        replaced, _ = QueryVariant.objects.filter(
            topic_id__in=list(by_id.values()), source=QueryVariant.SOURCE_IMPORT
        ).delete()
    norms = [normalise_query(r.raw) for r in records]
    # words other people used for the topic, in this file or stored, support corrections
    known = topic_vocabularies(
        by_id.values(), ((by_id[r.topic_id], n, r.count) for r, n in zip(records, norms))
    ) if spell_correct else {}
    rows = []
    for r, n in zip(records, norms):
        norm, uncorrected = spell_checked(n, known.get(by_id[r.topic_id]))
        rows.append(QueryVariant(
            topic_id=by_id[r.topic_id],
            variant_id=r.variant_id,
            raw=r.raw,
            normalised=norm,
            uncorrected=uncorrected,
            worker_id=r.worker_id,
            count=r.count,
            estimate=r.estimate,
            source=QueryVariant.SOURCE_IMPORT,
        ))
    QueryVariant.objects.bulk_create(rows, batch_size=batch_size)
    return {"variants": len(records), "topics_created": len(missing), "replaced": replaced,
            "corrected": sum(1 for v in rows if v.uncorrected)}


# --- end of topics and variants ---


# --- studies ---
import secrets as _secrets  # noqa: E402
from dataclasses import dataclass as _dataclass, field as _field  # noqa: E402

from django.db import IntegrityError as _IntegrityError, transaction as _transaction  # noqa: E402
from django.utils import timezone as _timezone  # noqa: E402

from crowd import assignment as _assignment, quality as _quality  # noqa: E402
from crowd.models import (  # noqa: E402
    MTURK_SUBMIT_HOSTS,
    Assignment as _Assignment,
    Participant as _Participant,
    QueryVariant as _QueryVariant,
    Response as _Response,
    Statement as _Statement,
    Study as _Study,
    StudyItem as _StudyItem,
    TopicSet as _TopicSet,
)
from crowd.normalise import normalise_query as _normalise_query  # noqa: E402


class StudyError(Exception):
    """A worker action the study does not allow; ``str()`` is safe to show the worker."""


class StudyClosed(StudyError):
    pass


class SessionMismatch(StudyError):
    pass


def study_create(*, topic_set: _TopicSet, name: str, consent_text: str, completion_code: str,
                 attention_checks=(), gold=(), **options) -> _Study:
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
    with _transaction.atomic():
        study = _Study.objects.create(
            topic_set=topic_set, name=name, consent_text=consent_text,
            completion_code=completion_code, **options,
        )
        gold_by_statement = {s.pk: expected for s, expected in gold}
        statements = _Statement.objects.filter(topic__topic_set=topic_set).order_by("pk")
        items = [
            _StudyItem(
                study=study, statement=s,
                kind=_StudyItem.KIND_GOLD if s.pk in gold_by_statement else _StudyItem.KIND_STATEMENT,
                expected=gold_by_statement.get(s.pk, ""),
            )
            for s in statements
        ]
        items += [
            _StudyItem(study=study, kind=_StudyItem.KIND_ATTENTION, prompt=prompt, expected=expected)
            for prompt, expected in attention_checks
        ]
        _StudyItem.objects.bulk_create(items, batch_size=1000)
    return study


def participant_arrive(*, study: _Study, platform: str, worker_id: str, session_token: str = "",
                       external_study_id: str = "", external_session_id: str = "",
                       user=None, submit_to: str = "") -> _Participant:
    """The participant for ``worker_id`` in ``study``, created on first arrival.

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
    existing = _Participant.objects.filter(study=study, worker_id=worker_id).first()
    if existing is None:
        if not study.is_open:
            raise StudyClosed("This study is not taking new participants.")
        try:
            with _transaction.atomic():
                return _Participant.objects.create(
                    study=study, platform=platform, worker_id=worker_id,
                    external_study_id=external_study_id[:200],
                    external_session_id=external_session_id[:200],
                    submit_to=(_mturk_submit_to(submit_to)
                               if platform == _Participant.PLATFORM_MTURK else ""),
                    user=user, session_token=_secrets.token_urlsafe(32),
                )
        except _IntegrityError:  # the same worker arrived twice at once
            existing = _Participant.objects.get(study=study, worker_id=worker_id)
    same_session = bool(session_token) and _secrets.compare_digest(existing.session_token, session_token)
    same_account = user is not None and existing.user_id is not None and existing.user_id == user.pk
    # Before consent nothing of the worker's is on record, so a second arrival (the link
    # opened twice at once, or in a new tab before starting) may share the session.
    not_started = existing.status == _Participant.STATUS_ARRIVED
    if not (same_session or same_account or not_started):
        raise SessionMismatch(
            "You have already started this study in another browser; please continue there."
        )
    return existing


def _mturk_submit_to(value: str) -> str:
    value = value.strip().rstrip("/")
    return value if value in MTURK_SUBMIT_HOSTS else MTURK_SUBMIT_HOSTS[0]


def participant_consent(*, participant: _Participant, seed: int | None = None) -> _Participant:
    """Record consent and hand out the worker's items (idempotent).

    The study row is locked for the assignment, so concurrent arrivals are served one
    after another and every choice sees the assignments made before it: a statement is
    never handed out beyond its quota by concurrent consents. Statements this worker was
    given in any study are excluded; (participant, item) is unique as a backstop.
    """
    with _transaction.atomic():
        # NO KEY UPDATE: serialises assignment without blocking inserts that reference
        # the study (new participants), which only take KEY SHARE locks.
        study = _Study.objects.select_for_update(no_key=True).get(pk=participant.study_id)
        p = _Participant.objects.select_for_update().get(pk=participant.pk)
        if p.status != _Participant.STATUS_ARRIVED:
            return p
        from crowd.selectors import study_item_load

        load = study_item_load(study)
        seen_statements = set(
            _Assignment.objects.filter(participant__worker_id=p.worker_id, item__statement__isnull=False)
            .values_list("item__statement_id", flat=True)
        )
        items = list(_StudyItem.objects.filter(study=study).values_list("pk", "kind", "statement_id"))
        exclude = {str(pk) for pk, _, st in items if st in seen_statements}
        p.seed = _secrets.randbits(48) if seed is None else seed
        chosen = _assignment.choose_statements(
            load, quota=study.responses_per_statement, k=study.statements_per_worker,
            seed=p.seed, exclude=exclude,
        )
        now = _timezone.now()
        p.consented = now
        if not chosen:
            p.status = _Participant.STATUS_FULL
            p.finished = now
            p.save(update_fields=["seed", "consented", "status", "finished"])
            return p
        extra = [str(pk) for pk, kind, _ in items
                 if kind != _StudyItem.KIND_STATEMENT and str(pk) not in exclude]
        order = _assignment.order_items(chosen + extra, p.seed)
        _Assignment.objects.bulk_create(
            [_Assignment(participant=p, item_id=int(pk), position=i) for i, pk in enumerate(order, 1)]
        )
        p.status = _Participant.STATUS_ACTIVE
        p.save(update_fields=["seed", "consented", "status"])
        return p


def assignment_mark_shown(assignment: _Assignment) -> None:
    """Start the answer clock the first time an item is shown (a reload keeps it)."""
    if assignment.shown is None:
        now = _timezone.now()
        _Assignment.objects.filter(pk=assignment.pk, shown__isnull=True).update(shown=now)
        assignment.shown = now


@_dataclass
class SubmitResult:
    accepted: bool
    duplicate: bool = False
    problems: list = _field(default_factory=list)
    status: str = ""
    next_position: int | None = None
    response: _Response | None = None


def response_submit(*, participant_id, position: int, raw: str, estimate: str = "") -> SubmitResult:
    """Accept one answer for the participant's item at ``position`` (idempotent).

    The participant row is locked, so double submits and parallel tabs are served one at a
    time: a second POST for an answered item changes nothing and reports ``duplicate``.
    Refused answers (see ``crowd.quality``) write nothing. An accepted answer to a
    statement becomes a QueryVariant (source crowd, count 1). Failing an attention check
    fails the worker and withdraws the variants they gave in this study.
    Raises ``Assignment.DoesNotExist`` for a position the participant does not have.
    """
    with _transaction.atomic():
        p = (
            _Participant.objects.select_for_update(of=("self",))
            .select_related("study")
            .get(pk=participant_id)
        )
        study = p.study
        assignments = list(
            _Assignment.objects.filter(participant=p)
            .select_related("item__statement", "response")
            .order_by("position")
        )
        current = next((a for a in assignments if a.position == position), None)
        if current is None:
            raise _Assignment.DoesNotExist(position)

        def answered(a):
            try:
                return a.response
            except _Response.DoesNotExist:
                return None

        def next_pos():
            return next((a.position for a in assignments if answered(a) is None), None)

        if answered(current) is not None or p.status != _Participant.STATUS_ACTIVE:
            return SubmitResult(accepted=False, duplicate=True, status=p.status,
                                next_position=next_pos(), response=answered(current))
        item = current.item
        statement_text = item.statement.text if item.kind != _StudyItem.KIND_ATTENTION else ""
        previous = [r.normalised for r in map(answered, assignments) if r is not None]
        problems = _quality.query_problems(
            raw, statement_text, max_chars=study.max_query_chars,
            jaccard_threshold=study.copy_jaccard_threshold,
            copy_min_tokens=study.copy_min_tokens,
            previous=previous if item.kind != _StudyItem.KIND_ATTENTION else (),
        )
        if problems:
            return SubmitResult(accepted=False, problems=problems, status=p.status,
                                next_position=position)
        now = _timezone.now()
        seconds = (now - current.shown).total_seconds() if current.shown else None
        check_passed = None
        if item.kind == _StudyItem.KIND_ATTENTION:
            check_passed = _quality.attention_passed(raw, item.expected)
        elif item.kind == _StudyItem.KIND_GOLD:
            check_passed = _quality.gold_passed(raw, item.expected)
        norm = _normalise_query(raw)
        variant = None
        if item.statement_id is not None:  # gold answers are variants too
            topic_pk = item.statement.topic_id
            variant_norm, uncorrected = spell_checked(
                norm, topic_vocabularies([topic_pk])[topic_pk] if study.spell_correct else None)
            variant = _QueryVariant.objects.create(
                topic_id=topic_pk,
                variant_id=f"S{study.pk}-P{p.pk}-{position}",
                raw=raw, normalised=variant_norm, uncorrected=uncorrected,
                worker_id=p.worker_id, count=1,
                estimate=estimate[:50], source=_QueryVariant.SOURCE_CROWD,
            )
        response = _Response.objects.create(
            assignment=current, raw=raw, normalised=norm, estimate=estimate[:50],
            seconds=seconds, too_fast=_quality.is_too_fast(seconds, study.min_seconds_per_answer),
            check_passed=check_passed, variant=variant,
        )
        current.response = response
        if item.kind == _StudyItem.KIND_ATTENTION and not check_passed:
            p.status = _Participant.STATUS_FAILED
            p.fail_reason = "attention check"
            p.finished = now
            p.save(update_fields=["status", "fail_reason", "finished"])
            _QueryVariant.objects.filter(response__assignment__participant=p).delete()
        elif next_pos() is None:
            p.status = _Participant.STATUS_COMPLETED
            p.finished = now
            p.save(update_fields=["status", "finished"])
        return SubmitResult(accepted=True, status=p.status, next_position=next_pos(),
                            response=response)
