"""Benchmark of the pooling mathematics at UQV100 scale, on seeded synthetic data.

Data: T topics, R rankings spread evenly over them (UQV100: 100 topics, 10,835
rankings, ~108 per topic), each of depth D = 1000 drawn without replacement from
a per-topic vocabulary of documents with Zipf popularity (Gumbel top-k: popular
documents are likely and likely near the top).  Rankings are stored as the
application stores them: one bytes blob per ranking holding D int32 ids followed
by D float64 scores.

Every tool, ours and the peers, is timed alike: one untimed warm-up run, then the best
of --repeat runs (wall clock), on the same inputs.  Measured:

- read: decoding every blob once into int64 ids and float64 scores;
- contributions: wrapping the ids in pooling.pools.Contribution objects;
- depth pools (D = 10, 100, 1000) and RBP pools (p = 0.95, depth 1000, budget J
  per topic and globally) with pooling.pools.pool_compute;
- trectools 0.0.50 TrecPoolMaker (topX and rbp) on the same data, as runs of one
  ranking per topic (its parsing is not timed: runs are built from DataFrames),
  on --trectools-topics topics (default 10; 100 = the full data, about 5
  minutes a run, and it runs 1 + --repeat times).  The "extrapolated" figure scales linearly in topics and is a lower
  bound: topX filters a whole run once per topic and rbp concatenates in a
  loop, so trectools grows faster than linearly.  The ratios compare both tools
  on the same topics;
- RBO of N rankings against a reference: the rbo package's
  RankingSimilarity(a, b).rbo_ext(p), pooling.rbo.rbo one pair at a time and
  pooling.rbo.rbo_batch on the same --rbo-package-pairs pairs (per pair: the ratio
  for one pair at a time and the one for a batch), rbo_batch also on all N pairs, and
  the largest differences between the tools.

Usage::

    python bench/pooling_bench.py --small                      # ~15 s
    python bench/pooling_bench.py                              # full size, ~30 s
    python bench/pooling_bench.py --trectools-topics 100       # trectools on all topics, ~5 min

Writes bench/out/pooling_bench[_small].json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pooling.pools import Contribution, pool_compute  # noqa: E402
from pooling.rbo import rbo, rbo_batch  # noqa: E402


def make_blobs(topics: int, rankings: int, depth: int, vocab: int, seed: int):
    """Seeded synthetic rankings: list of (topic_id, blob) and the global docid count."""
    rng = np.random.default_rng(seed)
    per_topic = np.full(topics, rankings // topics)
    per_topic[: rankings % topics] += 1
    zipf = -1.0 * np.log(np.arange(1, vocab + 1, dtype=np.float64))  # log weights, s = 1
    ndocs = topics * vocab
    # a topic's documents are scattered over the whole id space (ids are assigned by
    # docid string order across the collection, not by topic)
    id_of = rng.permutation(ndocs).astype(np.int32)
    out = []
    for t in range(topics):
        ids_t = id_of[t * vocab : (t + 1) * vocab]
        for _ in range(per_topic[t]):
            keys = zipf + rng.gumbel(size=vocab)
            top = np.argpartition(-keys, depth)[:depth]
            top = top[np.argsort(-keys[top], kind="stable")]
            ids = ids_t[top]
            scores = np.sort(rng.random(depth))[::-1] * 20.0
            out.append((f"T{t:03d}", ids.astype(np.int32).tobytes() + scores.astype(np.float64).tobytes()))
    return out, ndocs


def decode(blobs, depth):
    res = []
    for topic, b in blobs:
        ids = np.frombuffer(b, dtype=np.int32, count=depth).astype(np.int64)
        scores = np.frombuffer(b, dtype=np.float64, count=depth, offset=4 * depth).copy()
        res.append((topic, ids, scores))
    return res


def best_of(fn, repeat, warmup=1):
    """Best wall-clock time of ``repeat`` runs after ``warmup`` untimed runs, and the
    last result. Every tool in this benchmark, ours and the peers, is timed with it."""
    out = None
    for _ in range(warmup):
        out = fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def trectools_runs(decoded, topic_ids):
    """trectools TrecRun objects: run j holds the j-th ranking of every topic."""
    import pandas as pd
    from trectools import TrecRun

    by_topic = {}
    for topic, ids, scores in decoded:
        if topic in topic_ids:
            by_topic.setdefault(topic, []).append((ids, scores))
    nruns = max(len(v) for v in by_topic.values())
    runs = []
    for j in range(nruns):
        frames = []
        for ti, topic in enumerate(sorted(by_topic)):
            if j < len(by_topic[topic]):
                ids, scores = by_topic[topic][j]
                n = ids.size
                frames.append(
                    pd.DataFrame(
                        {
                            # trectools int()s query ids in its rbp path: numeric ids
                            "query": np.full(n, ti + 1),
                            "q0": "Q0",
                            "docid": ids.astype(str),
                            "rank": np.arange(1, n + 1),
                            "score": scores,
                            "system": f"r{j}",
                        }
                    )
                )
        r = TrecRun()
        r.load_run_from_dataframe(pd.concat(frames, ignore_index=True))
        runs.append(r)
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="10 topics, 1,084 rankings; < 1 minute")
    ap.add_argument("--topics", type=int)
    ap.add_argument("--rankings", type=int)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--vocab", type=int, default=20000, help="documents per topic")
    ap.add_argument("--seed", type=int, default=20240607)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=int, default=100, help="RBP budget J per topic")
    ap.add_argument("--trectools-topics", type=int, help="topics given to trectools")
    ap.add_argument("--rbo-pairs", type=int, help="rankings compared with the reference")
    ap.add_argument("--rbo-package-pairs", type=int,
                    help="pairs timed for every RBO tool alike (default: all, at most 2,000)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    a = ap.parse_args(argv)
    topics = a.topics or (10 if a.small else 100)
    rankings = a.rankings or (1084 if a.small else 10835)
    tt_topics = a.trectools_topics or (3 if a.small else 10)
    rbo_pairs = a.rbo_pairs or (1000 if a.small else 10000)
    D = a.depth
    warnings_off()

    t0 = time.perf_counter()
    blobs, ndocs = make_blobs(topics, rankings, D, a.vocab, a.seed)
    gen_s = time.perf_counter() - t0
    results: dict = {
        "config": {
            "topics": topics, "rankings": rankings, "depth": D, "vocab_per_topic": a.vocab,
            "docids": ndocs, "seed": a.seed, "repeat": a.repeat, "budget": a.budget,
            "trectools_topics": tt_topics, "rbo_pairs": rbo_pairs,
            "rbo_package_pairs": a.rbo_package_pairs, "small": a.small,
        },
        "env": {
            "python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "loadavg_at_start": list(os.getloadavg()),
        },
        "generate_s": gen_s,
        "timings_s": {},
    }
    T = results["timings_s"]

    T["read_blobs"], decoded = best_of(lambda: decode(blobs, D), a.repeat)

    def contribs():
        return [Contribution(t, "user", 1, ids) for t, ids, _ in decoded]

    T["contributions"], cs = best_of(contribs, a.repeat)
    pools = {}
    for d in (10, 100, 1000):
        if d <= D:
            T[f"depth_pool_D{d}"], pools[d] = best_of(
                lambda d=d: pool_compute(cs, strategy="depth", depth=d, p=0.95), a.repeat
            )
    T["rbp_pool_topic"], rbp_topic = best_of(
        lambda: pool_compute(cs, strategy="rbp", depth=D, p=0.95, budget=a.budget), a.repeat
    )
    T["rbp_pool_global"], rbp_global = best_of(
        lambda: pool_compute(
            cs, strategy="rbp", depth=D, p=0.95, budget=a.budget * topics, budget_scope="global"
        ),
        a.repeat,
    )
    results["pool_sizes_mean"] = {
        f"D{d}": float(np.mean([len(tp) for tp in pl.values()])) for d, pl in pools.items()
    }

    # --- trectools on a subset of topics ---------------------------------------------
    from trectools import TrecPoolMaker

    sub = sorted({t for t, _ in blobs})[:tt_topics]
    runs = trectools_runs(decoded, set(sub))
    sub_cs = [c for c in cs if c.topic_id in set(sub)]
    tt = {}
    for d in (10, 100, 1000):
        if d <= D:
            tt[f"topX_D{d}"], made = best_of(
                lambda d=d: TrecPoolMaker().make_pool(runs, strategy="topX", topX=d), a.repeat
            )
            theirs = made.pool
            ours = pool_compute(sub_cs, strategy="depth", depth=d, p=0.95)
            same = all(
                set(ours[t].docids.astype(str).tolist()) == set(theirs[str(i + 1)] if str(i + 1) in theirs else theirs[i + 1])
                for i, t in enumerate(sub)
            )
            tt[f"topX_D{d}_sets_equal"] = bool(same)
    tt["rbp"], made = best_of(
        lambda: TrecPoolMaker().make_pool(runs, strategy="rbp", topX=a.budget, rbp_p=0.95),
        a.repeat,
    )
    theirs = made.pool
    ours_full = pool_compute(sub_cs, strategy="rbp", depth=D, p=0.95)
    ours = pool_compute(sub_cs, strategy="rbp", depth=D, p=0.95, budget=a.budget)
    agree = 0
    for i, t in enumerate(sub):
        w = ours_full[t].weights
        tie_at_cut = a.budget < w.size and np.isclose(w[a.budget - 1], w[a.budget], rtol=1e-9)
        if not tie_at_cut and set(ours[t].docids.astype(str).tolist()) == set(theirs[i + 1]):
            agree += 1
    tt["rbp_sets_equal_topics"] = f"{agree}/{len(sub)}"
    scale = topics / len(sub)
    results["trectools"] = {"topics": len(sub), "measured_s": tt, "extrapolation_factor": scale}
    ours_sub = {}
    for d in (10, 100, 1000):
        if d <= D:
            ours_sub[f"D{d}"], _ = best_of(
                lambda d=d: pool_compute(sub_cs, strategy="depth", depth=d, p=0.95), a.repeat
            )
    ours_sub["rbp"], _ = best_of(
        lambda: pool_compute(sub_cs, strategy="rbp", depth=D, p=0.95, budget=a.budget), a.repeat
    )
    results["trectools"]["ours_same_subset_s"] = ours_sub

    # --- RBO -----------------------------------------------------------------------------
    rng = np.random.default_rng(a.seed + 1)
    topic0 = [ids for t, ids, _ in decoded if t == sub[0]]
    pool_ids = np.unique(np.concatenate(topic0))
    ref = topic0[0]
    others = []
    for j in range(rbo_pairs):
        base = topic0[j % len(topic0)]
        # vary the lengths so the uneven-list formulas are exercised
        n = int(rng.integers(D // 2, D + 1))
        others.append(base[:n])
    # The same pairs for every tool: the package's input is Python lists (its own
    # interface), converted before timing; ours takes the arrays the application holds.
    npk = min(a.rbo_package_pairs or 2000, rbo_pairs)
    same = others[:npk]
    ref_list = ref.tolist()
    same_lists = [o.tolist() for o in same]
    from rbo import RankingSimilarity

    t_pkg, pkg = best_of(
        lambda: [RankingSimilarity(o, ref_list).rbo_ext(0.9) for o in same_lists], a.repeat
    )
    t_single, single = best_of(lambda: [rbo(o, ref, 0.9) for o in same], a.repeat)
    t_batch_same, batch_same = best_of(lambda: rbo_batch(ref, same, 0.9), a.repeat)
    T["rbo_batch"], batch = best_of(lambda: rbo_batch(ref, others, 0.9), a.repeat)
    T["rbo_package_per_pair"] = t_pkg / npk
    T["rbo_single_per_pair"] = t_single / npk
    T["rbo_batch_per_pair_same_pairs"] = t_batch_same / npk
    T["rbo_batch_per_pair_all_pairs"] = T["rbo_batch"] / rbo_pairs
    results["rbo"] = {
        "pairs": rbo_pairs,
        "p": 0.9,
        "package_pairs_timed": npk,
        "package_per_pair_s": T["rbo_package_per_pair"],
        "max_abs_diff_ext_vs_package": float(
            max(max(abs(s.ext - q) for s, q in zip(single, pkg)),
                float(np.max(np.abs(batch_same.ext - np.array(pkg)))))
        ),
        "max_abs_diff_batch_vs_single": float(
            max(
                max(abs(batch.ext[j] - s.ext), abs(batch.min[j] - s.min), abs(batch.res[j] - s.res))
                for j, s in enumerate(single)
            )
        ),
        "pool_docs_topic0": int(pool_ids.size),
    }

    # --- ratios ----------------------------------------------------------------------------
    read = T["read_blobs"]
    ratios = {}
    for k in list(T):
        if k.startswith(("depth_pool", "rbp_pool")):
            ratios[f"{k} / read"] = T[k] / read
            ratios[f"(read + contributions + {k}) / read"] = (read + T["contributions"] + T[k]) / read
    for d in (10, 100, 1000):
        if f"topX_D{d}" in tt:
            ratios[f"trectools topX D{d} / ours (same {len(sub)} topics)"] = tt[f"topX_D{d}"] / ours_sub[f"D{d}"]
    ratios[f"trectools rbp / ours (same {len(sub)} topics)"] = tt["rbp"] / ours_sub["rbp"]
    ratios[f"rbo package / rbo single, per pair (same {npk} pairs)"] = t_pkg / t_single
    ratios[f"rbo package / rbo_batch, per pair (same {npk} pairs)"] = t_pkg / t_batch_same
    if npk != rbo_pairs:
        ratios[f"rbo package on {npk} / rbo_batch on {rbo_pairs} pairs, per pair"] = (
            T["rbo_package_per_pair"] / T["rbo_batch_per_pair_all_pairs"]
        )
    results["ratios"] = ratios

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "pooling_bench_small" if a.small else "pooling_bench"
    if a.trectools_topics:
        name += f"_trectools{a.trectools_topics}"
    path = out / f"{name}.json"
    path.write_text(json.dumps(results, indent=2, sort_keys=False))
    report(results, path)
    return 0


def warnings_off():
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)


def report(r, path):
    c = r["config"]
    print(
        f"{c['topics']} topics, {c['rankings']} rankings x depth {c['depth']}, "
        f"{c['docids']} docids; best of {c['repeat']}"
    )
    print(f"{'step':<48}{'seconds':>12}")
    for k, v in r["timings_s"].items():
        print(f"{k:<48}{v:>12.4f}" if v >= 0.01 else f"{k:<48}{v:>12.3e}")
    tt = r["trectools"]
    print(
        f"\ntrectools on {tt['topics']} topics (x{tt['extrapolation_factor']:g} to full size; "
        "linear extrapolation is a lower bound):"
    )
    for k, v in tt["measured_s"].items():
        if isinstance(v, float):
            print(f"  {k:<46}{v:>12.3f}  (extrapolated {v * tt['extrapolation_factor']:.1f} s)")
        else:
            print(f"  {k:<46}{v!s:>12}")
    rb = r["rbo"]
    t = r["timings_s"]
    print(
        f"\nRBO per pair over the same {rb['package_pairs_timed']} pairs: rbo package "
        f"{t['rbo_package_per_pair'] * 1e6:.1f} us, ours one pair at a time "
        f"{t['rbo_single_per_pair'] * 1e6:.1f} us, ours batched "
        f"{t['rbo_batch_per_pair_same_pairs'] * 1e6:.1f} us "
        f"({t['rbo_batch_per_pair_all_pairs'] * 1e6:.1f} us over {rb['pairs']} pairs); "
        f"max |ext - package| = {rb['max_abs_diff_ext_vs_package']:.2e}, "
        f"batch vs single {rb['max_abs_diff_batch_vs_single']:.2e}"
    )
    print(f"\n{'ratio':<64}{'x':>10}")
    for k, v in r["ratios"].items():
        print(f"{k:<64}{v:>10.1f}")
    print(f"\nwritten {path}")


if __name__ == "__main__":
    sys.exit(main())
