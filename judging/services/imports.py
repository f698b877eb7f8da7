"""Judgment files into judgment sets, and the bulk row insert the other writes share."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from django.db import connection, transaction
from django.utils import timezone

from common.fileio import clean_name, file_sha256

from .. import labelfiles
from ..models import JudgmentSet, Label

LABEL_BATCH = 5000


def judgments_import(path, *, format: str, name: str, topic_set_name: str | None = None,
                     assessor: str = "nist") -> JudgmentSet:
    """A judgment file (see :mod:`judging.labelfiles`) as a new judgment set.

    All or nothing: the whole file is read and checked before anything is stored; the first
    bad line raises :class:`common.fileio.InputError` naming the file and line. With
    ``topic_set_name`` every topic must be a topic of that set (and every intent one of
    its intents). A repeated label by the same assessor is a later revision.
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


def rows_insert(model, fields: tuple[str, ...], rows: Iterable[tuple]) -> None:
    """Insert many rows (values in ``fields`` order; foreign keys as ids). PostgreSQL:
    one COPY (Django's ``bulk_create`` builds an object and parameters per row, ~10x
    slower); elsewhere ``bulk_create`` in batches."""
    columns = [model._meta.get_field(f).column for f in fields]
    if connection.vendor != "postgresql":
        batch = []
        for row in rows:
            batch.append(model(**dict(zip(columns, row))))
            if len(batch) >= LABEL_BATCH:
                model.objects.bulk_create(batch)
                batch = []
        model.objects.bulk_create(batch)
        return
    ops = connection.ops
    sql = (f"COPY {ops.quote_name(model._meta.db_table)} "
           f"({', '.join(ops.quote_name(c) for c in columns)}) FROM STDIN")
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def judgment_set_delete(jset: JudgmentSet) -> None:
    if hasattr(jset, "task"):
        raise ValueError(f"judgment set {jset.name!r} belongs to judging task "
                         f"{jset.task.name!r}; delete the task first")
    with transaction.atomic():
        jset.delete()
