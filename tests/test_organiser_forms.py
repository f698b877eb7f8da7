"""Organiser forms in the browser: staff only, the same services as the commands, and a bad
file names its line and stores nothing."""
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from common.templatetags.ui import num
from crowd.models import Study
from judging.models import JudgmentSet
from pooling.models import Pool
from retrieval.models import Run
from topics.models import QueryVariant, Topic, TopicSet

TOPICS = "id\tstatement\ttitle\nT1\tFind facts about apples.\tapples\nT2\tFind facts about pears.\tpears\n"
RUN = "".join(f"{q} Q0 d{d} {r} {10 - r}.0 sys\n" for q in ("T1", "T2")
              for r, d in enumerate((1, 2, 3), start=1))


@pytest.fixture
def staff(client):
    user = User.objects.create_user("org", password="pw", is_staff=True)
    client.force_login(user)
    return client


def _upload(name, text):
    return SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/plain")


def _topics(staff, text=TOPICS, name="topics.tsv", topic_set="ts1"):
    return staff.post(reverse("projects:organiser_topics_upload"), {
        "file": _upload(name, text), "format": "tsv", "new_topic_set": topic_set,
        "ids": "given", "encoding": "utf-8"})


URLS = ["organiser_topics_upload", "organiser_variants_upload", "organiser_run_upload",
        "organiser_qrels_upload", "organiser_study_new", "organiser_retrieval_launch",
        "organiser_judging_task_new", "organiser_collection_upload"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", URLS)
def test_forms_are_for_staff_only(client, name):
    url = reverse(f"projects:{name}")
    assert client.get(url).status_code == 302  # to the sign-in page
    User.objects.create_user("w", password="pw")
    client.force_login(User.objects.get(username="w"))  # sign-ins go through django-axes
    response = client.get(url)
    assert response.status_code == 302 and "login" in response["Location"]
    assert client.post(url, {}).status_code == 302


@pytest.mark.django_db
def test_topics_upload_creates_the_set_and_shows_the_project(staff):
    response = _topics(staff)
    ts = TopicSet.objects.get(name="ts1")
    assert response.status_code == 302
    assert response["Location"] == reverse("projects:organiser_project", args=[ts.pk])
    assert sorted(Topic.objects.filter(topic_set=ts).values_list("topic_id", flat=True)) == ["T1", "T2"]
    page = staff.get(response["Location"])
    assert page.status_code == 200
    assert b'id="project-stats"' in page.content
    assert b"<dt>Topics</dt><dd>2</dd>" in page.content
    assert b"<dt>Statements</dt><dd>2</dd>" in page.content


@pytest.mark.django_db
def test_bad_topics_file_names_file_and_line_and_stores_nothing(staff):
    response = _topics(staff, text="id\tstatement\nT1\tok statement\nT1\t\n", name="bad.tsv")
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="form-errors"' in text
    assert "bad.tsv, line 3: empty statement" in text
    assert "upload-" not in text  # the private folder is not shown
    assert not TopicSet.objects.filter(name="ts1").exists()


@pytest.mark.django_db
def test_topic_set_is_a_select_of_real_sets(staff):
    _topics(staff)
    page = staff.get(reverse("projects:organiser_variants_upload")).content.decode()
    assert '<select name="topic_set"' in page and '<option value="ts1">ts1</option>' in page


@pytest.mark.django_db
def test_variants_upload_and_bad_variant_line(staff):
    _topics(staff)
    url = reverse("projects:organiser_variants_upload")
    ok = staff.post(url, {"file": _upload("v.tsv", "T1\tapple facts\tw1\nT2\tpear facts\tw2\n"),
                          "format": "tsv", "topic_set": "ts1", "encoding": "utf-8"})
    assert ok.status_code == 302
    assert QueryVariant.objects.filter(topic__topic_set__name="ts1").count() == 2
    bad = staff.post(url, {"file": _upload("v2.tsv", "T1\tmore apples\tw3\nT9\tunknown\tw4\n"),
                           "format": "tsv", "topic_set": "ts1", "encoding": "utf-8"})
    assert bad.status_code == 400
    assert "T9" in bad.content.decode()
    assert QueryVariant.objects.filter(topic__topic_set__name="ts1").count() == 2


@pytest.mark.django_db
def test_run_upload_export_and_bad_line(staff):
    _topics(staff)
    url = reverse("projects:organiser_run_upload")
    bad = staff.post(url, {"file": _upload("r.txt", RUN + "T1 Q0 d9 x 1.0 sys\n"),
                           "topic_set": "ts1", "encoding": "utf-8"})
    assert bad.status_code == 400
    assert "r.txt" in bad.content.decode() and "line 7" in bad.content.decode(), bad.content.decode()[-1500:]
    assert not Run.objects.exists()
    ok = staff.post(url, {"file": _upload("r.txt", RUN), "topic_set": "ts1", "encoding": "utf-8"})
    assert ok.status_code == 302
    run = Run.objects.get()
    exported = staff.get(reverse("projects:organiser_run_export", args=[run.pk]))
    assert exported.status_code == 200
    lines = exported.content.decode().splitlines()
    assert lines[0].split() == ["T1", "Q0", "d1", "1", "9.0", "sys"] or lines[0].split()[:4] == ["T1", "Q0", "d1", "1"]
    assert len(lines) == 6


@pytest.mark.django_db
def test_qrels_upload_and_bad_line(staff):
    _topics(staff)
    url = reverse("projects:organiser_qrels_upload")
    bad = staff.post(url, {"file": _upload("q.txt", "T1 0 d1 1\nT1 0 d2\n"), "format": "adhoc",
                           "name": "q1", "topic_set": "ts1", "encoding": "utf-8"})
    assert bad.status_code == 400
    assert "q.txt" in bad.content.decode() and "line 2" in bad.content.decode(), bad.content.decode()[-1500:]
    assert not JudgmentSet.objects.exists()
    ok = staff.post(url, {"file": _upload("q.txt", "T1 0 d1 1\nT2 0 d2 0\n"), "format": "adhoc",
                          "name": "q1", "topic_set": "ts1", "encoding": "utf-8"})
    assert ok.status_code == 302
    assert JudgmentSet.objects.get(name="q1").labels_count == 2


@pytest.mark.django_db
def test_study_create_shows_prolific_and_mturk_links(staff):
    _topics(staff)
    url = reverse("projects:organiser_study_new")
    bad = staff.post(url, {"topic_set": "ts1", "name": "s", "consent_text": "I agree",
                           "completion_code": " ", "responses_per_statement": 2,
                           "statements_per_worker": 2})
    assert bad.status_code == 400 and not Study.objects.exists()
    ok = staff.post(url, {"topic_set": "ts1", "name": "s", "consent_text": "I agree",
                          "completion_code": "C0DE", "responses_per_statement": 2,
                          "statements_per_worker": 2})
    study = Study.objects.get()
    assert ok["Location"] == reverse("projects:organiser_study_links", args=[study.pk])
    page = staff.get(ok["Location"]).content.decode()
    entry = reverse("crowd:study_entry", kwargs={"slug": study.slug})
    assert f"{entry}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&amp;STUDY_ID=" in page
    assert 'id="link-mturk"' in page


@pytest.mark.django_db
def test_pool_judging_task_and_exports(staff):
    from pooling.services import pool_build, pool_create

    _topics(staff)
    staff.post(reverse("projects:organiser_run_upload"),
               {"file": _upload("r.txt", RUN), "topic_set": "ts1", "encoding": "utf-8"})
    pool = pool_create(topic_set_name="ts1", sources="systems", depth=2)
    pool_build(pool.pk)
    pool.refresh_from_db()
    assert pool.status == Pool.STATUS_DONE
    form = staff.get(reverse("projects:organiser_judging_task_new")).content.decode()
    assert f'<option value="{pool.pk}">' in form
    url = reverse("projects:organiser_judging_task_new")
    ok = staff.post(url, {"pool": pool.pk, "name": "jt", "mode": "topic", "scale": "binary",
                          "redundancy": 1, "assessors": "alice, bob\ncarol"})
    assert ok.status_code == 302, ok.content.decode()[:2000]
    from judging.selectors import task_get
    assert sorted(task_get("jt").assessors) == ["alice", "bob", "carol"]
    dup = staff.post(url, {"pool": pool.pk, "name": "jt", "mode": "topic", "scale": "binary",
                           "redundancy": 1})
    assert dup.status_code == 400
    exported = staff.get(reverse("projects:organiser_pool_export", args=[pool.pk, "txt"]))
    assert exported.status_code == 200
    assert [line.split()[:2] for line in exported.content.decode().splitlines()] == [
        ["T1", "d1"], ["T1", "d2"], ["T2", "d1"], ["T2", "d2"]]
    project = staff.get(reverse("projects:organiser_project", args=[pool.topic_set_id])).content.decode()
    assert "jt" in project and 'id="project-pools"' in project


@pytest.mark.django_db
def test_variants_export_from_project(staff):
    _topics(staff)
    staff.post(reverse("projects:organiser_variants_upload"),
               {"file": _upload("v.tsv", "T1\tapple facts\tw1\n"), "format": "tsv",
                "topic_set": "ts1", "encoding": "utf-8"})
    ts = TopicSet.objects.get(name="ts1")
    response = staff.get(reverse("projects:organiser_variants_export", args=[ts.pk, "tsv"]))
    assert response.status_code == 200 and "apple facts" in response.content.decode()


def test_num_filter_precision():
    assert num(0.123456, 4) == "0.1235"
    assert num(3, 4) == "3"
    assert num(None) == "\u2013"
    assert num(float("nan")) == "\u2013"
    assert num("n/a") == "n/a"


@pytest.mark.django_db(transaction=True)
def test_large_file_is_recorded_then_imported_by_the_worker_service(staff, settings, tmp_path):
    """Over the threshold the row is written (queued) before any import, the page shows a
    progress bar, and the worker's service imports it; a bad file fails with file and line
    and stores nothing."""
    from unittest import mock

    from uploads.models import Upload
    from uploads.services import upload_run

    settings.UPLOAD_TASK_BYTES = 10
    settings.DATA_DIR = tmp_path
    with mock.patch("jobs.registry.wake") as wake:
        response = _topics(staff, topic_set="big")
    row = Upload.objects.get()
    assert wake.call_args.args == ("upload", row.pk)  # woken once the row was committed
    assert row.status == "queued" and row.filename == "topics.tsv"
    assert not TopicSet.objects.filter(name="big").exists()  # nothing imported yet
    assert response["Location"] == reverse("projects:organiser_upload_status", args=[row.pk])
    page = staff.get(response["Location"]).content.decode()
    assert 'id="upload-progress"' in page and 'http-equiv="refresh"' in page
    row = upload_run(row.pk)
    assert row.status == "done"
    assert Topic.objects.filter(topic_set__name="big").count() == 2
    assert not Path(row.path).exists()  # the kept file is removed once imported
    page = staff.get(response["Location"]).content.decode()
    assert "2 topic(s) created" in page and 'http-equiv="refresh"' not in page
    assert upload_run(row.pk).status == "done"  # a second delivery does nothing

    with mock.patch("jobs.registry.wake"):
        _topics(staff, text="id\tstatement\nT1\tok statement\nT1\t\n", name="bad.tsv", topic_set="bad")
    bad = upload_run(Upload.objects.get(filename="bad.tsv").pk)
    assert bad.status == "failed"
    assert bad.error.startswith("bad.tsv, line 3: empty statement")
    assert not TopicSet.objects.filter(name="bad").exists()
    page = staff.get(reverse("projects:organiser_upload_status", args=[bad.pk])).content.decode()
    assert "bad.tsv, line 3" in page


@pytest.mark.django_db
def test_pooling_page_build_form_uses_selects(staff):
    _topics(staff)
    page = staff.get(reverse("pooling:index")).content.decode()
    assert '<select name="topic_set"' in page and '<option value="ts1">ts1</option>' in page
    assert '<select name="model"' in page and '<select name="collection"' in page


@pytest.mark.django_db(transaction=True)
def test_collection_upload_is_always_a_task_that_builds_an_index(staff, settings, tmp_path):
    import json
    from unittest import mock

    from retrieval.models import Collection
    from uploads.models import Upload
    from uploads.services import upload_run

    settings.DATA_DIR = tmp_path
    settings.INDEX_ROOT = tmp_path / "indexes"
    url = reverse("projects:organiser_collection_upload")
    page = staff.get(url).content.decode()
    assert '<select name="format"' in page and '<option value="jsonl">' in page

    def post(name, docs):
        text = "".join(json.dumps({"id": d, "contents": c}) + "\n" for d, c in docs)
        with mock.patch("jobs.registry.wake"):
            return staff.post(url, {"file": _upload(f"{name}.jsonl", text), "name": name,
                                    "format": "jsonl", "encoding": "utf-8"})

    response = post("tiny", [("a", "alpha apples"), ("b", "beta pears")])
    row = Upload.objects.get()
    assert response["Location"] == reverse("projects:organiser_upload_status", args=[row.pk])
    assert row.kind == "collection" and not Collection.objects.exists()
    row = upload_run(row.pk)
    assert row.status == "done", row.error
    assert Collection.objects.get(name="tiny").doc_count == 2
    assert "ready" in row.note
    # the finished upload leads on to retrieval over the new collection
    done_page = staff.get(reverse("projects:organiser_upload_status", args=[row.pk])).content.decode()
    launch = reverse("projects:organiser_retrieval_launch") + "?collection=tiny"
    assert f'href="{launch}"' in done_page
    assert '<option value="tiny" selected>' in staff.get(launch).content.decode()

    post("broken", [("a", "alpha"), ("e", "  ")])
    bad = upload_run(Upload.objects.get(filename="broken.jsonl").pk)
    assert bad.status == "failed"
    assert "broken.jsonl, line 2: document 'e' has no text" in bad.error
    assert not Collection.objects.filter(name="broken").exists()
    # the error points at the form's box that leaves such documents out
    failed_page = staff.get(reverse("projects:organiser_upload_status", args=[bad.pk])).content.decode()
    assert "“Skip empty” box (skip_empty) ticked" in failed_page
    assert f'<a href="{url}">upload the collection</a>' in failed_page
    assert "--skip-empty" not in failed_page


@pytest.mark.django_db
def test_a_checkbox_help_text_sits_below_the_box(staff):
    """Pico lifts a small that directly follows an input over it (for text inputs): the
    checkbox's help is not that sibling, and the site's style gives it a line of its own."""
    import re

    page = staff.get(reverse("projects:organiser_collection_upload")).content.decode()
    label = re.search(r'<label for="id_skip_empty" class="checkbox-field">(.*?)</label>', page, re.S)
    assert label, "the Skip empty checkbox has its own label"
    inner = label.group(1)
    assert re.search(r'<input type="checkbox" name="skip_empty"[^>]*>\s*<span>Skip empty</span>', inner)
    assert '<small class="checkbox-help" id="id_skip_empty-help">leave out documents' in inner
    assert not re.search(r'type="checkbox"[^>]*>\s*<small', page)
    css = (Path(__file__).resolve().parents[1] / "static/ui/site.css").read_text()
    assert re.search(r"label\.checkbox-field > small\.checkbox-help \{ display: block; margin-top: \.25rem", css)


@pytest.mark.django_db
def test_a_nul_byte_or_a_gzip_bomb_is_refused_naming_the_file(staff, settings):
    response = _topics(staff, text="id\tstatement\nT1\tok\nT2\tbad\x00byte\n", name="nul.tsv")
    assert response.status_code == 400
    assert "nul.tsv, line 3: a NUL byte (0x00) at column 7" in response.content.decode()
    assert not TopicSet.objects.filter(name="ts1").exists()

    import gzip

    settings.MAX_DECOMPRESSED_BYTES = 1 << 16
    bomb = gzip.compress(TOPICS.encode() + b"\n" * (1 << 20))  # 1 MiB out of a few kB
    response = staff.post(reverse("projects:organiser_topics_upload"), {
        "file": SimpleUploadedFile("bomb.tsv.gz", bomb), "format": "tsv",
        "new_topic_set": "ts1", "ids": "given", "encoding": "utf-8"})
    assert response.status_code == 400
    import re

    assert re.search(r"bomb\.tsv\.gz, line \d+: the gzip data decompresses to more than "
                     r"65536 bytes \(MAX_DECOMPRESSED_BYTES\)", response.content.decode())
    assert not TopicSet.objects.filter(name="ts1").exists()


@pytest.mark.django_db
def test_csv_for_spreadsheets_neutralises_formulas_and_tsv_json_keep_the_data(staff):
    """The pool export wrote =HYPERLINK(...) raw into its CSV; variants.tsv turned topic
    +t2 into '+t2. CSV (spreadsheets) neutralises every formula cell; TSV and JSON (scripts)
    keep the text exactly."""
    import csv
    import io
    import json

    from pooling.services import pool_build, pool_create

    link = '=HYPERLINK("http://example.invalid","x")'
    _topics(staff, text="id\tstatement\n+t2\tplus topic\n@t3\tat topic\n")
    run = "".join(f"{q} Q0 {d} {r} {9 - r}.0 sys\n" for q in ("+t2", "@t3")
                  for r, d in enumerate((link, "-d2"), start=1))
    assert staff.post(reverse("projects:organiser_run_upload"), {
        "file": _upload("r.txt", run), "topic_set": "ts1", "encoding": "utf-8"}).status_code == 302
    pool = pool_create(topic_set_name="ts1", sources="systems", depth=2)
    pool_build(pool.pk)
    text = staff.get(reverse("projects:organiser_pool_export", args=[pool.pk, "csv"])).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["topic", "docid", "weight", "min_rank", "users", "systems"]
    assert sorted((r[0], r[1]) for r in rows[1:]) == [
        ("'+t2", "'-d2"), ("'+t2", "'" + link), ("'@t3", "'-d2"), ("'@t3", "'" + link)]
    assert not any(c.startswith(("=", "+", "-", "@")) for r in rows for c in r)
    txt = staff.get(reverse("projects:organiser_pool_export", args=[pool.pk, "txt"])).content.decode()
    assert {line.split()[0] for line in txt.splitlines()} == {"+t2", "@t3"}

    staff.post(reverse("projects:organiser_variants_upload"), {
        "file": _upload("v.tsv", "+t2\t-minus query\tw1\n@t3\t=1+1\tw2\n"), "format": "tsv",
        "topic_set": "ts1", "encoding": "utf-8"})
    ts = TopicSet.objects.get(name="ts1")

    def export(fmt):
        return staff.get(reverse("projects:organiser_variants_export", args=[ts.pk, fmt])
                         ).content.decode()

    tsv = list(csv.DictReader(io.StringIO(export("tsv")), delimiter="\t"))
    assert [(r["topic"], r["raw"]) for r in tsv] == [("+t2", "-minus query"), ("@t3", "=1+1")]
    assert [(r["topic"], r["raw"]) for r in json.loads(export("json"))] == [
        ("+t2", "-minus query"), ("@t3", "=1+1")]
    spread = list(csv.DictReader(io.StringIO(export("csv"))))
    assert [(r["topic"], r["raw"]) for r in spread] == [("'+t2", "'-minus query"), ("'@t3", "'=1+1")]
    media = {fmt: staff.get(reverse("projects:organiser_variants_export", args=[ts.pk, fmt]))[
        "Content-Type"] for fmt in ("json", "csv", "tsv")}
    assert media == {"json": "application/json; charset=utf-8", "csv": "text/csv; charset=utf-8",
                     "tsv": "text/tab-separated-values; charset=utf-8"}


@pytest.mark.django_db
def test_pool_analysis_forms_are_selects_and_a_typo_names_what_it_is_not(staff):
    _topics(staff)
    page = staff.get(reverse("pooling:index")).content.decode()
    assert page.count('<select name="topic_set"') == 3  # build, growth, rbo
    assert page.count('<select name="model"') == 3 and page.count('<select name="collection"') == 3
    for name in ("pooling:growth", "pooling:rbo", "pooling:paper_figures"):
        response = staff.get(reverse(name), {"topic_set": "ts2"}).content.decode()
        assert "no topic set &#x27;ts2&#x27;" in response, name
        assert "no stored" not in response
    response = staff.get(reverse("pooling:growth"), {"topic_set": "ts1", "model": "bm52"})
    assert "no retrieval model &#x27;bm52&#x27;" in response.content.decode()


@pytest.mark.django_db
def test_project_and_task_pages_offer_only_exports_that_apply(staff):
    import re

    from pooling.services import pool_build, pool_create

    _topics(staff)
    staff.post(reverse("projects:organiser_run_upload"),
               {"file": _upload("r.txt", RUN), "topic_set": "ts1", "encoding": "utf-8"})
    pool = pool_create(topic_set_name="ts1", sources="systems", depth=2)
    pool_build(pool.pk)
    staff.post(reverse("projects:organiser_judging_task_new"),
               {"pool": pool.pk, "name": "jt", "mode": "topic", "scale": "binary", "redundancy": 1})
    pages = [staff.get(reverse("projects:organiser_project", args=[pool.topic_set_id])),
             staff.get(reverse("judging:manage_task", args=["jt"]))]
    links = set()
    for page in pages:
        links |= set(re.findall(r'href="(/judging/manage/jt/export/[a-z]+/)"', page.content.decode()))
    assert links == {"/judging/manage/jt/export/adhoc/", "/judging/manage/jt/export/raw/"}
    # (an intent-mode task's page offers diversity, ndeval, raw: tests/judging/test_pages.py)
    from judging.selectors import task_export_formats
    assert task_export_formats("intent") == ("diversity", "ndeval", "raw")
    assert task_export_formats("topic") == task_export_formats("user") == ("adhoc", "raw")


@pytest.mark.django_db
def test_study_and_judging_task_forms_take_what_the_commands_take(staff):
    from judging.selectors import task_get
    from pooling.services import pool_build, pool_create

    _topics(staff)
    url = reverse("projects:organiser_study_new")
    base = {"topic_set": "ts1", "name": "s", "consent_text": "I agree", "completion_code": "C0DE",
            "responses_per_statement": 2, "statements_per_worker": 2}
    bad = staff.post(url, {**base, "attention_checks": "no answer here"})
    assert bad.status_code == 400 and "line 1: give PROMPT=ANSWER" in bad.content.decode()
    ok = staff.post(url, {**base, "title": "Fruit queries", "instructions": "Write a query.",
                          "min_seconds_per_answer": 2.5,
                          "attention_checks": "Type the word purple.=purple\n",
                          "mturk_hit_ids": "HIT1, HIT2"})
    assert ok.status_code == 302, ok.content.decode()[:2000]
    study = Study.objects.get()
    assert (study.title, study.instructions, study.min_seconds_per_answer) == (
        "Fruit queries", "Write a query.", 2.5)
    assert study.mturk_hit_ids == "HIT1\nHIT2"
    assert study.items.filter(kind="attention").count() == 1

    staff.post(reverse("projects:organiser_run_upload"),
               {"file": _upload("r.txt", RUN), "topic_set": "ts1", "encoding": "utf-8"})
    pool = pool_create(topic_set_name="ts1", sources="systems", depth=2)
    pool_build(pool.pk)
    url = reverse("projects:organiser_judging_task_new")
    form = staff.get(url).content.decode()
    assert '<select name="order"' in form and 'value="bandit-discounted"' in form
    ok = staff.post(url, {"pool": pool.pk, "name": "jt", "mode": "topic", "scale": "binary",
                          "order": "hedge", "redundancy": 2})
    assert ok.status_code == 302, ok.content.decode()[:2000]
    task = task_get("jt")
    assert (task.order, task.redundancy, task.mode) == ("hedge", 2, "topic")
