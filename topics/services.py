"""Writes for topics, their statements and intents, and imported query variants.

Each function that writes owns its transaction; imports are all or nothing.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from django.db import connection, transaction
from django.db.models import Count, F, QuerySet

from common.fileio import clean_name, quote
from common.naturalsort import natural_key, natural_sort_key
from topics import spelling
from topics.models import Intent, QueryVariant, Statement, Topic, TopicSet
from topics.normalise import NORMALISATIONS, normalise_query
from topics.topicfiles import TopicRecord
from topics.variantfiles import VariantRecord


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
    """Word support of each topic for spell-correction (:func:`topics.spelling.topic_vocabulary`):
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


#: Records an import reads, checks and writes at a time: its memory does not grow with
#: the file (a million topics are 200 batches, not one list).
IMPORT_BATCH = 5000


def _batches(records: Iterable, size: int):
    batch = []
    for r in records:
        batch.append(r)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _new_topic_set_name(name: str) -> str:
    """The name of a topic set to create, checked as the pages and the API check it (:func:`common.fileio.clean_name`: it becomes part of page addresses and
    file names)."""
    _check_length_plain(name, TopicSet, "name", "topic set name")
    try:
        clean_name(name, "topic set name",
                   max_chars=TopicSet._meta.get_field("name").max_length)
    except ValueError as exc:
        raise ImportRejected(str(exc)) from None
    return name


def _topic_set_for_import(topic_set_name: str) -> tuple[TopicSet, int]:
    """The topic set (created if missing; the name of a new one checked, and the import's
    transaction rolled back when it is refused), locked so that imports into one set run
    one at a time, and the largest topic key before this import: topics above it were
    written by this import."""
    _check_length_plain(topic_set_name, TopicSet, "name", "topic set name")
    topic_set, created = TopicSet.objects.select_for_update().get_or_create(name=topic_set_name)
    if created:
        _new_topic_set_name(topic_set_name)
    last = Topic.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    return topic_set, last


@transaction.atomic
def topics_import(
    topic_set_name: str, records: Iterable[TopicRecord], *, replace: bool = False,
    merge_rows: bool = False, batch_size: int = IMPORT_BATCH,
    before_commit: Callable[[dict], None] | None = None,
) -> dict:
    """Create the topics of ``records`` in the topic set (created if missing).

    All or nothing. A topic id already in the set is an error listing such ids, unless
    ``replace`` is true: then that topic's title, description and narrative are
    overwritten and its statements and intents replaced by the file's. Its query variants
    are kept. Topics of the set that are not in ``records`` are left alone.

    ``records`` are read, checked and written ``batch_size`` at a time, so a file of a
    million topics imports in bounded memory (:func:`topics.topicfiles.iter_topics` reads
    one that way). With ``merge_rows`` (a tsv file: one row per statement) a record whose
    id came earlier adds its statements to that topic, in order, and the titles must
    agree (an empty title agrees with anything); otherwise a repeated id is an error.

    Returns ``{"created": n, "replaced": m}``.
    ``before_commit(result)``, when given, is called with the result inside the import's
    transaction, after the last write: a caller commits its own mark with the import, or
    raises to roll it back (an upload's lease lost).
    """
    if not topic_set_name:
        raise ImportRejected("a topic set name is required")
    topic_set, before = _topic_set_for_import(topic_set_name)
    created = 0
    statements_delta = 0
    replaced: set[int] = set()  # topics of the set before, replaced by this import
    for batch in _batches(records, batch_size):
        n, delta = _topics_batch(topic_set, before, batch, replace, merge_rows, replaced)
        created += n
        statements_delta += delta
    TopicSet.objects.filter(pk=topic_set.pk).update(
        topics_count=F("topics_count") + created,
        statements_count=F("statements_count") + statements_delta)
    result = {"created": created, "replaced": len(replaced)}
    if before_commit is not None:
        before_commit(result)
    return result


def _topics_batch(topic_set: TopicSet, before: int, batch: list[TopicRecord], replace: bool,
                  merge_rows: bool, replaced: set[int]) -> tuple[int, int]:
    """Write one batch; returns (topics created, statements added less removed)."""
    groups: dict[str, dict] = {}
    for r in batch:
        if not r.topic_id:
            raise ImportRejected(f"{_where(r)}empty topic id")
        _check_length(r, r.topic_id, Topic, "topic_id", f"topic id {r.topic_id[:20]!r}...")
        _check_length(r, r.kind, Topic, "kind", "the topic type")
        for intent in r.intents:
            _check_length(r, intent.intent_id, Intent, "intent_id", "an intent id")
            _check_length(r, intent.kind, Intent, "kind", "an intent kind")
        group = groups.get(r.topic_id)
        if group is None:
            groups[r.topic_id] = {"record": r, "title": r.title, "statements": list(r.statements),
                                  "intents": list(r.intents)}
            continue
        if not merge_rows:
            raise ImportRejected(f"{_where(r)}topic id {r.topic_id!r} repeated "
                                 f"(first at line {group['record'].line})")
        _merge_title(group, r, group["title"], f"line {group['record'].line}")
        group["statements"].extend(r.statements)
        group["intents"].extend(r.intents)
    found = {t.topic_id: t for t in Topic.objects.select_for_update().filter(
        topic_set=topic_set, topic_id__in=list(groups))}
    clash = sorted((t for t, topic in found.items()
                    if topic.pk <= before and topic.pk not in replaced and not replace),
                   key=natural_key)
    if clash:
        shown = ", ".join(clash[:100]) + (f" and {len(clash) - 100} more" if len(clash) > 100
                                          else "")
        raise ImportRejected(
            f"{len(clash)} topic(s) already in set {topic_set.name!r}: {shown} "
            "(import with replace to overwrite them)"
        )
    delta = 0
    # topics of the set before this import, replaced now (once: later rows of a replaced
    # topic add to it like rows of a new one)
    fresh = [t for t in found.values() if t.pk <= before and t.pk not in replaced]
    for topic in fresh:
        r = groups[topic.topic_id]["record"]
        topic.title = groups[topic.topic_id]["title"]
        topic.description, topic.narrative, topic.kind = r.description, r.narrative, r.kind
    if fresh:
        Topic.objects.bulk_update(fresh, ["title", "description", "narrative", "kind"],
                                  batch_size=500)
        _, removed = Statement.objects.filter(topic__in=fresh).delete()
        delta -= removed.get(Statement._meta.label, 0)
        Intent.objects.filter(topic__in=fresh).delete()
        replaced.update(t.pk for t in fresh)
    # topics this import wrote in an earlier batch (or replaced): rows that add to them
    earlier = [t for t in found.values() if t not in fresh]
    for topic in earlier:
        group = groups[topic.topic_id]
        if not merge_rows:
            raise ImportRejected(f"{_where(group['record'])}topic id {topic.topic_id!r} "
                                 "repeated (first earlier in the file)")
        title = group["title"]
        if title and topic.title and title != topic.title:
            raise ImportRejected(
                f"{_where(group['record'])}topic {topic.topic_id!r} has title "
                f"{quote(title, 80)} here but {quote(topic.title, 80)} on an earlier line")
        if title and not topic.title:
            Topic.objects.filter(pk=topic.pk).update(title=title)
    new = [(t, g["title"], g["record"]) for t, g in groups.items() if t not in found]
    pks = {t: topic.pk for t, topic in found.items()}
    pks.update(_topics_insert(topic_set, new))
    offsets = dict(Statement.objects.filter(topic__in=earlier).values("topic")
                   .annotate(n=Count("id")).values_list("topic", "n")) if earlier else {}
    statements = [
        (pks[t], offsets.get(pks[t], 0) + i, text)
        for t, g in groups.items() for i, text in enumerate(g["statements"])
    ]
    _statements_insert(statements)
    intents = [Intent(topic_id=pks[t], intent_id=i.intent_id, description=i.description,
                      kind=i.kind) for t, g in groups.items() for i in g["intents"]]
    if intents:
        Intent.objects.bulk_create(intents, batch_size=1000)
    return len(new), delta + len(statements)


def _topics_insert(topic_set: TopicSet, rows: list[tuple[str, str, TopicRecord]]
                   ) -> dict[str, int]:
    """Insert new topics ``(topic id, title, record)``; their keys by topic id (the
    caller adds them to the set's ``topics_count``). On
    PostgreSQL one ``INSERT ... SELECT unnest(...)`` per batch (building a model object
    per row cost more than the database's work); elsewhere ``bulk_create``."""
    if not rows:
        return {}
    if connection.vendor != "postgresql":
        topics = [Topic(topic_set=topic_set, topic_id=t, sort_key=natural_sort_key(t),
                        title=title, description=r.description, narrative=r.narrative,
                        kind=r.kind)
                  for t, title, r in rows]
        # the plain bulk_create: topics_import counts the topics it adds itself
        QuerySet.bulk_create(Topic.objects.all(), topics, batch_size=1000)
        return {t.topic_id: t.pk for t in topics}
    table = connection.ops.quote_name(Topic._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (topic_set_id, topic_id, sort_key, title, description, "
            "narrative, kind) SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[], "
            "%s::text[], %s::text[], %s::text[]) RETURNING topic_id, id",
            [topic_set.pk, [t for t, _, _ in rows], [natural_sort_key(t) for t, _, _ in rows],
             [title for _, title, _ in rows], [r.description for _, _, r in rows],
             [r.narrative for _, _, r in rows], [r.kind for _, _, r in rows]])
        return dict(cursor.fetchall())


def _statements_insert(rows: list[tuple[int, int, str]]) -> None:
    """Insert statements ``(topic key, position, text)`` (as :func:`_topics_insert`)."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        Statement.objects.bulk_create(
            [Statement(topic_id=pk, position=n, text=text) for pk, n, text in rows],
            batch_size=1000)
        return
    table = connection.ops.quote_name(Statement._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (topic_id, position, text) "
            "SELECT * FROM unnest(%s::bigint[], %s::int[], %s::text[])",
            [[pk for pk, _, _ in rows], [n for _, n, _ in rows], [t for _, _, t in rows]])


def _merge_title(group: dict, record: TopicRecord, title: str, where: str) -> str:
    """The topic's title once ``record`` (a further row of it) is read: rows must agree."""
    if record.title and title and record.title != title:
        raise ImportRejected(
            f"{_where(record)}topic {record.topic_id!r} has title {quote(record.title, 80)} "
            f"here but {quote(title, 80)} on {where}")
    title = record.title or title
    group["title"] = title
    return title


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
    normalise: str = "punctuation",
    before_commit: Callable[[dict], None] | None = None,
) -> dict:
    """Add imported query variants to the topics of a topic set.

    All or nothing. Raw text, its normalised form (:func:`topics.normalise.normalise_query`
    with ``normalise``: punctuation, case or none),
    worker id, count and estimate are kept for every record; duplicates are never merged.
    Topics missing from the set are an error listing all of them, unless
    ``create_topics`` is true: then they are created with their id only (and the set too,
    if it does not exist). With ``replace`` the imported (not crowd-collected) variants
    already stored for the topics named in ``records`` are deleted first, so re-importing
    a file does not double its counts.

    With ``spell_correct`` a word of the normalised text is corrected towards a word one
    edit away that the topic's texts or other answers use (:mod:`topics.spelling`); the
    text before correction is kept as ``uncorrected``. Corrections weigh every answer of
    the file, so such an import holds the file's records at once.

    Otherwise records are read, checked and written ``batch_size`` at a time (with
    ``bulk_create``): memory does not grow with the file.
    Returns ``{"variants": n, "topics_created": m, "replaced": k, "corrected": c}``.
    ``before_commit(result)``, when given, is called with the result inside the import's
    transaction, after the last write: a caller commits its own mark with the import, or
    raises to roll it back (an upload's lease lost).
    """
    if normalise not in NORMALISATIONS:
        raise ImportRejected(
            f"unknown normalisation {normalise!r}; one of {', '.join(NORMALISATIONS)}")
    if spell_correct and normalise == "none":
        raise ImportRejected("spell correction works on normalised words: use it with the "
                             "punctuation or case normalisation, not none")
    insert_batch = batch_size
    if spell_correct:
        records = list(records)
        batch_size = max(1, len(records))
    topic_set = TopicSet.objects.filter(name=topic_set_name).first()
    if topic_set is None:
        if not create_topics:
            raise ImportRejected(
                f"topic set {topic_set_name!r} does not exist "
                "(import its topics first, or create topics from the variants)"
            )
        topic_set = TopicSet.objects.create(name=_new_topic_set_name(topic_set_name))
    done = {"variants": 0, "topics_created": 0, "replaced": 0, "corrected": 0}
    missing: dict[str, VariantRecord] = {}  # topics not in the set (without create_topics)
    cleared: set[int] = set()  # topics whose imported variants were deleted (replace)
    for batch in _batches(records, batch_size):
        _variants_batch(topic_set, batch, create_topics, replace, spell_correct, missing,
                        cleared, done, insert_batch, normalise)
    if missing:
        names = sorted(missing, key=natural_key)
        raise ImportRejected(
            f"{len(names)} topic(s) not in set {topic_set_name!r}: {', '.join(names)} "
            f"(first: {_where(missing[names[0]])}topic {names[0]}; "
            "import the topics first, or create them from the variants)"
        )
    if not done["variants"]:
        raise ImportRejected("no query variants to import")
    if before_commit is not None:
        before_commit(done)
    return done


def _variants_batch(topic_set: TopicSet, batch: list[VariantRecord], create_topics: bool,
                    replace: bool, spell_correct: bool, missing: dict[str, VariantRecord],
                    cleared: set[int], done: dict, insert_batch: int,
                    normalise: str = "punctuation") -> None:
    topic_ids: dict[str, VariantRecord] = {}
    for r in batch:
        _check_length(r, r.topic_id, Topic, "topic_id", "the topic id")
        _check_length(r, r.variant_id, QueryVariant, "variant_id", "the variant id")
        _check_length(r, r.worker_id, QueryVariant, "worker_id", "the worker id")
        _check_length(r, r.estimate, QueryVariant, "estimate", "the estimate")
        if r.count < 1:
            raise ImportRejected(f"{_where(r)}count {r.count} is not positive")
        topic_ids.setdefault(r.topic_id, r)
    by_id = dict(Topic.objects.filter(topic_set=topic_set, topic_id__in=list(topic_ids))
                 .values_list("topic_id", "id"))
    absent = sorted((t for t in topic_ids if t not in by_id), key=natural_key)
    if absent and not create_topics:
        for t in absent:
            missing.setdefault(t, topic_ids[t])
    if missing:
        return  # the import fails once every missing topic is known
    if absent:
        created = Topic.objects.bulk_create(
            [Topic(topic_set=topic_set, topic_id=t) for t in absent], batch_size=500)
        by_id.update((t.topic_id, t.pk) for t in created)
        done["topics_created"] += len(created)
    if replace:
        fresh = [pk for pk in by_id.values() if pk not in cleared]
        if fresh:
            deleted, _ = QueryVariant.objects.filter(
                topic_id__in=fresh, source=QueryVariant.SOURCE_IMPORT).delete()
            done["replaced"] += deleted
            cleared.update(fresh)
    norms = [normalise_query(r.raw, normalise) for r in batch]
    # words other people used for the topic, in this file or stored, support corrections
    known = topic_vocabularies(
        by_id.values(), ((by_id[r.topic_id], n, r.count) for r, n in zip(batch, norms))
    ) if spell_correct else {}
    rows = []
    for r, n in zip(batch, norms):
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
    QueryVariant.objects.bulk_create(rows, batch_size=insert_batch)
    done["variants"] += len(rows)
    done["corrected"] += sum(1 for v in rows if v.uncorrected)
