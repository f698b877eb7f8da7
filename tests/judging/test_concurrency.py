"""20 real processes judge one task with K = 3 on PostgreSQL: no item over K, none twice
to one assessor, nothing lost, no duplicated label, even with retried submits."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from judging import services
from judging.models import JudgingSlot, Label

from .conftest import make_pool

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 20
K = 3

WORKER = r"""
import os, random, sys, time
import django
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
django.setup()
from django.db import OperationalError
from judging import services
from judging.selectors import task_get

name, start = sys.argv[1], float(sys.argv[2])
rng = random.Random(name)
while time.time() < start:
    time.sleep(0.005)
task = task_get("conc")
judged = 0
while True:
    batch = services.batch_lease(task, name)
    if not batch:
        break
    for item in batch:
        key = f"{name}-{item.item_id}"
        grades = {i: rng.choice([0, 1, 2]) for i in item.intents}
        services.judgment_submit(task, name, item.item_id, grades, submit_key=key)
        if rng.random() < 0.2:  # a retried submit (double click, lost response)
            services.judgment_submit(task, name, item.item_id, grades, submit_key=key)
        judged += 1
print(judged)
"""


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_twenty_processes_k3(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent leasing is tested on PostgreSQL (set DATABASE_URL); "
                    "SQLite serialises writers")
    pool = make_pool(tmp_path, topics=("1", "2", "3"), docs=40)
    task = services.judging_task_create(pool=pool, name="conc", mode="intent", redundancy=K,
                                        batch=5, lease_minutes=30)
    s = connection.settings_dict
    url = (f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/"
           f"{s['NAME']}")
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "1", "PYTHONPATH": str(ROOT)}
    start = time.time() + 8
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, f"w{n:02d}", str(start)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for n in range(WORKERS)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    judged = sum(int(out.split()[-1]) for out, _ in outs)

    items = task.items_count
    slots = JudgingSlot.objects.filter(task=task)
    assert slots.count() == items * K
    assert set(slots.values_list("state", flat=True)) == {"done"}  # nothing lost
    per_item = Counter(slots.values_list("item_id", flat=True))
    assert max(per_item.values()) == K
    pairs = list(slots.values_list("item_id", "assessor"))
    assert len(pairs) == len(set(pairs))  # never twice to one assessor
    assert judged == items * K
    labels = Label.objects.filter(judgment_set=task.judgment_set)
    assert labels.count() == items * K * 2  # two intents, one revision each: no duplicate
    by_item = Counter(labels.filter(intent_id="1").values_list("item_id", flat=True))
    assert set(by_item.values()) == {K}
    workers = Counter(slots.values_list("assessor", flat=True))
    assert len(workers) > 1
