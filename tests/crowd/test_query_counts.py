"""The worker flow's queries, pinned per request: every page of a study is on its hot path.

Counted as Django counts them. Inside a test every transaction is a savepoint, so a step
that writes under a lock shows ``SAVEPOINT`` and ``RELEASE SAVEPOINT`` as two extra
queries (in production they are the transaction's BEGIN and COMMIT, which Django does not
count). PostgreSQL starts an item's clock in the statement that reads the page and writes
an answer and its query variant in one statement; SQLite needs one more of each.
"""
import pytest
from django.db import connection
from django.test import Client

from crowd.models import Assignment, Participant, Response
from tests.crowd.study_helpers import entry_url, item_url, make_study
from topics.models import QueryVariant

pytestmark = pytest.mark.django_db

PG = connection.vendor == "postgresql"
SAVEPOINT = 2  # SAVEPOINT + RELEASE around a locked write (BEGIN/COMMIT in production)


def test_queries_per_request_of_the_worker_flow(django_assert_num_queries):
    study = make_study(attention=False, statements_per_worker=3)
    c = Client()
    slug = study.slug
    with django_assert_num_queries(2):  # the study; the new participant (one insert)
        r = c.get(entry_url(study), {"PROLIFIC_PID": "Q", "STUDY_ID": "s", "SESSION_ID": "e"})
    assert r.status_code == 302 and r["Location"].endswith("/consent/")
    with django_assert_num_queries(1):  # the participant with the study
        assert c.get(f"/crowd/s/{slug}/consent/").status_code == 200
    # the participant; then locked: the study, its items with their load, the
    # assignments (one insert), the participant's status
    with django_assert_num_queries(1 + SAVEPOINT + 4):
        r = c.post(f"/crowd/s/{slug}/consent/", {"agree": "on"})
    assert r["Location"] == item_url(study, 1)
    with django_assert_num_queries(1 if PG else 2):  # the worker's items; start the clock
        assert c.get(item_url(study, 1)).status_code == 200
    assert Assignment.objects.get(participant__worker_id="Q", position=1).shown is not None
    with django_assert_num_queries(1):  # a reload: the clock is already running
        assert c.get(item_url(study, 1)).status_code == 200
    # the lock, the worker's items, the answer with its variant
    with django_assert_num_queries(SAVEPOINT + 2 + (1 if PG else 2)):
        r = c.post(item_url(study, 1), {"query": "budget query"})
    assert r.status_code == 302 and r["Location"] == item_url(study, 2)
    with django_assert_num_queries(SAVEPOINT + 2):  # a repeat writes nothing
        r = c.post(item_url(study, 1), {"query": "budget query"})
    assert r["Location"] == item_url(study, 2)
    with django_assert_num_queries(2):  # the participant; the first open item
        assert c.get(f"/crowd/s/{slug}/next/")["Location"] == item_url(study, 2)
    c.get(item_url(study, 2))
    c.post(item_url(study, 2), {"query": "second"})
    c.get(item_url(study, 3))
    # the last answer also closes the participant
    with django_assert_num_queries(SAVEPOINT + 2 + (1 if PG else 2) + 1):
        r = c.post(item_url(study, 3), {"query": "third"})
    assert r["Location"].endswith("/done/")
    with django_assert_num_queries(1):  # the participant with the study
        r = c.get(f"/crowd/s/{slug}/done/")
    assert b"C0DE-1234" in r.content
    with django_assert_num_queries(1):  # a finished worker: the participant only
        assert c.get(f"/crowd/s/{slug}/next/")["Location"].endswith("/done/")
    assert Response.objects.count() == QueryVariant.objects.count() == 3
    assert Participant.objects.get(worker_id="Q").status == Participant.STATUS_COMPLETED


def test_a_returning_worker_costs_one_query_more_at_the_entry(django_assert_num_queries):
    study = make_study(attention=False)
    c = Client()
    params = {"PROLIFIC_PID": "R", "STUDY_ID": "s", "SESSION_ID": "e"}
    c.get(entry_url(study), params)
    # the browser's own participant; the study; the insert finds the worker; the worker
    with django_assert_num_queries(4):
        r = c.get(entry_url(study), params)
    assert r["Location"].endswith("/consent/")
    assert Participant.objects.filter(worker_id="R").count() == 1
