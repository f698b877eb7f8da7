"""``import_judgments`` on SQLite and on PostgreSQL: how long an organiser waits.

Two real label files, read from the shared data folder beside the repository (never
copied into it): the TREC 2010 Relevance Feedback crowd judgments (``trec-rf10``, 98,453
labels by 766 workers) and the TREC 2011 Web diversity qrels (``diversity``, 64,867
per-intent labels). ``--lines N`` imports only the first N lines of each (written to a
temporary file), for a quick run.

Each import runs in a child process of its own with DEBUG off, as the command runs in
production (with DEBUG on, Django keeps the text of every query), through
``call_command("import_judgments", ...)``; the child also times reading and checking the
file alone (``judging.labelfiles.read_labels``), so the store's share is the difference.
SQLite is the embedded default: a fresh ``DATA_DIR`` in a temporary directory, with the
pragmas the settings set. PostgreSQL is ``--postgres URL`` (an existing database: the
bench migrates it and deletes the judgment sets it made). Imports alternate between the
two databases, ``--repeat`` rounds; the best and the median of each are reported.

    .venv/bin/python bench/judgment_import_bench.py --postgres postgres://postgres@127.0.0.1:5432/DB
    .venv/bin/python bench/judgment_import_bench.py --postgres ... --lines 20000 --repeat 1

Writes ``bench/out/judgment_import.json``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
FILES = {
    "trec-rf10": DATA / "inter-assessor" / "trec-rf10-crowd" / "trec-rf10-data.txt",
    "diversity": DATA / "trec-web-diversity" / "2011" / "qrels.diversity.txt",
}

CHILD = r"""
import io, json, os, sys, time
sys.path.insert(0, os.environ["BENCH_ROOT"])
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from django.core.management import call_command
from judging import labelfiles
from judging.models import JudgmentSet
path, fmt, name = sys.argv[1:4]
start = time.perf_counter()
n = sum(1 for _ in labelfiles.read_labels(path, fmt))
read = time.perf_counter() - start
out = io.StringIO()
start = time.perf_counter()
call_command("import_judgments", path, format=fmt, name=name, stdout=out)
total = time.perf_counter() - start
labels = JudgmentSet.objects.get(name=name).labels.count()
JudgmentSet.objects.filter(name=name).delete()
print(json.dumps({"labels": n, "stored": labels, "read_seconds": read,
                  "import_seconds": total}))
"""


def _env(database: str, data_dir: str) -> dict:
    env = {**os.environ, "BENCH_ROOT": str(ROOT), "DEBUG": "0", "DATA_DIR": data_dir,
           "SECRET_KEY": "bench-only-not-secret", "ALLOWED_HOSTS": "localhost"}
    env.pop("DATABASE_URL", None)
    if database != "sqlite":
        env["DATABASE_URL"] = database
    return env


def _migrate(env: dict) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env,
                   check=True, cwd=ROOT, timeout=600)


def _import(env: dict, path: Path, fmt: str, name: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), fmt, name], env=env,
                          check=True, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", required=True,
                        help="URL of an existing PostgreSQL database (migrated by the bench)")
    parser.add_argument("--lines", type=int, default=0,
                        help="import only the first N lines of each file (0: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        files = {}
        for fmt, path in FILES.items():
            if not path.exists():
                sys.exit(f"{path}: not found; the bench reads the shared data folder beside "
                         "the repository")
            if args.lines:
                short = Path(tmp) / f"{fmt}-{args.lines}.txt"
                with open(path, encoding="utf-8") as src, open(short, "w") as dst:
                    dst.writelines(itertools.islice(src, args.lines))
                path = short
            files[fmt] = path
        sqlite_dir = Path(tmp) / "data"
        sqlite_dir.mkdir()
        envs = {"sqlite": _env("sqlite", str(sqlite_dir)),
                "postgresql": _env(args.postgres, str(Path(tmp) / "pg-data"))}
        for env in envs.values():
            _migrate(env)
        runs: dict[str, dict[str, list[dict]]] = {
            db: {fmt: [] for fmt in files} for db in envs}
        for round_ in range(args.repeat):
            for fmt, path in files.items():
                for db, env in envs.items():
                    result = _import(env, path, fmt, f"bench-import-{fmt}-{round_}")
                    runs[db][fmt].append(result)
                    print(f"round {round_ + 1} {db:10s} {fmt:10s} {result['labels']:7d} labels:"
                          f" import {result['import_seconds']:6.2f} s "
                          f"(reading {result['read_seconds']:5.2f} s)", flush=True)

    summary = {}
    for db, per_format in runs.items():
        for fmt, results in per_format.items():
            times = [r["import_seconds"] for r in results]
            reads = [r["read_seconds"] for r in results]
            labels = results[0]["labels"]
            summary[f"{db}/{fmt}"] = {
                "labels": labels, "best_seconds": min(times),
                "median_seconds": statistics.median(times), "read_best_seconds": min(reads),
                "labels_per_second": labels / min(times)}
            print(f"{db:10s} {fmt:10s} best {min(times):6.2f} s, median "
                  f"{statistics.median(times):6.2f} s, reading {min(reads):5.2f} s, "
                  f"{labels / min(times):8.0f} labels/s")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "judgment_import.json").write_text(json.dumps(
        {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "lines": args.lines,
         "load_average": os.getloadavg(), "summary": summary, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
