"""Real Celery workers for integration tests: ``celery -A config worker`` processes on a real
broker, against the test database.

A worker is another process and must open the test database, so only PostgreSQL will do:
the helpers skip on SQLite, and skip when Redis is absent, each saying why.

The fixture ``celery_on_redis`` (every test has it; it brings ``transactional_db``, as
``live_server`` does) is a factory::

    def test_page_runs_the_task(celery_on_redis, live_server):
        worker = celery_on_redis(14, "browser-test").worker(pool="prefork", concurrency=1)
        ...  # what this process sends (``.delay()``, ``on_commit``; ``live_server``'s views
        ...  # run in this process too) reaches the worker
        assert worker.alive, worker.tail()

``celery_on_redis(redis_db, queue_prefix="test", **transport_options) -> CeleryBroker``
    Skips unless PostgreSQL and Redis at 127.0.0.1:6379. Points ``config.celery_app.app`` at
    ``redis://127.0.0.1:6379/<redis_db>`` with a queue of its own, ``<queue_prefix>-<hex>``,
    as the default queue (``transport_options`` apply to this process's sends). At teardown
    it stops every worker it started (``Worker.stop()``; ``kill()`` if disposable), deletes
    the queue and puts the app's broker, queue and options back. Redis dbs taken by test
    files: 3 (retrieval), 4 (pooling), 7 (judging), 9 (browser organiser), 12 (evaluation),
    13 (demo), 15 (uploads).

``CeleryBroker(url, queue_prefix, transport_options=None, log_dir=None)``
    The same as a context manager for any broker URL (the embedded broker:
    ``filesystem://localhost/`` and its folder options); no skips. Attributes ``url`` and
    ``queue``. ``log_dir`` (default: a new temporary folder) holds ``worker.log``, which
    every worker of the broker appends to, and each worker's default ``DATA_DIR``.

``CeleryBroker.worker(pool="prefork", concurrency=1, data_dir=None, env=None, ready=True,
disposable=False, app="config")``
    Starts ``celery -A <app> worker -P <pool> -c <concurrency> -Q <queue>`` (``pool=None``:
    the settings' pool) in a process group of its own, log level INFO, with this process's
    environment plus ``DATABASE_URL`` (the test database), ``CELERY_BROKER_URL``,
    ``CELERY_TASK_DEFAULT_QUEUE``, ``DATA_DIR`` (``data_dir``, default
    ``<log_dir>/worker-data``) and ``env`` (a value of ``None`` removes that variable).
    With ``ready`` it returns once the worker answers a ping (as ``celery inspect ping``
    does) and raises, with the log's end, if it exits or stays silent for 60 s. A
    ``disposable`` worker is killed (SIGKILL) at exit instead of stopped.

``CeleryBroker.beat(data_dir=None, env=None)``
    Starts ``celery -A config beat`` in a process group of its own with the workers'
    environment (so it sends to the broker's queue), its schedule file under the log
    folder and its log in ``beat.log``. Returns a :class:`Beat` (``pid``, ``proc``,
    ``log``, ``alive``, ``tail()``, ``stop()``, ``kill()``, as a worker has).

``Worker``
    ``pid``, ``proc`` (its ``subprocess.Popen``), ``name`` (the node name), ``log`` (path),
    ``alive``; ``children()``: the pool's process ids (prefork; ``[]`` for threads and
    solo); ``tail(chars=4000)``: the end of the log, for failure messages;
    ``wait_ready(timeout=60)``; ``stop(sig=SIGTERM, timeout=30)``: the whole group, a warm
    shutdown that lets running tasks finish, SIGKILL after ``timeout``; ``kill()``: SIGKILL
    to the whole group at once.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REDIS_PORT = 6379


def celery_connections_reset(app) -> None:
    """Drop the Celery app's broker connection pools so the next send uses the broker now
    configured. Without it, a test that pointed the app at Redis still sends through the
    connection an earlier test opened (to the embedded broker), and its worker never hears."""
    from kombu import pools

    pools.reset()  # kombu's process-wide producer pools, keyed by connection
    app._pool = None
    app.amqp._producer_pool = None


def require_postgresql() -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (a worker process must see the test database); "
                    "set DATABASE_URL or start PostgreSQL on 127.0.0.1:5432")


def require_redis() -> None:
    with socket.socket() as s:
        s.settimeout(1)
        if s.connect_ex(("127.0.0.1", REDIS_PORT)) != 0:
            pytest.skip(f"needs Redis on 127.0.0.1:{REDIS_PORT} as the Celery broker")


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    auth = (db["USER"] or "postgres") + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class _CeleryProcess:
    """A `celery -A config ...` process group logging to ``log``."""

    def __init__(self, args: list[str], env: dict, log: Path, disposable=False,
                 app: str = "config"):
        self.log, self.disposable = log, disposable
        with open(log, "a") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", app, *args],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def children(self) -> list[int]:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.pid)],
                             capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


class Beat(_CeleryProcess):
    """One `celery -A config beat` process group; see the module docstring."""

    def __init__(self, env: dict, schedule: Path, log: Path):
        super().__init__(["beat", "-s", str(schedule), "-l", "INFO"], env, log)


class Worker(_CeleryProcess):
    """One `celery -A config worker` process group; see the module docstring."""

    def __init__(self, name: str, args: list[str], env: dict, log: Path, disposable=False,
                 app: str = "config"):
        self.name = name
        super().__init__(["worker", *args, "-n", name, "--without-gossip", "--without-mingle",
                          "--without-heartbeat", "-l", "INFO"], env, log, disposable, app)

    def wait_ready(self, timeout: float = 60) -> "Worker":
        from config.celery_app import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive:
                raise RuntimeError(f"worker {self.name} exited with {self.proc.returncode} "
                                   f"before it was ready:\n{self.tail()}")
            if app.control.ping(destination=[self.name], timeout=0.5):
                return self
        raise RuntimeError(f"worker {self.name} did not answer a ping in {timeout} s:\n"
                           + self.tail())


class CeleryBroker:
    """The Celery app pointed at one broker and a queue of its own; see the module docstring."""

    def __init__(self, url: str, queue_prefix: str, transport_options: dict | None = None,
                 log_dir: Path | None = None):
        self.url, self.queue = url, f"{queue_prefix}-{uuid.uuid4().hex[:10]}"
        self.transport_options = transport_options or {}
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="celery-worker-"))
        self.workers: list[Worker] = []
        self.beats: list[Beat] = []

    def __enter__(self) -> "CeleryBroker":
        from config.celery_app import app

        self._saved = {k: app.conf.get(k) for k in
                       ("broker_url", "task_default_queue", "broker_transport_options")}
        app.conf.update(broker_url=self.url, task_default_queue=self.queue,
                        broker_transport_options=self.transport_options)
        celery_connections_reset(app)
        return self

    def __exit__(self, *exc) -> None:
        from config.celery_app import app

        try:
            for b in self.beats:
                b.stop()
            for w in self.workers:
                w.kill() if w.disposable else w.stop()
            with app.connection_for_write(self.url) as conn:
                conn.default_channel.queue_delete(self.queue)
        finally:
            app.conf.update(self._saved)
            celery_connections_reset(app)

    def _env(self, data_dir: Path | None, env: dict | None) -> dict:
        env = {**os.environ, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings",
               "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": self.url,
               "CELERY_TASK_DEFAULT_QUEUE": self.queue,
               "DATA_DIR": str(data_dir or self.log_dir / "worker-data"), **(env or {})}
        return {k: v for k, v in env.items() if v is not None}

    def beat(self, data_dir: Path | None = None, env: dict | None = None) -> Beat:
        beat = Beat(self._env(data_dir, env), self.log_dir / f"beat-{len(self.beats) + 1}.schedule",
                    self.log_dir / "beat.log")
        self.beats.append(beat)
        return beat

    def worker(self, pool: str | None = "prefork", concurrency: int = 1,
               data_dir: Path | None = None, env: dict | None = None,
               ready: bool = True, disposable: bool = False, app: str = "config") -> Worker:
        env = self._env(data_dir, env)
        args = (["-P", pool] if pool else []) + ["-c", str(concurrency), "-Q", self.queue]
        name = f"{self.queue}-{len(self.workers) + 1}@{socket.gethostname()}"
        worker = Worker(name, args, env, self.log_dir / "worker.log", disposable, app)
        self.workers.append(worker)
        return worker.wait_ready() if ready else worker


@pytest.fixture
def celery_on_redis(transactional_db, tmp_path):
    """Factory: ``celery_on_redis(redis_db, queue_prefix="test", **transport_options)``."""
    with contextlib.ExitStack() as stack:
        def point(redis_db: int, queue_prefix: str = "test", **transport_options) -> CeleryBroker:
            require_postgresql()
            require_redis()
            return stack.enter_context(CeleryBroker(
                f"redis://127.0.0.1:{REDIS_PORT}/{redis_db}", queue_prefix, transport_options,
                tmp_path))

        yield point
