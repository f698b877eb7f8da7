"""Reads of invite links: a task's invites and the state of each, for its page."""
from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from ..models import AssessorInvite, JudgingTask


def invite_state(invite: AssessorInvite, now: datetime | None = None) -> str:
    """``used``, ``revoked``, ``expired`` or ``open``."""
    now = now or timezone.now()
    if invite.used is not None:
        return "used"
    if invite.revoked is not None:
        return "revoked"
    return "expired" if invite.expires <= now else "open"


def task_invites(task: JudgingTask) -> list[dict]:
    """The task's invites, newest first: ``{"invite", "state"}`` (the links themselves are
    not kept, only their hashes)."""
    now = timezone.now()
    return [{"invite": i, "state": invite_state(i, now)}
            for i in AssessorInvite.objects.filter(task=task)]
