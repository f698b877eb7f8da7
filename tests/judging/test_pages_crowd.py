"""A judging task published to crowd workers: arrival through the crowd app's identity
rules, consent, gold items at the set rate, and the completion code."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from crowd.models import Participant
from judging import selectors, services
from judging.models import GoldAnswer, Label

from .conftest import make_pool
from .page_fixtures import pages_index, use_pages  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

GOLD = {"t1d2": 2, "t1d3": 0, "t2d2": 1, "t2d3": 0}  # topic-level grades of the gold set


def published(tmp_path, pages_index, *, judgments=4, gold_rate=0.34, min_accuracy=1.0):
    pool = make_pool(tmp_path)
    task = services.judging_task_create(pool=pool, name="crowd", mode="topic", batch=2)
    use_pages(task, pages_index)
    qrels = tmp_path / "gold.qrels"
    qrels.write_text("".join(f"{d[1]} 0 {d} {g}\n" for d, g in GOLD.items()))
    gold = services.judgments_import(qrels, format="adhoc", name="gold")
    services.judging_task_publish(
        task, completion_code="JUDGE-42", consent_text="You agree to judge.",
        judgments=judgments, gold_set=gold, gold_rate=gold_rate,
        gold_min_accuracy=min_accuracy, prolific_study_id="st1")
    task.refresh_from_db()
    return task


def link(task, pid="5f1e2d3c4b5a69788796a5b4", study="st1"):
    return f"/judging/w/{task.study.slug}/?PROLIFIC_PID={pid}&STUDY_ID={study}&SESSION_ID=se"


def page_doc(html):
    return re.search(r'<h2 id="doc-title">Page (\d) on <mark>topic</mark> (\d)</h2>', html).groups()


def judge_all(client, task, *, right_gold=True, limit=20):
    """Judge until the done page; gold documents answered right (or wrong)."""
    slug = task.study.slug
    for _ in range(limit):
        r = client.get(f"/judging/w/{slug}/judge/")
        if r.status_code == 302:
            return client.get(r["Location"])
        html = r.content.decode()
        d, t = page_doc(html)
        docid = f"t{t}d{d}"
        ref = re.search(r'name="ref" value="([^"]+)"', html).group(1)
        grade = 1
        if docid in GOLD:
            want = GOLD[docid] > 0
            grade = (1 if want else 0) if right_gold else (0 if want else 2)
        post = client.post(f"/judging/w/{slug}/judge/", {"ref": ref, "grade_0": str(grade),
                                                         "action": "judge"})
        assert post.status_code == 302, post.content.decode()[:2000]
    raise AssertionError("no end after many pages")


def test_worker_from_prolific_link_to_completion_code(tmp_path, pages_index, client):
    task = published(tmp_path, pages_index)
    r = client.get(link(task))
    assert r.status_code == 302 and r["Location"].endswith("/judge/")
    consent = client.get(client.get(r["Location"])["Location"]).content.decode()
    assert "You agree to judge." in consent and "JUDGE-42" not in consent
    client.post(f"/judging/w/{task.study.slug}/consent/", {"agree": "on"})
    first = client.get(f"/judging/w/{task.study.slug}/judge/").content.decode()
    assert "Document t1d" not in first  # workers are not shown document ids
    assert "JUDGE-42" not in first
    done = judge_all(client, task).content.decode()
    assert 'id="completion-code">JUDGE-42<' in done
    assert "app.prolific.com/submissions/complete?cc=JUDGE-42" in done
    worker = "prolific:5f1e2d3c4b5a69788796a5b4"
    status = selectors.crowd_worker_status(task, worker)
    assert status["judged"] == 4 and status["status"] == "completed"
    # one gold page in three (rate 0.34): page 3 of the five was gold
    assert status["gold_seen"] == 1 and status["gold_passed"] == 1
    assert Label.objects.filter(judgment_set=task.judgment_set, assessor=worker).count() == 4
    assert not Label.objects.filter(judgment_set=task.judgment_set,
                                    docid__in=list(GOLD)).exclude(
        docid__in=Label.objects.filter(assessor=worker).values("docid")).exists()
    assert Participant.objects.get(study=task.study).worker_id == "5f1e2d3c4b5a69788796a5b4"
    assert GoldAnswer.objects.get().passed


def test_failed_gold_gets_no_code(tmp_path, pages_index, client):
    task = published(tmp_path, pages_index)
    client.get(link(task))
    client.post(f"/judging/w/{task.study.slug}/consent/", {"agree": "on"})
    done = judge_all(client, task, right_gold=False).content.decode()
    assert 'id="failed"' in done and "JUDGE-42" not in done


def test_placeholders_other_studies_and_second_browsers_are_refused(tmp_path, pages_index,
                                                                    client):
    task = published(tmp_path, pages_index)
    r = client.get(link(task, pid="{{%PROLIFIC_PID%}}"))
    assert r.status_code == 403 and "placeholder" in r.content.decode()
    r = client.get(link(task, study="another"))
    assert r.status_code == 403 and "different Prolific study" in r.content.decode()
    assert client.get(f"/judging/w/{task.study.slug}/").status_code == 403  # no id at all
    client.get(link(task))
    client.post(f"/judging/w/{task.study.slug}/consent/", {"agree": "on"})
    other = Client()
    r = other.get(link(task))
    assert r.status_code == 403 and "another browser" in r.content.decode()
    assert other.get(f"/judging/w/{task.study.slug}/judge/").status_code == 404


def test_double_submit_of_a_crowd_page_writes_once(tmp_path, pages_index, client):
    task = published(tmp_path, pages_index, gold_rate=0.0)
    client.get(link(task))
    client.post(f"/judging/w/{task.study.slug}/consent/", {"agree": "on"})
    html = client.get(f"/judging/w/{task.study.slug}/judge/").content.decode()
    ref = re.search(r'name="ref" value="([^"]+)"', html).group(1)
    for _ in range(3):
        client.post(f"/judging/w/{task.study.slug}/judge/",
                    {"ref": ref, "grade_0": "1", "action": "judge"})
    assert Label.objects.filter(judgment_set=task.judgment_set).count() == 1


def test_publishing_checks(tmp_path, pages_index, admin_client):
    pool = make_pool(tmp_path)
    listed = services.judging_task_create(pool=pool, name="listed", mode="topic",
                                          assessors=["alice"])
    with pytest.raises(ValueError, match="lists its assessors"):
        services.judging_task_publish(listed, completion_code="C", consent_text="c",
                                      judgments=1)
    task = services.judging_task_create(pool=pool, name="open", mode="topic")
    r = admin_client.post("/judging/manage/open/publish/", {
        "consent_text": "ok", "completion_code": "CODE", "judgments": "3", "gold_rate": "0",
        "gold_min_accuracy": "0.7"})
    assert r.status_code == 302
    task.refresh_from_db()
    assert task.study.completion_code == "CODE" and task.crowd_judgments == 3
    page = admin_client.get("/judging/manage/open/").content.decode()
    assert f"/judging/w/{task.study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in page
