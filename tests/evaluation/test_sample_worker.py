"""Estimates from a judged sample asked for on the evaluation page run on a real Celery
worker process over Redis, and equal ``evaluate --estimator``. PostgreSQL only (the
worker must open the test database) and Redis at 6379."""
from __future__ import annotations

import io
import json
import time

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from evaluation.models import Analysis
from judging import services
from tests.judging.conftest import make_pool

REDIS_DB = 11


@pytest.fixture
def worker(celery_on_redis):
    return celery_on_redis(REDIS_DB, "sample-test").worker(pool="solo")


@pytest.mark.integration
@pytest.mark.slow
def test_a_worker_estimates_from_a_sample(worker, client, tmp_path):
    pool = make_pool(tmp_path, docs=12)
    task = services.judging_task_create(pool=pool, name="s", mode="sample", scale="binary",
                                        sample_budget="50%", sample_strata="depth:3,6", sample_seed=4)
    while batch := services.batch_lease(task, "ann"):
        for item in batch:  # documents d1, d4, d7, d10 of each topic are relevant
            grade = int(int(item.docid.rsplit("d", 1)[1]) % 3 == 1)
            services.judgment_submit(task, "ann", item.item_id, {"": grade}, submit_key=str(item.item_id))
    client.force_login(User.objects.create_user("org", password="pw", is_staff=True))
    response = client.post("/evaluation/new/evaluate/", {
        "topic_set": "ts", "runs": ["ts/r1", "ts/r2"], "source": "judgments:s", "measures": "AP P@5",
        "order": "trec_eval", "estimator": "statap"})
    assert response.status_code == 302, response.content.decode()[:2000]
    analysis = Analysis.objects.get()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        analysis.refresh_from_db()
        if analysis.status in ("done", "failed"):
            break
        time.sleep(0.3)
    assert analysis.status == "done", f"{analysis.status} {analysis.error}\n{worker.tail()}"
    out = io.StringIO()
    call_command("evaluate", "--topic-set", "ts", "--tag", "r1", "--tag", "r2", "--judgments", "s",
                 "--estimator", "statap", "--measures", "AP P@5", "--json", stdout=out)
    assert analysis.result["runs"] == json.loads(out.getvalue())["runs"]
    page = client.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "AP (statAP)" in page and "95% low" in page
