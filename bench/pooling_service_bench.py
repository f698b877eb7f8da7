"""build_pool end to end against reading the stored rankings once, on PostgreSQL.

``pooling_bench.py`` times the pool maths against decoding rankings already in memory.
This bench times what an organiser waits for: the ``pool_build`` service (stream every
stored ranking of a topic set from the database, build the pool, order its documents with
the docid string order read from the database, store it packed) against streaming the
same stored rankings once (``retrieval.selectors.ranking_records``: docids and scores), in
the same run, on the same data. A pool build reads the docids only, so the ratio to
streaming the docids alone (``read_docids``) is reported beside it.

Every case is timed alike: one untimed warm-up each, then ``--repeat`` rounds that run
every case once, the order rotating from round to round, so load that comes and goes
falls on all of them; the built pools are deleted after each build, untimed. Reported
per case: the median, min and max of the wall time; the CPU time of this Python process
(``time.process_time``, all threads) plus that of its PostgreSQL backend (utime + stime
from ``/proc/<pid>/stat``, the pid from ``pg_stat_activity``), which other load on the
machine disturbs far less than wall time; and the ratios to reading once, each the
median (min, max) over rounds of the ratio within a round. (The lease-renewal thread's
own connection is not in the backend figure; none of these queries uses parallel
workers, which would not be either.)

Synthetic data shaped like UQV100 (default: 100 topics x 108 user rankings x depth 1000
≈ 10.8M ranked entries, Zipf-ish document popularity, seeded), stored exactly as the
retrieval app stores it (one row per ranking, packed int32 ids + float64 scores).

    .venv/bin/python bench/pooling_service_bench.py [--topics 100] [--rankings 108] [--depth 1000]
    .venv/bin/python bench/pooling_service_bench.py --reuse   # skip the ~4 min of storing

Needs PostgreSQL on 127.0.0.1:5432; the scratch database (default ``qv_pool_bench``) is
dropped and recreated on each run (kept afterwards for ``--reuse``; drop it with
``dropdb``). Writes ``bench/out/pooling_service_bench.json`` with every sample.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _recreate_database(name: str) -> str:
    for sql in (f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"):
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q",
                        "-c", sql], check=True, capture_output=True, timeout=120)
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def _setup_django(database_url: str):
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _populate(topics: int, rankings: int, depth: int, vocab: int, seed: int) -> int:
    from retrieval.models import Ranking, RetrievalModel, Run, RunQuery
    from retrieval.rankings import pack
    from retrieval.services import docids_ensure
    from topics.models import Topic, TopicSet

    rng = np.random.default_rng(seed)
    # One shared vocabulary; each topic draws from its own slice with Zipf-ish popularity.
    names = [f"doc-{i:08d}" for i in rng.permutation(topics * vocab)]
    ids = docids_ensure(names)
    id_array = np.array([ids[n] for n in names], dtype=np.int64).reshape(topics, vocab)
    ts = TopicSet.objects.create(name="bench")
    bm25 = RetrievalModel.objects.get(name="bm25")
    run = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, model=bm25,
                             source="variants", status="done")
    popularity = 1.0 / np.arange(1, vocab + 1) ** 0.8
    popularity /= popularity.sum()
    entries = 0
    for t in range(topics):
        topic = Topic.objects.create(topic_set=ts, topic_id=f"B.{t + 1:03d}")
        batch_rankings, batch_queries = [], []
        for r in range(rankings):
            local = rng.choice(vocab, size=depth, replace=False, p=popularity)
            scores = np.sort(rng.random(depth))[::-1] * 20
            d, s = pack(id_array[t, local], scores)
            batch_rankings.append(Ranking(docids=d, scores=s, length=depth, depth=depth))
            entries += depth
        Ranking.objects.bulk_create(batch_rankings, batch_size=200)
        for r, ranking in enumerate(batch_rankings):
            weight = int(rng.integers(1, 4))
            batch_queries.append(RunQuery(run=run, topic=topic, label=f"v{r:05d}",
                                          query_text=f"q{r}", weight=weight, ranking=ranking))
        RunQuery.objects.bulk_create(batch_queries, batch_size=500)
    return entries


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _backend_pid() -> int:
    """The PostgreSQL backend serving this process's connection, as pg_stat_activity
    lists it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE pid = pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/<pid>/stat utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _measure(fn, backend: int) -> dict[str, float]:
    """One call: wall seconds, CPU seconds of this Python process (all threads) and of
    its PostgreSQL backend."""
    db0, py0, t0 = _proc_cpu(backend), time.process_time(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    py, db = time.process_time() - py0, _proc_cpu(backend) - db0
    return {"wall": wall, "cpu_python": py, "cpu_db": db, "cpu": py + db}


def _time_all(cases: dict, repeat: int, backend: int) -> dict[str, list[dict]]:
    """Every case timed alike: one untimed warm-up each, then ``repeat`` rounds, each round
    running every case once (the order rotating from round to round), so load that comes
    and goes falls on all cases alike and each round gives paired ratios. ``cases`` maps
    a name to ``(call, clean-up after it or None)``; clean-ups are not timed."""
    names = list(cases)
    samples: dict[str, list[dict]] = {k: [] for k in names}
    for r in range(-1, repeat):
        for k in names[r % len(names):] + names[: r % len(names)] if r >= 0 else names:
            fn, cleanup = cases[k]
            sample = _measure(fn, backend)
            if cleanup is not None:
                cleanup()
            if r >= 0:
                samples[k].append(sample)
    return samples


def _summary(samples: dict[str, list[dict]], base: str) -> dict[str, dict]:
    """Per case: median, min and max of wall and CPU seconds, and the ratios to ``base``
    (each the median over rounds of the ratio within one round)."""
    out = {}
    for k, runs in samples.items():
        row = {}
        for m in ("wall", "cpu_python", "cpu_db", "cpu"):
            v = np.array([s[m] for s in runs])
            row[m] = {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}
        for m in ("wall", "cpu"):
            ratios = np.array([s[m] / b[m] for s, b in zip(runs, samples[base])])
            row[f"ratio_{m}"] = {"median": float(np.median(ratios)), "min": float(ratios.min()),
                                 "max": float(ratios.max())}
        out[k] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--rankings", type=int, default=108, help="user rankings per topic")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--vocab", type=int, default=20000, help="documents per topic")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--repeat", type=int, default=5, help="timed rounds after the warm-up")
    ap.add_argument("--depths", type=int, nargs="+", default=[10, 100, 1000],
                    help="pool depths to build (depth strategy)")
    ap.add_argument("--no-rbp", dest="rbp", action="store_false",
                    help="skip the RBP pool (budget 100 per topic, deepest depth)")
    ap.add_argument("--database", default="qv_pool_bench")
    ap.add_argument("--reuse", action="store_true",
                    help="time the rankings a previous run stored (its scale, not the flags')")
    a = ap.parse_args()

    if a.reuse:
        _setup_django(f"postgres://postgres@127.0.0.1:5432/{a.database}")
        from retrieval.models import RunQuery

        stored = RunQuery.objects.filter(run__topic_set__name="bench")
        entries = sum(stored.values_list("ranking__length", flat=True))
        if not entries:
            raise SystemExit(f"--reuse: database {a.database!r} holds no bench rankings")
        print(f"reusing {stored.count()} stored rankings, {entries:,} entries")
    else:
        _setup_django(_recreate_database(a.database))
        t0 = time.perf_counter()
        entries = _populate(a.topics, a.rankings, a.depth, a.vocab, a.seed)
        print(f"stored {a.topics * a.rankings} rankings, {entries:,} entries "
              f"in {time.perf_counter() - t0:.1f} s")

    # Autovacuum does this within about a minute of a bulk load (its insert threshold);
    # without it the docid index cannot be read without visiting every table row.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")

    from pooling import services
    from retrieval.selectors import ranking_records

    def read_once():
        n = 0
        for rec in ranking_records("bench", sources=("user",)):
            n += rec.docids.size + rec.scores.size
        return n

    def read_docids():
        n = 0
        for rec in ranking_records("bench", sources=("user",), with_scores=False):
            n += rec.docids.size
        return n

    from pooling.models import Pool

    def build_case(strategy, depth, budget):
        def build():
            pool = services.pool_create(topic_set_name="bench", sources="users",
                                        depth=depth, strategy=strategy, budget=budget)
            built = services.pool_build(pool.id)
            if built.status != Pool.STATUS_DONE:
                raise SystemExit(f"pool {pool.id} was not built: {built.status} {built.error}")
        return build

    def drop_pools():  # untimed: every build stores into the same, empty, pool tables
        Pool.objects.filter(topic_set__name="bench").delete()

    cases = {"read_once": (read_once, None), "read_docids": (read_docids, None)}
    for strategy, depth, budget in [("depth", d, None) for d in a.depths] + \
            ([("rbp", max(a.depths), 100)] if a.rbp else []):
        key = f"{strategy}_D{depth}" + (f"_J{budget}" if budget else "")
        cases[key] = (build_case(strategy, depth, budget), drop_pools)
    drop_pools()
    backend = _backend_pid()
    samples = _time_all(cases, a.repeat, backend)
    summary = _summary(samples, "read_once")
    docids_ratio = {k: float(np.median([s["cpu"] / b["cpu"] for s, b in
                                        zip(runs, samples["read_docids"])]))
                    for k, runs in samples.items()}

    def span(d):
        return f"{d['median']:.2f} ({d['min']:.2f}-{d['max']:.2f})"

    print(f"\nmedian (min-max) of {a.repeat} rounds after one warm-up; CPU = this process + "
          f"its PostgreSQL backend (/proc/{backend}/stat)")
    print(f"{'case':<16}{'wall s':>18}{'CPU s (py+db)':>22}{'÷ read once, wall':>22}"
          f"{'÷ read once, CPU':>22}{'÷ docids, CPU':>15}")
    for k, row in summary.items():
        cpu = f"{row['cpu']['median']:.2f} ({row['cpu_python']['median']:.2f}+" \
              f"{row['cpu_db']['median']:.2f})"
        print(f"{k:<16}{span(row['wall']):>18}{cpu:>22}{span(row['ratio_wall']):>22}"
              f"{span(row['ratio_cpu']):>22}{docids_ratio[k]:>15.2f}")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    payload = {"args": vars(a), "entries": entries, "backend_pid": backend,
               "load_average": os.getloadavg(), "summary": summary,
               "ratio_cpu_to_read_docids": docids_ratio, "samples": samples}
    (out / "pooling_service_bench.json").write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {out / 'pooling_service_bench.json'} (target: build_pool ≤ 3× read once)")


if __name__ == "__main__":
    main()
