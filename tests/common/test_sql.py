"""Queries compiled once: the same rows as the ORM, parameters bound in the SQL's order;
statements logged like the ORM's; inserts that write every field of a model."""
import datetime

import pytest

from common.sql import as_datetime, compiled_query, fetch, insert_params, insert_sql
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db


def _topics(set_name, topic_id):
    # the SQL binds topic_id before the set's name: kwargs order is not the SQL's order
    return (Topic.objects.filter(topic_id=topic_id, topic_set__name=set_name)
            .order_by("pk").values_list("pk", "title"))


def test_same_rows_as_the_orm_for_any_parameters():
    for name in ("a", "b"):
        ts = TopicSet.objects.create(name=name)
        for tid in ("1", "2"):
            Topic.objects.create(topic_set=ts, topic_id=tid, title=f"{name}{tid}")
    for set_name, topic_id in [("a", "1"), ("b", "2"), ("b", "1"), ("zz", "1"), ("a'; --", "1")]:
        rows = compiled_query("test.topics", _topics, (set_name, topic_id), ("\x01s", "\x01t"))
        assert rows == list(_topics(set_name, topic_id))


def test_sentinels_must_be_the_bound_parameters():
    with pytest.raises(RuntimeError, match="not its sentinels"):
        compiled_query("test.bad", lambda s, t: _topics("fixed", t), ("a", "1"), ("\x01s", "\x01t"))


def test_as_datetime():
    aware = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
    assert as_datetime(None) is None
    assert as_datetime(aware) is aware
    assert as_datetime("2024-05-01 12:00:00") == aware
    assert as_datetime("2024-05-01 12:00:00+00:00") == aware
    assert as_datetime(datetime.datetime(2024, 5, 1, 12, 0)) == aware


def test_rows_come_back_as_the_orm_gives_them():
    ts = TopicSet.objects.create(name="when")
    rows = compiled_query("test.created", lambda name: TopicSet.objects.filter(name=name)
                          .values_list("pk", "created"), ("when",), ("\x01n",))
    assert rows == list(TopicSet.objects.filter(name="when").values_list("pk", "created"))
    assert isinstance(rows[0][1], datetime.datetime) and rows[0][1] == ts.created


def test_statements_are_logged_with_their_text():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert fetch("SELECT COUNT(*) FROM crowd_topicset WHERE name = %s", ["none"]) == [(0,)]
    assert len(ctx.captured_queries) == 1
    assert "FROM crowd_topicset WHERE name = " in ctx.captured_queries[0]["sql"]


def test_inserts_write_every_field_with_the_models_defaults():
    """A field added to a model later (with a default) is written by the same code."""
    from crowd.models import Participant
    from tests.crowd.study_helpers import make_study

    study = make_study(attention=False)
    row = {"study_id": study.pk, "platform": "prolific", "worker_id": "W", "session_token": "t"}
    params = insert_params(Participant, [row])
    fields = [f for f in Participant._meta.concrete_fields if not f.primary_key]
    assert len(params) == len(fields) == insert_sql(Participant).count("%s")
    # defaults filled in as save() would, and written back into the row
    assert row["status"] == Participant.STATUS_ARRIVED and row["simulated"] is False
    assert isinstance(row["arrived"], datetime.datetime)
    (pk,), = fetch(insert_sql(Participant, suffix=' RETURNING "id"'), params)
    p = Participant.objects.get(pk=pk)
    assert (p.worker_id, p.status, p.simulated, p.seed) == ("W", "arrived", False, None)
    assert p.arrived == row["arrived"]


def test_statements_are_prepared_once_per_connection_on_postgresql():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's (set DATABASE_URL)")
    sql = "SELECT COUNT(*) FROM crowd_topic WHERE topic_id = %s AND title <> 'prepared-marker'"
    for topic_id in ("1", "2", "3"):
        assert fetch(sql, [topic_id]) == [(0,)]
    with connection.cursor() as c:
        c.execute("SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                  ["%prepared-marker%"])
        assert c.fetchone() == (1,)  # one statement, prepared once, run three times


def test_row_locks_and_statements_without_rows():
    from django.db import connection

    from common.sql import execute, for_update, placeholders

    if connection.vendor == "postgresql":
        assert for_update() == " FOR UPDATE"
        assert for_update(skip_locked=True) == " FOR UPDATE SKIP LOCKED"
        assert for_update(no_key=True) == " FOR NO KEY UPDATE"
    else:
        assert for_update(skip_locked=True) == ""
    assert placeholders(["a", "b", "c"]) == "%s, %s, %s"
    ts = TopicSet.objects.create(name="locks")
    Topic.objects.create(topic_set=ts, topic_id="1", title="t")
    table = Topic._meta.db_table
    assert fetch(f"UPDATE {table} SET title = %s WHERE topic_id = %s", ["u", "1"]) == []
    assert execute(f"UPDATE {table} SET title = %s WHERE topic_id = %s", ["v", "1"]) == 1
    assert fetch(f"SELECT title FROM {table} WHERE topic_id = %s{for_update()}", ["1"]) == [("v",)]
