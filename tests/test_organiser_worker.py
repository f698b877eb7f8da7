"""A large upload end to end with a real Celery worker on Redis against the PostgreSQL test
database: the page records the upload, the worker imports it, the progress page says so."""
import time

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from topics.models import Topic
from uploads.models import Upload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 15


@pytest.fixture
def worker(celery_on_redis):
    return celery_on_redis(REDIS_DB, "uploads-test").worker(pool="prefork", concurrency=1)


def test_large_topics_file_is_imported_by_the_worker(worker, client, settings, tmp_path):
    settings.UPLOAD_TASK_BYTES = 1024
    settings.DATA_DIR = tmp_path / "web-data"
    client.force_login(User.objects.create_user("org", password="pw", is_staff=True))
    rows = "".join(f"T{i}\tFind facts about subject number {i} for a school project.\n"
                   for i in range(1, 201))
    upload = SimpleUploadedFile("many.tsv", ("id\tstatement\n" + rows).encode(), "text/plain")
    assert upload.size > settings.UPLOAD_TASK_BYTES
    response = client.post(reverse("projects:organiser_topics_upload"), {
        "file": upload, "format": "tsv", "new_topic_set": "many", "ids": "given",
        "encoding": "utf-8"})
    row = Upload.objects.get()
    assert response["Location"] == reverse("projects:organiser_upload_status", args=[row.pk])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        row.refresh_from_db()
        if row.status in ("done", "failed"):
            break
        if not worker.alive:
            pytest.fail("worker exited:\n" + worker.tail())
        time.sleep(0.3)
    assert row.status == "done", row.error or row.status
    assert Topic.objects.filter(topic_set__name="many").count() == 200
    page = client.get(response["Location"]).content.decode()
    assert "200 topic(s) created" in page
