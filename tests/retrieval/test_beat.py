"""celery beat for real: the reconciler is sent on its schedule and a run whose wake-up
messages were deleted from the broker finishes without any command, on the embedded
filesystem broker and on Redis. Real `celery beat` and `celery worker` processes against
the PostgreSQL test database, with the schedule at a few seconds (JOB_RECONCILE_SECONDS)."""
import io
import re
import time

import pytest
from django.core.management import call_command

from jobs.models import Reconciliation
from retrieval.models import Ranking, Run, RunChunk, RunQuery
from retrieval.services import run_create
from tests.workers import CeleryBroker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 3
# Beat every 2 s; a queued chunk whose message is 4 s old is woken. A worker that starts
# wakes only messages older than a lease (here 10 minutes, so that a worker slow to start
# on a loaded machine does not do beat's work): the run's chunks are woken by beat.
BEAT_ENV = {"JOB_RECONCILE_SECONDS": "2", "JOB_WAKEUP_AFTER": "4", "JOB_LEASE_SECONDS": "600"}
ERROR_LINE = re.compile(r"\b(ERROR|CRITICAL)\b|SchedulingError|Traceback")


def _queued_then_lost(broker: CeleryBroker) -> Run:
    """A run whose 6 wake-ups were sent (on commit) and then deleted from the broker."""
    from config.celery_app import app

    run = run_create(topic_set_name="cacm", collection_name="cacm", model_name="bm25",
                     depth=100, source="titles")
    with app.connection_for_write() as conn:
        deleted = conn.default_channel.queue_purge(broker.queue)
    assert deleted == 6 == RunChunk.objects.filter(run=run, status="queued").count()
    return run


def _finishes_through_beat(broker: CeleryBroker, run: Run, pool, data_dir=None,
                           env=None) -> None:
    started = time.monotonic()
    env = {**BEAT_ENV, **(env or {})}
    w = broker.worker(pool=pool, concurrency=2, data_dir=data_dir, env=env)
    beat = broker.beat(data_dir=data_dir, env=env)
    deadline = started + 120
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in ("done", "failed") or not (w.alive and beat.alive):
            break
        time.sleep(0.5)
    took = time.monotonic() - started
    logs = w.tail(20000) + "\n" + beat.tail(20000)
    assert run.status == "done", f"run {run.status} {run.completed}/{run.total} after " \
                                 f"{took:.0f} s\n{logs}"
    # exactly once: every query ranked, one ranking per key
    keys = set(RunQuery.objects.filter(run=run).values_list("key", flat=True))
    assert run.completed == run.total == 24
    assert Ranking.objects.filter(key__in=keys).count() == len(keys)
    assert set(RunChunk.objects.filter(run=run).values_list("status", flat=True)) == {"done"}
    # beat woke the chunks: scheduled passes recorded, one of them woke all six
    scheduled = list(Reconciliation.objects.filter(origin="beat").order_by("started"))
    # (the newest pass may still be running when the run is seen done)
    assert [r for r in scheduled if r.finished] and not [r for r in scheduled if r.error]
    assert sum(r.counts["chunks"]["woken"] for r in scheduled if r.finished) >= 6
    assert not Reconciliation.objects.filter(origin="start", counts__chunks__woken__gt=0)
    # every scheduled task is sent and runs; nothing is logged as an error
    assert "Sending due task jobs-reconcile (jobs.tasks.reconcile_all_task)" in beat.tail(20000)
    bad = [line for line in logs.splitlines() if ERROR_LINE.search(line)]
    assert not bad, "\n".join(bad)
    out = io.StringIO()
    call_command("jobs", "--check-beat", stdout=out)
    assert "beat is alive" in out.getvalue()
    print(f"run finished {took:.1f} s after worker and beat started; "
          f"{len(scheduled)} scheduled reconciliations")


def test_beat_finishes_a_run_whose_messages_were_lost_on_redis(cacm_titles, celery_on_redis):
    broker = celery_on_redis(REDIS_DB, "beat")
    run = _queued_then_lost(broker)
    _finishes_through_beat(broker, run, pool="prefork")


def test_beat_finishes_a_run_whose_messages_were_lost_on_the_embedded_broker(cacm_titles,
                                                                             tmp_path):
    data_dir = tmp_path / "data"
    broker_dir = data_dir / "broker"
    options = {"data_folder_in": str(broker_dir / "queue"),
               "data_folder_out": str(broker_dir / "queue"),
               "control_folder": str(broker_dir / "control"),
               "processed_folder": str(broker_dir / "processed"), "store_processed": False}
    for d in ("queue", "processed", "control"):
        (broker_dir / d).mkdir(parents=True)
    with CeleryBroker("filesystem://localhost/", "beat-fs", options, tmp_path) as broker:
        run = _queued_then_lost(broker)
        # the settings' pool (threads on the embedded broker), as bin/serve runs it
        _finishes_through_beat(broker, run, pool=None, data_dir=data_dir,
                               env={"CELERY_WORKER_POOL": None})
