"""Invite links: an organiser makes one for a task; whoever opens it becomes an assessor of
that task, with a new account or the one they are signed in with.

The link carries a random token (:func:`secrets.token_urlsafe`, 256 bits); the database
keeps only its SHA-256, so reading the table gives no link away. An invite is used once,
expires after the days the organiser chose and may be revoked before it is used. It adds
the account to the task's assessor list and nothing else: no staff rights, no other task.
A task that lists no assessors is already open to every assessor account (docs/roles.md),
so there the invite creates the account and leaves the list empty — adding one name would
close the task to everyone else.
"""
from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from ..models import AssessorInvite, JudgingTask

INVITE_DAYS = 7  # how long a new invite stays open unless the organiser says otherwise
MAX_INVITE_DAYS = 90


class InviteError(ValueError):
    """An invite link that cannot be used; ``status`` is the HTTP status a page answers
    with (404: no such link, 410: it was used, revoked or has expired)."""

    def __init__(self, message: str, status: int = 410):
        super().__init__(message)
        self.status = status


def token_hash(token: str) -> str:
    return hashlib.sha256(str(token).encode("utf-8")).hexdigest()


def invite_create(task: JudgingTask, created_by: str, days: int = INVITE_DAYS,
                  ) -> tuple[AssessorInvite, str]:
    """A new invite to ``task`` and its token (shown once: only its hash is stored)."""
    if task.study_id is not None:
        raise InviteError(f"task {task.name!r} is published to crowd workers, who alone judge "
                          "it; invite assessors to a task that is not published", status=400)
    if task.mode == JudgingTask.MODE_USER:
        raise InviteError(f"task {task.name!r} is a user-mode task, judged by the workers who "
                          "wrote the queries; invite assessors to an intent- or topic-mode task",
                          status=400)
    days = int(days)
    if not 1 <= days <= MAX_INVITE_DAYS:
        raise InviteError(f"an invite stays open between 1 and {MAX_INVITE_DAYS} days, "
                          f"not {days}", status=400)
    token = secrets.token_urlsafe(32)
    invite = AssessorInvite.objects.create(
        task=task, token_hash=token_hash(token), created_by=created_by,
        expires=timezone.now() + timedelta(days=days))
    return invite, token


def invite_revoke(task: JudgingTask, invite_id: int) -> AssessorInvite:
    """Close an invite of ``task`` that has not been used (revoking twice is no error)."""
    with transaction.atomic():
        invite = (AssessorInvite.objects.select_for_update()
                  .filter(task=task, pk=invite_id).first())
        if invite is None:
            raise InviteError(f"task {task.name!r} has no invite {invite_id}", status=404)
        if invite.used is not None:
            raise InviteError(f"invite {invite_id} was already used by {invite.used_by}; "
                              "to take them off the task, edit its assessors", status=400)
        if invite.revoked is None:
            invite.revoked = timezone.now()
            invite.save(update_fields=["revoked"])
    return invite


def invite_check(token: str, *, lock: bool = False) -> AssessorInvite:
    """The open invite the token belongs to; :class:`InviteError` saying why not.
    ``lock``: take its row lock (inside the caller's transaction)."""
    qs = AssessorInvite.objects.select_related("task")
    if lock:
        qs = qs.select_for_update()
    invite = qs.filter(token_hash=token_hash(token)).first()
    if invite is None:
        raise InviteError("this invite link is not known: check that the whole link was "
                          "copied, or ask the organiser for a new one", status=404)
    if invite.revoked is not None:
        raise InviteError(f"this invite to task {invite.task.name!r} was revoked by the "
                          "organiser: ask them for a new one")
    if invite.used is not None:
        raise InviteError(f"this invite to task {invite.task.name!r} was already used: an "
                          "invite link works once; sign in with the account made with it, "
                          "or ask the organiser for a new one")
    if invite.expires <= timezone.now():
        raise InviteError(f"this invite to task {invite.task.name!r} expired on "
                          f"{invite.expires:%Y-%m-%d %H:%M} UTC: ask the organiser for a new one")
    return invite


def invite_accept(token: str, username: str, *, new_password: str | None = None
                  ) -> JudgingTask:
    """Use the invite: with ``new_password``, create the account ``username`` first (the
    caller has validated both, as Django's sign-up form does); add the account to the
    task's assessors; mark the invite used. All or nothing, and the invite is locked, so
    a link opened twice at once is used once."""
    User = get_user_model()
    with transaction.atomic():
        invite = invite_check(token, lock=True)
        if new_password is not None:
            if User.objects.filter(username=username).exists():
                raise InviteError(f"the account name {username!r} is taken: choose another, "
                                  "or sign in if it is yours", status=400)
            User.objects.create_user(username=username, password=new_password)
        elif not User.objects.filter(username=username, is_active=True).exists():
            raise InviteError(f"no active account named {username!r}", status=400)
        task = JudgingTask.objects.select_for_update().get(pk=invite.task_id)
        if task.assessors and username not in task.assessors:
            task.assessors = [*task.assessors, username]
            task.save(update_fields=["assessors"])
        invite.used, invite.used_by = timezone.now(), username
        invite.save(update_fields=["used", "used_by"])
    return task
