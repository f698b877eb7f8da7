"""Who may see what: every route of the URL conf, pages and API alike, walked as every role
against the table in ``common.roles``.

The routes come from the URL conf itself (a route missing from the table fails here), each
filled with the ids of a small fixture: a pool over two topics, task A judged by alice,
task B by bob, task C published to crowd workers, and a query study. Six visitors:
anonymous, a crowd worker (holding the study's and task C's cookies), alice and bob
(signed in on pages, their tokens on the API), carol's token (an account that judges
nothing) and an organiser (staff).
"""
from __future__ import annotations

import re
import sys
import time
import types

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, path, resolve
from rest_framework.test import APIClient

from common import roles
from common.api import api_token_issue
from tests.judging.conftest import make_pool

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "worker", "assessor_a", "assessor_b", "token", "staff")
PROLIFIC = "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st1&SESSION_ID=se1"


# --- the routes, from the URL conf ---------------------------------------------------------


def walk(patterns=None, prefix="", namespace=""):
    """(view name, pattern text, URLPattern) of every leaf route."""
    for p in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(p, URLResolver):
            ns = ":".join(filter(None, [namespace, p.namespace]))
            yield from walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            name = p.name or p.lookup_str  # unnamed: its view's dotted path, as Django does
            yield (f"{namespace}:{name}" if namespace else name), prefix + str(p.pattern), p


_ROUTE_ARG = re.compile(r"<(?:\w+:)?(\w+)>")
_REGEX_ARG = re.compile(r"\(\?P<(\w+)>([^)]*)\)")


def fill(pattern: str, value) -> str:
    """The pattern's text with each argument replaced by ``value(name, regex)``."""
    text = _REGEX_ARG.sub(lambda m: str(value(m.group(1), m.group(2))), pattern)
    text = _ROUTE_ARG.sub(lambda m: str(value(m.group(1), "")), text)
    return "/" + text.replace("^", "").replace("$", "").replace("\\", "")


class Fixture(types.SimpleNamespace):
    def arg(self, view_name: str, name: str, regex: str):
        """A value for the route's argument ``name``: an object of the fixture where the
        role's view decides by it, else anything the pattern accepts."""
        app = view_name.partition(":")[0]
        if regex and "|" in regex:  # an alternation: its first choice
            return regex.split("|")[0].strip("()")
        values = {
            "slug": self.task_c.study.slug if view_name.startswith("judging:crowd_") else self.study.slug,
            "position": 1, "n": 0, "fmt": "csv", "kind": "evaluate", "docid": "t1d1",
            "collection": "none", "topic_id": "1", "object_id": "1", "url": "nowhere/",
            "content_type_id": "1", "rest": "nowhere/", "id": 1, "token": "no-such-invite", "run_id": self.run.pk, "ref": self.pool.pk,
        }
        if name == "pk":
            if "study" in view_name:
                return self.study.pk
            if view_name.startswith(("crowd:", "topics:", "projects:")):  # the set's pages
                return self.pool.topic_set_id
            return self.run.pk if "run" in view_name else 1
        if name == "name":
            if view_name in ("api:judgment-list", "api:qrels-export", "api:judgment-set-detail"):
                return self.task_a.judgment_set.name
            if app == "judging" or "judging-task" in view_name:
                return self.task_a.name
            return "ts" if view_name.startswith("api:topic") or "intent" in view_name \
                or "variant" in view_name else "none"
        return values[name]


def routes(fx: Fixture):
    """(view name, path) of every route, each path resolving to its own route (the name
    as the request sees it, which for an unnamed route is its view's dotted path)."""
    out = []
    for view_name, pattern, p in walk():
        path_ = fill(pattern, lambda name, regex: fx.arg(view_name, name, regex))
        match = resolve(path_)
        assert match.func is p.callback, (view_name, pattern, path_, match.view_name)
        out.append((match.view_name, path_))
    return out


# --- the fixture ---------------------------------------------------------------------------


@pytest.fixture
def fx(tmp_path):
    from crowd.services import study_create
    from judging import services

    pool = make_pool(tmp_path, docs=2, intents=())
    # an organiser as bin/serve makes one (the admin also checks Django's model permissions)
    staff = User.objects.create_user("organiser", password="x", is_staff=True, is_superuser=True)
    alice = User.objects.create_user("alice", password="x")
    bob = User.objects.create_user("bob", password="x")
    User.objects.create_user("carol", password="x")
    task_a = services.judging_task_create(pool=pool, name="task-a", mode="topic", assessors=["alice"])
    task_b = services.judging_task_create(pool=pool, name="task-b", mode="topic", assessors=["bob"])
    task_c = services.judging_task_create(pool=pool, name="task-c", mode="topic")
    services.judging_task_publish(task_c, completion_code="C0DE", consent_text="You agree.",
                                  judgments=2, prolific_study_id="st1")
    task_c.refresh_from_db()
    for task, who in ((task_a, "alice"), (task_b, "bob")):
        leased = services.batch_lease(task, who)[0]
        services.judgment_submit(task, who, leased.item_id, {"": 1}, submit_key=f"k-{who}")
    study = study_create(topic_set=pool.topic_set, name="pilot", consent_text="You agree.",
                         completion_code="C0DE", prolific_study_id="st1")
    run = pool.topic_set.runs.order_by("pk").first()

    pages, apis = {}, {}
    for role in ROLES:
        pages[role], apis[role] = Client(), APIClient()
    for role, user in (("assessor_a", alice), ("assessor_b", bob), ("staff", staff)):
        pages[role].force_login(user)
    for role, name in (("assessor_a", "alice"), ("assessor_b", "bob"), ("token", "carol"),
                       ("staff", "organiser")):
        apis[role].credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(name)}")
    pages["token"] = APIClient()  # a token is no sign-in on the pages
    pages["token"].credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue('carol')}")
    worker = pages["worker"]
    assert worker.get(f"/crowd/s/{study.slug}/{PROLIFIC}").status_code == 302
    assert worker.get(f"/judging/w/{task_c.study.slug}/{PROLIFIC}").status_code == 302
    apis["worker"].cookies = worker.cookies  # on the API: an anonymous browser, its cookies
    users = {"assessor_a": alice, "assessor_b": bob, "staff": staff}
    alice_item = task_a.judgment_set.labels.get(assessor="alice").item_id
    return Fixture(pool=pool, task_a=task_a, task_b=task_b, task_c=task_c, study=study, run=run,
                   pages=pages, apis=apis, users=users, alice_item=alice_item)


# --- what each role gets --------------------------------------------------------------------


def _denied(response) -> bool:
    """Refused at the gate: 401, 403, or sent to a sign-in page."""
    if response.status_code in (401, 403):
        return True
    location = response.get("Location", "")
    return response.status_code == 302 and ("/accounts/login/" in location
                                            or "/admin/login/" in location)


def _shown(response) -> bool:
    """The page or answer itself (or a step of its own flow), not a refusal or a 404."""
    return response.status_code < 400 and not _denied(response)


def _expect(level: str, role: str, api: bool, names_task_a: bool) -> str:
    """What the role must get from a route of ``level``: "any" answer but a sign-in
    demand, "open" (past the gate), "shown" (its own view), "denied" (refused at the gate)
    or "hidden" (not shown: refused, or 4xx from the view that scopes the rows)."""
    signed_in = role in ("assessor_a", "assessor_b", "staff") or (api and role == "token")
    if level == roles.PUBLIC:
        return "any"
    if level == roles.WORKER:
        return "shown" if role == "worker" else "hidden"
    if level == roles.SIGNED_IN:
        return "shown" if signed_in else "denied"
    if level == roles.ASSESSOR:
        if not signed_in:
            return "denied"
        if role == "assessor_a" or not names_task_a:  # a list: each account its own rows
            return "shown"
        if role == "staff":  # organisers read every task in the API; judge only their own
            return "shown" if api else "open"
        return "hidden"
    if level == roles.STAFF:
        return "open" if role == "staff" else "denied"
    raise AssertionError(f"unknown level {level!r}")


def _sign_in_demand(response) -> bool:
    return response.status_code == 401 or (_denied(response) and response.status_code == 302)


CHECKS = {
    "any": lambda r: not _sign_in_demand(r),
    "open": lambda r: not _denied(r),
    # 405: the route takes the other method, which says nothing about the role
    "shown": lambda r: (_shown(r) or r.status_code == 405),
    "denied": _denied,
    "hidden": lambda r: 400 <= r.status_code < 500 or _denied(r),
}


def _check(expected: str, response) -> bool:
    return response.status_code < 500 and CHECKS[expected](response)


def _post_data(fx, view_name: str) -> dict:
    """Alice's own item, for the two assessor routes that post one."""
    if view_name == "judging:undo":
        return {"item": str(fx.alice_item)}
    if view_name == "judging:judge":
        from judging.forms import ref_dumps

        ref = ref_dumps(task_id=fx.task_a.pk, submit_key="walk", shown=time.time(),
                        intents=[""], item_id=fx.alice_item)
        return {"ref": ref, "grade_0": "1"}
    return {}


_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
_INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def _csp_problem(response) -> str:
    """Why the page would not work under its Content-Security-Policy (scripts from the
    site's files only), or ''."""
    if "script-src 'self'" not in response.get("Content-Security-Policy", ""):
        return "no Content-Security-Policy with script-src 'self'"
    html = response.content.decode("utf-8", "replace")
    for pattern, what in ((_INLINE_SCRIPT, "an inline script"), (_INLINE_HANDLER, "an on… handler")):
        found = pattern.search(html)
        if found:
            return f"{what} the policy blocks: {found.group(0)[:80]}"
    return ""


def test_every_route_as_every_role_follows_the_table(fx):
    seen_pages, seen_api, failures = set(), set(), []
    all_routes = routes(fx)
    # a study's public link makes a signed-in account a worker of it (README): after the
    # worker pages; sign-outs last, as they end the session the other routes are walked with
    all_routes.sort(key=lambda r: (r[0].endswith("logout"), r[0].endswith("_entry")))
    for view_name, url in all_routes:
        api = view_name.split(":")[0] == roles.API_NAMESPACE
        # the gate does not look at the method; posts reach the views that scope by it (the
        # admin's own views are walked once)
        for method in ("get",) if view_name.startswith("admin:") else ("get", "post"):
            if api:
                level = roles.api_level(view_name, method.upper())
                seen_api.add(view_name)
            else:
                level = roles.page_level(view_name)  # MissingEntry: a route without a row
                seen_pages.add(view_name)
            for role in ROLES:
                client = (fx.apis if api else fx.pages)[role]
                kwargs = {"format": "json"} if api and method == "post" else {}
                response = getattr(client, method)(url, _post_data(fx, view_name), **kwargs)
                expected = _expect(level, role, api, f"/{fx.task_a.name}/" in url)
                if expected == "open" and view_name.startswith("admin:"):
                    expected = "any"  # past the gate the admin's model permissions decide
                if not _check(expected, response):
                    failures.append(f"{method.upper()} {url} ({view_name}, {level}) as {role}: "
                                    f"{response.status_code} {response.get('Location', '')} "
                                    f"expected {expected}")
                if response.status_code == 200 and "text/html" in response.get("Content-Type", ""):
                    problem = _csp_problem(response)
                    if problem:
                        failures.append(f"{method.upper()} {url} as {role}: {problem}")
                if view_name.endswith("logout") and role in fx.users:  # sign in again
                    fx.pages[role].force_login(fx.users[role])
    assert not failures, "\n".join(failures)
    # and no row of the table names a route that is gone
    stale = {n for n in roles.PAGES if not n.endswith(":*")} - seen_pages
    stale |= set(roles.API) - seen_api
    assert not stale, f"common.roles names routes the URL conf does not have: {sorted(stale)}"


def test_assessors_read_only_their_own_tasks_and_labels(fx):
    a, b, carol, staff = (fx.apis[r] for r in ("assessor_a", "assessor_b", "token", "staff"))
    names = lambda c: [t["name"] for t in c.get("/api/judging-tasks/").json()["results"]]  # noqa: E731
    assert names(a) == ["task-a"] and names(b) == ["task-b"] and names(carol) == []
    assert set(names(staff)) == {"task-a", "task-b", "task-c"}
    detail = a.get("/api/judging-tasks/task-a/").json()
    assert "assessors" not in detail and detail["progress"]["total"]["done"] == 1
    assert staff.get("/api/judging-tasks/task-a/").json()["assessors"] == ["alice"]
    missing = b.get("/api/judging-tasks/task-a/")
    assert missing.status_code == 404 and "task-b" not in missing.content.decode()
    labels = f"/api/judgment-sets/{fx.task_a.judgment_set.name}/judgments/"
    assert [r["assessor"] for r in a.get(labels).json()["results"]] == ["alice"]
    assert b.get(labels).status_code == 404 and carol.get(labels).status_code == 404
    # alice's labels only, even when another assessor judged the same task
    from judging import services

    User.objects.create_user("dave", password="x")
    fx.task_a.assessors = ["alice", "dave"]
    fx.task_a.save(update_fields=["assessors"])
    leased = services.batch_lease(fx.task_a, "dave")[0]
    services.judgment_submit(fx.task_a, "dave", leased.item_id, {"": 0}, submit_key="k-dave")
    assert [r["assessor"] for r in a.get(labels + "?history=true").json()["results"]] == ["alice"]
    assert sorted(r["assessor"] for r in staff.get(labels).json()["results"]) == ["alice", "dave"]


# --- a route without a row is closed, and the test above names it --------------------------


def _unlisted(request):
    from django.http import HttpResponse

    return HttpResponse("should not be reached")


def test_a_route_missing_from_the_table_is_refused_and_named(client, admin_client):
    module = types.ModuleType("tests.common._roles_urls")
    module.urlpatterns = [*get_resolver().url_patterns, path("unlisted/", _unlisted, name="unlisted")]
    sys.modules[module.__name__] = module
    try:
        with override_settings(ROOT_URLCONF=module.__name__):
            response = admin_client.get("/unlisted/")
            assert response.status_code == 403
            with pytest.raises(roles.MissingEntry, match="'unlisted' has no entry in common.roles.PAGES"):
                for view_name, _, _ in walk(module.urlpatterns):
                    roles.page_level(view_name) if not view_name.startswith("api:") else None
    finally:
        del sys.modules[module.__name__]
