"""The organiser's task pages count items and judgments apart, and an assessor's pace shows
a figure after two timed judgments instead of a dash."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from judging import selectors, services

from .conftest import make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def organiser():
    client = Client()
    client.force_login(User.objects.create_user("boss", password="x", is_staff=True))
    return client


def _judge(task, who, n, seconds):
    for k in range(n):
        leased = services.batch_lease(task, who)[0]
        services.judgment_submit(task, who, leased.item_id, {"": 1}, submit_key=f"{who}-{k}",
                                 seconds=seconds)


def test_pages_say_items_and_judgments_apart(tmp_path, organiser):
    pool = make_pool(tmp_path, docs=3, intents=())  # 2 topics × 3 documents = 6 items
    task = services.judging_task_create(pool=pool, name="k2", mode="topic", redundancy=2)
    _judge(task, "alice", 1, 5.0)
    page = organiser.get("/judging/manage/k2/").content.decode()
    text = re.sub(r"<[^>]+>", "", page)
    assert "judgments: 1 done · 2 leased · 9 to do, of 12 for 6 items" in text
    assert "each item needs K = 2 judgments by different assessors, so the task needs 12 judgments for its 6 items" in text
    assert ("<th>Items</th><th>Judgments needed</th><th>Judgments done</th><th>Judgments leased</th>"
            "<th>Judgments to do</th>") in page
    assert re.search(r"<tr><td>1</td><td>3</td><td>6</td><td>1</td><td>2</td><td>3</td>", page)
    listing = organiser.get("/judging/manage/").content.decode()
    assert "<th>Items</th><th>Judgments needed</th><th>Judgments done</th>" in listing
    assert re.search(r"<td>6</td>\s*<td>12</td><td>1</td><td>2</td><td>9</td>", listing)
    assert "Remaining" not in page + listing


def test_pace_shows_after_two_timed_judgments(tmp_path, organiser):
    pool = make_pool(tmp_path, docs=6, intents=())
    task = services.judging_task_create(pool=pool, name="pace", mode="topic", redundancy=3)
    _judge(task, "alice", 1, 6.0)  # one timed judgment: not yet
    (alice,) = selectors.task_assessor_stats(task)
    assert alice["per_hour"] is None and alice["per_hour_after"] == 1
    page = organiser.get("/judging/manage/pace/").content.decode()
    assert "after 1 more timed judgment<" in page
    _judge(task, "bob", 1, None)  # untimed: waits for two
    assert selectors.task_assessor_stats(task)[1]["per_hour_after"] == 2
    # five quick judgments, seconds apart: the pace from the time on each page
    _judge(task, "carol", 5, 12.0)
    carol = selectors.task_assessor_stats(task)[2]
    assert carol["per_hour"] == pytest.approx(3600 / 12.0) and carol["per_hour_after"] == 0
    alice_more = services.batch_lease(task, "alice")[0]
    services.judgment_submit(task, "alice", alice_more.item_id, {"": 0}, submit_key="a-2", seconds=10.0)
    assert selectors.task_assessor_stats(task)[0]["per_hour"] == pytest.approx(3600 / 8.0)
    page = organiser.get("/judging/manage/pace/").content.decode()
    assert "<td>300.0</td>" in page and "<td>450.0</td>" in page
    assert "after 2 more timed judgments" in page  # bob
