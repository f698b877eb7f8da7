"""An analysis asked for on its page runs on a real Celery worker process over Redis.

The page's commit sends the wake-up; the worker (``celery -A config worker``, a separate
process on a queue of its own) claims the row and stores the result; the page then shows
it. PostgreSQL only (the worker must open the test database) and Redis at 6379.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection

from evaluation.models import Analysis
from tests.evaluation.test_variability import build
from tests.conftest import celery_connections_reset

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/12"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def worker(transactional_db, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: a worker process cannot share the SQLite test database")
    if not _port_open(6379):
        pytest.skip("needs Redis at 127.0.0.1:6379")
    from config.celery_app import app

    queue = f"evaluation-test-{uuid.uuid4().hex[:12]}"
    keys = ("broker_url", "broker_transport_options", "task_default_queue")
    saved = {k: app.conf.get(k) for k in keys}
    app.conf.update(broker_url=REDIS_URL, broker_transport_options={}, task_default_queue=queue)
    celery_connections_reset(app)
    s = connection.settings_dict
    env = {**os.environ, "DEBUG": "1", "CELERY_BROKER_URL": REDIS_URL, "CELERY_TASK_DEFAULT_QUEUE": queue,
           "DATA_DIR": str(tmp_path),
           "DATABASE_URL": f"postgres://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:"
                           f"{s['PORT'] or 5432}/{s['NAME']}"}
    log_path = tmp_path / "worker.log"
    with open(log_path, "a") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "-Q", queue,
             "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield log_path
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with app.connection_for_write(REDIS_URL) as conn:
                conn.default_channel.queue_delete(queue)
            app.conf.update(saved)
            celery_connections_reset(app)


@pytest.mark.integration
@pytest.mark.slow
def test_the_page_queues_and_a_worker_runs_the_analysis(worker, client, tmp_path):
    build(tmp_path)
    client.force_login(User.objects.create_user("org", password="pw", is_staff=True))
    response = client.post("/evaluation/new/variability/", {"topic_set": "small", "source": "judgments:nist",
                                                            "measure": "P@2", "model": "bm25", "decompose": "on"})
    assert response.status_code == 302
    analysis = Analysis.objects.get()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        analysis.refresh_from_db()
        if analysis.status in ("done", "failed"):
            break
        time.sleep(0.3)
    assert analysis.status == "done", f"{analysis.status} {analysis.error}\n{worker.read_text()[-3000:]}"
    assert analysis.attempts == 1 and analysis.result["overall"]["variants"] == 8
    page = client.get(response["Location"]).content.decode()
    assert "<svg" in page and "Per topic: P@2" in page
