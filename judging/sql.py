"""The SQL of the judging hot paths: a lease, a submit and the judging page run these on
every request of every assessor, so they are written out once (portable SQL, with row
locks where the database has them) rather than built by the ORM on each call, which cost
more CPU than the database spent answering. Helpers only; the queries live with the
services and selectors that own them."""
from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .models import JudgingItem, JudgingSlot, Label, TaskAssessor, TaskTopic

SLOT, ITEM = JudgingSlot._meta.db_table, JudgingItem._meta.db_table
TOPIC, ASSESSOR = TaskTopic._meta.db_table, TaskAssessor._meta.db_table
LABEL = Label._meta.db_table


def rows(query: str, params) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(query, params)
        return cur.fetchall() if cur.description else []


def update(query: str, params) -> int:
    """Run a write; the number of rows it changed."""
    with connection.cursor() as cur:
        cur.execute(query, params)
        return cur.rowcount


def lock(skip_locked: bool = False) -> str:
    """``FOR UPDATE [SKIP LOCKED]`` where the database has row locks (SQLite serialises
    writers instead)."""
    if not connection.features.has_select_for_update:
        return ""
    return " FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE"


def placeholders(values) -> str:
    return ", ".join(["%s"] * len(values))


def db_time(value: datetime):
    return connection.ops.adapt_datetimefield_value(value)


def py_time(value) -> datetime | None:
    """A timestamp as the raw cursor gives it (naive UTC on SQLite) as an aware datetime."""
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else parse_datetime(value)
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=dt_timezone.utc)


def loads_json(value):
    """A JSON column as the raw cursor gives it (text) as Python values."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value
