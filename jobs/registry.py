"""The kinds of leased job: which model is the ledger, which task works one unit, how the
`jobs` command lists them and what follows a reconciliation.

Each app registers its kind in its ``AppConfig.ready()``; ``jobs`` never imports the apps
(they import ``jobs``). Work is woken by task name (:func:`wake`), so a service never
imports its own tasks module.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .leases import Reconciled


@dataclass(frozen=True)
class JobKind:
    """One kind of leased job.

    ``name`` (``"pool"``) names a unit in messages and in :func:`wake`; ``plural`` keys
    the reconciliation counts and ``recover --json``. ``model`` is the ledger (a
    :class:`jobs.models.LeasedJob`); ``task`` the name of the Celery task that works one
    unit, given its primary key. ``listing_key`` and ``listing()`` give the rows ``jobs``
    shows (``jobs --json`` keeps ``json_fields`` of each; retrieval lists runs, not
    chunks) and ``lines(row)`` their text. ``reconciled(result)`` runs after each
    reconciliation (a run recounts, a failed unit gets its finish time).
    """

    name: str
    plural: str
    model: type
    task: str
    listing_key: str
    listing: Callable[[], list[dict]]
    json_fields: tuple[str, ...]
    lines: Callable[[dict], list[str]] = field(default=lambda row: [])
    reconciled: Callable[[Reconciled], None] = field(default=lambda result: None)


_kinds: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Add ``kind`` (an app's ``ready()`` calls it; registering the same name again
    replaces it)."""
    _kinds[kind.name] = kind
    return kind


def kinds() -> list[JobKind]:
    """Every registered kind, in the order the apps registered them."""
    return list(_kinds.values())


def kind_get(name: str) -> JobKind:
    try:
        return _kinds[name]
    except KeyError:
        raise LookupError(f"no job kind {name!r} is registered (known: "
                          f"{', '.join(_kinds) or 'none'}); is its app in INSTALLED_APPS?") \
            from None


def wake(name: str, pk) -> None:
    """Send the wake-up message of unit ``pk`` of kind ``name`` (by task name: routes in
    ``CELERY_TASK_ROUTES`` apply). Call it on commit: the message names a committed row."""
    from celery import current_app

    current_app.send_task(kind_get(name).task, args=[pk])


def lease_and_error_lines(job: dict) -> list[str]:
    """The ``jobs`` listing's lines under a one-row job: its live lease, its last error."""
    out = []
    if job["holder"]:
        out.append(f"  attempt {job['attempts']}: {lease_text(job['holder'], job['expires'])}")
    if job["error"]:
        out.append(f"  error: {job['error']}")
    return out


def lease_text(holder: str, expires) -> str:
    """``host:pid (expires in 12 s)`` / ``(expired 3 s ago)`` for the ``jobs`` listing."""
    from django.utils import timezone

    if not holder:
        return ""
    if expires is None:
        return holder
    left = (expires - timezone.now()).total_seconds()
    return f"{holder} ({'expires in %.0f s' % left if left >= 0 else 'expired %.0f s ago' % -left})"
