"""A task's stopping rule in the live queue (PostgreSQL and SQLite) and on the task page."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from judging import selectors, services, stopping
from judging.models import TaskTopic

from .conftest import make_pool

pytestmark = pytest.mark.django_db

DOCS = 40


@pytest.fixture
def pool(tmp_path):
    return make_pool(tmp_path, docs=DOCS)


def judge(task, assessor, n, relevant):
    """Lease and judge ``n`` items one at a time (batches of 1); ``relevant(i)`` says
    whether the i-th is relevant. The topics of the items judged, in order."""
    topics = []
    for i in range(n):
        batch = services.batch_lease(task, assessor)
        if not batch:
            break
        (x,) = batch
        services.judgment_submit(task, assessor, x.item_id, {"": int(relevant(i))},
                                 submit_key=f"{assessor}-{x.item_id}")
        topics.append(x.topic_id)
    return topics


def test_the_queue_stops_a_topic_when_the_rule_fires_and_the_organiser_resumes(pool):
    # three relevant then non-relevant, of 40: the rule first fires after 11 judgments
    # (test_stopping checks the estimator it rests on against hand-computed cases)
    seq = [True] * 3 + [False] * (DOCS - 3)
    assert stopping.first_stop(stopping.parse_rule("recall:0.5:0.6"), seq, DOCS) == 11
    task = services.judging_task_create(pool=pool, name="t", mode="topic", batch=1,
                                        stop_rule="recall:0.5:0.6")
    assert task.stop_rule == "recall:0.5:0.6"
    topics = judge(task, "a", 11, lambda i: i < 3)
    assert topics == ["1"] * 11
    tt = TaskTopic.objects.get(task=task, topic_id="1")
    assert tt.stopped_at is not None
    assert tt.stop_note == "recall:0.5:0.6: 3 relevant in 11 of 40 judged"
    # the topic hands out nothing more: a's next items come from topic 2, and so do b's
    assert [x.topic_id for x in services.batch_lease(task, "b")] == ["2"]
    assert judge(task, "a", 3, lambda i: False) == ["2"] * 3
    assert TaskTopic.objects.get(task=task, topic_id="2").stopped_at is None
    # resumed: topic 1 is handed out again and the rule leaves it alone
    services.topic_resume(task, "1")
    assert judge(task, "c", 5, lambda i: False) == ["1"] * 5
    tt.refresh_from_db()
    assert tt.stopped_at is None and tt.resumed
    assert selectors.task_judged_sequences(task, "1")["1"] == [True] * 3 + [False] * 13
    with pytest.raises(ValueError, match="no topic 'nope'"):
        services.topic_resume(task, "nope")


def test_without_a_rule_nothing_stops_and_clearing_a_rule_reopens_topics(pool):
    task = services.judging_task_create(pool=pool, name="t", mode="topic", batch=1)
    assert judge(task, "a", 15, lambda i: i < 3) == ["1"] * 15
    assert not TaskTopic.objects.filter(task=task, stopped_at__isnull=False).exists()
    # a rule set now applies at the topic's next judgment
    services.judging_task_stop_rule_set(task, "recall:0.5:0.6")
    judge(task, "a", 1, lambda i: False)
    assert TaskTopic.objects.get(task=task, topic_id="1").stopped_at is not None
    assert [x.topic_id for x in services.batch_lease(task, "b")] == ["2"]
    services.judging_task_stop_rule_set(task, "")
    assert TaskTopic.objects.get(task=task, topic_id="1").stopped_at is None
    assert [x.topic_id for x in services.batch_lease(task, "c")] == ["1"]
    with pytest.raises(ValueError, match="must be 'recall' or 'knee'"):
        services.judging_task_stop_rule_set(task, "sometimes")


def test_create_command_takes_a_rule(pool):
    call_command("create_judging_task", "--pool", "p", "--name", "k", "--mode", "topic",
                 "--stop", "knee")
    assert selectors.task_get("k").stop_rule == "knee"


def test_task_page_shows_the_estimate_and_resumes(pool, admin_client):
    task = services.judging_task_create(pool=pool, name="t", mode="topic", batch=1,
                                        stop_rule="recall:0.5:0.6")
    judge(task, "a", 11, lambda i: i < 3)
    est = stopping.estimate([True] * 3 + [False] * 8, DOCS)
    page = admin_client.get("/judging/manage/t/").content.decode()
    line = (f"≈ 3 relevant found, estimated recall {est.recall:.2f} "
            f"({est.recall_low:.2f}–{est.recall_high:.2f})")
    assert page.count(line) == 1  # topic 1
    # the whole task: topic 2 is not judged yet, so an interval only (bounds added)
    total = stopping.combine([est, stopping.estimate([], DOCS)])
    assert total.recall is None and total.remaining_high == est.remaining_high + DOCS
    assert (f"≈ 3 relevant found, estimated recall between {total.recall_low:.2f} and "
            f"{total.recall_high:.2f}") in page
    assert "recall ≥ 0.5 with confidence 0.6" in page
    assert "recall:0.5:0.6: 3 relevant in 11 of 40 judged" in page
    assert "0 relevant found in 0 judged; no recall estimate yet" in page  # topic 2
    assert admin_client.post("/judging/manage/t/resume/", {"topic": "1"}).status_code == 302
    assert TaskTopic.objects.get(task=task, topic_id="1").resumed
    assert admin_client.post("/judging/manage/t/stop/", {"rule": "knee"}).status_code == 302
    assert selectors.task_get("t").stop_rule == "knee"
    bad = admin_client.post("/judging/manage/t/stop/", {"rule": "recall:2"})
    assert bad.status_code == 400 and "target must be between 0 and 1" in bad.content.decode()


def test_only_organisers_set_the_rule_or_resume(pool, client, django_user_model):
    task = services.judging_task_create(pool=pool, name="t", mode="topic", batch=1,
                                        stop_rule="knee")
    client.force_login(django_user_model.objects.create_user("alice", password="pw"))
    for url, data in (("/judging/manage/t/stop/", {"rule": ""}),
                      ("/judging/manage/t/resume/", {"topic": "1"})):
        got = client.post(url, data)
        assert got.status_code == 302 and got["Location"].startswith("/accounts/login/")
    assert selectors.task_get("t").stop_rule == "knee"
    assert not TaskTopic.objects.filter(task=task, resumed=True).exists()


def test_the_api_gives_the_rule_and_the_estimate_to_organisers_only(
        pool, admin_client, client, django_user_model):
    got = admin_client.post("/api/judging-tasks/", {"name": "t", "pool": "p", "mode": "topic",
                                                    "batch": 1, "stop_rule": "recall:0.5:0.6"},
                            content_type="application/json")
    assert got.status_code == 201, got.content
    assert got.json()["stop_rule"] == "recall:0.5:0.6"
    task = selectors.task_get("t")
    judge(task, "a", 11, lambda i: i < 3)
    body = admin_client.get("/api/judging-tasks/t/").json()
    est = stopping.estimate([True] * 3 + [False] * 8, DOCS)
    recall = body["recall"]
    assert recall["rule"] == "recall:0.5:0.6"
    one = recall["topics"]["1"]
    assert one["stop_note"] == "recall:0.5:0.6: 3 relevant in 11 of 40 judged"
    assert one["estimate"] == pytest.approx({
        "judged": 11, "found": 3, "pool": DOCS, "remaining": est.remaining,
        "remaining_high": est.remaining_high, "recall": est.recall,
        "recall_low": est.recall_low})
    assert recall["topics"]["2"]["estimate"]["recall"] is None
    assert recall["total"]["found"] == 3 and recall["total"]["recall"] is None
    bad = admin_client.post("/api/judging-tasks/", {"name": "u", "pool": "p", "mode": "topic",
                                                    "stop_rule": "often"},
                            content_type="application/json")
    assert bad.status_code == 400 and "must be 'recall' or 'knee'" in bad.content.decode()
    # an assessor of the task sees neither the estimate nor the other assessors
    client.force_login(django_user_model.objects.create_user("alice", password="pw"))
    mine = client.get("/api/judging-tasks/t/").json()
    assert "recall" not in mine and mine["stop_rule"] == "recall:0.5:0.6"
