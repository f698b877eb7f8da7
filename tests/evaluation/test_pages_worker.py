"""An analysis asked for on its page runs on a real Celery worker process over Redis.

The page's commit sends the wake-up; the worker (``celery -A config worker``, a separate
process on a queue of its own) claims the row and stores the result; the page then shows
it. PostgreSQL only (the worker must open the test database) and Redis at 6379.
"""
from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User

from evaluation.models import Analysis
from tests.evaluation.test_variability import build

REDIS_DB = 12


@pytest.fixture
def worker(celery_on_redis):
    return celery_on_redis(REDIS_DB, "evaluation-test").worker(pool="solo")


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
    assert analysis.status == "done", f"{analysis.status} {analysis.error}\n{worker.tail()}"
    assert analysis.attempts == 1 and analysis.result["overall"]["variants"] == 8
    page = client.get(response["Location"]).content.decode()
    assert "<svg" in page and "Per topic: P@2" in page
