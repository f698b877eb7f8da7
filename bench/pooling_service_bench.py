"""build_pool end to end against reading the stored rankings once, on PostgreSQL.

``pooling_bench.py`` times the pool maths against decoding rankings already in memory.
This bench times what an organiser waits for: the ``pool_build`` service (stream every
stored ranking of a topic set from the database, remap docids to string order, build the
pool, store it packed) against streaming the same stored rankings once
(``retrieval.selectors.ranking_records``: docids and scores), in the same run, on the same
data. A pool build reads the docids only, so the ratio to streaming the docids alone
(``read_docids``) is reported beside it.

Synthetic data shaped like UQV100 (default: 100 topics x 108 user rankings x depth 1000
≈ 10.8M ranked entries, Zipf-ish document popularity, seeded), stored exactly as the
retrieval app stores it (one row per ranking, packed int32 ids + float64 scores).

    .venv/bin/python bench/pooling_service_bench.py [--topics 100] [--rankings 108] [--depth 1000]
    .venv/bin/python bench/pooling_service_bench.py --reuse   # skip the ~4 min of storing

Needs PostgreSQL on 127.0.0.1:5432; the scratch database (default ``qv_pool_bench``) is
dropped and recreated on each run (kept afterwards for ``--reuse``). Writes
``bench/out/pooling_service_bench.json``.
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
    from crowd.models import Topic, TopicSet
    from retrieval.models import Ranking, RetrievalModel, Run, RunQuery
    from retrieval.rankings import pack
    from retrieval.services import docids_ensure

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


def _time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--rankings", type=int, default=108, help="user rankings per topic")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--vocab", type=int, default=20000, help="documents per topic")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--repeat", type=int, default=2)
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

    results = {"read_once": _time(read_once, a.repeat), "read_docids": _time(read_docids, a.repeat)}
    cases = [("depth", 10, None), ("depth", 100, None), ("depth", 1000, None),
             ("rbp", 1000, 100)]
    for strategy, depth, budget in cases:
        def build(strategy=strategy, depth=depth, budget=budget):
            pool = services.pool_create(topic_set_name="bench", sources="users",
                                        depth=depth, strategy=strategy, budget=budget)
            services.pool_build(pool.id)
        key = f"{strategy}_D{depth}" + (f"_J{budget}" if budget else "")
        results[key] = _time(build, a.repeat)

    print(f"\n{'step':<28}{'seconds':>9}{'÷ read once':>13}{'÷ read docids':>15}")
    for key, sec in results.items():
        print(f"{key:<28}{sec:>9.2f}{sec / results['read_once']:>13.2f}"
              f"{sec / results['read_docids']:>15.2f}")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    payload = {"args": vars(a), "entries": entries, "seconds": results,
               "ratio_to_read_once": {k: v / results["read_once"] for k, v in results.items()},
               "ratio_to_read_docids": {k: v / results["read_docids"]
                                        for k, v in results.items()}}
    (out / "pooling_service_bench.json").write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {out / 'pooling_service_bench.json'} (target: build_pool ≤ 3× read once)")


if __name__ == "__main__":
    main()
