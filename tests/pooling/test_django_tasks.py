"""The pool build task on a real Celery worker process, over Redis, against PostgreSQL.

The worker is a separate process (``celery -A config worker``), so the test database must
be one both processes can open: it runs on PostgreSQL only and skips on SQLite, and skips
when Redis is absent. Redis database 4 and a queue name unique to the run keep it apart
from any other worker.
"""
from __future__ import annotations

import json
import socket
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from pooling.models import Pool
from pooling.services import pool_create
from tests.pooling.test_commands_pools import expected_runs
from tests.pooling.test_django_pools import expected_depth_union, rankings_db  # noqa: F401

REDIS_DB = 4


@pytest.fixture
def broker(celery_on_redis):
    """The pool builds' queue on Redis; ``broker.worker(pool="solo")`` starts a worker."""
    return celery_on_redis(REDIS_DB, "pooling-test")


def _wait_for(pool_id: int, timeout: float, worker) -> Pool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pool = Pool.objects.get(pk=pool_id)
        if pool.status in (Pool.STATUS_DONE, Pool.STATUS_FAILED):
            return pool
        time.sleep(0.3)
    raise AssertionError(f"pool {pool_id} still {pool.status} after {timeout}s:\n"
                         + worker.tail())


@pytest.mark.integration
@pytest.mark.slow
def test_build_pool_async_runs_on_a_real_worker(broker, rankings_db):
    worker = broker.worker(pool="solo")
    out = StringIO()
    call_command("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
                 "--name", "queued", "--async", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"pool": "queued", "status": "queued",
                                          "runs": expected_runs("combined")}
    pool = _wait_for(Pool.objects.get(name="queued").id, 90, worker)
    assert pool.status == Pool.STATUS_DONE, pool.error
    assert pool.progress == 1.0 and pool.finished is not None
    want = {t: len(d) for t, d in expected_depth_union("combined", 2).items()}
    from pooling.selectors import pool_sizes

    assert pool_sizes(pool) == want

    # a failing build is recorded on the pool, not retried forever
    call_command("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "2",
                 "--model", "qld", "--name", "no-rankings", "--async", stdout=StringIO())
    failed = _wait_for(Pool.objects.get(name="no-rankings").id, 60, worker)
    assert failed.status == Pool.STATUS_FAILED and "no finished user-variant rankings" in failed.error
    assert worker.alive  # the worker survived both

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
        broker, rankings_db):
    """A worker killed (SIGKILL) while it holds a build, and a build whose message the
    broker lost: the next worker to start re-queues and builds both."""
    worker = broker.worker(pool="solo", ready=False)  # killed before it is ready
    held = pool_create(topic_set_name="ts", sources="combined", depth=2, name="held")
    lost = pool_create(topic_set_name="ts", sources="combined", depth=2, name="lost")
    # the worker took the first build, then was killed; the second build's message is gone
    Pool.objects.filter(pk=held.pk).update(
        status="running", holder=f"{socket.gethostname()}:{worker.pid}", attempts=1,
        lease_expires=timezone.now() + timedelta(seconds=30))
    Pool.objects.filter(pk=lost.pk).update(woken=timezone.now() - timedelta(seconds=60))
    worker.kill()
    assert set(Pool.objects.values_list("status", flat=True)) == {"running", "queued"}
    worker = broker.worker(pool="solo")  # reconciles when it is ready
    want = {t: len(d) for t, d in expected_depth_union("combined", 2).items()}
    from pooling.selectors import pool_sizes

    for pool in (held, lost):
        built = _wait_for(pool.pk, 60, worker)
        assert built.status == Pool.STATUS_DONE, built.error
        assert pool_sizes(built) == want
    assert Pool.objects.get(pk=held.pk).attempts == 2
