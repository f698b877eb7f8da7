"""A worker's path through a study, through the views, on the test database."""
import pytest
from django.test import Client

from crowd.models import Assignment, Participant, Response
from topics.models import QueryVariant
from tests.crowd.study_helpers import (
    arrive, consent, entry_url, finish, item_url, make_study, make_topic_set, participant,
)

pytestmark = pytest.mark.django_db


def test_prolific_worker_completes_and_gets_code(client):
    study = make_study(question_text="How many useful documents?", question_choices="0\n1\n2\n3-5")
    r = arrive(client, study, "PID1")
    assert r.redirect_chain[-1][0].endswith("/consent/")
    assert b"Consent: you agree." in r.content
    assert b"C0DE-1234" not in r.content
    r = consent(client, study)
    assert r.redirect_chain[-1][0] == item_url(study, 1)
    p = participant(study, "PID1")
    assert (p.platform, p.external_study_id, p.external_session_id) == ("prolific", "st", "se")
    assert p.status == "active" and p.seed is not None
    assert p.assignments.count() == 3  # 2 statements + 1 attention check
    # the code is not reachable before the end
    r = client.get(f"/crowd/s/{study.slug}/done/", follow=True)
    assert b"C0DE-1234" not in r.content
    r = finish(client, study, "PID1", estimate="3-5")
    assert r.redirect_chain[-1][0].endswith("/done/")
    assert b"C0DE-1234" in r.content
    variants = QueryVariant.objects.filter(source="crowd").order_by("id")
    assert len(variants) == 2
    for v in variants:
        assert v.worker_id == "PID1" and v.count == 1 and v.estimate == "3-5"
        assert v.raw.startswith("query UQV100.") and v.normalised == v.raw.lower().replace(".", " ")
        assert v.variant_id.startswith(f"S{study.pk}-P{p.pk}-")
    p.refresh_from_db()
    assert p.status == "completed" and p.finished is not None


def test_failed_attention_check_fails_worker_and_withdraws_variants(client):
    study = make_study()
    arrive(client, study, "PIDX")
    consent(client, study)

    def wrong(a, pid):
        return "orange" if a.item.kind == "attention" else f"query {a.item.statement.topic.topic_id}"

    r = finish(client, study, "PIDX", answer=wrong)
    p = participant(study, "PIDX")
    assert p.status == "failed"
    assert b"C0DE-1234" not in r.content
    assert b"did not pass" in r.content
    assert not QueryVariant.objects.filter(worker_id="PIDX").exists()
    assert Response.objects.filter(assignment__participant=p).exists()  # kept for audit


def test_refused_answer_writes_nothing_and_explains(client):
    study = make_study(attention=False, max_query_chars=20)
    arrive(client, study, "P")
    consent(client, study)
    a = participant(study, "P").assignments.select_related("item__statement").get(position=1)
    for bad, message in [
        ("", b"Please type a query"),
        ("x" * 21, b"too long"),
        (a.item.statement.text, b"not a copy"),
    ]:
        r = client.post(item_url(study, 1), {"query": bad})
        assert r.status_code == 200 and message in r.content
    assert not Response.objects.exists() and not QueryVariant.objects.exists()
    client.post(item_url(study, 1), {"query": "first query"})
    r = client.post(item_url(study, 2), {"query": "First  query!"})
    assert b"already given this query" in r.content
    assert Response.objects.count() == 1


def test_double_submit_and_back_button_never_duplicate(client):
    study = make_study(attention=False)
    arrive(client, study, "P")
    consent(client, study)
    r1 = client.post(item_url(study, 1), {"query": "my first query"})
    r2 = client.post(item_url(study, 1), {"query": "my first query"})
    r3 = client.post(item_url(study, 1), {"query": "a changed mind"})  # back button, resubmit
    assert r1.status_code == r2.status_code == r3.status_code == 302
    assert r1["Location"] == r2["Location"] == r3["Location"] == item_url(study, 2)
    assert Response.objects.count() == 1 and QueryVariant.objects.count() == 1
    assert QueryVariant.objects.get().raw == "my first query"
    # the answered page sends the worker on to the next open item
    r = client.get(item_url(study, 1))
    assert r.status_code == 302 and r["Location"] == item_url(study, 2)


def test_reload_resumes_where_the_worker_was(client):
    study = make_study(attention=False)
    arrive(client, study, "P")
    consent(client, study)
    client.post(item_url(study, 1), {"query": "my first query"})
    # the same link again (a reload, or the platform's link re-opened) resumes at item 2
    r = arrive(client, study, "P")
    assert r.redirect_chain[-1][0] == item_url(study, 2)
    r = client.get(entry_url(study), follow=True)  # no parameters: same session resumes
    assert r.redirect_chain[-1][0] == item_url(study, 2)
    # consent again is a no-op: no new assignments
    consent(client, study)
    assert participant(study, "P").assignments.count() == 2


def test_time_is_measured_from_first_display_and_fast_answers_flagged(client):
    study = make_study(attention=False, min_seconds_per_answer=3600)
    arrive(client, study, "P")
    consent(client, study)
    client.get(item_url(study, 1))
    a = Assignment.objects.get(participant__worker_id="P", position=1)
    first_shown = a.shown
    assert first_shown is not None
    client.get(item_url(study, 1))  # reload keeps the clock
    a.refresh_from_db()
    assert a.shown == first_shown
    client.post(item_url(study, 1), {"query": "quick one"})
    resp = Response.objects.get()
    assert resp.too_fast and resp.seconds is not None and resp.seconds < 3600


def test_mturk_arrival_and_preview(client):
    study = make_study(attention=False)
    r = client.get(entry_url(study), {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H"})
    assert r.status_code == 200 and b"Accept the task" in r.content
    assert not Participant.objects.exists()
    r = client.get(entry_url(study), {"workerId": "W1", "assignmentId": "A1", "hitId": "H1"}, follow=True)
    p = participant(study, "W1")
    assert (p.platform, p.external_study_id, p.external_session_id) == ("mturk", "H1", "A1")


def test_signed_in_account_can_take_part(client, django_user_model):
    study = make_study(attention=False)
    r = client.get(entry_url(study))
    assert b"sign in" in r.content
    user = django_user_model.objects.create_user("alice", password="pw-123456789")
    client.force_login(user)
    arrive_r = client.get(entry_url(study), follow=True)
    assert arrive_r.redirect_chain[-1][0].endswith("/consent/")
    p = participant(study, "account:alice")
    assert p.platform == "account" and p.user == user
    # the same account in another browser resumes
    other = Client()
    other.force_login(user)
    r = other.get(entry_url(study), follow=True)
    assert r.redirect_chain[-1][0].endswith("/consent/")


def test_closed_study_turns_new_workers_away(client):
    study = make_study(is_open=False)
    r = arrive(client, study, "late")
    assert r.status_code == 403 and b"not taking new participants" in r.content


def test_full_study_says_so(client):
    study = make_study(make_topic_set(2), attention=False, responses_per_statement=1,
                       statements_per_worker=2)
    arrive(client, study, "A")
    consent(client, study)
    b = Client()
    arrive(b, study, "B")
    r = consent(b, study)
    assert r.redirect_chain[-1][0].endswith("/done/")
    assert participant(study, "B").status == "full"
    assert b"nothing left to do" in r.content and b"C0DE-1234" not in r.content


def test_spell_correcting_study_keeps_the_uncorrected_text(client):
    # Statements say "subject N ... school project"; the worker types "shcool projcet".
    study = make_study(spell_correct=True, attention=False)
    plain = make_study(study.topic_set, attention=False)

    def typo(a, pid):
        return f"Subject {a.item.statement.topic.topic_id} shcool projcet"

    for s, pid in ((study, "SPELL1"), (plain, "PLAIN1")):
        arrive(client, s, pid)
        consent(client, s)
        finish(client, s, pid, answer=typo)
    corrected = QueryVariant.objects.filter(worker_id="SPELL1").order_by("id")
    assert len(corrected) == 2
    for v in corrected:
        assert v.normalised.endswith(" school project")
        assert v.uncorrected == v.normalised.replace("school project", "shcool projcet")
        # the worker's own answer record keeps what they typed, normalised only
        assert v.response.normalised == v.uncorrected and v.raw.endswith("shcool projcet")
    for v in QueryVariant.objects.filter(worker_id="PLAIN1"):
        assert v.normalised.endswith(" shcool projcet") and v.uncorrected == ""


@pytest.mark.parametrize("given,expected", [
    ("https://workersandbox.mturk.com", "https://workersandbox.mturk.com"),
    ("https://www.mturk.com/", "https://www.mturk.com"),
    ("https://evil.example", "https://www.mturk.com"),  # never post an assignment elsewhere
    (None, "https://www.mturk.com"),
])
def test_mturk_worker_finishes_by_posting_the_hit_to_mturk(client, given, expected):
    study = make_study(attention=False)
    params = {"workerId": "W1", "assignmentId": "A1", "hitId": "H1"}
    if given is not None:
        params["turkSubmitTo"] = given
    client.get(entry_url(study), params, follow=True)
    consent(client, study)
    r = finish(client, study, "W1")
    assert r.redirect_chain[-1][0].endswith("/done/")
    html = r.content.decode()
    assert f'action="{expected}/mturk/externalSubmit"' in html
    assert '<input type="hidden" name="assignmentId" value="A1">' in html
    form = html[html.index('id="mturk-submit"'):html.index("</form>")]
    assert "csrfmiddlewaretoken" not in form


def test_prolific_worker_gets_no_mturk_form(client):
    study = make_study(attention=False)
    arrive(client, study, "PID9")
    consent(client, study)
    r = finish(client, study, "PID9")
    assert b"C0DE-1234" in r.content and b"externalSubmit" not in r.content
