"""User mode end to end: workers write queries in a crowd study, then judge the first N
pooled documents of the topics they wrote for; the intents are judged on the same
documents; the users' relevant sets R_u come out of the exports and into the intent
properties (plausibility, completeness)."""
from __future__ import annotations

import json
from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count

from crowd.models import Assignment
from judging import services
from judging.models import JudgingItem, JudgingSlot, JudgingTask, Label, TaskTopic
from pooling.selectors import pool_docids_by_topic
from topics.models import QueryVariant, Statement, Topic

from .conftest import make_pool

pytestmark = pytest.mark.django_db

N = 3  # documents per topic every user judges


def study_with_answers(workers=3):
    """A study over both topics' statements, one statement per worker and at most two
    workers per statement, answered by simulated workers (``sim-01``…) through the crowd
    services. ``{topic: sorted worker ids}`` of who wrote a query for which topic, read
    from the workers' assignments (not from the variants the task reads)."""
    from crowd.services import study_create
    from projects.demo import simulated_workers_answer

    for t in Topic.objects.filter(topic_set__name="ts"):
        Statement.objects.create(topic=t, position=0,
                                 text=f"You want to find out about garden {t.topic_id} plants")
    study = study_create(topic_set=Topic.objects.first().topic_set, name="qv",
                         consent_text="You agree.", completion_code="QV",
                         statements_per_worker=1, responses_per_statement=2)
    simulated_workers_answer(study, workers=workers, seed=3)
    wrote: dict[str, set[str]] = defaultdict(set)
    for worker, topic in Assignment.objects.filter(
            participant__study=study, response__isnull=False).values_list(
            "participant__worker_id", "item__statement__topic__topic_id"):
        wrote[topic].add(worker)
    return {t: sorted(w) for t, w in wrote.items()}


@pytest.fixture
def setup(tmp_path):
    pool = make_pool(tmp_path)
    writers = study_with_answers()
    for args in (("--name", "users", "--mode", "user", "--batch", "2"),
                 ("--name", "intents", "--mode", "intent", "--batch", str(N))):
        call_command("create_judging_task", "--pool", "p", "--per-topic", str(N), *args,
                     stdout=StringIO())
    users, intents = (JudgingTask.objects.get(name=n) for n in ("users", "intents"))
    first = {t: d[:N] for t, d in pool_docids_by_topic(pool).items()}
    return users, intents, writers, first


def judge_everything(task, assessor, grade_of):
    """Lease and judge until the queue has nothing for ``assessor``: ``{topic: [docid, …]}``
    in the order leased. ``grade_of(topic, docid)`` gives the grade."""
    got: dict[str, list[str]] = defaultdict(list)
    for _ in range(50):
        batch = services.batch_lease(task, assessor)
        if not batch:
            return dict(got)
        for it in batch:
            got[it.topic_id].append(it.docid)
            services.judgment_submit(task, assessor, it.item_id,
                                     {i: grade_of(it.topic_id, it.docid) for i in it.intents},
                                     submit_key=f"{assessor}-{it.item_id}")
    raise AssertionError("the queue never ran dry")


def user_relevant(writers, first):
    """R_u by construction: a topic's first writer finds its first two documents relevant,
    the second writer the third."""
    rel = {}
    for t, ws in writers.items():
        for k, w in enumerate(ws):
            rel[(t, w)] = set(first[t][:2]) if k == 0 else {first[t][2]}
    return rel


def test_the_study_gives_both_topics_writers_and_one_topic_two(setup):
    _, _, writers, _ = setup
    assert sorted(writers) == ["1", "2"]
    assert sorted(len(w) for w in writers.values()) == [1, 2]
    assert sum(len(w) for w in writers.values()) == 3


def test_task_lists_each_topics_writers_and_the_first_n_documents(setup):
    users, intents, writers, first = setup
    assert {t: u for t, u in TaskTopic.objects.filter(task=users).values_list(
        "topic_id", "users")} == writers
    assert set(QueryVariant.objects.exclude(worker_id="").values_list("worker_id", flat=True)) \
        == {w for ws in writers.values() for w in ws}
    assert users.redundancy == max(len(w) for w in writers.values()) == 2
    for task in (users, intents):  # the intents are judged on the same documents
        items = defaultdict(list)
        for t, d in JudgingItem.objects.filter(task=task).order_by("topic_id", "position") \
                .values_list("topic_id", "docid"):
            items[t].append(d)
        assert dict(items) == first
    assert all(TaskTopic.objects.filter(task=intents).values_list("intents", flat=True))
    assert list(TaskTopic.objects.filter(task=users).values_list("intents", flat=True)) == [
        [""], [""]]


def test_each_writer_judges_exactly_their_topics_first_n_documents_in_pool_order(setup):
    users, _, writers, first = setup
    rel = user_relevant(writers, first)
    everyone = sorted({w for ws in writers.values() for w in ws})
    for w in everyone:
        got = judge_everything(users, w, lambda t, d, w=w: int(d in rel.get((t, w), ())))
        assert got == {t: first[t] for t, ws in writers.items() if w in ws}, w
    # every writer's slots are done, and a topic has one slot per writer: none stays free
    done = defaultdict(set)
    for t, a in JudgingSlot.objects.filter(task=users, state=JudgingSlot.DONE).values_list(
            "topic_id", "assessor"):
        done[t].add(a)
    assert {t: sorted(a) for t, a in done.items()} == writers
    one = next(t for t, ws in writers.items() if len(ws) == 1)
    assert JudgingSlot.objects.filter(task=users, topic_id=one).count() == N
    assert not JudgingSlot.objects.filter(task=users).exclude(state=JudgingSlot.DONE).exists()


def test_a_worker_who_wrote_nothing_for_a_topic_gets_nothing_of_it(setup):
    users, _, writers, first = setup
    assert services.batch_lease(users, "dave") == []  # wrote for no topic
    only = next(ws[0] for ws in writers.values() if len(ws) == 1)
    other = next(t for t, ws in writers.items() if only not in ws)
    got = judge_everything(users, only, lambda t, d: 1)
    assert other not in got
    # a direct submit for an item of a topic they did not write for is refused
    item = JudgingItem.objects.filter(task=users, topic_id=other).order_by("position").first()
    for who in ("dave", only):
        with pytest.raises(services.QueueError):
            services.judgment_submit(users, who, item.pk, {"": 1}, submit_key=f"x-{who}")
    assert not Label.objects.filter(judgment_set=users.judgment_set,
                                    assessor__in=["dave"]).exists()
    assert not Label.objects.filter(judgment_set=users.judgment_set, topic_id=other,
                                    assessor=only).exists()


def test_user_relevant_sets_come_out_of_the_export_and_into_intent_properties(setup,
                                                                               tmp_path):
    users, intents, writers, first = setup
    rel = user_relevant(writers, first)
    for w in sorted({w for ws in writers.values() for w in ws}):
        judge_everything(users, w, lambda t, d, w=w: int(d in rel[(t, w)]))
    # one assessor judges the intents: intent 1 is the first two documents, intent 2 the third
    judge_everything(intents, "nist", lambda t, d: 0)
    for lab in Label.objects.filter(judgment_set=intents.judgment_set):
        pos = first[lab.topic_id].index(lab.docid)
        want = int((lab.intent_id == "1" and pos < 2) or (lab.intent_id == "2" and pos == 2))
        Label.objects.filter(pk=lab.pk).update(grade=want)

    # R_u from the raw export: per (topic, assessor), the documents graded above 0
    out = tmp_path / "users.tsv"
    call_command("export_qrels", "--judgments", "users", "--format", "raw", "--out", str(out),
                 stdout=StringIO())
    lines = out.read_text().splitlines()
    header = lines[0].split("\t")
    got: dict[tuple[str, str], set[str]] = defaultdict(set)
    judged: dict[tuple[str, str], set[str]] = defaultdict(set)
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t")))
        assert row["intent"] == "0"  # user labels have no intent
        judged[(row["topic"], row["assessor"])].add(row["docid"])
        if int(row["grade"]) > 0:
            got[(row["topic"], row["assessor"])].add(row["docid"])
    assert dict(got) == rel
    assert {k: sorted(v) for k, v in judged.items()} == {
        (t, w): sorted(first[t]) for t, ws in writers.items() for w in ws}

    # and into the intent properties: the first writer's R_u is R_1, the second's R_2
    out = StringIO()
    call_command("intent_properties", "--judgments", "intents", "--user-judgments", "users",
                 "--json", stdout=out)
    res = json.loads(out.getvalue())["per_topic"]
    for t, ws in writers.items():
        entry = res[t]
        assert entry["users"] == len(ws)
        assert entry["completeness"] == 1.0
        plaus = {i: e["plausibility"] for i, e in entry["intents"].items()}
        assert plaus == ({"1": 1.0, "2": 0.0} if len(ws) == 1 else {"1": 0.5, "2": 0.5})


def test_create_judging_task_refuses_a_redundancy_in_user_mode(setup):
    with pytest.raises(CommandError, match="every writer of a topic judges"):
        call_command("create_judging_task", "--pool", "p", "--name", "u2", "--mode", "user",
                     "--per-topic", "3", "--redundancy", "1")
    users = setup[0]
    with pytest.raises(ValueError, match="leave the redundancy out"):
        services.judging_task_create(pool=users.pool, name="u3", mode="user", per_topic=N,
                                     redundancy=2)
    assert not JudgingTask.objects.filter(name__in=["u2", "u3"]).exists()
    # outside user mode the default is one assessor per document
    assert services.judging_task_create(pool=users.pool, name="t1", mode="topic").redundancy == 1


def test_the_organiser_form_and_the_api_leave_user_mode_redundancy_to_the_writers(
        setup, client, django_user_model):
    from rest_framework.test import APIClient

    users, _, writers, _ = setup
    staff = django_user_model.objects.create_user("org", password="pw", is_staff=True)
    client.force_login(staff)
    form = {"pool": users.pool_id, "mode": "user", "scale": "binary", "per_topic": N}
    page = client.get("/crowd/organiser/judging-tasks/")
    assert page.status_code == 200
    assert client.post("/crowd/organiser/judging-tasks/", {**form, "name": "f1"}).status_code == 302
    refused = client.post("/crowd/organiser/judging-tasks/",
                          {**form, "name": "f2", "redundancy": 1})
    assert refused.status_code == 400 and "leave the redundancy out" in refused.content.decode()
    api = APIClient()
    api.force_authenticate(staff)
    made = api.post("/api/judging-tasks/", {"name": "a1", "pool": str(users.pool_id),
                                           "mode": "user", "per_topic": N}, format="json")
    assert made.status_code == 201, made.content
    want = max(len(ws) for ws in writers.values())
    assert {t.name: t.redundancy for t in JudgingTask.objects.filter(name__in=["f1", "a1"])} \
        == {"f1": want, "a1": want}
    topic = api.post("/api/judging-tasks/", {"name": "a2", "pool": str(users.pool_id),
                                             "mode": "topic"}, format="json")
    assert topic.status_code == 201 and JudgingTask.objects.get(name="a2").redundancy == 1


def test_user_mode_service_default_lets_every_writer_judge(setup, tmp_path):
    users, _, writers, first = setup
    pool = users.pool
    task = services.judging_task_create(pool=pool, name="users-default", mode="user",
                                        per_topic=N, batch=2)
    two = next(t for t, ws in writers.items() if len(ws) == 2)
    assert task.redundancy == 2
    for w in writers[two]:
        assert judge_everything(task, w, lambda t, d: 1).get(two) == first[two]


def test_user_mode_task_is_finished_once_every_writer_has_judged(setup):
    from judging.selectors import task_progress

    users, _, writers, _ = setup
    # a topic's slots: one per item for each of its writers, and progress counts those
    slots = dict(JudgingSlot.objects.filter(task=users).values_list("topic_id").annotate(
        n=Count("id")).values_list("topic_id", "n"))
    assert slots == {t: N * len(ws) for t, ws in writers.items()}
    before = task_progress(users)
    assert {t: e["slots"] for t, e in before["topics"].items()} == slots
    assert before["total"]["remaining"] == N * 3
    for w in sorted({w for ws in writers.values() for w in ws}):
        judge_everything(users, w, lambda t, d: 1)
    total = task_progress(users)["total"]
    assert (total["done"], total["remaining"]) == (N * 3, 0)


def test_a_signed_in_writer_judges_their_topic_on_the_judging_page(tmp_path, client,
                                                                  django_user_model):
    from crowd.models import Participant
    from crowd.services import (
        participant_arrive, participant_consent, response_submit, study_create,
    )

    pool = make_pool(tmp_path)
    alice = django_user_model.objects.create_user("alice", password="pw")
    t1 = Topic.objects.get(topic_set__name="ts", topic_id="1")
    Statement.objects.create(topic=t1, position=0, text="You want garden plants for shade")
    study = study_create(topic_set=t1.topic_set, name="qv", consent_text="ok",
                         completion_code="QV", statements_per_worker=1,
                         responses_per_statement=1)
    # as crowd.views identifies a signed-in account
    p = participant_arrive(study=study, platform=Participant.PLATFORM_ACCOUNT,
                           worker_id="account:alice", user=alice)
    p = participant_consent(participant=p, seed=1)
    a = p.assignments.get()
    assert response_submit(participant_id=p.pk, position=a.position,
                           raw="shade garden plants").accepted
    services.judging_task_create(pool=pool, name="users", mode="user", per_topic=N)
    client.force_login(alice)
    page = client.get("/judging/tasks/users/").content.decode()
    assert 'name="ref"' in page and "Nothing is left for you" not in page  # a document
