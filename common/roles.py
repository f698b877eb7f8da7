"""Who may use which page and which API route: one table, enforced in one place.

Three roles (docs/roles.md):

- **organisers** are staff accounts: every page and every API route;
- **assessors** are signed-in accounts that are not staff: the judging pages and the API
  routes of the judging tasks that list them (or that list no one and are not published to
  the crowd), and only their own labels there;
- **crowd workers** are the browsers that arrived with a study's or a published judging
  task's link: the pages of that study only, resolved from a signed cookie the link set.

:data:`PAGES` and :data:`API` map every URL name (``namespace:name``) to the least role
that may use it. :class:`RolesMiddleware` enforces :data:`PAGES` before any page view runs
(a visitor without the role is sent to the sign-in page, to sign in with an account that
has it), and :class:`RolePermission`, the API's default permission class, enforces :data:`API`
(401 without a token or session, 403 without the role). A URL name that is in neither
table is refused with a 403 naming it, so a new route is closed until the table says who
may use it; ``tests/common/test_roles.py`` walks every route of the URL conf as every role
and fails on a route missing from the table.

``ASSESSOR`` and ``WORKER`` admit a role to the route; which rows it then sees is decided
by the view through the selectors that scope them (``judging.selectors.task_list(user)``,
``judging.selectors.assessor_may_judge``, the worker's signed cookie).
"""
from __future__ import annotations

from typing import NamedTuple

import logging

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.urls import get_resolver, get_urlconf
from rest_framework import permissions

logger = logging.getLogger("django.security.roles")

# The levels, from open to closed.
PUBLIC = "public"        # anyone: the home page, sign-in, a study's public link
WORKER = "worker"        # anyone reaches it; the view shows only the participant this
                         # browser's signed cookie holds (else it sends them to the link)
SIGNED_IN = "signed-in"  # any signed-in account; the view shows only what is its own
ASSESSOR = "assessor"    # a signed-in account; the view admits only the tasks that list it
STAFF = "staff"          # organisers

LEVELS = (PUBLIC, WORKER, SIGNED_IN, ASSESSOR, STAFF)


class Api(NamedTuple):
    """Least role to read (GET, HEAD, OPTIONS) and to write (anything else)."""

    read: str
    write: str = STAFF


# --- the pages ----------------------------------------------------------------------------

PAGES: dict[str, str] = {
    "home": PUBLIC,
    "login": PUBLIC,
    "logout": PUBLIC,
    # Django's admin: its sign-in page is public, everything else is for organisers.
    "admin:login": PUBLIC,
    "admin:*": STAFF,
    # crowd workers: the public link, then pages held by the study's cookie
    "crowd:index": PUBLIC,  # organisers get their lists; others how to take part
    "crowd:study_entry": PUBLIC,
    "crowd:study_next": WORKER,
    "crowd:study_consent": WORKER,
    "crowd:study_item": WORKER,
    "crowd:study_done": WORKER,
    "judging:crowd_entry": PUBLIC,
    "judging:crowd_consent": WORKER,
    "judging:crowd_judge": WORKER,
    "judging:crowd_done": WORKER,
    # an organiser's invite link: whoever holds it makes an account or signs in, and
    # becomes an assessor of that one task (judging.services.invite_accept)
    "judging:invite": PUBLIC,
    # assessors
    "judging:index": SIGNED_IN,  # the account's own tasks
    "judging:judge": ASSESSOR,
    "judging:undo": ASSESSOR,
    # organisers
    "topics:topic_set_detail": STAFF,
    "crowd:study_list": STAFF,
    "crowd:study_progress": STAFF,
    "crowd:study_variants": STAFF,
    "crowd:study_export": STAFF,
    "projects:organiser_project": STAFF,
    "projects:organiser_pool_build": STAFF,
    "projects:organiser_topics_upload": STAFF,
    "projects:organiser_variants_upload": STAFF,
    "projects:organiser_run_upload": STAFF,
    "projects:organiser_qrels_upload": STAFF,
    "projects:organiser_upload_status": STAFF,
    "projects:organiser_collection_upload": STAFF,
    "projects:organiser_study_new": STAFF,
    "projects:organiser_study_links": STAFF,
    "projects:organiser_retrieval_launch": STAFF,
    "projects:organiser_judging_task_new": STAFF,
    "projects:organiser_run_export": STAFF,
    "projects:organiser_pool_export": STAFF,
    "projects:organiser_variants_export": STAFF,
    "projects:organiser_release": STAFF,  # the whole collection, pseudonymised
    "retrieval:index": STAFF,
    "retrieval:run_detail": STAFF,
    "retrieval:document": STAFF,
    "pooling:index": STAFF,
    "pooling:pool_build": STAFF,
    "pooling:pool_detail": STAFF,
    "pooling:growth": STAFF,
    "pooling:rbo": STAFF,
    "pooling:paper_figures": STAFF,
    "pooling:qrels_list": STAFF,
    "pooling:qrels_detail": STAFF,
    "judging:manage_list": STAFF,
    "judging:manage_task": STAFF,
    "judging:manage_collection": STAFF,
    "judging:manage_publish": STAFF,
    "judging:manage_stop": STAFF,
    "judging:manage_resume": STAFF,
    "judging:manage_export": STAFF,
    "judging:manage_invite_new": STAFF,
    "judging:manage_invite_revoke": STAFF,
    "evaluation:index": STAFF,
    "evaluation:analysis_new": STAFF,
    "evaluation:analysis_detail": STAFF,
    "evaluation:analysis_json": STAFF,
    "evaluation:analysis_table_csv": STAFF,
    "evaluation:analysis_figure": STAFF,
}

# --- the API (/api/) ----------------------------------------------------------------------

API_NAMESPACE = "api"

API: dict[str, Api] = {
    "api:api-root": Api(SIGNED_IN),
    "api:schema": Api(PUBLIC),  # what the API offers, no data
    "api:docs": Api(PUBLIC),
    "api:not-found": Api(PUBLIC, PUBLIC),  # any other address: a JSON 404
    # assessors: the tasks that list them, and their own labels in those tasks' sets
    "api:judging-task-list": Api(ASSESSOR),
    "api:judging-task-detail": Api(ASSESSOR),
    "api:judgment-list": Api(ASSESSOR),
    # organisers
    "api:topic-set-list": Api(STAFF),
    "api:topic-set-detail": Api(STAFF),
    "api:topic-list": Api(STAFF),
    "api:topic-detail": Api(STAFF),
    "api:intent-list": Api(STAFF),
    "api:variant-list": Api(STAFF),  # worker ids
    "api:release-export": Api(STAFF),  # the whole collection, pseudonymised
    "api:study-list": Api(STAFF),  # completion codes, entry tokens
    "api:study-detail": Api(STAFF),
    "api:collection-list": Api(STAFF),
    "api:collection-detail": Api(STAFF),
    "api:model-list": Api(STAFF),
    "api:model-detail": Api(STAFF),
    "api:run-list": Api(STAFF),
    "api:run-detail": Api(STAFF),
    "api:ranking-list": Api(STAFF),
    "api:pool-list": Api(STAFF),
    "api:pool-detail": Api(STAFF),
    "api:pool-document-list": Api(STAFF),
    "api:qrels-list": Api(STAFF),
    "api:qrels-detail": Api(STAFF),
    "api:judgment-set-list": Api(STAFF),
    "api:judgment-set-detail": Api(STAFF),
    "api:qrels-export": Api(STAFF),  # every assessor's labels, combined
    "api:analysis-list": Api(STAFF),
    "api:analysis-detail": Api(STAFF),
    "api:evaluation-list": Api(STAFF),
    "api:evaluation-detail": Api(STAFF),
    "api:upload-list": Api(STAFF),
    "api:upload-detail": Api(STAFF),
    "api:upload-topics": Api(STAFF),
    "api:upload-variants": Api(STAFF),
    "api:upload-runs": Api(STAFF),
    "api:upload-qrels": Api(STAFF),
    "api:upload-collections": Api(STAFF),
}


class MissingEntry(LookupError):
    """A URL name with no entry in :data:`PAGES` or :data:`API`."""


def _lookup(table: dict, view_name: str):
    if view_name in table:
        return table[view_name]
    namespace, _, _ = view_name.rpartition(":")
    if namespace and f"{namespace}:*" in table:
        return table[f"{namespace}:*"]
    where = "common.roles.API" if namespace == API_NAMESPACE else "common.roles.PAGES"
    raise MissingEntry(f"the route {view_name!r} has no entry in {where}: "
                       "say which role may use it")


def page_level(view_name: str) -> str:
    """The least role that may open the page named ``view_name``."""
    return _lookup(PAGES, view_name)


def api_level(view_name: str, method: str) -> str:
    """The least role that may call the API route ``view_name`` with ``method``."""
    rule = _lookup(API, view_name)
    return rule.read if method in permissions.SAFE_METHODS else rule.write


def is_staff(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


def is_signed_in(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active)


def admits(level: str, user) -> bool:
    """Whether ``user`` may reach a route of ``level`` (which rows it then sees is the
    view's business)."""
    if level in (PUBLIC, WORKER):
        return True
    if level in (SIGNED_IN, ASSESSOR):
        return is_signed_in(user)
    if level == STAFF:
        return is_staff(user)
    raise ValueError(f"common.roles: unknown level {level!r} (one of {', '.join(LEVELS)})")


def _view_name(request) -> str:
    # an unnamed pattern (the admin's catch-all) is named by its view's dotted path, after
    # its namespace: the namespace's ``*`` entry covers it
    return request.resolver_match.view_name


def _forbidden(request, reason: str):
    """The site's 403 page (a refusal is an answer, not an error with a traceback)."""
    logger.warning("Forbidden (%s): %s", reason, request.path)
    return get_resolver(get_urlconf()).resolve_error_handler(403)(request, PermissionDenied(reason))


class RolesMiddleware:
    """Enforces :data:`PAGES` before every page view; the API's own permission class
    (:class:`RolePermission`) enforces :data:`API` after its token authentication."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if match is None or API_NAMESPACE in match.namespaces:
            return None
        try:
            level = page_level(_view_name(request))
        except MissingEntry as exc:
            return _forbidden(request, str(exc))
        if admits(level, request.user):
            return None
        # to the sign-in page, signed in or not (as the admin does): another account may
        return redirect_to_login(request.get_full_path())


class RolePermission(permissions.BasePermission):
    """The API's default permission: :data:`API` by URL name and method."""

    message = "this needs an organiser (staff) account"

    def has_permission(self, request, view) -> bool:
        try:
            level = api_level(_view_name(request), request.method)
        except MissingEntry as exc:
            self.message = str(exc)
            return False
        if level == STAFF:
            self.message = ("writes need an organiser (staff) account"
                            if request.method not in permissions.SAFE_METHODS
                            else "this needs an organiser (staff) account")
        return admits(level, request.user)
