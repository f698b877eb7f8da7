"""Moving imported qrels into judgment sets keeps them: a database at the migrations before
the move, with pooling qrels filled through the historical models, migrated forward, reads
every judgment back as a label of a judgment set through today's models; a name a judgment
set already had is renamed as the migration says; migrating back restores the qrels."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("topics", "0001_initial"),
    ("pooling", "0007_topics_app"),
    ("judging", "0010_assessor_invites"),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def _latest():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _fill(apps) -> None:
    get = apps.get_model
    ts = get("topics", "TopicSet").objects.create(name="house", topics_count=2)
    other = get("topics", "TopicSet").objects.create(name="other", topics_count=1)
    for topic_set, topic_id in ((ts, "T1"), (ts, "UQV100.002"), (other, "T1")):
        get("topics", "Topic").objects.create(topic_set=topic_set, topic_id=topic_id,
                                              sort_key=topic_id.lower())
    Qrels, Judgment = get("pooling", "Qrels"), get("pooling", "QrelsJudgment")
    adhoc = Qrels.objects.create(name="web", format="adhoc", source_file="web.qrels",
                                 checksum="a" * 64, judgments_count=3)
    for topic_id, docid, grade in (("T1", "d1", 1), ("UQV100.002", "d2", 0),
                                   ("T1", "d3", -2)):
        Judgment.objects.create(qrels=adhoc, topic_id=topic_id, intent_id="0", docid=docid,
                                grade=grade)
    # "clash": a judgment set has the name already; only topic T1, held by two topic sets
    get("judging", "JudgmentSet").objects.create(name="clash", source="task", topic_set=ts)
    div = Qrels.objects.create(name="clash", format="diversity", judgments_count=2)
    Judgment.objects.create(qrels=div, topic_id="T1", intent_id="2", docid="d9", grade=3)
    Judgment.objects.create(qrels=div, topic_id="T1", intent_id="1", docid="d9", grade=0)


@pytest.mark.django_db(transaction=True)
def test_imported_qrels_survive_as_judgment_sets_and_come_back():
    from judging.models import JudgmentSet, Label
    from judging.selectors import qrels_lines, qrels_summary
    from topics.models import TopicSet

    try:
        _fill(_migrate(BEFORE))
        _latest()

        web = JudgmentSet.objects.get(name="web")
        assert (web.source, web.format, web.source_file, web.checksum, web.labels_count) == (
            "import", "adhoc", "web.qrels", "a" * 64, 3)
        assert web.topic_set == TopicSet.objects.get(name="house")  # the one holding both
        labels = list(Label.objects.filter(judgment_set=web).order_by("line").values_list(
            "topic_id", "intent_id", "docid", "assessor", "grade", "line", "current"))
        assert labels == [("T1", "", "d1", "qrels", 1, 1, True),
                          ("UQV100.002", "", "d2", "qrels", 0, 2, True),
                          ("T1", "", "d3", "qrels", -2, 3, True)]
        assert [(x.topic_id, x.docid, x.grade) for x in qrels_lines(web, "adhoc")] == [
            ("T1", "d1", 1), ("UQV100.002", "d2", 0), ("T1", "d3", -2)]
        assert qrels_summary(web)["grades"] == {"-2": 1, "0": 1, "1": 1}

        task_set = JudgmentSet.objects.get(name="clash")
        assert (task_set.source, task_set.labels.count()) == ("task", 0)  # left alone
        moved = JudgmentSet.objects.get(name="clash-qrels")
        assert (moved.format, moved.labels_count, moved.topic_set) == ("diversity", 2, None)
        assert sorted(Label.objects.filter(judgment_set=moved).values_list(
            "intent_id", "grade")) == [("1", 0), ("2", 3)]

        apps = _migrate(BEFORE)  # and back
        Qrels = apps.get_model("pooling", "Qrels")
        back = Qrels.objects.get(name="web")
        assert (back.format, back.judgments_count, back.checksum) == ("adhoc", 3, "a" * 64)
        assert list(back.judgments.order_by("id").values_list(
            "topic_id", "intent_id", "docid", "grade")) == [
            ("T1", "0", "d1", 1), ("UQV100.002", "0", "d2", 0), ("T1", "0", "d3", -2)]
        assert Qrels.objects.get(name="clash-qrels").judgments.count() == 2
        assert not apps.get_model("judging", "JudgmentSet").objects.filter(
            name__in=["web", "clash-qrels"]).exists()
    finally:
        _latest()  # the database is left migrated, whatever happened
