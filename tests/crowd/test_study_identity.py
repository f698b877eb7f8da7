"""Crowd workers' identity and safety: who a link says you are, and what you are shown."""
import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from crowd.models import Participant, Response, Study
from crowd.services import StudyError, participant_arrive, study_create
from common.spreadsheet import spreadsheet_cell, spreadsheet_row
from tests.crowd.study_helpers import (
    arrive, consent, entry_url, finish, item_url, make_study, make_topic_set, participant,
)

pytestmark = pytest.mark.django_db


# --- who the link says you are ------------------------------------------------------------


@pytest.mark.parametrize("pid", [
    "{{%PROLIFIC_PID%}}", "%PROLIFIC_PID%", "{{PROLIFIC_PID}}", "${workerId}", "<PID>",
    "abc def", "abc\x00",
])
def test_placeholder_worker_ids_are_refused(client, pid):
    study = make_study()
    r = client.get(entry_url(study), {"PROLIFIC_PID": pid, "STUDY_ID": "st", "SESSION_ID": "se"})
    assert r.status_code == 403
    assert b"placeholder" in r.content
    assert not Participant.objects.exists()


def test_placeholder_in_the_other_parameters_is_refused(client):
    study = make_study()
    r = client.get(entry_url(study), {"PROLIFIC_PID": "5f1a", "STUDY_ID": "{{%STUDY_ID%}}",
                                      "SESSION_ID": "se"})
    assert r.status_code == 403 and not Participant.objects.exists()
    r = client.get(entry_url(study), {"workerId": "A1B2", "hitId": "H", "assignmentId": "%ASSIGNMENT_ID%"})
    assert r.status_code == 403 and not Participant.objects.exists()


def test_account_prefix_cannot_be_claimed_from_a_url(client):
    study = make_study()
    for params in ({"PROLIFIC_PID": "account:admin"}, {"workerId": "ACCOUNT:admin"}):
        r = client.get(entry_url(study), params)
        assert r.status_code == 403
    assert not Participant.objects.exists()
    with pytest.raises(StudyError):
        participant_arrive(study=study, platform="prolific", worker_id="account:admin")


def test_signed_in_account_still_takes_part_as_itself(django_user_model):
    study = make_study()
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    c = Client()
    c.force_login(user)
    r = c.get(entry_url(study), follow=True)
    assert r.redirect_chain[-1][0].endswith("/consent/")
    assert Participant.objects.get().worker_id == "account:alice"


def test_study_id_and_hit_id_are_checked_when_the_organiser_set_them(client):
    study = make_study(prolific_study_id="PROLIFIC-STUDY-1", mturk_hit_ids="HIT-A\nHIT-B")
    r = client.get(entry_url(study), {"PROLIFIC_PID": "P1", "STUDY_ID": "OTHER", "SESSION_ID": "s"})
    assert r.status_code == 403 and b"different Prolific study" in r.content
    r = client.get(entry_url(study), {"PROLIFIC_PID": "P1", "SESSION_ID": "s"})  # missing
    assert r.status_code == 403
    r = Client().get(entry_url(study), {"workerId": "W1", "hitId": "HIT-C", "assignmentId": "A"})
    assert r.status_code == 403 and b"different HIT" in r.content
    assert not Participant.objects.exists()
    ok = Client().get(entry_url(study), {"PROLIFIC_PID": "P1", "STUDY_ID": "PROLIFIC-STUDY-1"},
                      follow=True)
    assert ok.redirect_chain[-1][0].endswith("/consent/")
    ok = Client().get(entry_url(study), {"workerId": "W1", "hitId": "HIT-B", "assignmentId": "A"},
                      follow=True)
    assert ok.redirect_chain[-1][0].endswith("/consent/")
    assert Participant.objects.count() == 2


def test_any_study_id_is_accepted_when_none_was_set(client):
    study = make_study()
    r = arrive(client, study, "P1", STUDY_ID="whatever")
    assert r.redirect_chain[-1][0].endswith("/consent/")


def test_another_worker_id_never_silently_replaces_the_browsers_worker(client):
    study = make_study(attention=False)
    arrive(client, study, "FIRST")
    consent(client, study)
    client.post(item_url(study, 1), {"query": "first worker's answer"})
    r = client.get(entry_url(study), {"PROLIFIC_PID": "SECOND", "STUDY_ID": "st", "SESSION_ID": "se"})
    assert r.status_code == 409
    assert b"already taking part" in r.content and b"SECOND" in r.content
    assert not Participant.objects.filter(worker_id="SECOND").exists()
    # the browser still acts for the first worker
    r = client.get(f"/crowd/s/{study.slug}/next/")
    assert r["Location"] == item_url(study, 2)
    # only an explicit switch replaces it
    url = entry_url(study) + "?PROLIFIC_PID=SECOND&STUDY_ID=st&SESSION_ID=se"
    r = client.post(url, {"switch": "1"}, follow=True)
    assert r.redirect_chain[-1][0].endswith("/consent/")
    assert participant(study, "SECOND").status == Participant.STATUS_ARRIVED
    # the same worker id again is no switch at all
    r = client.get(url, follow=True)
    assert r.status_code == 200 and r.redirect_chain[-1][0].endswith("/consent/")


def test_switch_form_needs_csrf():
    study = make_study(attention=False)
    c = Client(enforce_csrf_checks=True)
    arrive(c, study, "FIRST")
    r = c.post(entry_url(study) + "?PROLIFIC_PID=SECOND", {"switch": "1"})
    assert r.status_code == 403
    assert not Participant.objects.filter(worker_id="SECOND").exists()


# --- answers: timing, order, checks ---------------------------------------------------------


def test_too_fast_counts_from_the_first_display(client):
    study = make_study(attention=False, min_seconds_per_answer=5)
    arrive(client, study, "T")
    consent(client, study)
    a = participant(study, "T").assignments.get(position=1)
    assert client.get(item_url(study, 1)).status_code == 200
    a.refresh_from_db()
    first = a.shown
    assert first is not None
    client.get(item_url(study, 1))  # a reload keeps the clock
    a.refresh_from_db()
    assert a.shown == first
    # pretend the item was first shown 10 s ago: not too fast
    type(a).objects.filter(pk=a.pk).update(shown=first.replace(year=first.year - 1))
    client.post(item_url(study, 1), {"query": "slow answer"})
    r1 = Response.objects.get(assignment=a)
    assert r1.too_fast is False and r1.seconds > 5


def test_answer_posted_without_a_display_is_flagged(client):
    study = make_study(attention=False, min_seconds_per_answer=0)
    arrive(client, study, "T")
    client.post(f"/crowd/s/{study.slug}/consent/", {"agree": "on"})  # not following to item 1
    client.post(item_url(study, 1), {"query": "never saw it"})  # no GET first
    r = Response.objects.get()
    assert r.seconds is None and r.too_fast is True


def test_items_are_answered_in_order(client):
    study = make_study(attention=False, statements_per_worker=3)
    arrive(client, study, "O")
    consent(client, study)
    r = client.post(item_url(study, 3), {"query": "skipping ahead"})
    assert r.status_code == 302 and r["Location"] == item_url(study, 1)
    assert not Response.objects.exists()
    r = client.get(item_url(study, 2))
    assert r.status_code == 302 and r["Location"] == item_url(study, 1)
    assert client.get(item_url(study, 1)).status_code == 200
    client.post(item_url(study, 1), {"query": "first"})
    assert client.get(item_url(study, 2)).status_code == 200
    assert client.get(item_url(study, 3))["Location"] == item_url(study, 2)


def test_attention_check_is_never_the_first_item():
    study = make_study(make_topic_set(3), responses_per_statement=50, statements_per_worker=1)
    for i in range(30):
        c = Client()
        arrive(c, study, f"W{i}")
        consent(c, study)
    firsts = set(
        Participant.objects.filter(study=study, assignments__position=1)
        .values_list("assignments__item__kind", flat=True)
    )
    assert firsts == {"statement"}  # 30 workers, two items each, a check never first


def test_short_statement_typed_as_its_query_is_accepted(client):
    ts = make_topic_set(1)
    ts.topics.get().statements.update(text="Parallel algorithms")
    study = make_study(ts, attention=False, statements_per_worker=1)
    arrive(client, study, "C")
    consent(client, study)
    client.get(item_url(study, 1))
    r = client.post(item_url(study, 1), {"query": "Parallel algorithms"})
    assert r.status_code == 302 and r["Location"].endswith("/done/")
    assert Response.objects.get().raw == "Parallel algorithms"


def test_long_statement_copied_is_refused(client):
    study = make_study(attention=False, statements_per_worker=1)
    arrive(client, study, "C")
    consent(client, study)
    text = participant(study, "C").assignments.get().item.statement.text
    r = client.post(item_url(study, 1), {"query": text})
    assert r.status_code == 200 and b"not a copy of the description" in r.content
    assert not Response.objects.exists()


# --- what workers are shown ------------------------------------------------------------------


def test_workers_see_the_title_and_instructions_not_the_internal_name(client):
    study = make_study(attention=False, title="How would you search?",
                       instructions="Type the first query that comes to mind.")
    study.name = "INTERNAL pilot 7 (do not show)"
    study.save()
    pages = [arrive(client, study, "V").content, consent(client, study).content]
    finish(client, study, "V")
    pages.append(client.get(f"/crowd/s/{study.slug}/done/").content)
    for body in pages:
        assert b"How would you search?" in body
        assert b"INTERNAL pilot" not in body
    assert b"Type the first query that comes to mind." in pages[0]  # consent page
    assert b"Type the first query that comes to mind." in pages[1]  # first item


def test_default_title_is_not_the_internal_name(client):
    study = make_study(attention=False)
    body = arrive(client, study, "V").content
    assert Study.DEFAULT_TITLE.encode() in body and b"<h1>Study</h1>" not in body


def test_finished_prolific_worker_gets_the_return_link(client):
    study = make_study(attention=False)
    arrive(client, study, "P")
    consent(client, study)
    r = finish(client, study, "P")
    assert b'href="https://app.prolific.com/submissions/complete?cc=C0DE-1234"' in r.content


def test_mturk_finished_page_shows_no_template_comment(client):
    study = make_study(attention=False)
    client.get(entry_url(study), {"workerId": "W1", "hitId": "H", "assignmentId": "A1",
                                  "turkSubmitTo": "https://workersandbox.mturk.com"}, follow=True)
    consent(client, study)
    r = finish(client, study, "W1")
    assert b'id="mturk-submit"' in r.content
    assert b"{#" not in r.content and b"ExternalQuestion" not in r.content


# --- creating a study ----------------------------------------------------------------------


def test_choices_without_question_and_empty_consent_are_errors():
    ts = make_topic_set(2, name="cq")
    base = ["cq", "--name", "s", "--completion-code", "X"]
    with pytest.raises(CommandError, match="--choices needs --question"):
        call_command("create_study", *base, "--consent", "ok", "--choices", "a|b")
    with pytest.raises(CommandError, match="consent"):
        call_command("create_study", *base, "--consent", "   ")
    with pytest.raises(ValueError, match="consent"):
        study_create(topic_set=ts, name="s", consent_text="", completion_code="X")
    with pytest.raises(ValueError, match="question"):
        study_create(topic_set=ts, name="s", consent_text="c", completion_code="X",
                     question_choices="a\nb")
    assert not Study.objects.exists()


def test_create_study_sets_title_instructions_and_external_ids(tmp_path):
    make_topic_set(2, name="ct")
    (tmp_path / "instr.txt").write_text("Read, then type.", encoding="utf-8")
    call_command("create_study", "ct", "--name", "internal", "--completion-code", "X",
                 "--consent", "ok", "--title", "Searching study",
                 "--instructions", f"@{tmp_path / 'instr.txt'}",
                 "--prolific-study-id", "PS1", "--hit-id", "H1", "--hit-id", "H2")
    s = Study.objects.get()
    assert (s.title, s.instructions, s.prolific_study_id) == ("Searching study", "Read, then type.", "PS1")
    assert s.mturk_hit_id_list() == ["H1", "H2"]


# --- exports neutralise spreadsheet formulas ----------------------------------------------------


def test_spreadsheet_cell():
    for danger in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("http://x")']:
        assert spreadsheet_cell(danger) == "'" + danger
    for safe in ["query", "", "a=b", " =x", "'quoted", 3, -1, None]:
        assert spreadsheet_cell(safe) == safe
    assert spreadsheet_row(["=x", 1]) == ["'=x", 1]
    assert spreadsheet_row({"a": "@x", "b": 2}) == {"a": "'@x", "b": 2}


FORMULAS = ['=HYPERLINK("http://example.invalid","x")', "+1+1", "-2+3", "@SUM(A1)"]


def _formula_answer(a, pid):
    return FORMULAS[a.position - 1] + f" {pid}"


def test_study_exports_neutralise_formulas(admin_client):
    study = make_study(make_topic_set(4), attention=False, statements_per_worker=4)
    c = Client()
    arrive(c, study, "F")
    consent(c, study)
    finish(c, study, "F", answer=_formula_answer)
    rows = json.loads(admin_client.get(f"/crowd/studies/{study.pk}/export.json").content)
    assert sorted(r["raw"] for r in rows) == sorted(f + " F" for f in FORMULAS)  # JSON exact
    for fmt, delim in [("tsv", "\t"), ("csv", ",")]:
        text = b"".join(admin_client.get(f"/crowd/studies/{study.pk}/export.{fmt}")
                        .streaming_content).decode()
        parsed = list(csv.DictReader(io.StringIO(text), delimiter=delim))
        if fmt == "tsv":  # for scripts: exactly as typed
            assert sorted(p["raw"] for p in parsed) == sorted(f + " F" for f in FORMULAS)
            continue
        assert sorted(p["raw"] for p in parsed) == sorted("'" + f + " F" for f in FORMULAS)
        for p in parsed:
            assert not any(v.startswith(("=", "+", "-", "@")) for v in p.values())


def test_export_variants_command_neutralises_formulas(tmp_path):
    study = make_study(make_topic_set(4, name="fx"), attention=False, statements_per_worker=4)
    c = Client()
    arrive(c, study, "F")
    consent(c, study)
    finish(c, study, "F", answer=_formula_answer)
    for fmt, delim in [("tsv", "\t"), ("csv", ",")]:
        out = tmp_path / f"v.{fmt}"
        call_command("export_variants", "--topic-set", "fx", "--format", fmt, "--out", str(out))
        parsed = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")), delimiter=delim))
        mark = "'" if fmt == "csv" else ""  # tsv is for scripts: exactly as typed
        assert sorted(p["raw"] for p in parsed) == sorted(mark + f + " F" for f in FORMULAS)
    out = tmp_path / "v.json"
    call_command("export_variants", "--topic-set", "fx", "--format", "json", "--out", str(out))
    assert sorted(r["raw"] for r in json.loads(out.read_text())) == sorted(f + " F" for f in FORMULAS)
