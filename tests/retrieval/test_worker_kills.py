"""Killing worker processes never stalls work: real `celery worker` processes on Redis (and
on the embedded filesystem broker) against the PostgreSQL test database, killed with
SIGKILL while CACM runs go on. After the worker is back every run finishes, every query
has its ranking, and each ranking was stored exactly once."""
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from crowd.models import Topic, TopicSet
from retrieval.models import Collection, Ranking, Run, RunChunk, RunQuery
from retrieval.services import run_create

from .test_worker_integration import _port_open, _reset_connections, _seed_models

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
REDIS_DB = 3


class Worker:
    """`celery -A config worker` in its own process group, started and killed at will."""

    def __init__(self, env: dict, args: list[str], log: Path):
        self.env, self.args, self.log = env, args, log
        self.proc = None

    def start(self) -> "Worker":
        celery = str(Path(sys.executable).with_name("celery"))
        out = open(self.log, "a")
        self.proc = subprocess.Popen(
            [celery, "-A", "config", "worker", *self.args, "--without-gossip",
             "--without-mingle", "--without-heartbeat", "-l", "INFO"],
            cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        out.close()
        return self

    def children(self) -> list[int]:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)],
                             capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def kill(self, sig=signal.SIGKILL):
        """The whole worker: main process and children."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _env(broker: str, queue: str, data_dir: Path, **extra) -> dict:
    db = connection.settings_dict
    return dict(os.environ, DEBUG="1", CELERY_BROKER_URL=broker,
                CELERY_TASK_DEFAULT_QUEUE=queue, DATA_DIR=str(data_dir),
                DJANGO_SETTINGS_MODULE="config.settings",
                DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:"
                             f"{db['PORT'] or 5432}/{db['NAME']}", **extra)


@pytest.fixture
def cacm_run_setup(transactional_db, settings, cacm_index, cacm_queries):
    """A CACM collection row over the session's index and 24 of its queries as titles
    (6 chunks of 4)."""
    _seed_models()
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (a worker process must see the test database); "
                    "set DATABASE_URL or start PostgreSQL on 127.0.0.1:5432")
    settings.RETRIEVAL_CHUNK_SIZE = 4
    Collection.objects.create(name="cacm", format="smart", source_path="cacm.all",
                              index_path=str(cacm_index), doc_count=3204, status="ready")
    ts = TopicSet.objects.create(name="cacm")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=q, title=t)
                               for q, t in list(cacm_queries.items())[:24]])
    yield
    _seed_models()


@pytest.fixture
def redis_worker(cacm_run_setup, tmp_path):
    """Start prefork workers (2 children) on Redis with a queue of their own."""
    if not _port_open(6379):
        pytest.skip("needs Redis on 127.0.0.1:6379 as the Celery broker")
    from config.celery_app import app

    queue = f"kills-{uuid.uuid4().hex[:10]}"
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    old = (app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.task_default_queue = broker, queue
    app.conf.broker_transport_options = {"visibility_timeout": 7200}
    _reset_connections(app)
    env = _env(broker, queue, tmp_path)
    workers = []

    def start(**extra) -> Worker:
        w = Worker(dict(env, **extra), ["-P", "prefork", "-c", "2", "-Q", queue],
                   tmp_path / "worker.log")
        workers.append(w.start())
        return w

    try:
        yield start
    finally:
        for w in workers:
            w.kill()  # disposable: no warm shutdown to wait for
        with app.connection_for_write(broker) as conn:
            conn.default_channel.queue_delete(queue)
        app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options = old
        _reset_connections(app)


def _runs(model="bm25", depth=100) -> Run:
    return run_create(topic_set_name="cacm", collection_name="cacm", model_name=model,
                      depth=depth, source="titles")


def _wait(run_ids, worker: Worker, timeout=90, until=("done",),
          fail_on_failed=True) -> list[Run]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(id__in=run_ids))
        if fail_on_failed and any(r.status == "failed" for r in runs):
            pytest.fail("run failed: " + "; ".join(r.error for r in runs if r.error))
        if all(r.status in until for r in runs):
            return runs
        time.sleep(0.3)
    pytest.fail(f"runs not done after {timeout} s: "
                + ", ".join(f"{r.status} {r.completed}/{r.total}" for r in runs)
                + "\n" + worker.tail())


def _running_chunk(worker: Worker, timeout=60) -> RunChunk:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        chunk = RunChunk.objects.filter(status="running").first()
        if chunk is not None:
            return chunk
        time.sleep(0.05)
    pytest.fail("no chunk was claimed\n" + worker.tail())


def _exactly_once(run: Run):
    """Every query ranked; every chunk done; one ranking per key, linked once per query."""
    assert run.completed == run.total == RunQuery.objects.filter(
        run=run, ranking__isnull=False).count()
    assert set(RunChunk.objects.filter(run=run).values_list("status", flat=True)) == {"done"}
    keys = set(RunQuery.objects.filter(run=run).values_list("key", flat=True))
    assert Ranking.objects.filter(key__in=keys).count() == len(keys)
    assert run.tasks_done == run.tasks_total == RunChunk.objects.filter(run=run).count()


def test_killing_an_idle_child_holding_a_jvm(redis_worker):
    worker = redis_worker()
    first = _runs("bm25")
    _wait([first.id], worker)
    children = worker.children()
    assert len(children) == 2
    # both children have served a chunk (and so loaded a JVM); kill one while it idles
    log = worker.tail()
    assert "ForkPoolWorker-1]" in log and "ForkPoolWorker-2]" in log
    os.kill(children[0], signal.SIGKILL)
    second = _runs("sdm")
    (second,) = _wait([second.id], worker)
    _exactly_once(second)
    assert worker.proc.poll() is None
    # a second delivery of a finished chunk returns without touching it
    from retrieval.tasks import chunk_retrieve_task

    chunk = RunChunk.objects.filter(run=second).first()
    ids = dict(Ranking.objects.values_list("key", "id"))
    chunk_retrieve_task.delay(chunk.pk)
    time.sleep(2)
    again = RunChunk.objects.get(pk=chunk.pk)
    assert (again.status, again.attempts, again.finished) == ("done", 1, chunk.finished)
    assert dict(Ranking.objects.values_list("key", "id")) == ids


def test_killing_a_busy_child(redis_worker):
    worker = redis_worker()
    run = _runs("sdm", depth=1000)
    chunk = _running_chunk(worker)
    pid = int(chunk.holder.rsplit(":", 1)[1])
    assert pid in worker.children()
    os.kill(pid, signal.SIGKILL)
    (run,) = _wait([run.id], worker)
    _exactly_once(run)
    chunk.refresh_from_db()
    assert chunk.status == "done" and chunk.attempts == 2  # taken over from the dead child


def test_killing_the_whole_worker(redis_worker):
    worker = redis_worker()
    run = _runs("sdm", depth=1000)
    _running_chunk(worker)
    worker.kill()
    time.sleep(1)
    run.refresh_from_db()
    assert run.status in ("queued", "running") and run.completed < run.total
    held = list(RunChunk.objects.filter(run=run, status="running"))
    assert held  # held by processes that no longer exist
    t0 = time.monotonic()
    worker = redis_worker()
    (run,) = _wait([run.id], worker, timeout=60)
    _exactly_once(run)
    print(f"run finished {time.monotonic() - t0:.1f} s after the worker restarted")
    for chunk in held:
        chunk.refresh_from_db()
        assert chunk.status == "done" and chunk.attempts == 2


def test_a_chunk_past_its_hard_time_limit_does_not_stay_running(redis_worker, settings):
    """The parent kills the child at the hard time limit before on_failure can run: the
    chunk stays "running" under a dead holder until the reconciler (beat every minute;
    here `recover`, every 2 s) re-queues it. It ends done, or failed with the reason after
    JOB_MAX_ATTEMPTS if the limited message keeps coming back; never running for ever."""
    from retrieval.tasks import chunk_retrieve_task

    settings.JOB_MAX_ATTEMPTS = 2
    worker = redis_worker(JOB_MAX_ATTEMPTS="2")
    Topic.objects.filter(topic_set__name="cacm").exclude(topic_id__in=["1", "2"]).delete()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chunk_retrieve_task, "delay", lambda *a, **k: None)  # no wake-up yet
        run = _runs("bm25", depth=1000)
    (chunk,) = RunChunk.objects.filter(run=run)
    # soft and hard limits of 1 s: a fresh child starts its JVM (seconds, in C code), the
    # soft signal waits for Python code and the parent kills the child at once
    chunk_retrieve_task.apply_async((chunk.pk,), time_limit=1, soft_time_limit=1)
    deadline = time.monotonic() + 60
    while "Hard time limit (1" not in worker.tail() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "Hard time limit (1" in worker.tail()
    run.refresh_from_db()
    chunk.refresh_from_db()
    if chunk.status == "running":  # else the limited message came back and failed it
        assert run.status == "running"  # on_failure never ran: only the ledger knows
    deadline = time.monotonic() + 90
    while run.status not in ("done", "failed") and time.monotonic() < deadline:
        call_command("recover", stdout=open(os.devnull, "w"))
        time.sleep(2)
        run.refresh_from_db()
    chunk.refresh_from_db()
    assert run.status in ("done", "failed"), worker.tail()
    if run.status == "done":
        _exactly_once(run)
    else:
        assert chunk.status == "failed" and run.error == chunk.error
        assert (chunk.error.startswith("failed after 2 attempt(s): its worker process ")
                or chunk.error.startswith("SoftTimeLimitExceeded")), chunk.error
    assert worker.proc.poll() is None


def test_embedded_broker_worker_killed_mid_run(cacm_run_setup, tmp_path):
    """The filesystem broker deletes a message when it hands it out: a worker killed
    mid-task loses it, and the ledger brings the chunk back when a worker starts. The
    embedded default pool is threads (no prefork children sharing a locked pipe)."""
    from config.celery_app import app

    queue = f"kills-fs-{uuid.uuid4().hex[:10]}"
    data_dir = tmp_path / "data"
    broker_dir = data_dir / "broker"
    options = {"data_folder_in": str(broker_dir / "queue"),
               "data_folder_out": str(broker_dir / "queue"),
               "control_folder": str(broker_dir / "control"),
               "processed_folder": str(broker_dir / "processed"), "store_processed": False}
    for d in ("queue", "processed", "control"):
        (broker_dir / d).mkdir(parents=True)
    old = (app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.task_default_queue = "filesystem://localhost/", queue
    app.conf.broker_transport_options = options
    _reset_connections(app)
    env = _env("filesystem://", queue, data_dir)
    env.pop("CELERY_WORKER_POOL", None)
    workers = []
    try:
        worker = Worker(env, ["-c", "2", "-Q", queue], tmp_path / "worker.log").start()
        workers.append(worker)
        run = _runs("sdm", depth=1000)
        _running_chunk(worker)
        assert worker.children() == []  # threads, not prefork children
        worker.kill()
        held = list(RunChunk.objects.filter(run=run, status="running"))
        assert held
        worker = Worker(env, ["-c", "2", "-Q", queue], tmp_path / "worker.log").start()
        workers.append(worker)
        (run,) = _wait([run.id], worker, timeout=60)
        _exactly_once(run)
        assert not (ROOT / "control" / f"{queue}.exchange").exists()
    finally:
        for w in workers:
            w.kill()  # disposable: no warm shutdown to wait for
        app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options = old
        _reset_connections(app)
