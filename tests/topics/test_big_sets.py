"""Big topic sets: pages and the API read one keyset page (no offset, no count of the set),
imports stream in batches and report progress. Shown on small sets by what the code asks
the database, not by timing."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from common.naturalsort import natural_key, natural_sort_key
from topics.models import Statement, Topic, TopicSet
from topics.services import ImportRejected, topics_import
from topics.topicfiles import IntentRecord, TopicRecord, iter_topics

TRICKY = ["UQV100.10", "UQV100.2", "01", "1", "a", "A", "a1", "a1b", "ab", "b", "10", "9",
          "caf\u00e9", "Z", "x-1", "x.1", "\u6587\u66f8-2", "\u6587\u66f8-10", "0", "00", "+t2"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("aAbZz0019._-+\u00e9\u6587")), min_size=1,
                        max_size=8), unique=True, min_size=2, max_size=15))
def test_the_sort_key_orders_as_natural_key(ids):
    assert sorted(ids, key=natural_sort_key) == sorted(ids, key=natural_key)
    assert all(re.fullmatch(r"[0-9a-f]+", natural_sort_key(i)) for i in ids)


@pytest.fixture
def staff_client(db):
    client = Client()
    client.force_login(User.objects.create_user("org", password="pw-org-123", is_staff=True))
    return client


def _import(name: str, ids, **kw):
    return topics_import(name, [TopicRecord(topic_id=t, title=f"title {t}",
                                            statements=(f"statement {t}",), source="f", line=n)
                                for n, t in enumerate(ids, 1)], **kw)


def _sql(queries) -> str:
    return "\n".join(q["sql"] for q in queries.captured_queries)


def _no_scan_of_the_set(queries) -> None:
    """No page skips rows (OFFSET) or counts the topics of the set."""
    for q in queries.captured_queries:
        assert " OFFSET " not in q["sql"].upper(), q["sql"]
        assert not re.match(r'SELECT COUNT\(\*\) AS "__count" FROM "crowd_topic"', q["sql"]), q["sql"]


@pytest.mark.django_db
def test_the_database_orders_topics_as_natural_key(staff_client):
    _import("tricky", TRICKY)
    body = staff_client.get("/api/topic-sets/tricky/topics/?page_size=500").json()
    assert [t["topic_id"] for t in body["results"]] == sorted(TRICKY, key=natural_key)


@pytest.mark.django_db
def test_the_topics_api_walks_keyset_pages_in_natural_order(staff_client):
    _import("tricky", TRICKY)
    seen, url, pages = [], "/api/topic-sets/tricky/topics/?page_size=4", 0
    while url:
        with CaptureQueriesContext(connection) as queries:
            body = staff_client.get(url).json()
        pages += 1
        assert set(body) == {"next", "results"}  # no count of the set
        assert len(queries) <= 8  # session, user, set, page, statements, intents
        _no_scan_of_the_set(queries)
        if seen:
            assert '"sort_key" >' in _sql(queries)
        seen += [t["topic_id"] for t in body["results"]]
        url = body["next"] and body["next"].replace("http://testserver", "")
    assert seen == sorted(TRICKY, key=natural_key) and pages == 6
    # any id works as a place to start, in the set or not
    after = staff_client.get("/api/topic-sets/tricky/topics/", {"after": "UQV100.3"}).json()
    expected = [t for t in sorted(TRICKY, key=natural_key)
                if natural_key(t) > natural_key("UQV100.3")]
    assert [t["topic_id"] for t in after["results"]] == expected
    assert expected[:2] == ["UQV100.10", "x-1"] and len(expected) == 6
    response = staff_client.get("/api/topic-sets/tricky/topics/?page=19999")
    assert response.status_code == 400 and "follow `next`" in response.json()["page"][0]


@pytest.mark.django_db
def test_one_topic_and_the_intents_are_read_without_the_set(staff_client):
    intents = (IntentRecord(intent_id="1"), IntentRecord(intent_id="2"))
    topics_import("web", [TopicRecord(topic_id=str(n), intents=intents) for n in (10, 9, 1)])
    with CaptureQueriesContext(connection) as queries:
        body = staff_client.get("/api/topic-sets/web/topics/9/").json()
    assert body["topic_id"] == "9" and [i["intent_id"] for i in body["intents"]] == ["1", "2"]
    assert len(queries) <= 6
    _no_scan_of_the_set(queries)
    got, url = [], "/api/topic-sets/web/intents/?page_size=4"
    while url:
        body = staff_client.get(url).json()
        got += [(i["topic_id"], i["intent_id"]) for i in body["results"]]
        url = body["next"] and body["next"].replace("http://testserver", "")
    assert got == [(t, i) for t in ("1", "9", "10") for i in ("1", "2")]
    assert staff_client.get("/api/topic-sets/web/topics/11/").status_code == 404


@pytest.mark.django_db
def test_the_topic_set_page_reads_one_page_after_a_topic(staff_client, monkeypatch):
    monkeypatch.setattr("topics.selectors.TOPIC_PAGE_SIZE", 5)
    _import("tricky", TRICKY)
    ts = TopicSet.objects.get(name="tricky")
    url, seen, counts = reverse("topics:topic_set_detail", args=[ts.pk]), [], set()
    while url:
        with CaptureQueriesContext(connection) as queries:
            page = staff_client.get(url).content.decode()
        counts.add(len(queries))
        _no_scan_of_the_set(queries)
        seen += re.findall(r'<td class="topic-id">([^<]*)</td>', page)
        found = re.search(r'href="(\?after=[^"]+)" id="next-page"', page)
        url = found and reverse("topics:topic_set_detail", args=[ts.pk]) + found.group(1).replace(
            "&amp;", "&")
    from html import unescape

    assert [unescape(s) for s in seen] == sorted(TRICKY, key=natural_key)
    assert len(counts) == 1  # the last page costs what the first does
    assert f"{len(TRICKY)} topics" in staff_client.get(
        reverse("topics:topic_set_detail", args=[ts.pk])).content.decode()


@pytest.mark.django_db
def test_the_project_page_does_not_grow_with_the_set(staff_client):
    _import("s", ["1", "2"])
    _import("b", [str(n) for n in range(1, 1201)])
    costs = []
    for ts in (TopicSet.objects.get(name="s"), TopicSet.objects.get(name="b")):
        with CaptureQueriesContext(connection) as queries:
            page = staff_client.get(reverse("projects:organiser_project", args=[ts.pk]))
        assert page.status_code == 200
        _no_scan_of_the_set(queries)
        assert "crowd_statement" not in _sql(queries)  # stored counts, not counted
        costs.append(len(queries))
    assert costs[0] == costs[1]
    assert re.search(r"<dt>Topics</dt><dd>1200</dd>\s*<dt>Statements</dt><dd>1200</dd>",
                     page.content.decode())


# --- streaming imports --------------------------------------------------------------------


@pytest.mark.django_db
def test_topics_import_reads_a_batch_ahead_of_what_it_wrote():
    """Memory stays bounded: when record k is read, every record up to about k - batch is
    already written (the import never holds the whole file)."""
    lag = []

    def records():
        for n in range(1, 1001):
            if n % 97 == 0:
                lag.append(n - Topic.objects.filter(topic_set__name="stream").count())
            yield TopicRecord(topic_id=f"T{n}", statements=("s",), source="f", line=n)

    assert topics_import("stream", records(), batch_size=50) == {"created": 1000, "replaced": 0}
    assert lag and max(lag) <= 50
    ts = TopicSet.objects.get(name="stream")
    assert (ts.topics_count, ts.statements_count) == (1000, 1000)


@pytest.mark.django_db
def test_tsv_rows_of_one_topic_merge_across_batches(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("id\tstatement\ttitle\nT1\tfirst\t\nT2\tsecond\tt2\nT3\tthird\t\n"
                    "T1\tagain\tone\nT2\tmore\t\n")
    assert topics_import("m", iter_topics(path, "tsv"), merge_rows=True, batch_size=2) == {
        "created": 3, "replaced": 0}
    t1 = Topic.objects.get(topic_set__name="m", topic_id="T1")
    assert t1.title == "one"
    assert list(t1.statements.values_list("position", "text")) == [(0, "first"), (1, "again")]
    assert list(Topic.objects.get(topic_id="T2").statements.values_list("text", flat=True)) == [
        "second", "more"]
    assert TopicSet.objects.get(name="m").statements_count == 5

    path.write_text("T1\tfirst\tone\nT2\tsecond\t\nT3\tthird\t\nT1\tagain\tother\n")
    with pytest.raises(ImportRejected, match=r"t\.tsv, line 4: topic 'T1' has title 'other' "
                                             r"here but 'one' on an earlier line"):
        topics_import("n", iter_topics(path, "tsv"), merge_rows=True, batch_size=2)
    assert not TopicSet.objects.filter(name="n").exists()

    trec = tmp_path / "t.trec"
    trec.write_text("".join(f"<top>\n<num> {n}\n<title> t{n}\n</top>\n" for n in (1, 2, 3, 1)))
    with pytest.raises(ImportRejected, match=r"line 13: topic id '1' repeated"):
        topics_import("o", iter_topics(trec, "trec"), batch_size=2)
    assert not TopicSet.objects.filter(name="o").exists()


@pytest.mark.django_db
def test_replacing_across_batches_replaces_each_topic_once():
    _import("r", ["1", "2", "3"])
    rows = [TopicRecord(topic_id=t, title="new", statements=(s,), source="f", line=n)
            for n, (t, s) in enumerate([("1", "a"), ("2", "b"), ("4", "c"), ("1", "d")], 1)]
    with pytest.raises(ImportRejected, match=r"2 topic\(s\) already in set 'r': 1, 2"):
        topics_import("r", rows, batch_size=2)
    assert topics_import("r", rows, replace=True, merge_rows=True, batch_size=2) == {
        "created": 1, "replaced": 2}
    assert list(Statement.objects.filter(topic__topic_set__name="r", topic__topic_id="1")
                .values_list("text", flat=True)) == ["a", "d"]
    ts = TopicSet.objects.get(name="r")
    assert (ts.topics_count, ts.statements_count) == (4, 5)


def test_the_reader_reports_its_progress(tmp_path, monkeypatch):
    monkeypatch.setattr("common.fileio.PROGRESS_BYTES", 100)
    path = tmp_path / "t.tsv"
    path.write_text("".join(f"T{n}\tstatement {n}\n" for n in range(1000)))
    heard = []
    assert sum(1 for _ in iter_topics(path, "tsv", progress=heard.append)) == 1000
    assert len(heard) > 50 and heard == sorted(heard) and 0 < heard[0] < heard[-1] <= 1.0


@pytest.mark.django_db(transaction=True)
def test_upload_progress_is_seen_while_the_import_transaction_is_open(tmp_path):
    from django.db import transaction

    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: progress is written at the end")
    from uploads.models import Upload
    from uploads.services import _ProgressWriter

    row = Upload.objects.create(kind="topics", filename="t.tsv", path=str(tmp_path / "t.tsv"),
                                holder="me", status="running")
    writer = _ProgressWriter(row.pk, "me", every=0)
    other = connections.create_connection("default")
    try:
        with transaction.atomic():
            Topic.objects.create(topic_set=TopicSet.objects.create(name="open"), topic_id="1")
            writer(0.25)
            with other.cursor() as cursor:  # another session: the page
                cursor.execute("SELECT progress FROM uploads_upload WHERE id = %s", [row.pk])
                assert cursor.fetchone()[0] == 0.25
        _ProgressWriter(row.pk, "someone else", every=0)(0.5)  # lease lost: not written
    finally:
        writer.close()
        other.close()
    assert Upload.objects.get(pk=row.pk).progress == 0.25


@pytest.mark.django_db
def test_variants_import_reads_a_batch_ahead_of_what_it_wrote():
    from topics.models import QueryVariant
    from topics.services import variants_import
    from topics.variantfiles import VariantRecord

    lag = []

    def records():
        for n in range(1, 1001):
            if n % 97 == 0:
                lag.append(n - QueryVariant.objects.count())
            yield VariantRecord(topic_id=f"T{n % 7}", raw=f"query {n}", source="v", line=n)

    done = variants_import("vs", records(), create_topics=True, batch_size=50)
    assert (done["variants"], done["topics_created"]) == (1000, 7)
    assert lag and max(lag) <= 50
    assert TopicSet.objects.get(name="vs").topics_count == 7
    with pytest.raises(ImportRejected, match=r"2 topic\(s\) not in set 'vs': T7, T8 "
                                             r"\(first: v, line 3: topic T7;"):
        variants_import("vs", [VariantRecord(topic_id=t, raw="q", source="v", line=n)
                               for n, t in enumerate(["T1", "T2", "T7", "T8", "T7"], 1)],
                        batch_size=2)
    assert QueryVariant.objects.count() == 1000
