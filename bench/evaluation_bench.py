"""Benchmark of run evaluation against pytrec_eval and ir_measures, on seeded synthetic data.

Data: R runs x T topics x depth D (default 100 x 100 x 1000). Each topic has a pool of
5,000 candidate documents of which 500 are judged (grades 0-3, about one in five
relevant); each run ranks D candidates drawn with Zipf-like popularity (Gumbel top-k, so
runs overlap the way real systems do) with scores written with --score-decimals decimals
(4 by default: a few ties; 2: two thirds of neighbouring scores tie). Runs are written as
TREC files in (score descending, docid ascending) order, the order most tools write, which
is not trec_eval's tie order: the evaluator has to reorder every tie.

Ten measures: AP, nDCG, nDCG@10, nDCG@20, P@5, P@10, P@20, RR, Rprec, R@100 (trec_eval's
map, ndcg, ndcg_cut.10,20, P.5,10,20, recip_rank, Rprec, recall.100).

Timed (wall clock; parsing and evaluation alike: one warm-up call of each tool, then
--repeat rounds in which each tool runs once in turn, best and median reported; the
end-to-end figure adds the best parse and the best evaluation of each tool):

- parse: each tool reading the same files into its own input form (ours: read_runs +
  read_qrels into code arrays; pytrec_eval: parse_run / parse_qrel into dicts; ir_measures
  takes the pytrec_eval dicts, as its documentation suggests, so it has no parse time);
- evaluate: from that already-parsed input to every per-topic value of every run
  (ours: evaluate_runs, including the tie sort, qrels lookup, all measures and the
  per-topic dictionaries; pytrec_eval: RelevanceEvaluator construction + evaluate() per run;
  ir_measures: evaluator() + iter_calc() per run, consumed).

Values: every per-topic value of ours is compared with pytrec_eval's and ir_measures'; the
largest absolute difference is reported (and must be below 1e-9).

Usage::

    python bench/evaluation_bench.py --small        # 20 runs x 50 topics x 1000, ~20 s
    python bench/evaluation_bench.py                # 100 x 100 x 1000, ~3 min
    python bench/evaluation_bench.py --score-decimals 2   # the same with many ties

Writes bench/out/evaluation_bench[_small].json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluation.measures import evaluate_runs, parse_measures, read_qrels, read_runs  # noqa: E402

OURS = "AP nDCG nDCG@10 nDCG@20 P@5 P@10 P@20 RR Rprec R@100"
TREC_EVAL = {"map": "AP", "ndcg": "nDCG", "ndcg_cut_10": "nDCG@10", "ndcg_cut_20": "nDCG@20",
             "P_5": "P@5", "P_10": "P@10", "P_20": "P@20", "recip_rank": "RR", "Rprec": "Rprec",
             "recall_100": "R@100"}
PYTREC_MEASURES = {"map", "ndcg", "ndcg_cut.10,20", "P.5,10,20", "recip_rank", "Rprec", "recall.100"}


def write_data(folder: Path, runs: int, topics: int, depth: int, seed: int,
               decimals: int = 4) -> tuple[list[Path], Path]:
    rng = np.random.default_rng(seed)
    pool, judged = 5000, 500
    qrels_path = folder / "qrels.txt"
    with open(qrels_path, "w") as q:
        for t in range(topics):
            docs = rng.choice(pool, judged, replace=False)
            grades = rng.choice(4, judged, p=[0.8, 0.12, 0.05, 0.03])
            for d, g in zip(docs, grades):
                q.write(f"T{t:03d} 0 doc-{t:03d}-{d:05d} {g}\n")
    logw = -np.log(np.arange(1, pool + 1, dtype=np.float64))
    paths = []
    for r in range(runs):
        path = folder / f"run{r:03d}.txt"
        lines = []
        for t in range(topics):
            keys = logw + rng.gumbel(size=pool)
            top = np.argpartition(-keys, depth)[:depth]
            scores = np.round(keys[top] - keys[top].min(), decimals)
            docids = np.array([f"doc-{t:03d}-{d:05d}" for d in top])
            order = np.lexsort((docids, -scores))  # score descending, docid ascending
            for rank, i in enumerate(order, 1):
                lines.append(f"T{t:03d} Q0 {docids[i]} {rank} {scores[i]:.{decimals}f} sys{r:03d}\n")
        path.write_text("".join(lines))
        paths.append(path)
    return paths, qrels_path


def interleaved(fns, repeat: int):
    """Time several tools alike: one warm-up call each, then ``repeat`` rounds in which each
    tool runs once in turn (so a busy machine slows every tool, not just one)."""
    outs = [fn() for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            outs[i] = fn()
            times[i].append(time.perf_counter() - t0)
    return [(out, {"best_s": min(t), "median_s": statistics.median(t), "runs_s": t})
            for out, t in zip(outs, times)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--topics", type=int)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--score-decimals", type=int, default=4,
                    help="scores are written with this many decimals (4, as most runs: a few ties; "
                         "2: two thirds of neighbours tie)")
    args = ap.parse_args()
    runs = args.runs or (20 if args.small else 100)
    topics = args.topics or (50 if args.small else 100)

    import ir_measures
    import pytrec_eval

    specs = parse_measures(OURS)
    irm = [ir_measures.parse_measure(m) for m in OURS.split()]
    with tempfile.TemporaryDirectory() as tmp:
        paths, qrels_path = write_data(Path(tmp), runs, topics, args.depth, args.seed, args.score_decimals)

        def parse_ours():
            return read_runs(paths), read_qrels(qrels_path, "adhoc")

        def parse_pytrec():
            with open(qrels_path) as f:
                qrels = pytrec_eval.parse_qrel(f)
            out = []
            for p in paths:
                with open(p) as f:
                    out.append(pytrec_eval.parse_run(f))
            return out, qrels

        # parsing is timed like evaluation: one warm-up call each (which also brings the
        # files into the page cache), then --repeat rounds in which each tool parses in turn
        ((runset, qrels), t_parse_ours), ((py_runs, py_qrels), t_parse_py) = interleaved(
            [parse_ours, parse_pytrec], args.repeat)

    def eval_ours():
        return evaluate_runs(runset, qrels, specs)

    def eval_pytrec():
        ev = pytrec_eval.RelevanceEvaluator(py_qrels, PYTREC_MEASURES)
        return [ev.evaluate(run) for run in py_runs]

    def eval_irm():
        ev = ir_measures.evaluator(irm, py_qrels)
        return [list(ev.iter_calc(run)) for run in py_runs]

    (ours, t_ours), (py, t_py), (im, t_im) = interleaved([eval_ours, eval_pytrec, eval_irm], args.repeat)

    diff_py = diff_im = 0.0
    compared = 0
    tags = runset.tags
    for r, tag in enumerate(tags):
        per_topic = ours[tag]["per_topic"]
        assert set(per_topic) == set(py[r]), "the two tools evaluated different topics"
        for topic, values in py[r].items():
            for m, name in TREC_EVAL.items():
                diff_py = max(diff_py, abs(values[m] - per_topic[topic][name]))
                compared += 1
        for metric in im[r]:
            diff_im = max(diff_im, abs(metric.value - per_topic[metric.query_id][str(metric.measure)]))
    ok = diff_py < 1e-9 and diff_im < 1e-9
    valid = runset.codes[..., 1:] >= 0
    tied = float(((runset.scores[..., :-1] == runset.scores[..., 1:]) & valid).sum() / valid.sum())

    result = {
        "data": {"runs": runs, "topics": topics, "depth": args.depth, "seed": args.seed,
                 "score_decimals": args.score_decimals, "entries": int(runset.lengths.sum()),
                 "tied_neighbours": tied, "measures": OURS.split()},
        "parse": {"ours": t_parse_ours, "pytrec_eval": t_parse_py,
                  "ratio_pytrec_eval_over_ours": t_parse_py["best_s"] / t_parse_ours["best_s"]},
        "end_to_end": {
            "ours_s": t_parse_ours["best_s"] + t_ours["best_s"],
            "pytrec_eval_s": t_parse_py["best_s"] + t_py["best_s"],
            "ratio_pytrec_eval_over_ours": (t_parse_py["best_s"] + t_py["best_s"])
            / (t_parse_ours["best_s"] + t_ours["best_s"]),
        },
        "evaluate": {
            "ours": t_ours, "pytrec_eval": t_py, "ir_measures": t_im,
            "ratio_pytrec_eval_over_ours": t_py["best_s"] / t_ours["best_s"],
            "ratio_ir_measures_over_ours": t_im["best_s"] / t_ours["best_s"],
        },
        "values": {"compared": compared, "max_abs_diff_pytrec_eval": diff_py,
                   "max_abs_diff_ir_measures": diff_im, "equal": ok},
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "pytrec_eval": getattr(pytrec_eval, "__version__", "pytrec_eval-terrier"),
                     "ir_measures": ir_measures.__version__},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
    }
    name = "evaluation_bench" + ("_small" if args.small else "") + (
        "" if args.score_decimals == 4 else f"_decimals{args.score_decimals}")
    out = ROOT / "bench" / "out" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))

    e = result["evaluate"]
    print(f"{runs} runs x {topics} topics x depth {args.depth}, {len(specs)} measures "
          f"({result['data']['entries']:,} ranked entries, scores with {args.score_decimals} decimals, "
          f"{tied:.1%} of neighbours tied)")
    print(f"evaluate  ours {t_ours['best_s']:.3f} s   pytrec_eval {t_py['best_s']:.3f} s "
          f"(x{e['ratio_pytrec_eval_over_ours']:.1f})   ir_measures {t_im['best_s']:.3f} s "
          f"(x{e['ratio_ir_measures_over_ours']:.1f})")
    print(f"parse     ours {t_parse_ours['best_s']:.3f} s   pytrec_eval {t_parse_py['best_s']:.3f} s "
          f"(x{result['parse']['ratio_pytrec_eval_over_ours']:.1f})")
    x = result["end_to_end"]
    print(f"both      ours {x['ours_s']:.3f} s   pytrec_eval {x['pytrec_eval_s']:.3f} s "
          f"(x{x['ratio_pytrec_eval_over_ours']:.1f})")
    print(f"values    {compared:,} compared, max |diff| pytrec_eval {diff_py:.2e}, "
          f"ir_measures {diff_im:.2e}: {'equal' if ok else 'DIFFERENT'}")
    print(f"wrote {out}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
