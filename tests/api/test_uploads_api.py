"""File uploads through the API: a multipart POST records the same upload row the pages
record (uploads.services.upload_create) and wakes a worker once committed; the worker's
service (upload_run, what the task calls) imports it all or nothing; GET on the upload
shows its state, progress, result and an error naming the file and line. Organisers only."""
from __future__ import annotations

import json
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from retrieval.models import Run
from topics.models import Topic
from uploads.models import Upload
from uploads.services import upload_run

pytestmark = pytest.mark.django_db

TOPICS = "id\tstatement\nT1\tFind facts about apples for a school project.\nT2\tFind pear recipes.\n"


@pytest.fixture(autouse=True)
def _files(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"  # where uploads wait for their import


def _file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), "text/plain")


def _post(client, path, fields, django_capture_on_commit_callbacks):
    with mock.patch("jobs.registry.wake") as wake:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(path, fields, format="multipart")
    return response, wake


def test_a_topics_file_is_recorded_queued_and_imported(api, django_capture_on_commit_callbacks):
    staff = api("staff")
    response, wake = _post(staff, "/api/uploads/topics/", {
        "file": _file("apples.tsv", TOPICS), "topic_set": "fruit", "format": "tsv"},
        django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    body = response.json()
    row = Upload.objects.get()
    assert body["url"] == f"http://testserver/api/uploads/{row.pk}/" == response["Location"]
    assert body["page"].endswith(f"/uploads/{row.pk}/")
    assert (body["kind"], body["filename"], body["status"], body["progress"]) == (
        "topics", "apples.tsv", "queued", 0.0)
    assert body["size"] == len(TOPICS.encode())
    assert row.params == {"topic_set": "fruit", "format": "tsv", "ids": "given",
                          "encoding": "utf-8", "replace": False}
    assert row.created_by == "organiser"
    wake.assert_called_once_with("upload", row.pk)  # after commit, as the pages do
    assert not Topic.objects.exists()  # nothing imported before the worker runs

    upload_run(row.pk)  # what the worker's task does with that id

    done = staff.get(response["Location"]).json()
    assert (done["status"], done["progress"], done["error"]) == ("done", 1.0, "")
    assert done["result"]["message"] == "fruit: 2 topic(s) created, 0 replaced"
    assert done["finished"] is not None
    topics = api("staff").get("/api/topic-sets/fruit/topics/").json()["results"]
    assert [t["topic_id"] for t in topics] == ["T1", "T2"]
    listed = staff.get("/api/uploads/?status=done&kind=topics").json()
    assert [u["id"] for u in listed["results"]] == [row.pk]
    assert staff.get("/api/uploads/?status=failed").json()["results"] == []


def test_a_malformed_run_fails_naming_the_file_and_line_and_imports_nothing(
        data, api, django_capture_on_commit_callbacks):
    run = "".join(f"UQV100.001 Q0 UQV100.001-d{d} {d} {10 - d} mine\n" for d in (1, 2))
    run += "UQV100.001 Q0 UQV100.001-d3 third 7 mine\n"
    before = Run.objects.count()
    response, _ = _post(api("staff"), "/api/uploads/runs/", {
        "file": _file("mine.run", run), "topic_set": "UQV", "tag": "mine"},
        django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    row = Upload.objects.get()
    assert row.params == {"topic_set": "UQV", "tag": "mine", "encoding": "utf-8"}

    upload_run(row.pk)

    body = api("staff").get(f"/api/uploads/{row.pk}/").json()
    assert body["status"] == "failed" and body["result"] is None
    assert "mine.run, line 3" in body["error"], body["error"]
    assert "upload-" not in body["error"] and str(row.path) not in body["error"]
    assert Run.objects.count() == before  # all or nothing


def test_uploads_are_for_organisers(data, api, tokens):
    row = Upload.objects.create(kind="topics", params={}, filename="x.tsv", path="/nonexistent")
    for path in ("/api/uploads/topics/", "/api/uploads/variants/", "/api/uploads/runs/",
                 "/api/uploads/qrels/", "/api/uploads/collections/"):
        fields = {"file": _file("t.tsv", TOPICS), "topic_set": "UQV", "format": "tsv"}
        assert api(None).post(path, fields, format="multipart").status_code == 401, path
        fields["file"] = _file("t.tsv", TOPICS)
        assert api("plain").post(path, fields, format="multipart").status_code == 403, path
    for path in ("/api/uploads/", f"/api/uploads/{row.pk}/"):
        assert api(None).get(path).status_code == 401, path
        assert api("plain").get(path).status_code == 403, path
        assert api("staff").get(path).status_code == 200, path
    assert Upload.objects.count() == 1  # nothing was recorded by the refused posts


def test_fields_are_checked_before_anything_is_kept(data, api, settings):
    staff = api("staff")

    def post(path, **fields):
        with mock.patch("jobs.registry.wake") as wake:
            response = staff.post(path, fields, format="multipart")
        wake.assert_not_called()
        assert response.status_code == 400, response.content
        return response.json()

    assert "no topic set" in post("/api/uploads/runs/", file=_file("r.run", "x"),
                                  topic_set="NOPE")["topic_set"][0].lower()
    assert "file" in post("/api/uploads/topics/", topic_set="t", format="tsv")
    assert "file" in post("/api/uploads/topics/", file=_file("e.tsv", ""), topic_set="t",
                          format="tsv")
    assert "format" in post("/api/uploads/topics/", file=_file("t.tsv", TOPICS), topic_set="t",
                            format="csv")
    assert "encoding" in post("/api/uploads/topics/", file=_file("t.tsv", TOPICS), topic_set="t",
                              format="tsv", encoding="rot13")
    assert "topic_set" in post("/api/uploads/topics/", file=_file("t.tsv", TOPICS),
                               topic_set="a/b", format="tsv")
    assert "already exist" in post("/api/uploads/qrels/", file=_file("q", "1 0 d 1\n"),
                                   format="adhoc", name="q")["name"][0]
    assert "already exists" in post("/api/uploads/collections/", file=_file("c.jsonl", "{}"),
                                    format="jsonl", name="c1")["name"][0]
    nul = post("/api/uploads/topics/", file=_file("t.tsv", TOPICS), topic_set="a\x00b", format="tsv")
    assert "topic_set" in json.dumps(nul)
    assert staff.get("/api/uploads/?status=lost").status_code == 400
    assert staff.get("/api/uploads/nope/").status_code == 404
    assert staff.get("/api/uploads/999999/").status_code == 404
    assert not Upload.objects.exists()
    assert not (settings.DATA_DIR / "uploads").exists() or not any((settings.DATA_DIR / "uploads").iterdir())


def test_schema_describes_multipart_uploads(client):
    schema = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    components = schema["components"]["schemas"]
    for path in ("topics", "variants", "runs", "qrels", "collections"):
        operation = schema["paths"][f"/api/uploads/{path}/"]["post"]
        assert list(operation["requestBody"]["content"]) == ["multipart/form-data"], path
        ref = operation["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
        request = components[ref.rsplit("/", 1)[1]]
        assert request["properties"]["file"] == {**request["properties"]["file"], "type": "string",
                                                 "format": "binary"}
        assert "file" in request["required"]
        accepted = operation["responses"]["202"]["content"]["application/json"]["schema"]
        assert accepted == {"$ref": "#/components/schemas/Upload"}
        assert {"400", "401", "403"} <= set(operation["responses"])
    upload = components["Upload"]["properties"]
    assert {"status", "progress", "error", "url", "result"} <= set(upload)
