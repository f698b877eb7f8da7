"""Judgment files into judgment sets (label files and TREC qrels files alike), and the bulk
row insert the other writes share."""
from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Callable, Iterable

from django.db import connection, transaction
from django.utils import timezone

from common import fileio, trec
from common.fileio import clean_name, file_sha256
from common.naturalsort import natural_key

from .. import labelfiles
from ..models import NO_INTENT, QRELS_ASSESSOR, JudgmentSet, Label

LABEL_BATCH = 5000


def judgments_import(path, *, format: str, name: str, topic_set_name: str | None = None,
                     assessor: str = "nist") -> JudgmentSet:
    """A judgment file (see :mod:`judging.labelfiles`) as a new judgment set.

    All or nothing: the whole file is read and checked before anything is stored; the first
    bad line raises :class:`common.fileio.InputError` naming the file and line. With
    ``topic_set_name`` every topic must be a topic of that set (and every intent one of
    its intents); without it the set is the topic set that holds every topic of the file
    when exactly one does (:func:`topics.selectors.topic_sets_holding`), as for qrels,
    else none (:func:`topic_set_ambiguity` says when several do). A repeated label by the
    same assessor is a later revision.
    """
    name = clean_name(name, "judgment set name")
    if JudgmentSet.objects.filter(name=name).exists():
        raise ValueError(f"a judgment set named {name!r} already exists")
    path = Path(path)
    records = list(labelfiles.read_labels(path, format, assessor=assessor))
    if not records:
        raise ValueError(f"{path}: no judgments found")
    topic_set = None
    if topic_set_name is not None:
        from topics.selectors import topic_list, topic_set_get

        topic_set = topic_set_get(topic_set_name)
        intents = {t.topic_id: {i.intent_id for i in t.intents.all()}
                   for t in topic_list(topic_set_name)}
        for r in records:
            if r.topic_id not in intents:
                raise ValueError(f"{path}, line {r.line}: topic {r.topic_id!r} is not in topic "
                                 f"set {topic_set_name!r}")
            if r.intent_id and r.intent_id not in intents[r.topic_id]:
                raise ValueError(f"{path}, line {r.line}: topic {r.topic_id!r} of topic set "
                                 f"{topic_set_name!r} has no intent {r.intent_id!r}")
    else:
        from topics.selectors import topic_sets_holding

        holding = topic_sets_holding({r.topic_id for r in records})
        topic_set = holding[0] if len(holding) == 1 else None
    # revisions: the n-th label of one key by one assessor is revision n; the last counts
    count: dict[tuple, int] = {}
    for r in records:
        key = (r.topic_id, r.intent_id, r.docid, r.assessor)
        count[key] = count.get(key, 0) + 1
    seen: dict[tuple, int] = {}
    now = timezone.now()
    checksum = file_sha256(path)
    with transaction.atomic():
        jset = JudgmentSet.objects.create(
            name=name, source=JudgmentSet.SOURCE_IMPORT, topic_set=topic_set, format=format,
            source_file=path.name, checksum=checksum, labels_count=len(records))

        def rows():
            for r in records:
                key = (r.topic_id, r.intent_id, r.docid, r.assessor)
                rev = seen[key] = seen.get(key, 0) + 1
                yield (jset.pk, r.topic_id, r.intent_id, r.docid, r.assessor, r.grade, "", "",
                       now, rev, rev == count[key], False, r.line, False)

        rows_insert(Label, ("judgment_set", "topic_id", "intent_id", "docid", "assessor",
                             "grade", "cannot_judge", "rationale", "created", "revision",
                             "current", "withdrawn", "line", "simulated"), rows())
    return jset


def qrels_import(path, *, format: str, name: str, topic_set_name: str | None = None,
                 id_map: str | None = None, encoding: str = "utf-8",
                 before_commit: Callable[[JudgmentSet], None] | None = None) -> JudgmentSet:
    """A TREC qrels file as a new judgment set ``name`` (``adhoc``: topic iter docid rel;
    ``diversity``: topic subtopic docid rel; ``smart`` and ``cranqrel`` relevance files,
    stored as ad hoc qrels: see :mod:`common.trec`; ``.gz`` accepted).

    Qrels are a judgment set read from a file: one current :class:`~judging.models.Label`
    per line, by the assessor :data:`QRELS_ASSESSOR`, with its line number; an ad hoc line
    judges the topic as a whole (its iteration column, ignored by every evaluator, is not
    kept), a diversity line its subtopic as the intent. The set's ``format`` is ``adhoc``
    or ``diversity``.

    All or nothing: a malformed line, a second grade for one judgment or a file in another
    format raises a ``ValueError`` naming the file and line(s)
    (:func:`common.trec.read_qrels`), and nothing is stored. ``id_map="strip-zeros"``
    writes all-digit topic ids without leading zeros ("01" -> "1"). With
    ``topic_set_name`` every topic id must be a topic of that set (the error lists those
    that are not); without it the set is the one topic set holding every topic of the file,
    when exactly one does (:func:`topics.selectors.topic_sets_holding`), else none. The name
    must be usable in a page address (no ``/``, ``..``, spaces or invisible characters; at
    most 100 characters) and not that of another judgment set.

    ``before_commit(jset)``, when given, is called inside the import's transaction after
    the last write: a caller commits its own mark with the import, or raises to roll it
    back.
    """
    from topics.selectors import topic_set_get, topic_sets_holding

    if format not in trec.QRELS_FORMATS:
        raise ValueError(f"qrels format must be one of {', '.join(trec.QRELS_FORMATS)}, "
                         f"not {format!r}")
    read_as = format
    adhoc = format in trec.ADHOC_FORMATS
    name = clean_name(name, "qrels name",
                      max_chars=JudgmentSet._meta.get_field("name").max_length)
    try:
        path = fileio.require_file(path)
    except fileio.InputError as exc:
        raise ValueError(f"no such qrels file: {exc}") from None
    if JudgmentSet.objects.filter(name=name).exists():
        raise ValueError(f"qrels named {name!r} already exist (a judgment set has that name)")
    rows = trec.read_qrels(path, read_as, encoding=encoding, id_map=id_map)
    if topic_set_name is not None:
        topic_set = topic_set_get(topic_set_name)  # ValueError naming the known sets
        _qrels_topics_check(path, rows, topic_set_name, id_map)
    else:
        holding = topic_sets_holding({rec.topic_id for _, rec in rows})
        topic_set = holding[0] if len(holding) == 1 else None
    checksum = file_sha256(path)
    now = timezone.now()
    with transaction.atomic():
        jset = JudgmentSet.objects.create(
            name=name, source=JudgmentSet.SOURCE_IMPORT, topic_set=topic_set,
            format="adhoc" if adhoc else "diversity", source_file=path.name[:1000],
            checksum=checksum, labels_count=len(rows))
        rows_insert(Label, ("judgment_set", "topic_id", "intent_id", "docid", "assessor",
                             "grade", "cannot_judge", "rationale", "created", "revision",
                             "current", "withdrawn", "line", "simulated"),
                    ((jset.pk, rec.topic_id, NO_INTENT if adhoc else rec.subtopic, rec.docid,
                      QRELS_ASSESSOR, rec.rel, "", "", now, 1, True, False, lineno, False)
                     for lineno, rec in rows))
        if before_commit is not None:
            before_commit(jset)
    return jset


def _qrels_topics_check(path: Path, rows, topic_set_name: str, id_map: str | None) -> None:
    from topics.selectors import topic_list

    known = {t.topic_id for t in topic_list(topic_set_name)}
    first_line: dict[str, int] = {}
    for lineno, rec in rows:
        if rec.topic_id not in known:
            first_line.setdefault(rec.topic_id, lineno)
    if first_line:
        unknown = sorted(first_line, key=natural_key)
        shown = ", ".join(f"{t} (line {first_line[t]})" for t in unknown[:20])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        hint = ("" if id_map else "; if the file writes ids with leading zeros ('01' for '1'), "
                "use --id-map strip-zeros")
        raise ValueError(
            f"{path}: {len(unknown)} topic(s) not in topic set {topic_set_name!r}: "
            f"{shown}{more}{hint}")


def topic_set_ambiguity(jset: JudgmentSet, what: str = "judgment set") -> str | None:
    """The warning for an imported ``jset`` that got no topic set because several topic
    sets hold all its topics (no project's page or menu offers it then), naming them and
    what to do; ``None`` when that is not the case."""
    if jset.topic_set_id is not None:
        return None
    from judging.selectors import judgment_set_topic_set_candidates

    candidates = [ts.name for ts in judgment_set_topic_set_candidates(jset)]
    if len(candidates) < 2:
        return None
    names = ", ".join(repr(n) for n in candidates)
    return (f"warning: {what} {jset.name!r} has no topic set: topic sets {names} each hold "
            "all its topics, so no project's page or menu offers it. Pass --topic-set NAME "
            "(one of those) to choose: import the file again with it under another --name, "
            "or set the topic set on the admin page.")


def rows_insert(model, fields: tuple[str, ...], rows: Iterable[tuple]) -> None:
    """Insert many rows (values in ``fields`` order; foreign keys as ids). PostgreSQL:
    one COPY. Elsewhere (SQLite): one prepared INSERT run by the driver for each batch of
    :data:`LABEL_BATCH` rows (``executemany``). Django's ``bulk_create`` builds a model
    object per row, compiles each value through the ORM and, within SQLite's 999
    parameters a statement, inserts 58 labels at a time: ~10x slower either way.

    Values go to the database as they are, except those of fields the driver cannot take
    unchanged (dates and times, decimals, JSON), which the field adapts as ``save()``
    would. The caller owns the transaction."""
    model_fields = [model._meta.get_field(f) for f in fields]
    columns = [f.column for f in model_fields]
    ops = connection.ops
    table = ops.quote_name(model._meta.db_table)
    names = ", ".join(ops.quote_name(c) for c in columns)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor, cursor.cursor.copy(
                f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    rows = iter(rows)
    adapters = [_db_adapter(f) for f in model_fields]
    if any(adapters):
        rows = (tuple(v if a is None else a(v) for a, v in zip(adapters, row))
                for row in rows)
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
    with connection.cursor() as cursor:
        while batch := list(islice(rows, LABEL_BATCH)):
            cursor.executemany(sql, batch)


# Field types whose Python values every database driver takes unchanged.
_AS_IS = frozenset({
    "AutoField", "BigAutoField", "SmallAutoField", "BigIntegerField", "BooleanField",
    "CharField", "FloatField", "IntegerField", "PositiveBigIntegerField",
    "PositiveIntegerField", "PositiveSmallIntegerField", "SmallIntegerField", "SlugField",
    "TextField"})


def _db_adapter(field) -> Callable | None:
    """None for a field whose values go in as they are, else the field's own conversion
    (remembering the last value: an import stamps every row with one time)."""
    target = field.target_field if field.is_relation else field
    if target.get_internal_type() in _AS_IS:
        return None
    last: list = [object(), None]

    def adapt(value):
        if value is not last[0]:
            last[:] = [value, field.get_db_prep_save(value, connection)]
        return last[1]

    return adapt


def judgment_set_delete(jset: JudgmentSet) -> None:
    if hasattr(jset, "task"):
        raise ValueError(f"judgment set {jset.name!r} belongs to judging task "
                         f"{jset.task.name!r}; delete the task first")
    with transaction.atomic():
        jset.delete()
