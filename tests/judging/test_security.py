"""Who reaches what: assessors only their own tasks and labels, crowd workers only their
published task's pages, organisers only through staff pages; CSRF on every form."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from judging import services
from judging.models import JudgingTask as Task
from judging.models import Label

from .conftest import make_pool
from .page_fixtures import pages_index, use_pages  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(tmp_path, pages_index, django_user_model):
    pool = make_pool(tmp_path)
    for name, assessors in (("ab", ["alice", "bob"]), ("c", ["carol"]), ("open", [])):
        use_pages(services.judging_task_create(pool=pool, name=name, mode="topic",
                                               assessors=assessors), pages_index)
    crowd = services.judging_task_create(pool=pool, name="crowd", mode="topic")
    services.judging_task_publish(crowd, completion_code="SECRET-CODE", consent_text="ok",
                                  judgments=2)
    crowd.refresh_from_db()
    users = {}
    for name in ("alice", "bob", "carol"):
        users[name] = django_user_model.objects.create_user(name, password="pw")
    users["boss"] = django_user_model.objects.create_user("boss", password="pw", is_staff=True)
    return {"users": users, "crowd": crowd}


def signed_in(user, **kw):
    c = Client(**kw)
    c.force_login(user)
    return c


def judge_one(client, task="ab", grade="1"):
    html = client.get(f"/judging/tasks/{task}/").content.decode()
    ref = re.search(r'name="ref" value="([^"]+)"', html).group(1)
    assert client.post(f"/judging/tasks/{task}/", {"ref": ref, "grade_0": grade,
                                                   "action": "judge"}).status_code == 302


def test_anonymous_visitors_are_sent_to_sign_in(setup, client):
    for url in ("/judging/", "/judging/tasks/ab/", "/judging/manage/", "/judging/manage/ab/",
                "/judging/manage/ab/export/raw/"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), url


def test_assessors_reach_only_tasks_that_list_them(setup):
    carol = signed_in(setup["users"]["carol"])
    assert carol.get("/judging/tasks/ab/").status_code == 404
    assert carol.get("/judging/tasks/c/").status_code == 200
    assert carol.get("/judging/tasks/open/").status_code == 200  # lists no one
    # a task published to the crowd is not open to accounts
    assert carol.get("/judging/tasks/crowd/").status_code == 404
    home = carol.get("/judging/").content.decode()
    assert "/judging/tasks/c/" in home and "/judging/tasks/ab/" not in home
    assert "/judging/tasks/crowd/" not in home
    # staff are no assessors of a task that does not list them
    assert signed_in(setup["users"]["boss"]).get("/judging/tasks/ab/").status_code == 404


def test_assessors_reach_only_their_own_labels(setup):
    alice, bob = signed_in(setup["users"]["alice"]), signed_in(setup["users"]["bob"])
    judge_one(alice)
    label = Label.objects.get(assessor="alice")
    assert alice.get(f"/judging/tasks/ab/?item={label.item_id}").status_code == 200
    # bob can neither see nor revise nor undo alice's judgment
    assert bob.get(f"/judging/tasks/ab/?item={label.item_id}").status_code == 404
    assert bob.post("/judging/tasks/ab/undo/", {"item": label.item_id}).status_code == 409
    html = alice.get(f"/judging/tasks/ab/?item={label.item_id}").content.decode()
    ref = re.search(r'name="ref" value="([^"]+)"', html).group(1)
    bob.post("/judging/tasks/ab/", {"ref": ref, "grade_0": "0", "action": "judge"})
    alice_labels = Label.objects.filter(assessor="alice")
    assert list(alice_labels.values_list("grade", "current")) == [(1, True)]
    # a forged reference is refused
    r = bob.post("/judging/tasks/ab/", {"ref": ref[:-3] + "abc", "grade_0": "0"})
    assert r.status_code == 404


def test_organiser_pages_are_staff_only(setup):
    alice = signed_in(setup["users"]["alice"])
    for url in ("/judging/manage/", "/judging/manage/ab/", "/judging/manage/ab/export/raw/"):
        r = alice.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), url
    for url in ("/judging/manage/ab/publish/", "/judging/manage/ab/collection/"):
        assert alice.post(url, {}).status_code == 302
    boss = signed_in(setup["users"]["boss"])
    assert boss.get("/judging/manage/ab/").status_code == 200
    assert boss.get("/judging/manage/ab/export/raw/").status_code == 200


def test_crowd_workers_cannot_reach_assessor_or_organiser_pages(setup, client):
    crowd = setup["crowd"]
    r = client.get(f"/judging/w/{crowd.study.slug}/?PROLIFIC_PID=abc123&STUDY_ID=s&SESSION_ID=x")
    assert r.status_code == 302
    client.post(f"/judging/w/{crowd.study.slug}/consent/", {"agree": "on"})
    assert client.get(f"/judging/w/{crowd.study.slug}/judge/").status_code == 200
    for url in ("/judging/", "/judging/tasks/open/", "/judging/tasks/crowd/",
                "/judging/manage/", "/judging/manage/crowd/"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), url
    # the worker's cookie only works under the task's own path
    cookie = client.cookies[f"judging_{crowd.study.slug}"]
    assert cookie["path"] == f"/judging/w/{crowd.study.slug}/" and cookie["httponly"]
    # a worker never sees the code before finishing; an unknown slug is a 404
    assert "SECRET-CODE" not in client.get(f"/judging/w/{crowd.study.slug}/judge/").content.decode()
    assert client.get("/judging/w/nope/?PROLIFIC_PID=abc").status_code == 404


def test_every_form_needs_its_csrf_token(setup):
    users = setup["users"]
    crowd = setup["crowd"]
    alice = signed_in(users["alice"], enforce_csrf_checks=True)
    html = alice.get("/judging/tasks/ab/").content.decode()
    assert html.count('method="post"') == html.count('name="csrfmiddlewaretoken"') == 2
    ref = re.search(r'name="ref" value="([^"]+)"', html).group(1)
    assert alice.post("/judging/tasks/ab/", {"ref": ref, "grade_0": "1"}).status_code == 403
    assert alice.post("/judging/tasks/ab/undo/", {"item": "1"}).status_code == 403
    boss = signed_in(users["boss"], enforce_csrf_checks=True)
    page = boss.get("/judging/manage/ab/").content.decode()
    assert 'id="publish-form"' in page
    assert 'id="stop-form"' in page
    # every form of the page (the new invite link's among them) carries the token
    assert page.count('method="post"') == page.count('name="csrfmiddlewaretoken"') == 5
    assert 'id="invite-new-form"' in page
    assert boss.post("/judging/manage/ab/invites/", {"days": "7"}).status_code == 403
    _, token = services.invite_create(Task.objects.get(name="ab"), "boss")
    invited = Client(enforce_csrf_checks=True)
    assert 'name="csrfmiddlewaretoken"' in invited.get(f"/judging/invite/{token}/").content.decode()
    assert invited.post(f"/judging/invite/{token}/", {}).status_code == 403
    assert boss.post("/judging/manage/ab/publish/", {}).status_code == 403
    assert boss.post("/judging/manage/ab/stop/", {"rule": "knee"}).status_code == 403
    assert boss.post("/judging/manage/ab/resume/", {"topic": "1"}).status_code == 403
    assert boss.post("/judging/manage/ab/collection/", {"collection": "x"}).status_code == 403
    worker = Client(enforce_csrf_checks=True)
    worker.get(f"/judging/w/{crowd.study.slug}/?PROLIFIC_PID=abc123")
    consent = worker.get(f"/judging/w/{crowd.study.slug}/consent/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in consent
    assert worker.post(f"/judging/w/{crowd.study.slug}/consent/",
                       {"agree": "on"}).status_code == 403
    assert not Label.objects.exists()


def test_a_form_is_bound_to_its_task(setup):
    alice = signed_in(setup["users"]["carol"])
    html = alice.get("/judging/tasks/c/").content.decode()
    ref = re.search(r'name="ref" value="([^"]+)"', html).group(1)
    r = alice.post("/judging/tasks/open/", {"ref": ref, "grade_0": "1", "action": "judge"})
    assert r.status_code == 404 and not Label.objects.exists()
