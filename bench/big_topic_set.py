"""A topic set of a million topics: import memory and progress, and page and API times.

What an organiser with a big set waits for. The bench writes a 10^6-topic TSV (one row
per topic: ``id<TAB>statement<TAB>title``, ~25 MB as in the report that found the import
peaking at 2.2 GB), records it as an upload
(``uploads.services.upload_create``, as the upload page does) and imports it with
``upload_run`` in a child process -- the worker's service -- while this process reads the
upload row once a second, so the progress the page would show is recorded as it moves.
The child's peak resident memory (``ru_maxrss``) is the import's; it runs with DEBUG off,
as a worker does (with DEBUG on, Django keeps the text of every query).

Then every page and API read of the set is timed through Django's test client against the
same database, each one warm-up then the median of ``--repeat``: the topic set page (first
page and one near the end through ``?after=``), the project page, the crowd index, and the
API's topic set, topic list (first page, near the end, and following ``next`` from there),
one topic, and the intents. The query count of each request is recorded beside it.

    .venv/bin/python bench/big_topic_set.py [--topics 1000000] [--repeat 5]
    .venv/bin/python bench/big_topic_set.py --reuse     # keep the imported set, time reads

Needs PostgreSQL on 127.0.0.1:5432; the scratch database (default ``qv_big_topics``) is
dropped and recreated on each run (kept afterwards for ``--reuse``; drop it with
``dropdb``). Writes ``bench/out/big_topic_set.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SET = "big"

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.environ["BENCH_ROOT"])
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from uploads.services import upload_run
start = time.monotonic()
row = upload_run(int(sys.argv[1]))
print(json.dumps({"status": row.status, "error": row.error, "result": row.result,
                  "seconds": time.monotonic() - start,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _recreate_database(name: str) -> str:
    for sql in (f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"):
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q",
                        "-c", sql], check=True, capture_output=True, timeout=120)
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def _setup_django(database_url: str, data_dir: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DATA_DIR"] = data_dir
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _write_tsv(path: Path, topics: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write("id\tstatement\ttitle\n")
        for i in range(1, topics + 1):
            out.write(f"T{i}\tstatement {i}\ttitle\n")


def _import(topics: int, tmp: Path) -> dict:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from uploads.models import Upload
    from uploads.services import upload_create

    path = tmp / "topics.tsv"
    _write_tsv(path, topics)
    size = path.stat().st_size
    upload = SimpleUploadedFile("topics.tsv", path.read_bytes())
    from unittest import mock

    with mock.patch("uploads.services._upload_wake"):  # the child process is the worker
        row = upload_create("topics", upload, {"topic_set": SET, "format": "tsv"})
    # the worker runs as in production: DEBUG off (DEBUG keeps every query's text)
    env = {**os.environ, "BENCH_ROOT": str(ROOT), "DEBUG": "0",
           "SECRET_KEY": "bench-only-not-secret", "ALLOWED_HOSTS": "localhost"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(row.pk)], env=env,
                             stdout=subprocess.PIPE, text=True)
    seen, start = [], time.monotonic()
    while child.poll() is None:
        time.sleep(1.0)
        progress = Upload.objects.filter(pk=row.pk).values_list("progress", flat=True).first()
        seen.append((round(time.monotonic() - start, 1), progress))
    out = json.loads(child.stdout.read().strip().splitlines()[-1])
    if out["status"] != "done":
        raise SystemExit(f"import failed: {out['error']}")
    return {"file_mb": round(size / 1e6, 1), **out, "progress_seen": seen}


def _time_reads(repeat: int) -> list[dict]:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from topics.models import Topic, TopicSet

    ts = TopicSet.objects.get(name=SET)
    user = User.objects.filter(username="bench").first() or User.objects.create_user(
        "bench", password="bench-pw-123", is_staff=True)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    near_end = Topic.objects.filter(topic_set=ts).order_by("-sort_key").values_list(
        "topic_id", flat=True)[60]
    last = Topic.objects.filter(topic_set=ts).order_by("-sort_key").values_list(
        "topic_id", flat=True).first()
    api_near_end = client.get(f"/api/topic-sets/{SET}/topics/", {"after": near_end}).json()
    urls = [
        ("topic set page, first", f"/crowd/topic-sets/{ts.pk}/", {}),
        ("topic set page, near the end", f"/crowd/topic-sets/{ts.pk}/", {"after": near_end}),
        ("project page", f"/crowd/topic-sets/{ts.pk}/project/", {}),
        ("crowd index", "/crowd/", {}),
        ("API topic set", f"/api/topic-sets/{SET}/", {}),
        ("API topic sets", "/api/topic-sets/", {}),
        ("API topics, first page", f"/api/topic-sets/{SET}/topics/", {}),
        ("API topics, near the end", f"/api/topic-sets/{SET}/topics/", {"after": near_end}),
        ("API topics, next from there", api_near_end["next"].replace("http://localhost", ""),
         {}),
        ("API one topic", f"/api/topic-sets/{SET}/topics/{last}/", {}),
        ("API intents", f"/api/topic-sets/{SET}/intents/", {}),
    ]
    rows = []
    for name, url, params in urls:
        response = client.get(url, params)  # warm-up
        assert response.status_code == 200, (url, response.status_code)
        samples = []
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                response = client.get(url, params)
                samples.append(time.perf_counter() - start)
            assert response.status_code == 200, (url, response.status_code)
        rows.append({"read": name, "url": url, "params": params,
                     "median_ms": round(statistics.median(samples) * 1000, 1),
                     "max_ms": round(max(samples) * 1000, 1), "queries": len(queries)})
        print(f"{name:32s} {rows[-1]['median_ms']:8.1f} ms  (max {rows[-1]['max_ms']:.1f}, "
              f"{len(queries)} queries)", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database", default="qv_big_topics")
    parser.add_argument("--reuse", action="store_true", help="keep the imported set")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="big-topics-") as tmp:
        url = (f"postgres://postgres@127.0.0.1:5432/{args.database}" if args.reuse
               else _recreate_database(args.database))
        _setup_django(url, tmp)
        result = {"topics": args.topics}
        if not args.reuse:
            result["import"] = imp = _import(args.topics, Path(tmp))
            moving = sorted({p for _, p in imp["progress_seen"] if p is not None})
            print(f"import: {imp['file_mb']} MB in {imp['seconds']:.1f} s, peak RSS "
                  f"{imp['peak_rss_mb']:.0f} MB; progress seen: {len(moving)} distinct "
                  f"values, last {moving[-1] if moving else None}", flush=True)
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", args.database,
                        "-q", "-c", "VACUUM ANALYZE"], check=True, capture_output=True)
        result["reads"] = _time_reads(args.repeat)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "big_topic_set.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
