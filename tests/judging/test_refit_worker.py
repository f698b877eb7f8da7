"""A learned order on a real Celery worker: the task's creation wakes one refit per topic,
the worker stores the first fits, the queue hands items out in the stored order, and a
batch's worth of judgments queues a refit that the worker makes while the assessors go on.
PostgreSQL and Redis (tests/workers.py); skipped, saying why, without them."""
import time

import numpy as np
import pytest

from judging import services
from judging.models import TopicRefit
from judging.services import refits
from pooling.selectors import pool_documents

from .conftest import make_pool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
REDIS_DB = 7  # judging's db (tests/workers.py)


def _wait(condition, worker, seconds=90):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert condition(), worker.tail()


def test_the_worker_fits_and_refits_while_the_queue_only_reads(
        settings, tmp_path, celery_on_redis):
    worker = celery_on_redis(REDIS_DB, "refit-test").worker(
        pool="threads", concurrency=1, env={"DATA_DIR": str(tmp_path)})
    settings.DATA_DIR = tmp_path
    pool = make_pool(tmp_path, topics=("1", "2"), docs=2 * refits.REFIT_EVERY)
    task = services.judging_task_create(pool=pool, name="t", mode="topic", order="al-rank",
                                        redundancy=1, batch=refits.REFIT_EVERY)  # woken
    rows = TopicRefit.objects.filter(task_topic__task=task)
    _wait(lambda: all(r.status == "done" and r.fits == 1 for r in rows.all()), worker)
    row = rows.get(task_topic__topic_id="1")
    ranking = np.frombuffer(bytes(row.ranking), "<i4")
    docs = [d.docid for d in pool_documents(pool) if d.topic_id == "1"]
    batch = services.batch_lease(task, "a")
    assert {x.docid for x in batch} == {docs[i] for i in ranking[:refits.REFIT_EVERY]}
    for n, item in enumerate(batch):
        services.judgment_submit(task, "a", item.item_id, {"": int(n < 3)},
                                 submit_key=f"k{n}")
    nxt = services.batch_lease(task, "a")  # queues the refit; the items of the old order
    assert {x.docid for x in nxt} == {docs[i] for i in ranking[refits.REFIT_EVERY:]}
    _wait(lambda: rows.get(pk=row.pk).fits == 2, worker)
    row = rows.get(pk=row.pk)
    assert (row.status, row.fitted_labels, row.error) == ("done", refits.REFIT_EVERY, "")
    assert worker.alive
