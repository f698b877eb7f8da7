"""Invite links: organisers make and revoke them on a task's page; whoever opens one makes
an account (or signs in) and becomes an assessor of that task.

Who reaches which route is :mod:`common.roles` (making and revoking: organisers; the link:
anyone); what the link grants is :func:`judging.services.invite_accept` (the task's
assessor list, nothing else).
"""
from __future__ import annotations

from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import UserCreationForm
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from .. import services
from ..forms import InviteForm
from .page import task_or_404

#: the sign-in an invite's new account starts with (the first of the site's backends
#: throttles failed sign-ins only)
_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _refused(request, message, status, task=None):
    return render(request, "judging/message.html", {"task": task, "message": message},
                  status=status)


def _new_link_key(task_name: str) -> str:
    return f"judging:new-invite:{task_name}"


def new_invite_pop(request, task) -> dict | None:
    """The invite link just made for ``task`` (``link``, ``expires``), taken out of the
    session: the task's page shows it once, and a reload finds nothing."""
    return request.session.pop(_new_link_key(task.name), None)


@require_POST
def manage_invite_new(request, name):
    """Make an invite link, then redirect to the task's page, which shows it once.

    POST, redirect, GET: reloading the page that shows the link makes no other invite.
    The database keeps only the token's hash, so the link waits in the session (on the
    server) until that page takes it out."""
    task = task_or_404(name)
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _refused(request, "days: " + " ".join(form.errors.get("days", [])), 400, task)
    try:
        invite, token = services.invite_create(task, request.user.get_username(),
                                               form.cleaned_data["days"])
    except services.InviteError as exc:
        return _refused(request, str(exc), exc.status, task)
    link = request.build_absolute_uri(reverse("judging:invite", kwargs={"token": token}))
    request.session[_new_link_key(task.name)] = {
        "link": link, "expires": f"{invite.expires:%Y-%m-%d %H:%M}"}
    return redirect(reverse("judging:manage_task", kwargs={"name": name}) + "#invites")


@require_POST
def manage_invite_revoke(request, name, pk):
    task = task_or_404(name)
    try:
        services.invite_revoke(task, pk)
    except services.InviteError as exc:
        return _refused(request, str(exc), exc.status, task)
    return redirect(reverse("judging:manage_task", kwargs={"name": name}) + "#invites")


@require_http_methods(["GET", "POST"])
def invite(request, token):
    """The link: a signed-in visitor joins the task as themselves; anyone else makes an
    account here, or signs in first and comes back."""
    try:
        invite = services.invite_check(token)
    except services.InviteError as exc:
        return _refused(request, str(exc), exc.status)
    task = invite.task
    signed_in = request.user.is_authenticated
    form = None if signed_in else UserCreationForm(request.POST or None)
    if request.method == "POST":
        try:
            if signed_in:
                services.invite_accept(token, request.user.get_username())
            elif form.is_valid():
                username = form.cleaned_data["username"]
                services.invite_accept(token, username,
                                       new_password=form.cleaned_data["password1"])
                user = get_user_model().objects.get(username=username)
                login(request, user, backend=_BACKEND)
            else:
                return render(request, "judging/invite.html",
                              {"task": task, "form": form, "invite": invite}, status=400)
        except services.InviteError as exc:
            return _refused(request, str(exc), exc.status, task)
        return redirect("judging:judge", name=task.name)
    return render(request, "judging/invite.html", {"task": task, "form": form, "invite": invite})
