"""Prepared SQL for the hot paths: built once per process, prepared once per connection.

A crowd worker's pages and a judge's lease, submit and judging page run the same few
statements on every request of every worker, and compiling a Django query with joins
costs more CPU than running it (about 1.5 ms against 0.3 ms for a worker's items). This
module is the one way the apps keep that cost off the hot path:

- :func:`compiled_query` builds a query once with the ORM, with sentinel parameters,
  keeps its SQL and the ORM's converters, and runs it with the real parameters: the SQL
  stays the ORM's (table and column names follow the models, on PostgreSQL and SQLite
  alike), rows come back with the same Python types as the ORM's, and the parameters are
  always bound, never interpolated.
- :func:`fetch` / :func:`execute` run a fixed SQL text (``%s`` placeholders; helpers:
  :func:`for_update`, :func:`placeholders`, :func:`db_time`, :func:`as_datetime`,
  :func:`loads_json`), and
  :func:`insert_sql` / :func:`insert_params` write model rows with every field the model
  has (defaults and ``auto_now_add`` filled in as ``Model.save()`` would), so a field added
  to a model later is written too.

On PostgreSQL (psycopg 3) every statement goes through a server-side-binding cursor that
prepares it the first time a connection sees it, so PostgreSQL parses and plans it once
per connection instead of once per request (a generic plan: the statements are written so
that it is the index-driven one whatever the tables' statistics). Statements still go
through Django's cursor wrapper: query logging, ``django_assert_num_queries`` and database
error wrapping work as for any ORM query. A connection pooler in front of PostgreSQL must
then keep prepared statements per server connection (PgBouncer >= 1.21 with
``max_prepared_statements``, or session pooling); otherwise set ``prepare_threshold``
to None in the database's OPTIONS.
"""
from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Sequence, Sized
from typing import NamedTuple

from django.conf import settings
from django.db import connections
from django.db.models import Model, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

try:  # psycopg 3: server-side binding with prepared statements
    import psycopg
    from psycopg.types.datetime import TimestamptzLoader

    _TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid

    class _PreparedCursor(psycopg.Cursor):
        """A psycopg cursor that prepares every statement it runs (once per connection).

        When the connection's time zone is UTC (Django sets it so with ``USE_TZ``),
        timestamps load through psycopg's own loader (compiled in psycopg-binary), which
        then gives what Django's loader gives (aware datetimes in ``datetime.timezone.utc``)
        at a fraction of its cost: Django's subclass runs in Python, and a worker's page
        reads a timestamp per item."""

        def __init__(self, connection, *args, **kwargs):
            super().__init__(connection, *args, **kwargs)
            if settings.USE_TZ and connection.info.parameter_status("TimeZone") == "UTC":
                self.adapters.register_loader(_TIMESTAMPTZ_OID, TimestamptzLoader)

        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True if prepare is None else prepare,
                                   binary=binary)

    class _LoggedPreparedCursor(_PreparedCursor):
        """Keeps the statement's text for Django's query log (DEBUG, tests), which psycopg
        does not keep for a prepared statement."""

        def execute(self, query, params=None, *, prepare=None, binary=None):
            super().execute(query, params, prepare=prepare, binary=binary)
            if self._query is None:
                self._query = self._query_cls(self._tx)
                self._query.convert(query, params)
            return self
except ImportError:  # psycopg2 or no PostgreSQL driver: Django's own cursor everywhere
    _PreparedCursor = None


# Executions after which psycopg would prepare a statement by itself; these cursors ask
# for it on the first. Settings that name ``prepare_threshold`` in the database OPTIONS
# decide instead (None: nothing is prepared, for a pooler that cannot keep them).
PREPARE_THRESHOLD = 5


def cursor(using: str = "default"):
    """A Django cursor on ``using`` that, on PostgreSQL with psycopg 3, prepares the
    statements it runs (parse and plan once per connection)."""
    connection = connections[using]
    if connection.vendor != "postgresql" or _PreparedCursor is None:
        return connection.cursor()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = connection.connection
    if raw.prepare_threshold is None and "prepare_threshold" not in connection.settings_dict["OPTIONS"]:
        # Django turns psycopg's statement preparation off unless the settings turn it on;
        # only server-binding cursors (these) ever prepare, so this changes nothing else.
        raw.prepare_threshold = PREPARE_THRESHOLD
    if connection.queries_logged:
        return connection.make_debug_cursor(_LoggedPreparedCursor(connection.connection))
    return connection.make_cursor(_PreparedCursor(connection.connection))


def fetch(sql: str, params: Sequence = (), *, using: str = "default") -> list[tuple]:
    """All rows of ``sql`` (``%s`` placeholders, parameters always bound); none for a
    statement that returns no rows."""
    with cursor(using) as c:
        c.execute(sql, params)
        return c.fetchall() if c.description else []


def execute(sql: str, params: Sequence = (), *, using: str = "default") -> int:
    """Run a statement that returns no rows; the number of rows it changed."""
    with cursor(using) as c:
        c.execute(sql, params)
        return c.rowcount


def for_update(*, no_key: bool = False, skip_locked: bool = False,
               using: str = "default") -> str:
    """The row-locking clause of this backend (``FOR [NO KEY] UPDATE [SKIP LOCKED]``),
    empty on SQLite, where a write transaction already holds the whole database: see
    ``transaction_mode`` in the settings."""
    connection = connections[using]
    if not connection.features.has_select_for_update:
        return ""
    skip_locked = skip_locked and connection.features.has_select_for_update_skip_locked
    return " " + connection.ops.for_update_sql(no_key=no_key, skip_locked=skip_locked)


def placeholders(values: Sized) -> str:
    """``%s, %s, ...``: one placeholder per value, for ``IN (...)``."""
    return ", ".join(["%s"] * len(values))


class Compiled(NamedTuple):
    """A query's SQL with where each bound value comes from, and the ORM's converters."""

    sql: str
    order: list  # per bound value: (parameter index, None) or (None, constant of the query)
    compiler: object
    converters: dict

    def bind(self, params: Sequence) -> list:
        """The bound values, in the SQL's order, for these parameters."""
        return [value if i is None else params[i] for i, value in self.order]

    def convert(self, rows: list) -> list[tuple]:
        """Rows as the ORM would give them (SQLite's text timestamps as datetimes, ...)."""
        if not self.converters:
            return rows
        return [tuple(row) for row in self.compiler.apply_converters(rows, self.converters)]


_SQL: dict[tuple[str, str], Compiled] = {}


def compile_query(name: str, build: Callable[..., QuerySet], sentinels: Sequence, *,
                  using: str = "default") -> Compiled:
    """The SQL of ``build(*sentinels)``, compiled once per process and database vendor.
    ``sentinels`` are distinct values of the parameters' types that appear nowhere else in
    the query, so they locate each parameter in the SQL."""
    connection = connections[using]
    key = (name, connection.vendor)
    compiled = _SQL.get(key)
    if compiled is None:
        compiler = build(*sentinels).query.get_compiler(using=using)
        sql, bound = compiler.as_sql()
        wanted = [repr(v) for v in sentinels]
        given = [repr(v) for v in bound]
        if sorted(v for v in given if v in wanted) != sorted(wanted):
            raise RuntimeError(f"query {name!r} binds {bound!r}, not its sentinels {sentinels!r}")
        # each bound value: a parameter's index, or a constant of the query (Exists' 1)
        order = [(wanted.index(r), None) if r in wanted else (None, v) for r, v in zip(given, bound)]
        converters = compiler.get_converters([s[0] for s in compiler.select[:compiler.col_count]])
        compiled = _SQL[key] = Compiled(sql, order, compiler, converters)
    return compiled


def compiled_query(name: str, build: Callable[..., QuerySet], params: Sequence,
                   sentinels: Sequence, *, using: str = "default") -> list[tuple]:
    """Rows of ``build(*params)``, converted as the ORM converts them; its SQL is compiled
    from ``build(*sentinels)`` once per process (see :func:`compile_query`)."""
    compiled = compile_query(name, build, sentinels, using=using)
    return compiled.convert(fetch(compiled.sql, compiled.bind(params), using=using))


# --- writes: every field of the model, as save() would fill it ------------------------------

_INSERTS: dict[tuple, tuple[str, list]] = {}


def _insert_fields(model: type[Model]) -> list:
    return [f for f in model._meta.concrete_fields
            if not (f.primary_key and getattr(f, "db_returning", False))]


def insert_sql(model: type[Model], rows: int = 1, *, suffix: str = "",
               expressions: dict[str, str] | None = None, using: str = "default") -> str:
    """``INSERT INTO <table> (<every field but an auto key>) VALUES (...)`` for ``rows``
    rows, then ``suffix`` (``ON CONFLICT ...``, ``RETURNING ...``); cached per process.
    ``expressions``: SQL written in place of a field's parameter (by ``attname``)."""
    connection = connections[using]
    expressions = expressions or {}
    key = (model, rows, suffix, tuple(sorted(expressions.items())), connection.vendor)
    sql = _INSERTS.get(key)
    if sql is None:
        qn = connection.ops.quote_name
        fields = _insert_fields(model)
        one = "(" + ", ".join(expressions.get(f.attname, "%s") for f in fields) + ")"
        sql = _INSERTS[key] = (
            f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
            f"VALUES {', '.join([one] * rows)}{suffix}"
        )
    return sql


def insert_params(model: type[Model], rows: Iterable[dict], *, skip: Iterable[str] = (),
                  using: str = "default") -> list:
    """Parameters for :func:`insert_sql`: each row's values by field ``attname``. Fields a
    row does not give take their default (``auto_now``/``auto_now_add``: now), written
    into the row, so the row then holds every value stored; values are prepared for the
    database as ``Model.save()`` prepares them. ``skip``: fields given by ``expressions``."""
    connection = connections[using]
    skipped = set(skip)
    fields = [f for f in _insert_fields(model) if f.attname not in skipped]
    now = None
    out = []
    for row in rows:
        for f in fields:
            if f.attname not in row:
                if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
                    now = now or timezone.now()
                    row[f.attname] = now
                else:
                    row[f.attname] = f.get_default()
            out.append(f.get_db_prep_save(row[f.attname], connection))
    return out


def db_value(model: type[Model], attname: str, value, *, using: str = "default"):
    """``value`` of field ``attname`` prepared for the database (SQLite stores datetimes
    as UTC text), for a hand-written statement."""
    return model._meta.get_field(attname).get_db_prep_save(value, connections[using])


def from_row(model: type[Model], row: dict, *, using: str = "default") -> Model:
    """A model instance for a row just written with :func:`insert_params`."""
    obj = model(**row)
    obj._state.adding = False
    obj._state.db = using
    return obj


def db_time(value: datetime.datetime, *, using: str = "default"):
    """A datetime as a hand-written statement binds it (SQLite stores UTC text)."""
    return connections[using].ops.adapt_datetimefield_value(value)


def loads_json(value):
    """A JSON column as a raw cursor gives it (text on SQLite) as Python values."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def as_datetime(value) -> datetime.datetime | None:
    """A timestamp column's value as an aware datetime (SQLite returns text)."""
    if value is None or isinstance(value, datetime.datetime) and timezone.is_aware(value):
        return value
    if isinstance(value, str):
        value = parse_datetime(value)
    return timezone.make_aware(value, datetime.timezone.utc) if timezone.is_naive(value) else value
