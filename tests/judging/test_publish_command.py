"""publish_judging_task: a task opened to the crowd from the command line, the links it
prints (the organiser page's), and the errors a user can act on."""
from __future__ import annotations

import html
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judging import selectors, services
from judging.models import JudgingTask

from .conftest import make_pool

pytestmark = pytest.mark.django_db

GOLD = {"t1d2": 2, "t1d3": 0, "t2d2": 1, "t2d3": 0}  # topic-level grades


@pytest.fixture
def task(tmp_path):
    pool = make_pool(tmp_path)
    return services.judging_task_create(pool=pool, name="crowd", mode="topic", batch=3)


@pytest.fixture
def consent(tmp_path):
    f = tmp_path / "consent.txt"
    f.write_text("You agree to judge web pages.\n", encoding="utf-8")
    return f


@pytest.fixture
def gold(tmp_path):
    qrels = tmp_path / "gold.qrels"
    qrels.write_text("".join(f"{d[1]} 0 {d} {g}\n" for d, g in GOLD.items()))
    return services.judgments_import(qrels, format="adhoc", name="gold")


def publish(*args):
    out = StringIO()
    call_command("publish_judging_task", *args, stdout=out)
    return out.getvalue()


def publish_links_of(out: str) -> dict[str, str]:
    lines = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return {"prolific": lines["Prolific"], "mturk": lines["MTurk"]}


def test_publish_prints_the_organiser_pages_links(task, consent, gold, admin_client, client):
    out = publish("--task", "crowd", "--completion-code", "JUDGE-7", "--consent-file",
                  str(consent), "--judgments-for-code", "5", "--gold-set", "gold",
                  "--gold-rate", "0.25", "--gold-min-accuracy", "0.8",
                  "--prolific-study-id", "st9", "--mturk-hit-ids", "H1, H2")
    task.refresh_from_db()
    study = task.study
    assert study is not None and study.completion_code == "JUDGE-7"
    assert study.consent_text == "You agree to judge web pages."
    assert study.prolific_study_id == "st9" and study.mturk_hit_ids.split() == ["H1", "H2"]
    assert (task.crowd_judgments, task.gold_set_id, task.gold_rate, task.gold_min_accuracy) \
        == (5, gold.pk, 0.25, 0.8)
    entry = f"/judging/w/{study.slug}/"
    prolific = (entry + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                "&SESSION_ID={{%SESSION_ID%}}")
    assert f"Prolific: {prolific}\n" in out
    assert f"MTurk: {entry}?workerId=…&hitId=…&assignmentId=…\n" in out
    assert "after 5 judgments, with at least 0.8 of gold items from gold" in out

    # the same links as the organiser's task page shows (which gives absolute URLs)
    page = admin_client.get("/judging/manage/crowd/").content.decode()
    shown = {k: html.unescape(re.search(rf'<code id="{i}">([^<]+)</code>', page).group(1))
             for k, i in (("prolific", "crowd-link"), ("mturk", "crowd-link-mturk"))}
    assert shown == {"prolific": "http://testserver" + prolific,
                     "mturk": f"http://testserver{entry}?workerId=…&hitId=…&assignmentId=…"}
    again = publish_links_of(out)
    assert {k: "http://testserver" + v for k, v in again.items()} == shown
    # and a worker arriving through it with the placeholders filled in is let in
    r = client.get(entry + "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st9&SESSION_ID=s")
    assert r.status_code == 302 and r["Location"].endswith("/judge/")


def test_publish_defaults_and_absolute_links(task, consent):
    out = publish("--task", "crowd", "--completion-code", "C1", "--consent-file",
                  str(consent), "--base-url", "https://judge.example.org/")
    task.refresh_from_db()
    assert task.crowd_judgments == task.batch == 3  # default: one batch
    assert task.gold_set is None and task.gold_rate == 0
    assert f"Prolific: https://judge.example.org/judging/w/{task.study.slug}/?PROLIFIC_PID=" in out
    assert publish_links_of(out) == selectors.task_crowd_links(task, "https://judge.example.org")
    unpublished = services.judging_task_create(pool=task.pool, name="other", mode="topic")
    with pytest.raises(ValueError, match="'other' is not published"):
        selectors.task_crowd_links(unpublished)


@pytest.mark.parametrize("extra, message", [
    (("--task", "nope"), "no judging task named 'nope' (known: crowd)"),
    (("--gold-rate", "1.5", "--gold-set", "gold"), "gold rate must be at least 0 and below 1"),
    (("--gold-rate", "-0.1", "--gold-set", "gold"), "gold rate must be at least 0 and below 1"),
    (("--gold-rate", "0.2"), "a gold rate needs a gold judgment set"),
    (("--gold-rate", "0.2", "--gold-set", "missing"), "no judgment set named 'missing'"),
    (("--judgments-for-code", "0"), "must be at least 1"),
    (("--gold-min-accuracy", "2"), "between 0 and 1"),
])
def test_publish_errors_leave_the_task_unpublished(task, consent, gold, extra, message):
    args = {"--task": "crowd", "--completion-code": "C", "--consent-file": str(consent)}
    for k, v in zip(extra[::2], extra[1::2]):
        args[k] = v
    with pytest.raises(CommandError, match=re.escape(message)):
        publish(*[x for kv in args.items() for x in kv])
    task.refresh_from_db()
    assert task.study_id is None


def test_gold_set_grading_none_of_the_tasks_documents_is_refused(task, consent, tmp_path):
    other = tmp_path / "other.qrels"
    other.write_text("9 0 t9d1 1\n")
    services.judgments_import(other, format="adhoc", name="elsewhere")
    with pytest.raises(CommandError, match="grades no document of the task's topics"):
        publish("--task", "crowd", "--completion-code", "C", "--consent-file", str(consent),
                "--gold-set", "elsewhere", "--gold-rate", "0.2")
    task.refresh_from_db()
    assert task.study_id is None


def test_publish_refuses_missing_consent_a_second_publication_and_user_mode(
        task, consent, tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        publish("--task", "crowd", "--completion-code", "C", "--consent-file",
                str(tmp_path / "absent.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    with pytest.raises(CommandError, match="is empty"):
        publish("--task", "crowd", "--completion-code", "C", "--consent-file", str(empty))
    publish("--task", "crowd", "--completion-code", "C", "--consent-file", str(consent))
    with pytest.raises(CommandError, match="already published"):
        publish("--task", "crowd", "--completion-code", "C", "--consent-file", str(consent))
    assert JudgingTask.objects.get(name="crowd").study.completion_code == "C"
