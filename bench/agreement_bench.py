"""Benchmark of the agreement and significance mathematics against the usual way of
computing the same numbers.

Timed alike: one untimed warm-up, then the best of --repeat runs (wall clock), on the
same inputs.

- Cohen's κ (unweighted and linear) for every pair of assessors sharing at least two
  documents in a topic of the TREC 2010 crowd judgments (../shared/data): one call of
  evaluation.agreement.pair_statistics against scikit-learn's cohen_kappa_score called
  per pair (the pairs and their shared documents built once, untimed); the largest
  difference between the two is reported.
- Randomised Tukey HSD (S systems × T topics, B trials): evaluation.ranking's vectorised
  form against a per-trial loop (one numpy permutation of every topic's row per trial,
  as the reference descriptions state it). The two draw different random streams, so
  the largest p-value difference is within Monte-Carlo error, not zero.

Usage::

    python bench/agreement_bench.py [--topics 20] [--systems 50] [--trials 10000] [--repeat 3]

Writes bench/out/agreement_bench.json and prints a table.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation import agreement, ranking  # noqa: E402

SHARED = Path(os.environ.get("SHARED_DATA", ROOT.parent / "shared" / "data"))


def best_of(fn, repeat: int):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def cohen_bench(topics: int, repeat: int) -> dict:
    path = SHARED / "inter-assessor" / "trec-rf10-crowd" / "trec-rf10-data.txt"
    labels = agreement.read_trec_rf10_crowd(path)
    keep = sorted(labels["topic"].unique())[:topics]
    labels = labels[labels["topic"].isin(keep)].reset_index(drop=True)
    cats = [0, 1, 2]
    # peer input, built once: per topic, per pair, the two label vectors on shared documents
    by = defaultdict(dict)
    for row in labels.itertuples():
        by[(row.topic, row.assessor)][row.docid] = row.grade
    workers = defaultdict(list)
    for (t, a) in by:
        workers[t].append(a)
    pairs = []
    for t, ws in workers.items():
        for a, b in itertools.combinations(sorted(ws), 2):
            shared = sorted(set(by[(t, a)]) & set(by[(t, b)]))
            if len(shared) >= 2:
                pairs.append(((t, a, b), [by[(t, a)][d] for d in shared], [by[(t, b)][d] for d in shared]))

    def ours():
        return agreement.pair_statistics(labels, ["topic"], 1, cats, min_shared=2)

    def peer():
        from sklearn.metrics import cohen_kappa_score

        out = {}
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for key, x, y in pairs:
                out[key] = (cohen_kappa_score(x, y, labels=cats),
                            cohen_kappa_score(x, y, labels=cats, weights="linear"))
        return out

    t_ours, mine = best_of(ours, repeat)
    t_peer, theirs = best_of(peer, repeat)
    mine = mine.dropna(subset=["kappa"]).set_index(["topic", "assessor_a", "assessor_b"])
    diff = 0.0
    for key, (k, kl) in theirs.items():
        if np.isnan(k):
            continue
        diff = max(diff, abs(mine.loc[key, "kappa"] - k), abs(mine.loc[key, "kappa_linear"] - kl))
    return {"topics": topics, "pairs": len(pairs), "ours_s": t_ours, "sklearn_loop_s": t_peer,
            "ratio": t_peer / t_ours, "max_abs_difference": float(diff)}


def tukey_loop(matrix: np.ndarray, trials: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    means = matrix.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    count = np.zeros_like(observed)
    for _ in range(trials):
        shuffled = np.array([rng.permutation(row) for row in matrix])
        m = shuffled.mean(axis=0)
        count += (m.max() - m.min()) >= observed - 1e-12
    p = count / trials
    np.fill_diagonal(p, 1.0)
    return p


def tukey_bench(systems: int, topics: int, trials: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    matrix = (rng.normal(0.4, 0.1, (topics, 1)) + rng.normal(0, 0.05, (1, systems))
              + rng.normal(0, 0.05, (topics, systems)))
    t_ours, mine = best_of(lambda: ranking.tukey_hsd_pvalues(matrix, trials, seed=1), repeat)
    t_loop, theirs = best_of(lambda: tukey_loop(matrix, trials, seed=2), repeat)
    return {"systems": systems, "topics": topics, "trials": trials, "ours_s": t_ours,
            "loop_s": t_loop, "ratio": t_loop / t_ours,
            "max_abs_p_difference": float(np.abs(mine - theirs).max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=20, help="crowd topics for Cohen's κ")
    ap.add_argument("--systems", type=int, default=50)
    ap.add_argument("--tukey-topics", type=int, default=50)
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    result = {"cohen_kappa": cohen_bench(args.topics, args.repeat),
              "tukey_hsd": tukey_bench(args.systems, args.tukey_topics, args.trials, args.repeat)}
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "agreement_bench.json").write_text(json.dumps(result, indent=2))
    c, t = result["cohen_kappa"], result["tukey_hsd"]
    print(f"Cohen's kappa, {c['pairs']} pairs: ours {c['ours_s']:.3f}s, "
          f"sklearn loop {c['sklearn_loop_s']:.3f}s, x{c['ratio']:.1f}, "
          f"max diff {c['max_abs_difference']:.1e}")
    print(f"Tukey HSD {t['systems']}x{t['topics']}, B={t['trials']}: ours {t['ours_s']:.3f}s, "
          f"loop {t['loop_s']:.3f}s, x{t['ratio']:.1f}, max p diff {t['max_abs_p_difference']:.3f}")


if __name__ == "__main__":
    main()
