"""The judging page as a reading page, with Django's test client: SMART documents as
labelled fields with the query terms marked, a SMART topic's statement once, the
assessor's own pace, and the organiser's agreement so far."""
from __future__ import annotations

import re

import pytest

from judging import selectors, services

from .conftest import make_pool
from .page_fixtures import pages_index, use_pages  # noqa: F401 (fixture)
from .test_pages import form_of

pytestmark = pytest.mark.django_db

QUERY = "What papers deal with the algebraic language topic?"


def smart_record(topic: str, d: int) -> str:
    return (f".I t{topic}d{d}\n.T\nPaper {d} on an algebraic language\n.B\nCACM December, 1958\n"
            ".A\nPerlis, A. J.\nSamelson, K.\n.N\nCA581203 JB March 22, 1978\n.X\n100\t5\t1\n"
            f".W\nThe report describes the language,\nrecord {d}.\n")


@pytest.fixture(scope="session")
def smart_index(tmp_path_factory):
    """An Anserini index of SMART records t{topic}d{n}, topics 1 and 2, n = 1..6."""
    from retrieval import anserini
    from retrieval.collections_io import read_collection, write_json_collection

    work = tmp_path_factory.mktemp("judging-smart")
    src = work / "docs.all"
    src.write_text("".join(smart_record(t, d) for t in ("1", "2") for d in range(1, 7)))
    write_json_collection(read_collection(src, "smart"), work / "json")
    anserini.index_build(work / "json", work / "index")
    return work / "index"


def use_smart(task, index):
    from retrieval.models import Collection

    Collection.objects.get_or_create(name="smart", defaults={
        "format": "smart", "source_path": "docs.all", "index_path": str(index),
        "doc_count": 12, "status": "ready"})
    return services.judging_task_collection_set(task, "smart")


@pytest.fixture
def alice(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("alice", password="pw"))
    return client


def test_smart_document_as_fields_and_the_statement_once(tmp_path, smart_index, alice):
    from topics.models import Statement, Topic

    pool = make_pool(tmp_path)
    # a SMART topic: the query is its title, its description and its one statement
    for t in Topic.objects.filter(topic_set__name="ts"):
        t.title = t.description = QUERY
        t.save()
        Statement.objects.create(topic=t, position=0, text=QUERY)
    use_smart(services.judging_task_create(pool=pool, name="t", mode="topic", redundancy=1,
                                           batch=3, assessors=["alice"]), smart_index)
    html = alice.get("/judging/tasks/t/").content.decode()
    assert html.count(QUERY) == 1
    assert re.search(r'<h2 id="doc-title">Paper 1 on an <mark>algebraic</mark> '
                     r'<mark>language</mark></h2>', html)
    assert "<dt>Authors</dt><dd>Perlis, A. J.; Samelson, K.</dd>" in html
    assert "<dt>Source</dt><dd>CACM December, 1958</dd>" in html
    # the .W lines are one paragraph; query words are marked (stop words too: "the")
    assert ("<p><mark>The</mark> report describes <mark>the</mark> <mark>language</mark>, "
            "record 1.</p>") in html
    for marker in (".I t1d1", ".T", ".A", ".W", ".X", "CA581203"):
        assert marker not in html
    # the document comes before the statement and the grades in the page
    assert html.index('id="document"') < html.index('id="statement"') < html.index(
        'id="grades"')


def test_the_assessor_sees_their_pace(tmp_path, pages_index, alice):
    pool = make_pool(tmp_path)
    use_pages(services.judging_task_create(pool=pool, name="t", mode="topic", redundancy=1,
                                           batch=3, assessors=["alice"]), pages_index)
    html = alice.get("/judging/tasks/t/").content.decode()
    assert '<b id="pace-today">0</b> judged.' in html and 'id="pace-seconds"' not in html
    for seconds in ("0.2", "0.6"):  # the browser's times (plausible: under a second)
        alice.post("/judging/tasks/t/", {**form_of(html), "grade_0": "1",
                                         "js_seconds": seconds, "action": "judge"})
        html = alice.get("/judging/tasks/t/").content.decode()
    assert '<b id="pace-today">2</b>' in html
    assert '<b id="pace-seconds">0.4</b> s per judgment' in html
    # a revision is a judgment made, not a document judged for the first time
    item = selectors.assessor_recent_labels(pool.judging_tasks.get(), "alice")[0]["item_id"]
    page = alice.get(f"/judging/tasks/t/?item={item}").content.decode()
    alice.post("/judging/tasks/t/", {**form_of(page), "grade_0": "0", "js_seconds": "1.0",
                                     "action": "judge"})
    mine = selectors.assessor_progress(pool.judging_tasks.get(), "alice", pace=True)
    assert (mine["today"], mine["seconds"]) == (2, pytest.approx(0.6))


def test_organiser_sees_agreement_so_far(tmp_path, pages_index, admin_client):
    pool = make_pool(tmp_path, topics=("1",))  # one topic: both assessors get its batch
    task = use_pages(services.judging_task_create(pool=pool, name="t", mode="topic",
                                                  redundancy=2, batch=4), pages_index)
    page = admin_client.get("/judging/manage/t/").content.decode()
    assert "No document graded by two assessors yet." in page
    grades = {"alice": [1, 0, 2, 0], "bob": [1, 1, 2, 0]}
    for who, given in grades.items():
        for leased, grade in zip(services.batch_lease(task, who), given):
            services.judgment_submit(task, who, leased.item_id, {"": grade},
                                     submit_key=f"{who}{leased.item_id}", seconds=3.0)
    page = admin_client.get("/judging/manage/t/").content.decode()
    # both graded the same four documents: 3 the same; alice 1,0,2,0 and bob 1,1,2,0:
    # p_e = (1·2 + 2·1 + 1·1) / 16 = 5/16, κ = (3/4 − 5/16) / (11/16) = 7/11
    row = re.search(r'<tr data-pair="alice bob">(.*?)</tr>', page).group(1)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    assert cells == ["alice · bob", "4", "0.75", "0.75", f"{7 / 11:.2f}"]
    # time per document per assessor
    assert re.search(r"<td>alice</td><td>4</td>.*?<td>3\.0</td>\s*<td>3\.0</td>", page, re.S)
