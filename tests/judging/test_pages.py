"""The judging pages with Django's test client: the page, a plain-form submit, double
submits, revisions and undo, cannot-judge, progress, organiser pages and exports."""
from __future__ import annotations

import re

import pytest

from judging import selectors, services
from judging.models import Label

from .conftest import make_pool
from .page_fixtures import DANGER, pages_index, use_pages  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(tmp_path):
    return make_pool(tmp_path)


def make_task(pool, pages_index, *, mode="topic", name="t", assessors=("alice",), **kw):
    task = services.judging_task_create(pool=pool, name=name, mode=mode, redundancy=1,
                                        batch=3, assessors=assessors, **kw)
    return use_pages(task, pages_index)


@pytest.fixture
def alice(client, django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw")
    client.force_login(user)
    return client


def form_of(html: str) -> dict:
    """The hidden ref of the judging form."""
    return {"ref": re.search(r'name="ref" value="([^"]+)"', html).group(1)}


def test_topic_page_shows_statement_document_as_text_marks_and_keys(pool, pages_index, alice):
    make_task(pool, pages_index)
    page = alice.get("/judging/tasks/t/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "statement 1" in html  # the topic's statement
    assert re.search(r'<h2 id="doc-title">Page 1 on <mark>topic</mark> 1</h2>', html)
    assert "This page talks about the <mark>topic</mark> at length" in html
    # HTML from the web is text: no markup of the document survives, scripts are dropped
    assert DANGER not in html
    assert "Escaped markup: &lt;img src=x onerror=alert(1)&gt;" in html
    assert "document.title=&#x27;owned&#x27;" not in html and "owned" not in html
    assert "<b>Bold</b>" not in html and "Bold &amp; plain." in html
    # a key per grade (trec-web), next, cannot judge; no back before a judgment
    for key in ("j", "0", "1", "2", "3", "4", "n", "x"):
        assert f"<kbd>{key}</kbd>" in html
    assert 'id="back"' not in html
    # progress: this topic and the whole task, judged / leased / remaining
    assert re.search(r'id="progress-topic" data-done="0" data-leased="3" data-remaining="3"', html)
    assert re.search(r'id="progress-task" data-done="0" data-leased="3" data-remaining="9"', html)


def test_submit_without_javascript_records_once_and_moves_on(pool, pages_index, alice):
    task = make_task(pool, pages_index)
    html = alice.get("/judging/tasks/t/").content.decode()
    data = {**form_of(html), "grade_0": "2", "action": "judge", "rationale": "on topic"}
    first = alice.post("/judging/tasks/t/", data)
    assert first.status_code == 302 and first["Location"] == "/judging/tasks/t/"
    again = alice.post("/judging/tasks/t/", data)  # a double or retried submit
    assert again.status_code == 302
    labels = list(Label.objects.filter(judgment_set=task.judgment_set))
    assert len(labels) == 1
    label = labels[0]
    assert (label.assessor, label.grade, label.rationale, label.revision) == ("alice", 2,
                                                                              "on topic", 1)
    assert label.docid == "t1d1" and label.seconds is not None and label.seconds >= 0
    html = alice.get("/judging/tasks/t/").content.decode()
    assert "Document t1d1" not in html and "Document t1d" in html  # the batch's next
    assert re.search(r'id="progress-topic" data-done="1" data-leased="2" data-remaining="3"', html)
    assert 'id="back"' in html and f"?item={label.item_id}" in html


def test_browser_time_is_used_when_plausible(pool, pages_index, alice):
    task = make_task(pool, pages_index)
    html = alice.get("/judging/tasks/t/").content.decode()
    alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "0", "js_seconds": "0.25",
                                     "action": "judge"})
    html = alice.get("/judging/tasks/t/").content.decode()
    alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "0", "js_seconds": "9999",
                                     "action": "judge"})
    seconds = list(Label.objects.filter(judgment_set=task.judgment_set).order_by("id")
                   .values_list("seconds", flat=True))
    assert seconds[0] == 0.25
    assert seconds[1] < 60  # the implausible browser value is replaced by the server's


def test_intent_mode_needs_a_grade_per_intent(pool, pages_index, alice):
    task = make_task(pool, pages_index, mode="intent")
    html = alice.get("/judging/tasks/t/").content.decode()
    assert 'name="grade_0"' in html and 'name="grade_1"' in html and "Intent 2" in html
    bad = alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "1", "action": "judge"})
    assert bad.status_code == 400 and "Choose a grade." in bad.content.decode()
    assert not Label.objects.exists()
    alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "1", "grade_1": "-2",
                                     "action": "judge"})
    assert sorted(Label.objects.filter(judgment_set=task.judgment_set)
                  .values_list("intent_id", "grade")) == [("1", 1), ("2", -2)]


def test_cannot_judge_needs_a_reason(pool, pages_index, alice):
    task = make_task(pool, pages_index)
    html = alice.get("/judging/tasks/t/").content.decode()
    assert alice.post("/judging/tasks/t/", {**form_of(html), "action": "cannot"}).status_code == 400
    alice.post("/judging/tasks/t/", {**form_of(html), "action": "cannot",
                                     "cannot_judge": "page is empty"})
    label = Label.objects.get(judgment_set=task.judgment_set)
    assert label.grade is None and label.cannot_judge == "page is empty"


def test_back_revises_and_undo_restores_with_history(pool, pages_index, alice):
    task = make_task(pool, pages_index)
    html = alice.get("/judging/tasks/t/").content.decode()
    alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "1", "action": "judge"})
    item = Label.objects.get().item_id
    page = alice.get(f"/judging/tasks/t/?item={item}").content.decode()
    assert 'id="revising"' in page and 'value="1" data-key="1" required checked' in page
    alice.post("/judging/tasks/t/", {**form_of(page), "grade_0": "3", "action": "judge"})
    labels = Label.objects.filter(item_id=item)
    assert sorted(labels.values_list("revision", "grade", "current")) == [
        (1, 1, False), (2, 3, True)]
    # undo withdraws revision 2: revision 1 counts again, the history stays
    r = alice.post("/judging/tasks/t/undo/", {"item": item})
    assert r.status_code == 302 and r["Location"].endswith(f"?item={item}")
    assert sorted(labels.values_list("revision", "grade", "current", "withdrawn")) == [
        (1, 1, True, False), (2, 3, False, True)]
    assert selectors.qrels_lines(task.judgment_set, "adhoc")[0].grade == 1


def test_home_lists_the_assessors_tasks_and_progress(pool, pages_index, alice):
    make_task(pool, pages_index)
    make_task(pool, pages_index, name="other", assessors=("bob",))
    html = alice.get("/judging/").content.decode()
    assert "/judging/tasks/t/" in html and "/judging/tasks/other/" not in html
    assert 'id="manage-link"' not in html


def test_organiser_pages_progress_assessors_and_exports(pool, pages_index, admin_client,
                                                        alice):
    task = make_task(pool, pages_index, mode="intent")
    html = alice.get("/judging/tasks/t/").content.decode()
    alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "2", "grade_1": "0",
                                     "action": "judge"})
    assert "/judging/manage/t/" in admin_client.get("/judging/manage/").content.decode()
    page = admin_client.get("/judging/manage/t/").content.decode()
    assert 'id="collection">pages<' in page
    assert re.search(r"<td>alice</td><td>1</td>", page)
    assert 'href="/evaluation/new/agreement/?judgments=t"' in page  # the page that does it
    for fmt in ("diversity", "adhoc", "ndeval", "raw"):
        assert f"/judging/manage/t/export/{fmt}/" in page
    got = admin_client.get("/judging/manage/t/export/diversity/")
    assert got["Content-Disposition"] == 'attachment; filename="t.diversity.txt"'
    lines = selectors.qrels_lines(task.judgment_set, "diversity")
    assert got.content.decode() == "".join(f"{x.topic_id} {x.second} {x.docid} {x.grade}\n"
                                           for x in lines)
    assert got.content.decode() == "1 1 t1d1 2\n1 2 t1d1 0\n"
    raw = admin_client.get("/judging/manage/t/export/raw/").content.decode()
    assert "alice" in raw
    bad = admin_client.get("/judging/manage/t/export/adhoc/")
    assert bad.status_code == 400 and "adhoc (intent 1)" in bad.content.decode()
    assert "--adhoc-intent" not in bad.content.decode()  # the page's words, not the command's
    assert admin_client.get("/judging/manage/t/export/adhoc/?adhoc_intent=1").content == \
        b"1 0 t1d1 2\n"


def test_a_pool_without_collection_says_so(pool, alice):
    services.judging_task_create(pool=pool, name="t", mode="topic", assessors=["alice"])
    html = alice.get("/judging/tasks/t/").content.decode()
    assert 'id="document-error"' in html and "choose the collection" in html


def test_progress_from_held_slots_equals_the_full_count(pool):
    from datetime import timedelta

    from django.utils import timezone

    task = services.judging_task_create(pool=pool, name="p", mode="topic", redundancy=2,
                                        batch=2, lease_minutes=1)
    a = services.batch_lease(task, "a")
    services.judgment_submit(task, "a", a[0].item_id, {"": 1}, submit_key="k1")
    services.batch_lease(task, "b")
    services.batch_lease(task, "c", now=timezone.now() - timedelta(minutes=5))  # expired
    for now in (None, timezone.now() + timedelta(minutes=2)):
        full = selectors.task_progress(task, now=now)
        assert selectors.task_progress_held(task, now=now) == full["total"]
        for topic, entry in full["topics"].items():
            assert selectors.task_progress_held(task, topic, now=now) == entry
    assert full["total"]["done"] == 1 and full["total"]["leased"] == 0


def test_next_item_page_and_submit_take_a_handful_of_queries(
        pool, pages_index, alice, django_assert_max_num_queries):
    """Pinned (the test run adds a SAVEPOINT and its RELEASE to each transaction): the
    page reads session, user, task, lease (expire, assessor, batch) and progress (the
    topics' counts, live leases, the assessor's own); a page that claims the next batch
    adds the claim, its update and the batch read again. A submit is session, user, task, assessor, item,
    slot, labels and the topic's count."""
    make_task(pool, pages_index, mode="intent")  # batch 3
    html = alice.get("/judging/tasks/t/").content.decode()  # first: topic read, row made
    for n in range(4):
        with django_assert_max_num_queries(10):
            r = alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "1",
                                                 "grade_1": "0", "action": "judge"})
        assert r.status_code == 302
        with django_assert_max_num_queries(14 if n == 2 else 11):
            html = alice.get("/judging/tasks/t/").content.decode()
        assert 'name="grade_1"' in html


def test_the_task_page_links_to_judging_for_organisers_who_may_judge_it(pool, pages_index,
                                                                         django_user_model):
    from django.test import Client

    boss = Client()
    boss.force_login(django_user_model.objects.create_user("boss", password="pw",
                                                           is_staff=True))
    make_task(pool, pages_index, name="listed", assessors=("alice", "boss"))
    make_task(pool, pages_index, name="others", assessors=("alice",))
    make_task(pool, pages_index, name="open", assessors=())
    published = make_task(pool, pages_index, name="crowd", assessors=())
    services.judging_task_publish(published, completion_code="C", consent_text="ok",
                                  judgments=1)
    for name, shown in (("listed", True), ("others", False), ("open", True),
                        ("crowd", False)):
        page = boss.get(f"/judging/manage/{name}/").content.decode()
        link = f'<a id="judge-link" href="/judging/tasks/{name}/">'
        assert (link in page) is shown, name
        # the link is shown exactly when the judging page lets the organiser in
        assert boss.get(f"/judging/tasks/{name}/").status_code == (200 if shown else 404), name


def test_the_collection_is_chosen_from_a_select_of_collections(pool, pages_index,
                                                               admin_client):
    from retrieval.models import Collection

    task = make_task(pool, pages_index)
    Collection.objects.create(name="other", format="jsonl", source_path="o.jsonl",
                              index_path="/nonexistent", doc_count=0, status="ready")
    page = admin_client.get("/judging/manage/t/").content.decode()
    select = re.search(r'<select name="collection"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.findall(r'<option value="([^"]+)"', select) == ["other", "pages"]
    assert '<option value="pages" selected>' in select
    assert admin_client.post("/judging/manage/t/collection/",
                             {"collection": "other"}).status_code == 302
    task.refresh_from_db()
    assert task.collection.name == "other"
    page = admin_client.get("/judging/manage/t/").content.decode()
    assert '<option value="other" selected>' in page
    bad = admin_client.post("/judging/manage/t/collection/", {"collection": "missing"})
    assert bad.status_code == 400
    assert "There is no collection named &#x27;missing&#x27;" in bad.content.decode()
    task.refresh_from_db()
    assert task.collection.name == "other"
