"""Invite links: organisers make and revoke them on a task's page; the link makes its holder
an assessor of that task only (a new account, or the one they are signed in with); a used,
expired, revoked or unknown link says so. Each new route is walked as every role:
anonymous, a crowd worker, an assessor and an organiser."""
from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from judging import selectors, services
from judging.models import AssessorInvite

from .conftest import make_pool

pytestmark = pytest.mark.django_db

PROLIFIC = "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st1&SESSION_ID=se1"
PASSWORD = "a-long-passphrase-42"
ROLES = ("anonymous", "worker", "assessor", "organiser")


@pytest.fixture
def fx(tmp_path):
    pool = make_pool(tmp_path, docs=2, intents=())
    task_a = services.judging_task_create(pool=pool, name="task-a", mode="topic", assessors=["alice"])
    task_b = services.judging_task_create(pool=pool, name="task-b", mode="topic", assessors=["bob"])
    task_c = services.judging_task_create(pool=pool, name="task-c", mode="topic")
    services.judging_task_publish(task_c, completion_code="C0DE", consent_text="You agree.",
                                  judgments=2, prolific_study_id="st1")
    task_c.refresh_from_db()
    open_task = services.judging_task_create(pool=pool, name="open", mode="topic")
    alice = User.objects.create_user("alice", password="x")
    bob = User.objects.create_user("bob", password="x")
    boss = User.objects.create_user("boss", password="x", is_staff=True)
    clients = {role: Client() for role in ROLES}
    clients["assessor"].force_login(alice)
    clients["organiser"].force_login(boss)
    assert clients["worker"].get(f"/judging/w/{task_c.study.slug}/{PROLIFIC}").status_code == 302
    return {"a": task_a, "b": task_b, "c": task_c, "open": open_task, "bob": bob,
            "clients": clients}


def _sent_to_sign_in(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def _make_link(client, task="task-a", days=7) -> str:
    response = client.post(f"/judging/manage/{task}/invites/", {"days": days})
    assert response.status_code == 302, response.content
    assert response["Location"] == f"/judging/manage/{task}/#invites"
    page = client.get(response["Location"]).content.decode()
    return re.search(r'id="invite-link" value="([^"]+)"', page).group(1)


def test_only_organisers_make_and_revoke_invites(fx):
    clients = fx["clients"]
    invite, _ = services.invite_create(fx["a"], "boss")
    for role in ("anonymous", "worker", "assessor"):
        made = clients[role].post("/judging/manage/task-a/invites/", {"days": 7})
        revoked = clients[role].post(f"/judging/manage/task-a/invites/{invite.pk}/revoke/")
        assert _sent_to_sign_in(made) and _sent_to_sign_in(revoked), role
    assert AssessorInvite.objects.count() == 1  # nobody but the organiser made one
    invite.refresh_from_db()
    assert invite.revoked is None

    organiser = clients["organiser"]
    link = _make_link(organiser)
    assert link.startswith("http://testserver/judging/invite/")
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert len(token) >= 40
    # the database holds a hash of the token, never the token
    assert not AssessorInvite.objects.filter(token_hash__contains=token).exists()
    page = organiser.get("/judging/manage/task-a/").content.decode()
    assert page.count('data-state="open"') == 2 and token not in page
    response = organiser.post(f"/judging/manage/task-a/invites/{invite.pk}/revoke/")
    assert response.status_code == 302 and response["Location"].endswith("/judging/manage/task-a/#invites")
    invite.refresh_from_db()
    assert invite.revoked is not None
    assert 'data-state="revoked"' in organiser.get("/judging/manage/task-a/").content.decode()
    # an invite of another task is not revoked through this one
    other, _ = services.invite_create(fx["b"], "boss")
    assert organiser.post(f"/judging/manage/task-a/invites/{other.pk}/revoke/").status_code == 404
    # days out of range, and tasks crowd workers judge, are refused with the reason
    bad = organiser.post("/judging/manage/task-a/invites/", {"days": 0})
    assert bad.status_code == 400 and "days" in bad.content.decode()
    published = organiser.post("/judging/manage/task-c/invites/", {"days": 7})
    assert published.status_code == 400 and "published to crowd workers" in published.content.decode()


def test_reloading_after_making_an_invite_makes_no_other(fx):
    """Making an invite is a POST that redirects to the task's page, which shows the new
    link once: reloading that page (a GET) neither makes another invite nor shows the
    link again; the link is kept in the session only until it is shown."""
    organiser = fx["clients"]["organiser"]
    made = organiser.post("/judging/manage/task-a/invites/", {"days": 7})
    assert made.status_code == 302 and made["Location"] == "/judging/manage/task-a/#invites"
    assert AssessorInvite.objects.count() == 1
    shown = organiser.get(made["Location"]).content.decode()
    link = re.search(r'id="invite-link" value="([^"]+)"', shown).group(1)
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert AssessorInvite.objects.get().token_hash == hashlib.sha256(token.encode()).hexdigest()
    reloaded = organiser.get(made["Location"]).content.decode()
    assert 'id="invite-link"' not in reloaded and token not in reloaded
    assert AssessorInvite.objects.count() == 1
    assert token not in str(dict(organiser.session))
    # the link made for one task is not shown on another task's page
    organiser.post("/judging/manage/task-b/invites/", {"days": 7})
    assert 'id="invite-link"' not in organiser.get("/judging/manage/task-a/").content.decode()
    assert 'id="invite-link"' in organiser.get("/judging/manage/task-b/").content.decode()


def test_the_link_is_open_to_every_role(fx):
    _, token = services.invite_create(fx["a"], "boss")
    for role, client in fx["clients"].items():
        page = client.get(f"/judging/invite/{token}/")
        assert page.status_code == 200, role
        html = page.content.decode()
        if role in ("anonymous", "worker"):  # a crowd worker's browser is signed in to nothing
            assert 'name="password1"' in html and 'id="invite-sign-in"' in html, role
        else:
            assert 'name="password1"' not in html and "Judge task-a as" in html, role
        unknown = client.get("/judging/invite/not-a-token/")
        assert unknown.status_code == 404 and "not known" in unknown.content.decode(), role
        assert client.post("/judging/invite/not-a-token/").status_code == 404, role


def test_a_new_account_judges_the_invited_task_and_nothing_else(fx):
    organiser, visitor = fx["clients"]["organiser"], Client()
    link = _make_link(organiser)
    path = link.removeprefix("http://testserver")
    response = visitor.post(path, {"username": "newbie", "password1": PASSWORD,
                                   "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/judging/tasks/task-a/"
    newbie = User.objects.get(username="newbie")
    assert not newbie.is_staff and not newbie.is_superuser
    fx["a"].refresh_from_db()
    assert fx["a"].assessors == ["alice", "newbie"]
    # signed in as the new account: the task's judging page, no other task, no organiser page
    assert visitor.get("/judging/tasks/task-a/").status_code == 200
    assert visitor.get("/judging/tasks/task-b/").status_code == 404
    assert [t.name for t in selectors.task_list_judged_by("newbie")] == ["open", "task-a"]
    assert _sent_to_sign_in(visitor.get("/judging/manage/task-a/"))
    assert _sent_to_sign_in(visitor.post("/judging/manage/task-a/invites/", {"days": 7}))
    invite = AssessorInvite.objects.get()
    assert invite.used is not None and invite.used_by == "newbie"
    assert selectors.invite_state(invite) == "used"
    # the link works once
    again = Client().get(path)
    assert again.status_code == 410 and "already used" in again.content.decode()
    assert Client().post(path, {"username": "other", "password1": PASSWORD,
                                "password2": PASSWORD}).status_code == 410
    assert not User.objects.filter(username="other").exists()


def test_a_signed_in_account_joins_with_the_link(fx):
    _, token = services.invite_create(fx["a"], "boss")
    bob = Client()
    bob.force_login(fx["bob"])
    response = bob.post(f"/judging/invite/{token}/")
    assert response.status_code == 302 and response["Location"] == "/judging/tasks/task-a/"
    fx["a"].refresh_from_db()
    fx["b"].refresh_from_db()
    assert fx["a"].assessors == ["alice", "bob"] and fx["b"].assessors == ["bob"]
    assert bob.get("/judging/tasks/task-a/").status_code == 200


def test_a_bad_sign_up_keeps_the_invite(fx):
    _, token = services.invite_create(fx["a"], "boss")
    response = Client().post(f"/judging/invite/{token}/", {
        "username": "alice", "password1": PASSWORD, "password2": PASSWORD + "x"})
    assert response.status_code == 400 and 'class="errorlist' in response.content.decode()
    assert selectors.invite_state(AssessorInvite.objects.get()) == "open"
    fx["a"].refresh_from_db()
    assert fx["a"].assessors == ["alice"]


def test_used_expired_and_revoked_links_say_why(fx):
    expired, expired_token = services.invite_create(fx["a"], "boss")
    AssessorInvite.objects.filter(pk=expired.pk).update(expires=timezone.now() - timedelta(minutes=1))
    revoked, revoked_token = services.invite_create(fx["a"], "boss")
    services.invite_revoke(fx["a"], revoked.pk)
    _, used_token = services.invite_create(fx["a"], "boss")
    services.invite_accept(used_token, "bob")
    for token, words in ((expired_token, "expired on"), (revoked_token, "was revoked"),
                         (used_token, "already used")):
        for method in ("get", "post"):
            response = getattr(Client(), method)(f"/judging/invite/{token}/")
            html = response.content.decode()
            assert response.status_code == 410 and words in html and "task-a" in html, (words, method)
    with pytest.raises(services.InviteError, match="already used by bob"):
        services.invite_revoke(fx["a"], AssessorInvite.objects.get(used_by="bob").pk)


def test_an_open_task_stays_open(fx):
    """A task that lists no one is open to every assessor account: the invite makes the
    account and leaves the list empty (one name would close the task to the others)."""
    _, token = services.invite_create(fx["open"], "boss")
    visitor = Client()
    response = visitor.post(f"/judging/invite/{token}/", {
        "username": "newbie", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/judging/tasks/open/"
    fx["open"].refresh_from_db()
    assert fx["open"].assessors == []
    assert visitor.get("/judging/tasks/open/").status_code == 200
    assert fx["clients"]["assessor"].get("/judging/tasks/open/").status_code == 200
