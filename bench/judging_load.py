"""Load bench for the judging pages: 50 assessors at once on a task of 1,000,000 items.

Starts the service under gunicorn on 127.0.0.1 against a scratch PostgreSQL database with
one judging task of ``--topics`` x ``--items-per-topic`` items (default 100 x 10,000 = 1M,
K = 3, two intents; made in the tables as ``bench/judging_queue_bench.py`` makes it), and
an indexed collection holding the first ``--docs-per-topic`` documents of every topic as
small HTML pages, so the page reads and renders real document text from the index. Then
``--assessors`` signed-in assessors (threads, one cookie jar each) judge through the
pages exactly as a browser without JavaScript does:

- next item: ``GET /judging/tasks/big/`` — lease (or keep) the batch, read the document
  from the index, mark the query terms, progress, render;
- submit: ``POST`` the form (a grade per intent, the CSRF token, the signed reference);
  a share of submits (``--repeat``) is posted twice, as a double click does.

Each assessor waits ``--think`` seconds (exponential, mean) between reading and submitting.
The peer, timed alike by the same clients against the same gunicorn in the same run, is
the sign-in page (``GET /accounts/login/``): Django's own floor for a rendered page with
a session and a CSRF token, no query of ours.

Afterwards the database is checked against what the clients saw: every submit answered
with a redirect has its labels (``lost``); no assessor has two current labels or a second
revision of one item and intent (``duplicated``); no item is held by more than K
assessors. Writes ``bench/out/judging_load.json``.

    .venv/bin/python bench/judging_load.py [--assessors 50] [--seconds 60]

Everything targets 127.0.0.1; every loop is bounded in count and the run in time. The
scratch database (default ``qv_judging_load``) is dropped and recreated on each run.

``--order al-rank`` makes the task a learned order (100 contributing rankings per topic, as
the queue bench's adaptive task) and starts a Celery worker on the embedded broker of a
scratch ``DATA_DIR``: it makes every topic's first fit before the clients start and
refits topics while they judge; gunicorn only reads the stored rankings.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from crowd_load import (  # noqa: E402  (bench scripts share helpers by path)
    CSRF_RE, HOST, Browser, cpu_snapshot, cpu_used, pct, recreate_database,
)

REF_RE = re.compile(r'name="ref" value="([^"]+)"')
DOCID_RE = re.compile(r'<p class="muted">Document ([^<]+)</p>')
GRADE_RE = re.compile(r'name="grade_(\d+)"')


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--assessors", type=int, default=50)
    p.add_argument("--seconds", type=float, default=60.0, help="length of the timed run")
    p.add_argument("--think", type=float, default=1.0, help="mean seconds between read and submit")
    p.add_argument("--repeat", type=float, default=0.05, help="share of submits posted twice")
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--items-per-topic", type=int, default=10_000)
    p.add_argument("--docs-per-topic", type=int, default=200,
                   help="documents of each topic stored in the index")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--order", default="pool", choices=["pool", "al-rank"],
                   help="the task's order; al-rank: 100 contributing rankings per topic, "
                        "its model refitted by a real Celery worker while the assessors judge")
    p.add_argument("--gunicorn-workers", type=int, default=4)
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    p.add_argument("--database", default="qv_judging_load")
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "judging_load.json")
    p.add_argument("--reuse", action="store_true",
                   help="keep the scratch database and task of the previous run")
    return p.parse_args(argv)


def page_html(topic: str, n: int) -> str:
    return (f"<html><head><title>Bench page {n} of {topic}</title></head><body>"
            f"<p>This page is about bench subject {topic}, written for the judging load "
            f"test; document number {n}.</p><p>More text &amp; a second paragraph.</p>"
            "</body></html>")


def build(args, work: Path) -> None:
    """The task, its topics and the indexed documents (in the scratch database)."""
    from judging_queue_bench import _make_task

    from judging.models import JudgingTask
    from retrieval import anserini
    from retrieval.collections_io import read_collection, write_json_collection
    from retrieval.models import Collection
    from topics.models import Intent, Topic, TopicSet

    t0 = time.perf_counter()
    learned = args.order != "pool"
    _make_task("big", args.topics, args.items_per_topic, args.k, args.order,
               rankings=100 if learned else 0,
               depth=min(1000, args.items_per_topic) if learned else 0)
    made = time.perf_counter() - t0
    ts = TopicSet.objects.get(name="bench")
    topics = Topic.objects.bulk_create([
        Topic(topic_set=ts, topic_id=f"T{t:03d}", title=f"bench subject T{t:03d}",
              description=f"Find pages about bench subject T{t:03d}.")
        for t in range(args.topics)])
    Intent.objects.bulk_create([Intent(topic=t, intent_id=i, description=f"aspect {i}")
                                for t in topics for i in ("1", "2")])
    src = work / "docs.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for t in range(args.topics):
            for n in range(1, min(args.docs_per_topic, args.items_per_topic) + 1):
                fh.write(json.dumps({"id": f"T{t:03d}-doc{n:07d}",
                                     "contents": page_html(f"T{t:03d}", n)}) + "\n")
    t0 = time.perf_counter()
    write_json_collection(read_collection(src, "jsonl"), work / "json")
    docs = anserini.index_build(work / "json", work / "index")
    indexed = time.perf_counter() - t0
    c = Collection.objects.create(name="bench-docs", format="jsonl", source_path=str(src),
                                  index_path=str(work / "index"), doc_count=docs,
                                  status="ready")
    JudgingTask.objects.filter(name="big").update(collection=c)
    return {"task_seconds": round(made, 1), "index_seconds": round(indexed, 1),
            "indexed_documents": docs}


def session_cookies(n: int) -> list[str]:
    """Signed-in sessions of assessors a00 … a{n-1} (session rows made directly)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    out = []
    for i in range(n):
        user = User.objects.create_user(f"a{i:02d}", password=secrets.token_urlsafe(12))
        s = SessionStore()
        s[SESSION_KEY] = str(user.pk)
        s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        s[HASH_SESSION_KEY] = user.get_session_auth_hash()
        s.create()
        out.append(s.session_key)
    return out


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.next_ms: list[float] = []
        self.submit_ms: list[float] = []
        self.repeat_ms: list[float] = []
        self.peer_ms: list[float] = []
        self.acked: dict[str, set[str]] = {}
        self.errors: list[str] = []


def assessor(i: int, session: str, args, results: Results, barrier: threading.Barrier):
    rng = random.Random(i)
    name = f"a{i:02d}"
    b = Browser(args.port, 120)
    b.cookies["sessionid"] = session
    acked: set[str] = set()
    next_ms, submit_ms, repeat_ms, peer_ms = [], [], [], []
    try:
        # warm-up, untimed on both sides: one page and the peer page (each gunicorn worker
        # starts its JVM on its first document); the clock starts when all are warm
        try:
            b.request("GET", "/judging/tasks/big/")
            b.request("GET", "/accounts/login/")
        finally:
            barrier.wait(timeout=600)
        time.sleep(rng.uniform(0, 1))  # arrivals spread over a second
        deadline = time.monotonic() + args.seconds
        for _ in range(100_000):
            if time.monotonic() >= deadline:
                break
            status, _, body, elapsed = b.request("GET", "/judging/tasks/big/")
            if status != 200:
                raise RuntimeError(f"next item: HTTP {status}: {body[:300]}")
            next_ms.append(elapsed * 1000)
            ref, docid = REF_RE.search(body).group(1), DOCID_RE.search(body).group(1)
            rows = sorted({int(n) for n in GRADE_RE.findall(body)})
            form = {"csrfmiddlewaretoken": CSRF_RE.search(body).group(1), "ref": ref,
                    "action": "judge", **{f"grade_{n}": rng.choice("0123") for n in rows}}
            time.sleep(min(rng.expovariate(1 / args.think), 10 * args.think)
                       if args.think > 0 else 0)
            status, location, body, elapsed = b.request("POST", "/judging/tasks/big/", form)
            if status != 302:
                raise RuntimeError(f"submit: HTTP {status}: {body[:300]}")
            submit_ms.append(elapsed * 1000)
            acked.add(docid)
            if rng.random() < args.repeat:
                status, _, body, elapsed = b.request("POST", "/judging/tasks/big/", form)
                if status != 302:
                    raise RuntimeError(f"repeat: HTTP {status}: {body[:300]}")
                repeat_ms.append(elapsed * 1000)
            status, _, _, elapsed = b.request("GET", "/accounts/login/")
            peer_ms.append(elapsed * 1000)
    except Exception as exc:  # reported with the results, never swallowed
        with results.lock:
            results.errors.append(f"{name}: {exc!r}")
    with results.lock:
        results.next_ms += next_ms
        results.submit_ms += submit_ms
        results.repeat_ms += repeat_ms
        results.peer_ms += peer_ms
        results.acked[name] = acked


def check(results: Results, k: int, since) -> dict:
    """The database against what the clients saw, for the labels made since ``since``."""
    from django.db.models import Count

    from judging.models import JudgingSlot, Label

    labels = Label.objects.filter(judgment_set__name="big", created__gte=since)
    stored: dict[str, set[str]] = {}
    for a, d in labels.filter(current=True).values_list("assessor", "docid").distinct():
        stored.setdefault(a, set()).add(d)
    lost = sum(len(docs - stored.get(a, set())) for a, docs in results.acked.items())
    unacked = sum(len(docs - results.acked.get(a, set())) for a, docs in stored.items())
    duplicated = (labels.values("assessor", "docid", "intent_id").annotate(n=Count("id"))
                  .filter(n__gt=1).count())
    over_k = (JudgingSlot.objects.filter(task__name="big").exclude(state="free")
              .values("item_id").annotate(n=Count("id")).filter(n__gt=k).count())
    return {"submits_acknowledged": sum(len(v) for v in results.acked.values()),
            "labels": labels.count(), "lost": lost, "duplicated": duplicated,
            "stored_not_acknowledged": unacked, "items_over_k": over_k}


def server_times(log: Path) -> dict:
    """Time per request inside gunicorn (from its access log: request read to response
    written), per kind of request, warm-up requests included."""
    kinds = {("GET", "/judging/tasks/big/"): "next_item", ("POST", "/judging/tasks/big/"): "submit",
             ("GET", "/accounts/login/"): "peer_login_page"}
    got: dict[str, list[float]] = {k: [] for k in kinds.values()}
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and (parts[0], parts[1]) in kinds:
            got[kinds[(parts[0], parts[1])]].append(float(parts[3]))
    return {k: summary(v) for k, v in got.items()}


def summary(ms: list[float]) -> dict:
    return {"n": len(ms), "p50": pct(ms, 50), "p95": pct(ms, 95), "p99": pct(ms, 99)}


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.pg.startswith("postgres://postgres@127.0.0.1:"):
        raise SystemExit("the bench only targets PostgreSQL on 127.0.0.1")
    env = dict(os.environ)
    # a scratch DATA_DIR: its embedded broker carries a learned order's refit wake-ups
    # from gunicorn to the refit worker
    env.update(DATA_DIR=tempfile.mkdtemp(prefix="judging-load-data-"))
    env.update(DATABASE_URL=f"{args.pg}/{args.database}", DEBUG="0", HTTPS="0",
               SECRET_KEY=secrets.token_urlsafe(32), ALLOWED_HOSTS=HOST, LOG_LEVEL="WARNING",
               DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.update(env)
    if not args.reuse:
        recreate_database(args.pg, args.database)
    py = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True,
                   timeout=300)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import User
    from judging.models import JudgingTask

    if args.reuse and JudgingTask.objects.filter(name="big").exists():
        setup = {"reused": True}
        User.objects.filter(username__regex=r"^a[0-9]+$").delete()
    else:
        work = Path(tempfile.mkdtemp(prefix="judging-load-"))
        setup = build(args, work)
    sessions = session_cookies(args.assessors)
    access_log = Path(tempfile.mkdtemp(prefix="judging-load-log-")) / "access.log"
    gunicorn = [str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi:application",
                "--bind", f"{HOST}:{args.port}", "--workers", str(args.gunicorn_workers),
                "--backlog", "2048", "--timeout", "60", "--log-level", "warning",
                "--access-logfile", str(access_log),
                "--access-logformat", "%(m)s %(U)s %(s)s %(M)s"]
    proc = subprocess.Popen(gunicorn, cwd=ROOT, env=env, start_new_session=True)
    results = Results()
    refitter = None
    try:
        if JudgingTask.objects.get(name="big").order != "pool":
            from judging_queue_bench import _refits, _start_refit_worker, _wait_fitted

            refitter = _start_refit_worker(args.database, env["DATA_DIR"],
                                           args.json.parent / "judging_load_worker.log")
            setup["first_fits_seconds"] = round(_wait_fitted("big", refitter, 1800), 1)
        _wait_ready(args.port, proc)
        barrier = threading.Barrier(len(sessions) + 1)
        threads = [threading.Thread(target=assessor, daemon=True,
                                    args=(i, s, args, results, barrier))
                   for i, s in enumerate(sessions)]
        for t in threads:
            t.start()
        from django.utils import timezone

        since = timezone.now()
        barrier.wait(timeout=600)
        cpu_before = cpu_snapshot(proc.pid, args.database)
        start = time.monotonic()
        deadline = start + args.seconds + 1
        for t in threads:
            t.join(timeout=max(1.0, deadline + 60 - time.monotonic()))
        wall = time.monotonic() - start
        cpu = cpu_used(cpu_before, cpu_snapshot(proc.pid, args.database))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if refitter is not None:
            setup["refits"] = _refits("big")
            os.killpg(refitter.pid, 15)
            refitter.wait(timeout=60)
    out = {
        "assessors": args.assessors, "seconds": round(wall, 1), "think_mean_s": args.think,
        "gunicorn_workers": args.gunicorn_workers, "items": args.topics * args.items_per_topic,
        "order": JudgingTask.objects.get(name="big").order,
        "k": args.k, "setup": setup, "cpu_seconds": cpu,
        "next_item_ms": summary(results.next_ms), "submit_ms": summary(results.submit_ms),
        "repeat_submit_ms": summary(results.repeat_ms),
        "peer_login_page_ms": summary(results.peer_ms),
        "submits_per_second": round(len(results.submit_ms) / wall, 1),
        "server_side_ms": server_times(access_log),
        "check": check(results, args.k, since), "errors": results.errors[:20],
    }
    if results.peer_ms:
        peer = pct(results.peer_ms, 95)
        out["ratio_p95_next_item_vs_peer"] = round(pct(results.next_ms, 95) / peer, 2)
        out["ratio_p95_submit_vs_peer"] = round(pct(results.submit_ms, 95) / peer, 2)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 1 if results.errors or out["check"]["lost"] or out["check"]["duplicated"] else 0


def _wait_ready(port: int, proc, limit_s: float = 60):
    t_end = time.monotonic() + limit_s
    while time.monotonic() < t_end:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited with {proc.returncode}")
        try:
            status, *_ = Browser(port, 2).request("GET", "/accounts/login/")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not answer in time")


if __name__ == "__main__":
    sys.exit(main())
