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


@pytest.mark.django_db
def test_only_the_topic_sets_own_qrels_are_offered(rankings_db, topic1_qrels,  # noqa: F811
                                                  staff_client, tmp_path):
    """Another topic set's qrels appear neither on a project's page, nor in the coverage
    menu of its pools, nor in the paper gallery's menu once the topic set is chosen; its
    own do, whether named at import or found from the topics."""
    from judging.services import qrels_import
    from topics.services import topics_import
    from topics.topicfiles import TopicRecord

    topics_import("other", [TopicRecord("1", title="x"), TopicRecord("7", title="y")])
    f = tmp_path / "theirs.qrels"
    f.write_text("1 0 doc-a 1\n7 0 doc-b 1\n")
    theirs = qrels_import(f, format="adhoc", name="theirs")  # only "other" holds topic 7
    assert theirs.topic_set.name == "other"
    assert topic1_qrels.topic_set == rankings_db  # made before "other" held topic 1 too
    pool = services.pool_build(services.pool_create(topic_set_name="ts", sources="users",
                                                    depth=2).id)
    page = staff_client.get(reverse("pooling:pool_detail", args=[pool.pk])).content.decode()
    assert '<option value="one">' in page and '<option value="theirs">' not in page
    refused = staff_client.get(reverse("pooling:pool_detail", args=[pool.pk]) + "?qrels=theirs")
    assert "Means over" not in refused.content.decode()
    # the project page of "other" (the page of "ts" is the same query with the other set)
    other = staff_client.get(reverse("projects:organiser_project", args=[theirs.topic_set.pk]))
    assert ">theirs</a>" in other.content.decode() and ">one</a>" not in other.content.decode()
    # the paper gallery, its topic set chosen: that set's qrels only, and another's refused
    gallery = reverse("pooling:paper_figures")
    page = staff_client.get(gallery + "?topic_set=ts&depths=2&orders=2").content.decode()
    assert '<option value="one">' in page and '<option value="theirs">' not in page
    refused = staff_client.get(gallery + "?topic_set=ts&qrels=theirs&depths=2&orders=2")
    text = refused.content.decode()
    assert "Figure 3: topic" not in text
    assert ("judgment set &#x27;theirs&#x27; is of topic set &#x27;other&#x27;, not of "
            "&#x27;ts&#x27;") in text
    page = staff_client.get(gallery + "?topic_set=other&depths=2&orders=2").content.decode()
    assert '<option value="theirs">' in page and '<option value="one">' not in page
