"""Retrieval throughput: user variants through the Celery path vs raw Anserini batch search.

    .venv/bin/python bench/retrieval_throughput.py [--variants 2000] [--depth 1000]
        [--model bm25] [--concurrency 2] [--chunk 200] [--broker redis://127.0.0.1:6379/12]
        [--database-url sqlite:///...] [--data ../shared/data]

On the NPL collection (11,429 documents, TREC SGML) with synthetic query variants derived
from NPL's 93 queries (seeded; words dropped and reordered), it measures in one process:

1. raw: the adapter's ``search_batch`` on the same index and query texts, in this process
   (1 thread), and Anserini's own ``SimpleSearcher.batch_search`` (which also loads each
   hit's stored document) with as many threads as the worker has children;
2. celery: ``run_create`` -> Redis -> a real ``celery -A config worker`` (prefork) ->
   rankings stored, from the call until the run is done (workers warmed first);
3. repeats: N variants of which half repeat the other half (same normalised text, another
   worker) vs only the N/2 distinct ones: repeated variants should cost nothing.

Prints a table and writes JSON to bench/out/retrieval_throughput.json. Uses its own
temporary database (SQLite unless --database-url names an empty PostgreSQL database, which
is migrated), its own index directory and its own Celery queue; needs Redis.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_variants(queries: dict[str, str], n: int, rng: random.Random, taken: set) -> list:
    """``n`` (topic id, text) pairs with texts new to ``taken``: a query with 0-2 words
    dropped and a few words swapped."""
    out = []
    ids = sorted(queries)
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > n * 200:
            raise RuntimeError(f"could only derive {len(out)} distinct variants")
        tid = rng.choice(ids)
        words = queries[tid].lower().split()
        for _ in range(rng.randint(0, min(2, len(words) - 2))):
            words.pop(rng.randrange(len(words)))
        for _ in range(rng.randint(0, 3)):
            i, j = rng.randrange(len(words)), rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
        text = " ".join(words)
        if (tid, text) in taken or text in taken:
            continue
        taken.add(text)
        out.append((tid, text))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", type=int, default=2000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--model", default="bm25")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--chunk", type=int, default=200)
    p.add_argument("--broker", default="redis://127.0.0.1:6379/12")
    p.add_argument("--database-url", default="")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--rounds", type=int, default=2,
                   help="measure each scenario this many times (fresh texts), keep the best")
    p.add_argument("--warm", type=int, default=6000,
                   help="variants searched to warm each path first (the JIT settles after "
                        "~1,500 queries per JVM; 1,000 left the workers half cold)")
    p.add_argument("--simple-searcher-queries", type=int, default=500,
                   help="queries for Anserini's SimpleSearcher.batch_search (slow at depth 1000)")
    p.add_argument("--worker-log", default="", help="write the worker's log here")
    p.add_argument("--out", default=str(ROOT / "bench" / "out" / "retrieval_throughput.json"))
    args = p.parse_args(argv)

    npl = Path(args.data) / "small-corpora" / "vaswani-npl"
    work = Path(tempfile.mkdtemp(prefix="retrieval-bench-"))
    queue = f"retrieval-bench-{uuid.uuid4().hex[:8]}"
    env = {
        "DEBUG": "1",
        "DATA_DIR": str(work),
        "INDEX_ROOT": str(work / "indexes"),
        "DATABASE_URL": args.database_url or f"sqlite:///{work / 'bench.sqlite3'}",
        "CELERY_BROKER_URL": args.broker,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "RETRIEVAL_CHUNK_SIZE": str(args.chunk),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from retrieval import anserini
    from retrieval.models import Collection, Run
    from retrieval.selectors import retrieval_model_get
    from retrieval.services import model_spec, run_create
    from topics.models import QueryVariant, Topic, TopicSet

    worker = None
    try:
        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        call_command("import_collection", "npl", str(npl / "corpus" / "doc-text.trec"),
                     "--format", "trec", verbosity=0)
        index_seconds = time.perf_counter() - t
        collection = Collection.objects.get(name="npl")

        # NPL's queries (TREC <top><num><title>), read here: topics are crowd's to import.
        import re

        text = (npl / "query-text.trec").read_text()
        queries = {m.group(1).strip(): " ".join(m.group(2).split())
                   for m in re.finditer(r"<num>(.*?)</num>\s*<title>(.*?)</title>", text, re.S)}
        rng = random.Random(args.seed)
        taken: set = set()
        half = args.variants // 2
        # Every scenario of every round gets texts of its own, so no run reuses another's
        # rankings; the repeated set is N variants with N/2 distinct texts.
        sets: dict[str, list] = {}
        for r in range(args.rounds):
            sets[f"distinct-{r}"] = make_variants(queries, args.variants, rng, taken)
            fresh = make_variants(queries, half, rng, taken)
            sets[f"repeated-{r}"] = fresh + fresh
            sets[f"half-{r}"] = make_variants(queries, half, rng, taken)
        sets["warm"] = make_variants(queries, args.warm, rng, taken)
        for name, rows in sets.items():
            ts = TopicSet.objects.create(name=f"npl-{name}")
            topics = {tid: Topic.objects.create(topic_set=ts, topic_id=tid, title=q)
                      for tid, q in queries.items()}
            QueryVariant.objects.bulk_create([
                QueryVariant(topic=topics[tid], raw=x, normalised=x, worker_id=f"w{i}")
                for i, (tid, x) in enumerate(rows)])

        celery = str(Path(sys.executable).with_name("celery"))
        worker_log = open(args.worker_log, "w") if args.worker_log else subprocess.DEVNULL
        worker = subprocess.Popen(
            [celery, "-A", "config", "worker", "-P", "prefork", "-c", str(args.concurrency),
             "-Q", queue, "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-l", "INFO"],
            cwd=ROOT, env=dict(os.environ, **env), start_new_session=True,
            stdout=worker_log, stderr=subprocess.STDOUT)

        from django.conf import settings

        create_seconds: dict[str, float] = {}  # run_create alone: queries, keys, queueing

        def celery_run(set_name: str, chunk: int) -> tuple[float, Run]:
            settings.RETRIEVAL_CHUNK_SIZE = chunk
            t0 = time.perf_counter()
            run = run_create(topic_set_name=f"npl-{set_name}", collection_name="npl",
                             model_name=args.model, depth=args.depth, source="variants")
            create_seconds[set_name] = time.perf_counter() - t0
            while True:
                run.refresh_from_db()
                if run.status in ("done", "failed"):
                    break
                if worker.poll() is not None:
                    raise RuntimeError("the Celery worker exited")
                time.sleep(0.05)
            if run.status == "failed":
                raise RuntimeError(f"run failed: {run.error}")
            return time.perf_counter() - t0, run

        # every child starts its JVM, opens the index and warms the JIT
        celery_run("warm", max(1, args.warm // (2 * args.concurrency)))
        timings: dict[str, list] = {"distinct": [], "repeated": [], "half": []}
        order = ["distinct", "repeated", "half"]
        for r in range(args.rounds):
            for name in order[r % 3:] + order[:r % 3]:  # rotate: no scenario always first
                seconds, run = celery_run(f"{name}-{r}", args.chunk)
                timings[name].append((seconds, run.total, run.tasks_total))
        results = {}
        labels = {"distinct": "celery_distinct", "repeated": "celery_50pct_repeats",
                  "half": "celery_distinct_half"}
        for name, label in labels.items():
            best = min(timings[name])
            results[label] = dict(seconds=best[0], queries=len(sets[f"{name}-0"]),
                                  retrieved=best[1], tasks=best[2],
                                  all_seconds=[t[0] for t in timings[name]])

        # Raw, in this process, on the same index and the same distinct texts.
        spec = model_spec(retrieval_model_get(args.model))
        texts = {f"q{i}": x for i, (_, x) in enumerate(sets["distinct-0"])}
        # Warmed as the workers were: the same warm-up texts, on both thread counts.
        warm_texts = {f"w{i}": x for i, (_, x) in enumerate(sets["warm"])}
        anserini.search_batch(collection.index_path, warm_texts, spec, k=args.depth,
                              threads=args.concurrency)
        anserini.search_batch(collection.index_path, dict(list(warm_texts.items())[:500]),
                              spec, k=args.depth)
        raw_seconds = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            anserini.search_batch(collection.index_path, texts, spec, k=args.depth)
            raw_seconds.append(time.perf_counter() - t0)
        results["raw_adapter_1thread"] = dict(seconds=min(raw_seconds), queries=len(texts),
                                              all_seconds=raw_seconds)
        raw_seconds = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            anserini.search_batch(collection.index_path, texts, spec, k=args.depth,
                                  threads=args.concurrency)
            raw_seconds.append(time.perf_counter() - t0)
        results[f"raw_adapter_{args.concurrency}threads"] = dict(
            seconds=min(raw_seconds), queries=len(texts), all_seconds=raw_seconds)
        j = anserini._start()
        ss = j["SimpleSearcher"](collection.index_path)
        if spec.similarity == "bm25":
            ss.set_bm25(float(spec.k1), float(spec.b))
        else:
            ss.set_qld(float(spec.mu))
        qids, qtexts = j["ArrayList"](), j["ArrayList"]()
        for qid, x in list(texts.items())[:args.simple_searcher_queries]:
            qids.add(qid)
            qtexts.add(x)
        t0 = time.perf_counter()
        if spec.kind == "sdm":
            gen = j["Sdm"](float(spec.term_weight), float(spec.ordered_weight),
                           float(spec.unordered_weight))
            ss.batch_search(gen, qtexts, qids, args.depth, args.concurrency)
        else:
            ss.batch_search(qtexts, qids, args.depth, args.concurrency)
        results[f"raw_simplesearcher_{args.concurrency}threads"] = dict(
            seconds=time.perf_counter() - t0, queries=int(qids.size()))
        ss.close()
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)

    for r in results.values():
        r["queries_per_second"] = r["queries"] / r["seconds"]
    celery_qps = results["celery_distinct"]["queries_per_second"]
    raw_best = max(v["queries_per_second"] for k, v in results.items() if k.startswith("raw_"))
    summary = dict(
        collection="vaswani-npl (11,429 docs)", model=args.model, depth=args.depth,
        variants=args.variants, chunk=args.chunk, concurrency=args.concurrency,
        seed=args.seed, index_seconds=index_seconds, run_create_seconds=create_seconds,
        ratio_celery_vs_raw_adapter=celery_qps / results["raw_adapter_1thread"]["queries_per_second"],
        ratio_celery_vs_best_raw=celery_qps / raw_best,
        repeated_vs_distinct_half=results["celery_50pct_repeats"]["seconds"]
        / results["celery_distinct_half"]["seconds"],
        results=results,
    )
    print(f"NPL, {args.model}, depth {args.depth}, {args.variants} variants, chunk {args.chunk}, "
          f"{args.concurrency} worker children; index built in {index_seconds:.1f} s")
    print("run_create alone (part of each Celery time): "
          + ", ".join(f"{k} {v:.2f} s" for k, v in create_seconds.items()))
    print(f"{'path':<34}{'variants':>9}{'searched':>9}{'seconds':>9}{'variants/s':>11}")
    for name, r in results.items():
        print(f"{name:<34}{r['queries']:>9}{r.get('retrieved', r['queries']):>9}"
              f"{r['seconds']:>9.2f}{r['queries_per_second']:>11.1f}")
    print(f"celery / raw adapter (1 thread): {summary['ratio_celery_vs_raw_adapter']:.2f}")
    print(f"celery / best raw:               {summary['ratio_celery_vs_best_raw']:.2f}")
    print(f"{args.variants} variants with 50% repeats / {half} distinct: "
          f"{summary['repeated_vs_distinct_half']:.2f}x the time")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
