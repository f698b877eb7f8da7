"""Moving the topic models from crowd to topics keeps a project's rows: a database at the
migrations before the move, filled through the historical models, migrated forward, reads
back every row and relation through today's models; a permission granted on a topic model
stays granted."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# every app the move touched, at its last migration before it
BEFORE = [
    ("crowd", "0009_topic_sort_key"),
    ("retrieval", "0006_chunks_for_unfinished_runs"),
    ("pooling", "0006_pool_runs_fill"),
    ("judging", "0007_task_stop_rule"),
]


def _migrate(targets):
    """Migrate to ``targets``; the historical models there (with auth and contenttypes as
    they are now, which the move leaves alone)."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    loader = MigrationExecutor(connection).loader
    nodes = [t for t in targets if t[1] is not None]
    nodes += [n for n in loader.graph.leaf_nodes() if n[0] in ("auth", "contenttypes")]
    return loader.project_state(nodes).apps


def _latest():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _fill(apps) -> dict:
    """A small project through the historical models; returns the keys to look for."""
    get = apps.get_model
    ts = get("crowd", "TopicSet").objects.create(name="house", topics_count=2, statements_count=2)
    t1 = get("crowd", "Topic").objects.create(topic_set=ts, topic_id="T1", sort_key="t1",
                                              title="first")
    t2 = get("crowd", "Topic").objects.create(topic_set=ts, topic_id="UQV100.002",
                                              sort_key="uqv2", title="second")
    s1 = get("crowd", "Statement").objects.create(topic=t1, position=0, text="find the first")
    s2 = get("crowd", "Statement").objects.create(topic=t2, position=0, text="find the second")
    intent = get("crowd", "Intent").objects.create(topic=t1, intent_id="1", description="one")
    imported = get("crowd", "QueryVariant").objects.create(
        topic=t1, variant_id="v1", raw="First Query", normalised="first query", count=3)
    answered = get("crowd", "QueryVariant").objects.create(
        topic=t2, raw="Second", normalised="second", source="crowd", worker_id="W1")
    study = get("crowd", "Study").objects.create(
        name="house study", topic_set=ts, consent_text="ok?", completion_code="C1")
    item1 = get("crowd", "StudyItem").objects.create(study=study, statement=s1)
    item2 = get("crowd", "StudyItem").objects.create(study=study, statement=s2)
    check = get("crowd", "StudyItem").objects.create(study=study, kind="attention",
                                                     prompt="type purple", expected="purple")
    participant = get("crowd", "Participant").objects.create(
        study=study, platform="prolific", worker_id="W1", session_token="tok", status="active")
    a1 = get("crowd", "Assignment").objects.create(participant=participant, item=item2,
                                                   position=0)
    get("crowd", "Assignment").objects.create(participant=participant, item=check, position=1)
    get("crowd", "Response").objects.create(assignment=a1, raw="Second", normalised="second",
                                            variant=answered)

    collection = get("retrieval", "Collection").objects.create(
        name="house-docs", format="jsonl", source_path="docs.jsonl", status="ready")
    model = get("retrieval", "RetrievalModel").objects.create(name="house-bm25", kind="bm25")
    ranking = get("retrieval", "Ranking").objects.create(
        collection=collection, model=model, query_text="first query", length=1,
        docids=b"\x01\x00\x00\x00", scores=b"\x00\x00\x80\x3f")
    run = get("retrieval", "Run").objects.create(
        kind="retrieval", topic_set=ts, collection=collection, model=model, source="variants",
        tag="house-run", status="done")
    query = get("retrieval", "RunQuery").objects.create(
        run=run, topic=t1, label="v1", query_text="first query", ranking=ranking)

    pool = get("pooling", "Pool").objects.create(name="house-pool", topic_set=ts,
                                                 sources="users", depth=10, status="done")
    get("pooling", "PoolRun").objects.create(pool=pool, run=run)
    get("pooling", "PoolTopic").objects.create(pool=pool, topic_id="T1", size=1, docids=b"d",
                                               weights=b"w", min_rank=b"m", users=b"u",
                                               systems=b"s")

    judgments = get("judging", "JudgmentSet").objects.create(name="house-judged", topic_set=ts,
                                                             source="task")
    task = get("judging", "JudgingTask").objects.create(
        name="house-task", pool=pool, judgment_set=judgments, collection=collection, study=study)
    get("judging", "TaskTopic").objects.create(task=task, topic_id="T1", size=1, intents=["1"])
    judged = get("judging", "JudgingItem").objects.create(task=task, topic_id="T1", docid="d1",
                                                         position=0)
    from django.utils import timezone

    get("judging", "Label").objects.create(
        judgment_set=judgments, topic_id="T1", intent_id="1", docid="d1", assessor="alice",
        grade=2, created=timezone.now(), item=judged)

    # a permission on a topic model, granted before the move
    ContentType = get("contenttypes", "ContentType")
    Permission = get("auth", "Permission")
    ct, _ = ContentType.objects.get_or_create(app_label="crowd", model="topic")
    perm, _ = Permission.objects.get_or_create(content_type=ct, codename="view_topic",
                                               defaults={"name": "Can view topic"})
    user = get("auth", "User").objects.create(username="curator", is_active=True)
    user.user_permissions.add(perm)

    return {"ts": ts.pk, "t1": t1.pk, "t2": t2.pk, "s1": s1.pk, "intent": intent.pk,
            "imported": imported.pk, "answered": answered.pk, "study": study.pk,
            "item1": item1.pk, "run": run.pk, "query": query.pk, "pool": pool.pk,
            "judgments": judgments.pk, "task": task.pk, "ct": ct.pk}


@pytest.mark.django_db(transaction=True)
def test_a_project_survives_the_move_of_the_topic_models():
    from django.contrib.auth.models import User
    from django.contrib.contenttypes.models import ContentType

    from crowd.models import Assignment, Participant, Response, Study, StudyItem
    from judging.models import JudgingTask, JudgmentSet, Label
    from pooling.models import Pool, PoolTopic
    from retrieval.models import Run, RunQuery
    from topics.models import Intent, QueryVariant, Statement, Topic, TopicSet

    try:
        keys = _fill(_migrate(BEFORE + [("topics", None)]))
    finally:
        _latest()  # the database is left migrated, whatever happened

    ts = TopicSet.objects.get(pk=keys["ts"])
    assert (ts.name, ts.topics_count, ts.statements_count) == ("house", 2, 2)
    assert [t.topic_id for t in ts.topics.order_by("sort_key")] == ["T1", "UQV100.002"]
    t1 = Topic.objects.get(pk=keys["t1"])
    assert (t1.topic_set_id, t1.title) == (ts.pk, "first")
    assert [s.text for s in t1.statements.all()] == ["find the first"]
    assert Statement.objects.count() == 2
    assert Intent.objects.get(pk=keys["intent"]).topic == t1
    assert QueryVariant.objects.get(pk=keys["imported"]).count == 3
    answered = QueryVariant.objects.get(pk=keys["answered"])
    assert (answered.topic_id, answered.source) == (keys["t2"], "crowd")

    study = Study.objects.get(pk=keys["study"])
    assert study.topic_set == ts and list(ts.studies.all()) == [study]
    assert StudyItem.objects.get(pk=keys["item1"]).statement.topic == t1
    assert StudyItem.objects.filter(study=study).count() == 3
    participant = Participant.objects.get(study=study)
    assert Assignment.objects.filter(participant=participant).count() == 2
    response = Response.objects.get()
    assert response.variant == answered and answered.response == response
    assert response.assignment.item.statement.topic.topic_id == "UQV100.002"

    run = Run.objects.get(pk=keys["run"])
    assert run.topic_set == ts and list(ts.runs.all()) == [run]
    query = RunQuery.objects.get(pk=keys["query"])
    assert query.topic == t1 and query.ranking.query_text == "first query"
    pool = Pool.objects.get(pk=keys["pool"])
    assert pool.topic_set == ts and list(pool.runs.all()) == [run]
    assert PoolTopic.objects.get(pool=pool).topic_id == "T1"
    judgments = JudgmentSet.objects.get(pk=keys["judgments"])
    assert judgments.topic_set == ts and list(ts.judgment_sets.all()) == [judgments]
    task = JudgingTask.objects.get(pk=keys["task"])
    assert (task.pool, task.study, task.judgment_set) == (pool, study, judgments)
    assert task.topics.get().intents == ["1"] and task.items.get().docid == "d1"
    assert Label.objects.get(judgment_set=judgments).grade == 2

    # the content type moved with the model, and the permission on it with it
    ct = ContentType.objects.get(pk=keys["ct"])
    assert (ct.app_label, ct.model) == ("topics", "topic")
    assert ct.model_class() is Topic
    assert User.objects.get(username="curator").has_perm("topics.view_topic")

    # deleting through today's models still cascades across the old foreign keys
    participant.delete()  # its assignments hold the study's items
    study.delete()
    Topic.objects.filter(pk=keys["t1"]).delete()
    assert not RunQuery.objects.filter(pk=keys["query"]).exists()
    assert not Intent.objects.filter(pk=keys["intent"]).exists()
