"""The pool build task on a real Celery worker process, over Redis, against PostgreSQL.

The worker is a separate process (``celery -A config worker``), so the test database must
be one both processes can open: it runs on PostgreSQL only and skips on SQLite, and skips
when Redis is absent. Redis database 4 and a queue name unique to the run keep it apart
from any other worker.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from pooling.models import Pool
from pooling.services import pool_create
from tests.pooling.test_django_pools import expected_depth_union, rankings_db  # noqa: F401
from tests.conftest import celery_connections_reset

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/4"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: a worker process cannot share the SQLite test database")
    if not _port_open(6379):
        pytest.skip("needs Redis at 127.0.0.1:6379")
    from config.celery_app import app

    queue = f"pooling-test-{uuid.uuid4().hex[:12]}"
    keys = ("broker_url", "broker_transport_options", "task_default_queue")
    saved = {k: app.conf.get(k) for k in keys}
    app.conf.update(broker_url=REDIS_URL, broker_transport_options={},
                    task_default_queue=queue)
    celery_connections_reset(app)
    s = connection.settings_dict
    env = {
        **os.environ,
        "DEBUG": "1",
        "DATABASE_URL": f"postgres://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:"
                        f"{s['PORT'] or 5432}/{s['NAME']}",
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "DATA_DIR": str(tmp_path),
    }
    log = open(tmp_path / "worker.log", "a")
    procs = []

    def start():
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
             "-Q", queue, "--without-gossip", "--without-mingle", "--without-heartbeat",
             "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        return proc

    start()
    try:
        yield procs[0], tmp_path / "worker.log", start
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        with app.connection_for_write(REDIS_URL) as conn:
            conn.default_channel.queue_delete(queue)
        app.conf.update(saved)
        celery_connections_reset(app)


def _wait_for(pool_id: int, timeout: float, log: Path) -> Pool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pool = Pool.objects.get(pk=pool_id)
        if pool.status in (Pool.STATUS_DONE, Pool.STATUS_FAILED):
            return pool
        time.sleep(0.3)
    raise AssertionError(f"pool {pool_id} still {pool.status} after {timeout}s:\n"
                         + log.read_text()[-3000:])


@pytest.mark.integration
@pytest.mark.slow
def test_build_pool_async_runs_on_a_real_worker(celery_worker_process, rankings_db):
    proc, log, _start = celery_worker_process
    out = StringIO()
    call_command("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
                 "--name", "queued", "--async", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"pool": "queued", "status": "queued"}
    pool = _wait_for(Pool.objects.get(name="queued").id, 90, log)
    assert pool.status == Pool.STATUS_DONE, pool.error
    assert pool.progress == 1.0 and pool.finished is not None
    want = {t: len(d) for t, d in expected_depth_union("combined", 2).items()}
    from pooling.selectors import pool_sizes

    assert pool_sizes(pool) == want

    # a failing build is recorded on the pool, not retried forever
    call_command("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "2",
                 "--model", "qld", "--name", "no-rankings", "--async", stdout=StringIO())
    failed = _wait_for(Pool.objects.get(name="no-rankings").id, 60, log)
    assert failed.status == Pool.STATUS_FAILED and "no finished user-variant rankings" in failed.error
    assert proc.poll() is None  # the worker survived both

    # a second delivery of a finished (or failed) build returns without touching it
    from pooling.tasks import pool_build_task

    before = Pool.objects.get(pk=pool.pk)
    pool_build_task.delay(pool.pk)
    pool_build_task.delay(failed.pk)
    time.sleep(2)
    after = Pool.objects.get(pk=pool.pk)
    assert (after.status, after.attempts, after.finished) == ("done", 1, before.finished)
    assert Pool.objects.get(pk=failed.pk).status == Pool.STATUS_FAILED


@pytest.mark.integration
@pytest.mark.slow
def test_builds_of_a_killed_worker_and_lost_messages_finish_when_a_worker_starts(
        celery_worker_process, rankings_db):
    """A worker killed (SIGKILL) while it holds a build, and a build whose message the
    broker lost: the next worker to start re-queues and builds both."""
    proc, log, start = celery_worker_process
    held = pool_create(topic_set_name="ts", sources="combined", depth=2, name="held")
    lost = pool_create(topic_set_name="ts", sources="combined", depth=2, name="lost")
    # the worker took the first build, then was killed; the second build's message is gone
    Pool.objects.filter(pk=held.pk).update(
        status="running", holder=f"{socket.gethostname()}:{proc.pid}", attempts=1,
        lease_expires=timezone.now() + timedelta(seconds=30))
    Pool.objects.filter(pk=lost.pk).update(woken=timezone.now() - timedelta(seconds=60))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert set(Pool.objects.values_list("status", flat=True)) == {"running", "queued"}
    start()  # reconciles when it is ready
    want = {t: len(d) for t, d in expected_depth_union("combined", 2).items()}
    from pooling.selectors import pool_sizes

    for pool in (held, lost):
        built = _wait_for(pool.pk, 60, log)
        assert built.status == Pool.STATUS_DONE, built.error
        assert pool_sizes(built) == want
    assert Pool.objects.get(pk=held.pk).attempts == 2
