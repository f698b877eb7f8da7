"""Next-item and submit latency of the judging queue on a task of 1,000,000 items.

What an assessor waits for: ``judging.services.batch_lease`` (their next batch: expire
old leases, pick the topic, claim ``batch`` slots in priority order with
``FOR UPDATE SKIP LOCKED``, read the items) and ``judgment_submit`` (one item, all intents,
idempotent). The peer, timed alike in the same run on the same table, is the bare queue
a hand-written job queue would run: one ``SELECT id FROM slots WHERE task AND topic AND
free ORDER BY position LIMIT B FOR UPDATE SKIP LOCKED`` plus the ``UPDATE`` that leases
them, in one transaction (no exclusion of the assessor's own items, no K logic, no
expiry, no topic choice, no item read) on a task of the same items with one slot each.

Task (default): 100 topics x 10,000 documents = 1,000,000 items, K = 3 (3,000,000 slots),
two intents, batch 10, pool order; made directly in the tables (items by COPY, slots by
one INSERT ... SELECT, as ``judging_task_create`` does) over a placeholder pool, since
building a real 1M-document pool is the pooling bench's business. Then ``--procs``
assessor processes (default 1 and 8) each lease and judge ``--batches`` batches; every
call is timed. A second, adaptive task (``--adaptive-topics`` topics x 10,000 items, 100
contributing rankings of depth 1,000 per topic, order mtf) times ``batch_lease`` when the
order is replayed from the judgments. A third, learned task (``--learned-order``, default
``al-rank``; ``none`` leaves it out) of the same shape times ``batch_lease`` when the order
is a model refitted in the background: a real Celery worker (``celery -A config worker``
on the embedded filesystem broker in a scratch ``DATA_DIR``) makes the first fit of every
topic before the timing starts and refits each topic while the assessors judge, as the
queue queues the refits; the assessors' requests only read the stored rankings.

    .venv/bin/python bench/judging_queue_bench.py [--items-per-topic 10000] [--reuse]

Runs with ``DEBUG`` off, as the service does (with it on, Django logs every query, which
costs the side that sends more queries more).

Needs PostgreSQL on 127.0.0.1:5432; the scratch database (``--database``, default
``qv_judging_bench``) is dropped and recreated (kept for ``--reuse``). Writes
``bench/out/judging_queue_bench.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DB = "qv_judging_bench"
# the service's settings (DEBUG off needs a secret key; one for this run only)
SERVICE_ENV = {"DEBUG": "0", "HTTPS": "0", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
               "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(32)}
PG = "postgres://postgres@127.0.0.1:5432"
REFIT_ORDERS = ("al-rank", "cal-text", "cal")  # judging.learned.REFIT_ORDERS


def _url(db: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", db):
        raise SystemExit(f"database name {db!r}: use lower-case letters, digits and _")
    return f"{PG}/{db}"


def _recreate_database(db: str) -> None:
    _url(db)
    for sql in (f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"):
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q",
                        "-c", sql], check=True, capture_output=True, timeout=120)


def _setup_django(db: str, migrate: bool = False) -> None:
    os.environ["DATABASE_URL"] = _url(db)
    os.environ.update(SERVICE_ENV)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def _make_task(name: str, topics: int, per_topic: int, k: int, order: str,
               rankings: int = 0, depth: int = 0, seed: int = 0) -> None:
    from django.db import transaction

    from judging.models import JudgingItem, JudgingTask, JudgmentSet, TaskTopic
    from judging.services import SCALES
    from judging.services.imports import rows_insert
    from judging.services.judging_tasks import slots_create
    from pooling.models import Pool
    from topics.models import TopicSet

    ts, _ = TopicSet.objects.get_or_create(name="bench")
    pool, _ = Pool.objects.get_or_create(name="bench", defaults=dict(
        topic_set=ts, sources="systems", depth=1000, status="done"))
    rng = np.random.default_rng(seed)
    with transaction.atomic():
        jset = JudgmentSet.objects.create(name=name, source="task", topic_set=ts)
        task = JudgingTask.objects.create(
            name=name, pool=pool, judgment_set=jset, mode="intent", scale="trec-web",
            scale_grades=SCALES["trec-web"], redundancy=k, order=order, batch=10,
            lease_minutes=30, items_count=topics * per_topic)
        for t in range(topics):
            flat, offsets = np.zeros(0, np.int64), [0]
            if rankings:
                # each ranking: the pool's documents by a noisy score (popular ones early)
                parts = []
                for _ in range(rankings):
                    noisy = np.arange(per_topic) + rng.normal(0, per_topic / 4, per_topic)
                    parts.append(np.argsort(noisy, kind="stable")[:depth])
                flat = np.concatenate(parts)
                offsets = np.arange(rankings + 1) * depth
            TaskTopic.objects.create(
                task=task, topic_id=f"T{t:03d}", size=per_topic, intents=["1", "2"],
                rankings=np.asarray(flat, "<i4").tobytes(),
                offsets=np.asarray(offsets, "<i4").tobytes())
        rows_insert(JudgingItem, ("task", "topic_id", "docid", "position"), (
            (task.pk, f"T{t:03d}", f"T{t:03d}-doc{p:07d}", p)
            for t in range(topics) for p in range(1, per_topic + 1)))
        slots_create(task, k)
        if order in REFIT_ORDERS:
            from judging.services.refits import refits_create

            refits_create(task, {})  # woken on commit: the worker makes the first fits
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("ANALYZE judging_judgingslot; ANALYZE judging_judgingitem; "
                    "ANALYZE judging_label")


def _peer_claim(task_id: int, topic: str, assessor: str, batch: int) -> list[int]:
    """The bare skip-locked queue (see the module docstring)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            "SELECT id FROM judging_judgingslot WHERE task_id = %s AND topic_id = %s "
            "AND state = 'free' ORDER BY position, slot_no LIMIT %s FOR UPDATE SKIP LOCKED",
            [task_id, topic, batch])
        ids = [r[0] for r in cur.fetchall()]
        if ids:
            cur.execute(
                "UPDATE judging_judgingslot SET state = 'leased', assessor = %s, "
                "leased_at = now(), lease_expires = now() + interval '30 minutes' "
                "WHERE id = ANY(%s)", [assessor, ids])
    return ids


def worker(args) -> None:
    """One assessor process: ``--batches`` times lease a batch (timed), judge each item
    (timed submit), and time one peer claim on a peer task alike."""
    _setup_django(args.database)
    from judging import services
    from judging.selectors import task_get

    task = task_get(args.task)
    peer = task_get(args.peer_task) if args.peer_task else None
    rng = np.random.default_rng(abs(hash(args.name)) % (2**32))
    lease_ms, submit_ms, peer_ms = [], [], []
    # warm-up: one batch, untimed, on both sides
    for x in services.batch_lease(task, args.name):
        services.judgment_submit(task, args.name, x.item_id, {i: 0 for i in x.intents},
                                 submit_key=f"{args.name}-w-{x.item_id}")
    if peer:
        _peer_claim(peer.pk, "T000", args.name, peer.batch)
    for b in range(args.batches):
        t0 = time.perf_counter()
        batch = services.batch_lease(task, args.name)
        lease_ms.append((time.perf_counter() - t0) * 1000)
        if not batch:
            break
        for x in batch:
            grades = {i: int(rng.choice([0, 1, 2])) for i in x.intents}
            t0 = time.perf_counter()
            services.judgment_submit(task, args.name, x.item_id, grades,
                                     submit_key=f"{args.name}-{x.item_id}")
            submit_ms.append((time.perf_counter() - t0) * 1000)
        if peer:
            t0 = time.perf_counter()
            _peer_claim(peer.pk, f"T{b % 100:03d}", args.name, peer.batch)
            peer_ms.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"lease_ms": lease_ms, "submit_ms": submit_ms, "peer_ms": peer_ms}))


def _run_assessors(db: str, task: str, peer_task: str | None, procs: int, batches: int,
                   tag: str):
    env = {**os.environ, **SERVICE_ENV, "DATABASE_URL": _url(db)}
    cmd = [sys.executable, __file__, "--worker", "--database", db, "--task", task,
           "--batches", str(batches)]
    if peer_task:
        cmd += ["--peer-task", peer_task]
    ps = [subprocess.Popen(cmd + ["--name", f"{tag}-a{n:02d}"], env=env, cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
          for n in range(procs)]
    results = []
    for p in ps:
        out, err = p.communicate(timeout=3600)
        if p.returncode:
            raise RuntimeError(err[-3000:])
        results.append(json.loads(out.strip().splitlines()[-1]))
    merged = {k: [v for r in results for v in r[k]] for k in ("lease_ms", "submit_ms", "peer_ms")}
    return merged


def _start_refit_worker(db: str, data_dir: str, log: Path) -> subprocess.Popen:
    """A Celery worker (one thread) on the embedded broker in ``data_dir``: it takes the
    refit wake-ups the learned task's queue sends."""
    env = {**os.environ, **SERVICE_ENV, "DATABASE_URL": _url(db), "DATA_DIR": data_dir,
           "LOG_LEVEL": "INFO"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "threads", "-c", "1",
         "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
        env=env, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    proc.log_path = log
    return proc


def _wait_fitted(task_name: str, proc: subprocess.Popen, timeout: float = 600) -> float:
    """Wait until every topic of the task has a stored ranking and the worker has started
    (said "ready" and had time for the reconciliation a start sends), so that its start
    is not timed with the assessors; the seconds it took."""
    from judging.models import TopicRefit

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("the refit worker exited")
        rows = TopicRefit.objects.filter(task_topic__task__name=task_name)
        ready = " ready." in Path(proc.log_path).read_text(errors="replace")
        if ready and not rows.filter(fits=0).exists():
            time.sleep(5)
            return time.perf_counter() - t0
        time.sleep(0.5)
    raise RuntimeError(f"the refits of {task_name} were not done within {timeout:.0f} s")


def _refits(task_name: str) -> dict:
    from django.db.models import Count, Sum

    from judging.models import TopicRefit

    rows = TopicRefit.objects.filter(task_topic__task__name=task_name)
    return {"fits": rows.aggregate(n=Sum("fits"))["n"],
            "by_status": dict(rows.values_list("status").annotate(n=Count("id")))}


def _summary(ms: list[float]) -> dict:
    if not ms:
        return {}
    a = np.asarray(ms)
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)),
            "p95": float(np.percentile(a, 95)), "max": float(a.max())}


def _check(task_name: str) -> dict:
    from django.db.models import Count

    from judging.models import JudgingSlot, Label
    from judging.selectors import task_get

    task = task_get(task_name)
    over = (JudgingSlot.objects.filter(task=task).exclude(state="free").values("item_id")
            .annotate(n=Count("id")).filter(n__gt=task.redundancy).count())
    done = JudgingSlot.objects.filter(task=task, state="done").count()
    labels = Label.objects.filter(judgment_set=task.judgment_set, current=True).count()
    return {"items_over_k": over, "slots_done": done, "labels": labels,
            "labels_expected": done * 2, "lost_or_duplicated": labels - done * 2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--task", help=argparse.SUPPRESS)
    ap.add_argument("--peer-task", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--items-per-topic", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--procs", default="1,8")
    ap.add_argument("--adaptive-topics", type=int, default=5)
    ap.add_argument("--learned-order", default="al-rank", choices=["al-rank", "none"],
                    help="the learned order timed (none: leave it out; the text orders need "
                         "an indexed collection, which this bench does not build)")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--database", default=DB, help="scratch database (dropped and recreated)")
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    started = time.perf_counter()
    # a scratch DATA_DIR: its embedded broker carries the learned task's refit wake-ups
    # from this process and the assessors to the refit worker
    import tempfile

    data_dir = os.environ["DATA_DIR"] = tempfile.mkdtemp(prefix="judging-bench-")
    if not args.reuse:
        _recreate_database(args.database)
    _setup_django(args.database, migrate=not args.reuse)
    from judging.models import JudgingTask

    made = {}
    if not args.reuse:
        tasks = [("big", args.topics, "pool", 0, args.k), ("peer", args.topics, "pool", 0, 1),
                 ("adaptive", args.adaptive_topics, "mtf", 100, args.k)]
        if args.learned_order != "none":
            tasks.append(("learned", args.adaptive_topics, args.learned_order, 100, args.k))
        for name, topics, order, rankings, k in tasks:
            t0 = time.perf_counter()
            _make_task(name, topics, args.items_per_topic, k, order,
                       rankings=rankings, depth=min(1000, args.items_per_topic))
            made[name] = round(time.perf_counter() - t0, 1)
    big = JudgingTask.objects.get(name="big")
    result = {"items": big.items_count, "k": big.redundancy, "batch": big.batch,
              "setup_seconds": made, "runs": []}
    learned = JudgingTask.objects.filter(name="learned").first()
    refitter = None
    if learned is not None:
        out = ROOT / "bench" / "out"
        out.mkdir(parents=True, exist_ok=True)
        refitter = _start_refit_worker(args.database, data_dir,
                                       out / "judging_queue_bench_worker.log")
        result["learned_order"] = learned.order
        result["first_fits_seconds"] = round(_wait_fitted("learned", refitter), 1)
    for procs in [int(p) for p in args.procs.split(",")]:
        tag = f"p{procs}-{int(time.time())}"
        r = _run_assessors(args.database, "big", "peer", procs, args.batches, tag)
        ra = _run_assessors(args.database, "adaptive", None, procs, max(5, args.batches // 3),
                            tag)
        rl = (_run_assessors(args.database, "learned", None, procs, max(5, args.batches // 3),
                             tag) if learned is not None else None)
        run = {
            "procs": procs,
            "batch_lease": _summary(r["lease_ms"]),
            "judgment_submit": _summary(r["submit_ms"]),
            "peer_skip_locked_claim": _summary(r["peer_ms"]),
            "batch_lease_mtf": _summary(ra["lease_ms"]),
        }
        if rl is not None:
            run[f"batch_lease_{learned.order}"] = _summary(rl["lease_ms"])
        if r["peer_ms"]:
            run["ratio_p95_lease_vs_peer"] = run["batch_lease"]["p95"] / run[
                "peer_skip_locked_claim"]["p95"]
        result["runs"].append(run)
        print(json.dumps(run), flush=True)
    result["check"] = _check("big")
    result["check_adaptive"] = _check("adaptive")
    if learned is not None:
        time.sleep(2)  # the last refits queued
        result["check_learned"] = _check("learned")
        result["refits_learned"] = _refits("learned")
        os.killpg(refitter.pid, 15)
        refitter.wait(timeout=60)
    result["seconds"] = round(time.perf_counter() - started, 1)
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "judging_queue_bench.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
