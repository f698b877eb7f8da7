"""A large upload end to end with a real Celery worker on Redis against the PostgreSQL test
database: the page records the upload, the worker imports it, the progress page says so."""
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from crowd.models import Topic
from uploads.models import Upload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
REDIS_DB = 15


def _port_open(port: int) -> bool:
    s = socket.socket()
    s.settimeout(1)
    try:
        return s.connect_ex(("127.0.0.1", port)) == 0
    finally:
        s.close()


def _reset_connections(app):
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def worker(transactional_db, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (a worker process must see the test database)")
    if not _port_open(6379):
        pytest.skip("needs Redis on 127.0.0.1:6379 as the Celery broker")
    from config.celery_app import app

    queue = f"uploads-test-{uuid.uuid4().hex[:8]}"
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    old = (app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.task_default_queue = broker, queue
    app.conf.broker_transport_options = {}
    _reset_connections(app)
    db = connection.settings_dict
    env = dict(os.environ, DEBUG="1", CELERY_BROKER_URL=broker, CELERY_TASK_DEFAULT_QUEUE=queue,
               DJANGO_SETTINGS_MODULE="config.settings", DATA_DIR=str(tmp_path / "worker-data"),
               DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:"
                            f"{db['PORT'] or 5432}/{db['NAME']}")
    celery = str(Path(sys.executable).with_name("celery"))
    proc = subprocess.Popen(
        [celery, "-A", "config", "worker", "-P", "prefork", "-c", "1", "-Q", queue,
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options = old
        _reset_connections(app)


def test_large_topics_file_is_imported_by_the_worker(worker, client, settings, tmp_path):
    settings.UPLOAD_TASK_BYTES = 1024
    settings.DATA_DIR = tmp_path / "web-data"
    client.force_login(User.objects.create_user("org", password="pw", is_staff=True))
    rows = "".join(f"T{i}\tFind facts about subject number {i} for a school project.\n"
                   for i in range(1, 201))
    upload = SimpleUploadedFile("many.tsv", ("id\tstatement\n" + rows).encode(), "text/plain")
    assert upload.size > settings.UPLOAD_TASK_BYTES
    response = client.post(reverse("crowd:organiser_topics_upload"), {
        "file": upload, "format": "tsv", "new_topic_set": "many", "ids": "given",
        "encoding": "utf-8"})
    row = Upload.objects.get()
    assert response["Location"] == reverse("crowd:organiser_upload_status", args=[row.pk])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        row.refresh_from_db()
        if row.status in ("done", "failed"):
            break
        if worker.poll() is not None:
            pytest.fail("worker exited:\n" + worker.stdout.read().decode(errors="replace")[-3000:])
        time.sleep(0.3)
    assert row.status == "done", row.error or row.status
    assert Topic.objects.filter(topic_set__name="many").count() == 200
    page = client.get(response["Location"]).content.decode()
    assert "200 topic(s) created" in page
