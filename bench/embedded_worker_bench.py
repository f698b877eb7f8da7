"""The embedded worker: threads pool vs prefork on the filesystem broker (and prefork on Redis).

    .venv/bin/python bench/embedded_worker_bench.py --database-url postgres://…/emptydb
        [--queries 1000] [--concurrency 2] [--chunk 200] [--repeats 3]

The embedded default (`bin/serve`: filesystem broker) runs its worker with the threads
pool, because a polling broker gives Celery's prefork pool one locked pipe shared by the
children (an idle child killed while it waits holds the lock for ever). This measures what
that costs: CACM document titles as queries (distinct texts, BM25, depth 1000), from
`run_create` until the run is done, each worker warmed first by a run of the same size at
another depth (so its JVMs have compiled the search path). Configurations alternate within
each repeat. Prints a table; JSON goes to bench/out/embedded_worker_bench.json.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = [("filesystem", "threads"), ("filesystem", "prefork"), ("redis", "prefork")]


def cacm_titles(path: Path, n: int) -> list[str]:
    titles, field, cur = [], None, []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I "):
            if cur:
                titles.append(" ".join(cur))
            cur, field = [], None
        elif line[:2] in (".T", ".W", ".B", ".A", ".N", ".X", ".K", ".C") and len(line.strip()) == 2:
            field = line[1]
        elif field == "T":
            cur += line.split()
    if cur:
        titles.append(" ".join(cur))
    seen, out = set(), []
    for t in titles:
        k = " ".join(t.lower().split())
        if k not in seen:
            seen.add(k)
            out.append(t)
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    a = ap.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="embedded-bench-"))
    os.environ.update(DEBUG="1", DATABASE_URL=a.database_url, DATA_DIR=str(data_dir),
                      RETRIEVAL_CHUNK_SIZE=str(a.chunk), DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.pop("CELERY_BROKER_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from config.celery_app import app
    from retrieval.models import Collection, Run
    from retrieval.services import run_create
    from topics.models import Topic, TopicSet

    call_command("migrate", verbosity=0)
    cacm = Path(a.data) / "small-corpora" / "cacm" / "cacm.all"
    if not Collection.objects.filter(name="cacm-bench").exists():
        call_command("import_collection", "cacm-bench", str(cacm), "--format", "smart",
                     stdout=open(os.devnull, "w"))
    name = f"bench-{uuid.uuid4().hex[:6]}"
    ts = TopicSet.objects.create(name=name)
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=str(i + 1), title=t)
                               for i, t in enumerate(cacm_titles(cacm, a.queries))])
    n = ts.topics.count()
    fs_options = dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    celery = str(Path(sys.executable).with_name("celery"))
    depth = [1000]
    results = {f"{b}/{p}": [] for b, p in CONFIGS}

    def timed_run() -> float:
        depth[0] += 1
        t0 = time.perf_counter()
        run = run_create(topic_set_name=name, collection_name="cacm-bench", model_name="bm25",
                         depth=depth[0], source="titles")
        while True:
            run.refresh_from_db()
            if run.status == "done":
                return time.perf_counter() - t0
            if run.status == "failed" or time.perf_counter() - t0 > 900:
                raise RuntimeError(f"run {run.id}: {run.status} {run.error}")
            time.sleep(0.05)

    for repeat in range(a.repeats):
        for broker, pool in CONFIGS:
            queue = f"bench-{uuid.uuid4().hex[:8]}"
            if broker == "redis":
                url, options = "redis://127.0.0.1:6379/4", {}
            else:
                url, options = "filesystem://localhost/", fs_options
            app.conf.update(broker_url=url, broker_transport_options=options,
                            task_default_queue=queue)
            from kombu import pools

            pools.reset()
            app._pool = None
            app.amqp._producer_pool = None
            env = dict(os.environ, CELERY_BROKER_URL=url, CELERY_TASK_DEFAULT_QUEUE=queue)
            proc = subprocess.Popen(
                [celery, "-A", "config", "worker", "-P", pool, "-c", str(a.concurrency),
                 "-Q", queue, "--without-gossip", "--without-mingle", "--without-heartbeat",
                 "-l", "WARNING"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                timed_run()  # warm-up: JVMs started and compiled
                seconds = timed_run()
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=60)
            results[f"{broker}/{pool}"].append(seconds)
            print(f"repeat {repeat + 1} {broker}/{pool}: {n} queries in {seconds:.2f} s "
                  f"({n / seconds:.0f} q/s)", flush=True)
    Run.objects.filter(topic_set=ts).delete()
    ts.delete()
    base = results["filesystem/prefork"]
    print(f"\n{'config':22} {'q/s (per repeat)':30} ratio to filesystem/prefork")
    for key, secs in results.items():
        rates = [n / s for s in secs]
        ratios = [b / s for b, s in zip(base, secs)]
        print(f"{key:22} {', '.join(f'{r:.0f}' for r in rates):30} "
              f"{', '.join(f'{r:.2f}' for r in ratios)}")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "embedded_worker_bench.json").write_text(json.dumps({
        "queries": n, "concurrency": a.concurrency, "chunk": a.chunk, "seconds": results,
    }, indent=2))


if __name__ == "__main__":
    main()
