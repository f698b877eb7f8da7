"""Assignment fairness, no repeats, and correctness under concurrent arrivals."""
import threading
from collections import Counter

import pytest
from django.db import connection, connections

from crowd.models import Assignment, Participant, StudyItem
from crowd.selectors import study_item_load
from crowd.services import participant_arrive, participant_consent, response_submit
from tests.crowd.study_helpers import make_study, make_topic_set


def _start(study, pid):
    p = participant_arrive(study=study, platform="prolific", worker_id=pid)
    return participant_consent(participant=p)


def _answer_before(p, position):
    """Answer, in order, every item the participant has before ``position``."""
    for a in p.assignments.filter(position__lt=position).order_by("position"):
        raw = "purple" if a.item.kind == "attention" else f"earlier answer {a.position}"
        assert response_submit(participant_id=p.pk, position=a.position, raw=raw).accepted


def _statement_items(p):
    return list(p.assignments.filter(item__kind="statement").values_list("item_id", flat=True))


@pytest.mark.django_db
def test_fewest_responses_first_and_quota():
    # 10 statements, 2 answers each wanted, 3 per worker: 20 slots
    study = make_study(make_topic_set(10), attention=False, responses_per_statement=2,
                       statements_per_worker=3)
    for i in range(6):
        _start(study, f"W{i}")
        load = study_item_load(study).values()
        assert max(load) - min(load) <= 1  # never a statement at n+2 while another is at n
    p7 = _start(study, "W7")
    assert len(_statement_items(p7)) == 2  # only two slots were left
    assert sorted(study_item_load(study).values()) == [2] * 10
    p8 = _start(study, "W8")
    assert p8.status == Participant.STATUS_FULL and not p8.assignments.exists()


@pytest.mark.django_db
def test_in_flight_assignments_count_and_failed_workers_release():
    study = make_study(make_topic_set(2), responses_per_statement=1, statements_per_worker=2)
    a = _start(study, "A")
    assert sorted(study_item_load(study).values()) == [1, 1]  # in flight, nothing answered
    assert _start(study, "B").status == Participant.STATUS_FULL
    # A fails the attention check: A's slots are released
    att = a.assignments.get(item__kind="attention")
    _answer_before(a, att.position)
    r = response_submit(participant_id=a.pk, position=att.position, raw="orange")
    assert r.accepted and r.status == Participant.STATUS_FAILED
    assert sorted(study_item_load(study).values()) == [0, 0]
    assert len(_statement_items(_start(study, "C"))) == 2


@pytest.mark.django_db
def test_expired_assignments_stop_counting():
    study = make_study(make_topic_set(1), attention=False, responses_per_statement=1,
                       statements_per_worker=1, assignment_timeout_minutes=30)
    _start(study, "A")
    Assignment.objects.update(assigned="2000-01-01T00:00:00Z")
    assert list(study_item_load(study).values()) == [0]


@pytest.mark.django_db
def test_order_is_seeded_and_recorded():
    study = make_study(make_topic_set(8), responses_per_statement=5, statements_per_worker=5)
    p = participant_arrive(study=study, platform="prolific", worker_id="S")
    p = participant_consent(participant=p, seed=12345)
    assert p.seed == 12345
    from crowd.assignment import order_items

    items = [str(i) for i in p.assignments.order_by("position").values_list("item_id", flat=True)]
    checks = {str(i) for i in study.items.filter(kind="attention").values_list("pk", flat=True)}
    assert order_items(items, 12345, not_first=checks) == items
    assert [a.position for a in p.assignments.order_by("position")] == list(range(1, 7))


@pytest.mark.django_db
def test_a_worker_never_gets_the_same_statement_twice():
    ts = make_topic_set(4)
    first = make_study(ts, attention=False, responses_per_statement=5, statements_per_worker=2)
    p = _start(first, "W")
    seen = set(p.assignments.values_list("item__statement_id", flat=True))
    # arriving again changes nothing
    again = participant_consent(participant=participant_arrive(
        study=first, platform="prolific", worker_id="W", session_token=p.session_token))
    assert again.pk == p.pk and again.assignments.count() == 2
    # a second study over the same statements gives the worker only the other two
    second = make_study(ts, attention=False, responses_per_statement=5, statements_per_worker=4)
    p2 = _start(second, "W")
    got = set(p2.assignments.values_list("item__statement_id", flat=True))
    assert len(got) == 2 and not (got & seen)


@pytest.mark.django_db(transaction=True)
def test_concurrent_arrivals_respect_quota_and_never_repeat():
    if connection.vendor != "postgresql":
        pytest.skip("row locks are exercised on PostgreSQL only (set DATABASE_URL)")
    # 12 statements x 3 answers = 36 slots; 20 workers x 3 = 60 wanted, all at once
    study = make_study(make_topic_set(12), attention=False, responses_per_statement=3,
                       statements_per_worker=3)
    barrier = threading.Barrier(20, timeout=30)
    errors = []

    def worker(i):
        try:
            p = participant_arrive(study=study, platform="prolific", worker_id=f"C{i}")
            barrier.wait()
            participant_consent(participant=p)
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    per_item = Counter(Assignment.objects.filter(participant__study=study).values_list("item_id", flat=True))
    assert sum(per_item.values()) == 36
    assert set(per_item.values()) == {3}
    assert len(per_item) == StudyItem.objects.filter(study=study).count()
    pairs = list(Assignment.objects.values_list("participant_id", "item_id"))
    assert len(pairs) == len(set(pairs))
    statuses = Counter(Participant.objects.filter(study=study).values_list("status", flat=True))
    assert statuses == {"active": 12, "full": 8}


@pytest.mark.django_db(transaction=True)
def test_concurrent_double_submit_keeps_one_answer():
    if connection.vendor != "postgresql":
        pytest.skip("row locks are exercised on PostgreSQL only (set DATABASE_URL)")
    study = make_study(make_topic_set(2), attention=False, statements_per_worker=2)
    p = _start(study, "D")
    barrier = threading.Barrier(8, timeout=30)
    results, errors = [], []

    def submit():
        try:
            barrier.wait()
            results.append(response_submit(participant_id=p.pk, position=1, raw="same answer"))
        except Exception as e:
            errors.append(e)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sum(r.accepted for r in results) == 1
    assert sum(r.duplicate for r in results) == 7
    from crowd.models import Response
    from topics.models import QueryVariant

    assert Response.objects.count() == 1 and QueryVariant.objects.count() == 1


@pytest.mark.django_db
def test_gold_items_go_to_everyone_and_are_scored_not_failed():
    from crowd.models import Response
    from crowd.services import study_create
    from topics.models import Statement

    ts = make_topic_set(3)
    gold_statement = Statement.objects.get(topic__topic_id="UQV100.003")
    study = study_create(topic_set=ts, name="g", consent_text="c", completion_code="X",
                         gold=[(gold_statement, "subject 3 school project\nsubject three")],
                         responses_per_statement=5, statements_per_worker=1)
    results = {}
    for pid, answer in [("A", "subject 3 project"), ("B", "unrelated words")]:
        p = _start(study, pid)
        kinds = sorted(p.assignments.values_list("item__kind", flat=True))
        assert kinds == ["gold", "statement"]
        g = p.assignments.get(item__kind="gold")
        _answer_before(p, g.position)
        results[pid] = response_submit(participant_id=p.pk, position=g.position, raw=answer)
    # {subject, 3, project} vs {subject, 3, school, project}: 3/4 >= 0.5; the other 0/6
    gold = Response.objects.filter(assignment__item__kind="gold")
    assert gold.get(assignment__participant__worker_id="A").check_passed is True
    miss = gold.get(assignment__participant__worker_id="B")
    assert miss.check_passed is False and miss.variant is not None
    assert results["B"].status in (Participant.STATUS_ACTIVE, Participant.STATUS_COMPLETED)
