"""A redelivered upload imports its file once: the import and the upload's done mark are
one transaction, guarded by the lease. A real worker process is killed (SIGKILL) at the
worst moment -- every row of the import written, the done mark not yet committed -- and
the reconciler and the next delivery then import the file exactly once."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.services import reconcile_all
from tests.workers import _database_url, require_postgresql
from topics.models import QueryVariant, Topic, TopicSet
from uploads.models import Upload
from uploads.services import upload_create, upload_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
REDIS_DB = 15  # the uploads' db (tests/workers.py)

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = "topic\tquery\tworker\n" + "".join(
    f"{t}\tquery {i} for topic {t}\tw{i}\n" for t in ("1", "2") for i in range(5))

# A worker process that runs the upload's import and is killed the moment its import has
# written everything and is about to mark the upload done, inside the same transaction.
KILLED_BEFORE_COMMIT = textwrap.dedent("""
    import os, signal, sys
    import django
    django.setup()
    from crowd.models import QueryVariant
    from jobs import leases

    def killed_here(model, pk, holder):
        print("imported before the kill:", QueryVariant.objects.count(), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    leases.held = killed_here
    from uploads.services import upload_run
    upload_run(int(sys.argv[1]))
""")


def test_a_worker_killed_before_the_done_mark_leaves_nothing_and_the_file_imports_once(
        settings, tmp_path, monkeypatch):
    require_postgresql()
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: None)  # this test delivers
    settings.DATA_DIR = tmp_path
    ts = TopicSet.objects.create(name="ts")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=t) for t in ("1", "2")])
    upload = upload_create("variants", SimpleUploadedFile("v.tsv", VARIANTS.encode()),
                           {"topic_set": "ts", "format": "tsv"})

    env = {**os.environ, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": _database_url(), "DATA_DIR": str(tmp_path)}
    worker = subprocess.run([sys.executable, "-c", KILLED_BEFORE_COMMIT, str(upload.pk)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert worker.returncode == -signal.SIGKILL, worker.stdout + worker.stderr
    assert "imported before the kill: 10" in worker.stdout  # the rows were written...
    assert QueryVariant.objects.count() == 0  # ...and died with the transaction
    row = Upload.objects.get(pk=upload.pk)
    assert (row.status, row.attempts) == ("running", 1)  # held by a dead process

    # the reconciler sees the dead holder and re-queues; the next delivery imports once
    assert reconcile_all(origin="command")["uploads"].requeued == [upload.pk]
    row = upload_run(upload.pk)
    assert (row.status, row.attempts, row.error) == ("done", 2, "")
    assert row.result["message"] == "ts: 10 variant(s) imported"
    # a late redelivery of the same message changes nothing
    assert upload_run(upload.pk).status == "done"
    assert reconcile_all(origin="command")["uploads"].requeued == []
    assert QueryVariant.objects.count() == 10
    assert sorted(QueryVariant.objects.values_list("worker_id", flat=True)) == sorted(
        f"w{i}" for _ in ("1", "2") for i in range(5))


def test_a_celery_worker_killed_before_the_done_mark_and_the_message_redelivered(
        settings, tmp_path, celery_on_redis):
    """The same on a real Celery worker and Redis: the worker dies (SIGKILL) inside the
    import's transaction with its message unacknowledged; the reconciler re-queues the
    upload, and a new worker imports the file once, however often the message comes."""
    broker = celery_on_redis(REDIS_DB, "upload-kill")
    env = {"DATA_DIR": str(tmp_path), "CELERY_VISIBILITY_TIMEOUT": "3"}
    doomed = broker.worker(pool="solo", env=env, app="tests.jobs.dies_before_commit")
    settings.DATA_DIR = tmp_path
    ts = TopicSet.objects.create(name="ts")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=t) for t in ("1", "2")])
    upload = upload_create("variants", SimpleUploadedFile("v.tsv", VARIANTS.encode()),
                           {"topic_set": "ts", "format": "tsv"})  # woken on commit
    assert doomed.proc.wait(timeout=120) == -signal.SIGKILL, doomed.tail()
    row = Upload.objects.get(pk=upload.pk)
    assert (row.status, row.attempts) == ("running", 1), doomed.tail()
    assert QueryVariant.objects.count() == 0  # died with the transaction

    worker = broker.worker(pool="prefork", env=env)  # its start reconciles: holder dead
    deadline = time.monotonic() + 90
    while Upload.objects.get(pk=upload.pk).status != "done" and time.monotonic() < deadline:
        time.sleep(0.3)
    row = Upload.objects.get(pk=upload.pk)
    assert (row.status, row.error) == ("done", ""), worker.tail()
    time.sleep(4)  # past the visibility timeout: the dead worker's message comes back
    assert QueryVariant.objects.count() == 10, worker.tail()
    assert Upload.objects.get(pk=upload.pk).status == "done"
    assert worker.alive
