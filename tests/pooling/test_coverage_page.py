"""Coverage means over the topics the qrels judge, said on the pool page."""
from __future__ import annotations

import pytest
from django.urls import reverse

from judging.selectors import qrels_records
from judging.services import qrels_import
from pooling import analysis, services
from tests.pooling.test_django_pools import rankings_db  # noqa: F401  (fixture)


@pytest.fixture
def topic1_qrels(db, tmp_path):
    f = tmp_path / "one.qrels"
    f.write_text("1 1 doc-a 1\n1 1 doc-c 0\n1 1 doc-b -2\n")
    return qrels_import(f, format="diversity", name="one")


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_user("organiser", password="pw-organiser-1",
                                                 is_staff=True)
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_topics_without_qrels_are_shown_not_averaged(rankings_db, topic1_qrels,  # noqa: F811
                                                     staff_client):
    pool = services.pool_build(services.pool_create(topic_set_name="ts", sources="users",
                                                    depth=2).id)
    cov = analysis.pool_coverage(pool, qrels_records(topic1_qrels))
    rows = {r["topic"]: r for r in cov["rows"]}
    assert rows["1"]["has_qrels"] and not rows["2"]["has_qrels"]
    assert rows["2"]["pct_unjudged"] == 100.0
    assert (cov["mean"]["topics"], cov["mean"]["topics_without_qrels"]) == (1, 1)
    assert cov["mean"]["size"] == rows["1"]["size"]
    assert cov["mean"]["pct_unjudged"] == rows["1"]["pct_unjudged"]
    page = staff_client.get(reverse("pooling:pool_detail", args=[pool.pk]) + "?qrels=one")
    text = page.content.decode()
    assert "Means over the 1 topic with judgments in these qrels; 1 pool topic without any " \
           "is left out." in text
    assert "(no qrels)" in text
