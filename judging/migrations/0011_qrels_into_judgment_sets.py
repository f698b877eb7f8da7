"""Imported qrels become judgment sets: one store of relevance judgments.

Every ``pooling.Qrels`` becomes a ``JudgmentSet`` (source ``import``, its format ``adhoc``
or ``diversity``, its file name, checksum and import time kept) and every
``QrelsJudgment`` a current ``Label`` by the assessor ``qrels``, in the stored order;
``line`` is its place in that order (1, 2, …: the old rows kept no line numbers). An ad hoc
judgment judges the topic as a whole (intent ``""``; the iteration column is dropped), a
diversity one its subtopic. The set's topic set is the one topic set holding every topic
the qrels judge, when exactly one does.

Name clashes: a qrels whose name a judgment set already has is renamed ``NAME-qrels``
(then ``NAME-qrels-2``, ``-3``, … until free; cut to 100 characters), and the rename is
logged as a warning of ``judging.migrations``. The pooling migration that follows drops the
old tables. Backwards, the judgment sets read from a qrels file (source ``import``, format
``adhoc`` or ``diversity``, every label by ``qrels``) go back to pooling's tables.
"""
import logging

from django.db import migrations

log = logging.getLogger("judging.migrations")

ASSESSOR = "qrels"
BATCH = 5000


def _free_name(JudgmentSet, name: str) -> str:
    if not JudgmentSet.objects.filter(name=name).exists():
        return name
    n = 1
    while True:
        suffix = "-qrels" if n == 1 else f"-qrels-{n}"
        candidate = name[:100 - len(suffix)] + suffix
        if not JudgmentSet.objects.filter(name=candidate).exists():
            return candidate
        n += 1


def _topic_set(Topic, TopicSet, topic_ids: set):
    if not topic_ids:
        return None
    counts: dict = {}
    ordered = sorted(topic_ids)
    for start in range(0, len(ordered), 1000):
        for ts in (Topic.objects.filter(topic_id__in=ordered[start:start + 1000])
                   .values_list("topic_set", flat=True)):
            counts[ts] = counts.get(ts, 0) + 1
    held = [pk for pk, n in counts.items() if n == len(topic_ids)]
    return TopicSet.objects.get(pk=held[0]) if len(held) == 1 else None


def forwards(apps, schema_editor):
    Qrels = apps.get_model("pooling", "Qrels")
    QrelsJudgment = apps.get_model("pooling", "QrelsJudgment")
    JudgmentSet = apps.get_model("judging", "JudgmentSet")
    Label = apps.get_model("judging", "Label")
    Topic = apps.get_model("topics", "Topic")
    TopicSet = apps.get_model("topics", "TopicSet")
    for qrels in Qrels.objects.order_by("pk"):
        rows = QrelsJudgment.objects.filter(qrels=qrels)
        topic_ids = set(rows.values_list("topic_id", flat=True).distinct())
        name = _free_name(JudgmentSet, qrels.name)
        if name != qrels.name:
            log.warning("qrels %r: a judgment set has that name; imported as judgment set %r",
                        qrels.name, name)
        jset = JudgmentSet.objects.create(
            name=name, source="import", topic_set=_topic_set(Topic, TopicSet, topic_ids),
            format=qrels.format, source_file=qrels.source_file, checksum=qrels.checksum,
            labels_count=0)
        JudgmentSet.objects.filter(pk=jset.pk).update(created=qrels.created)
        adhoc = qrels.format == "adhoc"
        # a key judged twice (not possible through import_qrels, which refuses a second
        # grade) keeps both: the later one is a revision and counts
        revisions: dict = {}
        batch, count = [], 0
        stream = rows.order_by("id").values_list("topic_id", "intent_id", "docid", "grade")
        for topic_id, intent_id, docid, grade in stream.iterator(chunk_size=BATCH):
            count += 1
            intent = "" if adhoc else intent_id
            key = (topic_id, intent, docid)
            revision = revisions[key] = revisions.get(key, 0) + 1
            if revision > 1:
                pending = [lb for lb in batch if (lb.topic_id, lb.intent_id, lb.docid) == key]
                for lb in pending:
                    lb.current = False
                if not pending:
                    Label.objects.filter(judgment_set=jset, topic_id=topic_id, intent_id=intent,
                                         docid=docid).update(current=False)
            batch.append(Label(judgment_set=jset, topic_id=topic_id, intent_id=intent,
                               docid=docid, assessor=ASSESSOR, grade=grade,
                               created=qrels.created, revision=revision, current=True,
                               line=count))
            if len(batch) >= BATCH:
                Label.objects.bulk_create(batch)
                batch = []
        Label.objects.bulk_create(batch)
        JudgmentSet.objects.filter(pk=jset.pk).update(labels_count=count)


def backwards(apps, schema_editor):
    Qrels = apps.get_model("pooling", "Qrels")
    QrelsJudgment = apps.get_model("pooling", "QrelsJudgment")
    JudgmentSet = apps.get_model("judging", "JudgmentSet")
    Label = apps.get_model("judging", "Label")
    for jset in JudgmentSet.objects.filter(source="import", format__in=["adhoc", "diversity"]):
        labels = Label.objects.filter(judgment_set=jset)
        if labels.exclude(assessor=ASSESSOR).exists() or Qrels.objects.filter(
                name=jset.name).exists():
            continue
        qrels = Qrels.objects.create(name=jset.name, format=jset.format,
                                     source_file=jset.source_file, checksum=jset.checksum)
        Qrels.objects.filter(pk=qrels.pk).update(created=jset.created)
        batch, count = [], 0
        stream = (labels.filter(current=True, grade__isnull=False).order_by("id")
                  .values_list("topic_id", "intent_id", "docid", "grade"))
        for topic_id, intent_id, docid, grade in stream.iterator(chunk_size=BATCH):
            count += 1
            batch.append(QrelsJudgment(qrels=qrels, topic_id=topic_id,
                                       intent_id=intent_id or "0", docid=docid, grade=grade))
            if len(batch) >= BATCH:
                QrelsJudgment.objects.bulk_create(batch)
                batch = []
        QrelsJudgment.objects.bulk_create(batch)
        Qrels.objects.filter(pk=qrels.pk).update(judgments_count=count)
        jset.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0010_assessor_invites"),
        ("pooling", "0007_topics_app"),
        ("topics", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
