"""Writes for topics, their statements and intents, and imported query variants.

Each function that writes owns its transaction; imports are all or nothing.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from django.db import transaction

from crowd import spelling
from crowd.models import Intent, QueryVariant, Statement, Topic, TopicSet
from crowd.naturalsort import natural_key
from crowd.normalise import normalise_query
from crowd.topicfiles import TopicRecord
from crowd.variantfiles import VariantRecord


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
    topic_set_name: str, records: Sequence[TopicRecord], *, replace: bool = False,
    before_commit: Callable[[dict], None] | None = None,
) -> dict:
    """Create the topics of ``records`` in the topic set (created if missing).

    All or nothing. A topic id already in the set is an error listing every such id,
    unless ``replace`` is true: then that topic's title, description and narrative are
    overwritten and its statements and intents replaced by the file's. Its query variants
    are kept. Topics of the set that are not in ``records`` are left alone.

    Returns ``{"created": n, "replaced": m}``.
    ``before_commit(result)``, when given, is called with the result inside the import's
    transaction, after the last write: a caller commits its own mark with the import, or
    raises to roll it back (an upload's lease lost).
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
        clash = sorted(existing, key=natural_key)
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
    result = {"created": len(new), "replaced": len(existing)}
    if before_commit is not None:
        before_commit(result)
    return result


def _check_length_plain(value: str, model, field: str, what: str) -> None:
    limit = model._meta.get_field(field).max_length
    if len(value) > limit:
        raise ImportRejected(f"{what} is {len(value)} characters (at most {limit})")



@transaction.atomic
def variants_import(
    topic_set_name: str,
    records: Iterable[VariantRecord],
    *,
    create_topics: bool = False,
    replace: bool = False,
    batch_size: int = 2000,
    spell_correct: bool = False,
    before_commit: Callable[[dict], None] | None = None,
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
    ``before_commit(result)``, when given, is called with the result inside the import's
    transaction, after the last write: a caller commits its own mark with the import, or
    raises to roll it back (an upload's lease lost).
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
    missing = sorted((t for t in topic_ids if t not in by_id), key=natural_key)
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
    result = {"variants": len(records), "topics_created": len(missing), "replaced": replaced,
              "corrected": sum(1 for v in rows if v.uncorrected)}
    if before_commit is not None:
        before_commit(result)
    return result
