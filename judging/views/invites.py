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


@require_POST
def manage_invite_new(request, name):
    """A new invite link, shown once on the page this answers with."""
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
    return render(request, "judging/invite_created.html",
                  {"task": task, "invite": invite, "link": link}, status=201)


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
