"""Queries compiled once: the same rows as the ORM, parameters bound in the SQL's order."""
import datetime

import pytest

from crowd.compiled import as_datetime, compiled_query
from crowd.models import Topic, TopicSet

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
