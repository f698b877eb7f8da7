"""Evaluation from a judged sample: does a 20% sample of the pool order the systems as
the whole pool judged does, and do the 95% intervals cover the whole pool's values?
Rebuilds the table of docs/organiser/evaluation.md ("Evaluating from a sample").

Offline and without a database: everything is read from ../shared/data, and every step
is the code the service runs — the pools of :mod:`pooling.pools` (depth 100, RBP
p = 0.95 as ``build_pool`` makes them), the sample mode's design
(:func:`judging.sampling.draw_topic`), the estimators and their intervals
(:mod:`evaluation.estimators`) and, for the whole pool, :mod:`evaluation.measures`
(trec_eval's AP and nDCG@20).

Data:

- Web 2011: the six ``eval-oracles`` runs (depth 100), NIST's ``qrels.adhoc.txt``;
- CACM, Cranfield, CISI, MED, NPL: eight runs each, retrieved here with Anserini
  (:mod:`retrieval.anserini`) at depth 100 from an index of the collection: BM25
  (0.9/0.4), BM25 (1.2/0.75), query likelihood (μ = 1000) and SDM on BM25, each on the
  full query text and on its first half (at least two words) — eight systems of
  different strength; the topics that have judgments.

"The whole pool judged" grades every pooled document by the collection's qrels (a
pooled document the qrels do not list, or list as junk, is not relevant): the sample
draws from the pool, so that is what it estimates. For each data set, estimator and seed
the script draws every topic's sample (strata ``depth:10,20,50``, 20% of each topic's
pool unless ``--budget`` says otherwise), estimates each system's MAP and nDCG@20 with
its 95% interval, and reports Kendall's τ_b between the systems' orderings by the
estimates and by the whole pool (mean and smallest over the seeds), how many pairs of
systems are closer than 0.01 in the whole pool's values (a sample cannot be expected to
order those), and the share of the (system, seed) intervals that hold the whole pool's
value (and, for information, the share of the per-topic intervals that hold the topic's
value).

Usage::

    nice -n 10 .venv/bin/python bench/sample_tables.py [--data web2011,cacm] [--seeds 10]
        [--budget 20%] [--strata depth:10,20,50] [--markdown]

Runs and indexes are kept in bench/out/sample_tables/ and reused (--fresh rebuilds them).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.estimators import (estimate_runs, parse_estimated_measures,  # noqa: E402
                                   ranking_order)
from evaluation.measures import Qrels, RunSet, evaluate_runs, parse_measures  # noqa: E402
from evaluation.measures.runs import read_run_rankings  # noqa: E402
from evaluation.ranking import kendall_tau_b  # noqa: E402
from judging import sampling  # noqa: E402
from judging.prels import TopicSample  # noqa: E402
from common import trec  # noqa: E402
from pooling.pools import Contribution, pool_compute  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "out" / "sample_tables"
CORPORA = SHARED / "small-corpora"
POOL_DEPTH = 100
POOL_P = 0.95
RUN_DEPTH = 100
ESTIMATORS = ("xinf", "statap")
MEASURES = ("AP", "nDCG@20")
#: two systems whose whole-pool values differ by less than this are "close"
CLOSE = 0.01

#: collection: (label, documents (path, format), topics (path, format, ids), qrels (path,
#: format, id map))
TEXT = {
    "cacm": ("CACM", ("cacm/cacm.all", "smart"), ("cacm/query.text", "smart", "given"),
             ("cacm/cacm.qrels", "adhoc", "strip-zeros")),
    "cranfield": ("Cranfield", ("cranfield/cran.all.1400", "smart"),
                  ("cranfield/cran.qry", "smart", "position"), ("cranfield/cranqrel", "cranqrel", None)),
    "cisi": ("CISI", ("cisi/CISI.ALL", "smart"), ("cisi/CISI.QRY", "smart", "given"),
             ("cisi/CISI.REL", "smart", None)),
    "med": ("MED", ("med/MED.ALL", "smart"), ("med/MED.QRY", "smart", "given"),
            ("med/MED.REL", "adhoc", None)),
    "npl": ("NPL", ("vaswani-npl/corpus/doc-text.trec", "trec"),
            ("vaswani-npl/query-text.trec", "trec", "given"), ("vaswani-npl/qrels", "adhoc", None)),
}
DATA = ("web2011", *TEXT)
WEB_RUNS = ("fair", "good", "noisy", "partial", "tied", "weak")


def _models():
    from retrieval.anserini import ModelSpec

    return {"bm25": ModelSpec("bm25", k1=0.9, b=0.4), "bm25-okapi": ModelSpec("bm25", k1=1.2, b=0.75),
            "qld": ModelSpec("qld", mu=1000.0), "sdm": ModelSpec("sdm", base="bm25", k1=0.9, b=0.4)}


def _short(text: str) -> str:
    words = text.split()
    return " ".join(words[:max(2, math.ceil(len(words) / 2))])


def text_runs(key: str, fresh: bool) -> list[Path]:
    """The eight run files of a text collection, retrieved once and kept."""
    from retrieval import anserini
    from retrieval.collections_io import read_collection, write_json_collection
    from topics.topicfiles import read_topics

    label, (doc_path, doc_fmt), (q_path, q_fmt, ids), _ = TEXT[key]
    folder = OUT / key
    models = _models()
    paths = [folder / f"{m}-{q}.run" for m in models for q in ("full", "short")]
    if not fresh and all(p.is_file() for p in paths):
        return paths
    index = folder / "index"
    if fresh or not index.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "json").mkdir(parents=True)
        # documents with no text (two of Cranfield's) are left out, as --skip-empty does
        write_json_collection((d for d in read_collection(CORPORA / doc_path, doc_fmt, allow_empty=True)
                               if d.contents.strip()), folder / "json")
        anserini.index_build(folder / "json", index)
    topics = read_topics(CORPORA / q_path, q_fmt, ids=ids)
    queries = {"full": {t.topic_id: t.description or t.title for t in topics}}
    queries["short"] = {t: _short(q) for t, q in queries["full"].items()}
    for name, spec in models.items():
        for form, qs in queries.items():
            hits = anserini.search_batch(index, qs, spec, k=RUN_DEPTH)
            tag = f"{name}-{form}"
            with open(folder / f"{tag}.run", "w") as fh:
                for qid in sorted(hits, key=lambda q: (len(q), q)):
                    docids, scores, _ = hits[qid]
                    for rank, (d, s) in enumerate(zip(docids, scores), 1):
                        fh.write(f"{qid} Q0 {d} {rank} {s:.6f} {tag}\n")
    return paths


def load(key: str, fresh: bool):
    """(label, runs {tag: {topic: docids in trec_eval order}}, qrels {topic: {docid: grade}})
    over the topics that have judgments."""
    if key == "web2011":
        paths = [SHARED / "eval-oracles" / "web2011" / "runs" / f"{r}.run" for r in WEB_RUNS]
        qrels_spec, label = (SHARED / "trec-web-diversity" / "2011" / "qrels.adhoc.txt", "adhoc", None), "Web 2011"
    else:
        paths = text_runs(key, fresh)
        label, _, _, (q, fmt, id_map) = TEXT[key]
        qrels_spec = (CORPORA / q, fmt, id_map)
    path, fmt, id_map = qrels_spec
    qrels: dict = {}
    for _, r in trec.read_qrels(path, fmt, id_map=id_map):
        qrels.setdefault(r.topic_id, {})[r.docid] = r.rel
    runs = {}
    for p in paths:
        tag, per = read_run_rankings(p)
        runs[tag] = {t: ranking_order(d, s) for t, (d, s, _) in per.items() if t in qrels}
    return label, runs, qrels


def pool_of(runs: dict) -> dict:
    vocab = sorted({d for r in runs.values() for ranking in r.values() for d in ranking})
    ids = {d: i for i, d in enumerate(vocab)}
    pools = pool_compute([Contribution(t, "system", 1, np.array([ids[d] for d in ranking], dtype=np.int64))
                          for r in runs.values() for t, ranking in r.items() if ranking],
                         depth=POOL_DEPTH, p=POOL_P)
    return {t: ([vocab[i] for i in tp.docids], tp.min_rank, tp.weights) for t, tp in pools.items()}


def whole_pool_values(runs: dict, pool: dict, qrels: dict) -> dict:
    judged = {t: {d: max(0, qrels.get(t, {}).get(d, 0)) for d in docs} for t, (docs, _, _) in pool.items()}
    runset = RunSet.from_rankings([
        (tag, tag, {t: (docs, [float(len(docs) - i) for i in range(len(docs))], list(range(1, len(docs) + 1)))
                    for t, docs in per.items() if t in pool})
        for tag, per in runs.items()])
    result = evaluate_runs(runset, Qrels("adhoc", judged), parse_measures(" ".join(MEASURES)))
    return judged, result


def one_seed(runs, pool, judged, spec, budget, seed, estimator):
    samples, size, drawn = {}, 0, 0
    for t, (docs, min_rank, weights) in pool.items():
        units = sampling.draw_topic(t, docs, min_rank, weights, spec=spec, budget=budget, seed=seed)
        s = TopicSample(strata={u.docid: str(u.stratum) for u in units})
        for u in units:
            if u.drawn:
                s.grades[u.docid] = judged[t][u.docid]
                s.probability[u.docid] = u.probability
        samples[t] = s
        size += len(units)
        drawn += sum(u.drawn for u in units)
    est = estimate_runs(((tag, {t: r for t, r in per.items() if t in pool}) for tag, per in runs.items()),
                        samples, parse_estimated_measures(" ".join(MEASURES)), estimator)
    return est, drawn / size


def measure_one(key: str, estimators, seeds: int, spec, budget, fresh: bool) -> list[dict]:
    label, runs, qrels = load(key, fresh)
    pool = pool_of(runs)
    judged, full = whole_pool_values(runs, pool, qrels)
    tags = sorted(runs)
    rows = []
    for estimator in estimators:
        taus = {m: [] for m in MEASURES}
        covered = {m: 0 for m in MEASURES}
        topic_cover = {m: [0, 0] for m in MEASURES}
        width = {m: [] for m in MEASURES}
        shares = []
        started = time.monotonic()
        for seed in range(1, seeds + 1):
            est, share = one_seed(runs, pool, judged, spec, budget, seed, estimator)
            shares.append(share)
            for m in MEASURES:
                taus[m].append(kendall_tau_b([full[t]["mean"][m] for t in tags],
                                             [est[t]["mean"][m]["estimate"] for t in tags]))
                for t in tags:
                    e = est[t]["mean"][m]
                    covered[m] += e["low"] - 1e-12 <= full[t]["mean"][m] <= e["high"] + 1e-12
                    width[m].append(e["high"] - e["low"])
                    for topic, v in est[t]["per_topic"].items():
                        topic_cover[m][0] += v[m]["low"] - 1e-12 <= full[t]["per_topic"][topic][m] <= v[m]["high"] + 1e-12
                        topic_cover[m][1] += 1
        close = {m: sum(abs(full[a]["mean"][m] - full[b]["mean"][m]) < CLOSE
                        for i, a in enumerate(tags) for b in tags[i + 1:]) for m in MEASURES}
        rows.append({
            "data": label, "pairs": len(tags) * (len(tags) - 1) // 2,
            **{f"close_{m}": close[m] for m in MEASURES}, "key": key, "estimator": estimator, "systems": len(tags), "topics": len(pool),
            "pool": sum(len(d) for d, _, _ in pool.values()), "judged_share": float(np.mean(shares)),
            "seeds": seeds, "seconds": round(time.monotonic() - started, 1),
            **{f"tau_{m}_mean": float(np.mean(taus[m])) for m in MEASURES},
            **{f"tau_{m}_min": float(np.min(taus[m])) for m in MEASURES},
            **{f"cover_{m}": covered[m] / (seeds * len(tags)) for m in MEASURES},
            **{f"topic_cover_{m}": topic_cover[m][0] / topic_cover[m][1] for m in MEASURES},
            **{f"width_{m}": float(np.mean(width[m])) for m in MEASURES},
        })
    return rows


def markdown(rows: list[dict]) -> str:
    head = ["data", "estimator", "systems × topics", "judged", "pairs closer than 0.01 (MAP / nDCG@20)",
            "MAP τ_b mean (min)",
            "nDCG@20 τ_b mean (min)", "MAP intervals covering", "nDCG@20 intervals covering",
            "per-topic AP / nDCG@20 covering", "mean interval width MAP / nDCG@20"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join([
            r["data"], r["estimator"], f"{r['systems']} × {r['topics']}", f"{100 * r['judged_share']:.1f}%",
            f"{r['close_AP']} / {r['close_nDCG@20']} of {r['pairs']}",
            f"{r['tau_AP_mean']:.3f} ({r['tau_AP_min']:.3f})",
            f"{r['tau_nDCG@20_mean']:.3f} ({r['tau_nDCG@20_min']:.3f})",

            f"{100 * r['cover_AP']:.1f}%", f"{100 * r['cover_nDCG@20']:.1f}%",
            f"{100 * r['topic_cover_AP']:.1f}% / {100 * r['topic_cover_nDCG@20']:.1f}%",
            f"{r['width_AP']:.3f} / {r['width_nDCG@20']:.3f}"]) + " |")
    return "\n".join(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=",".join(DATA))
    parser.add_argument("--estimators", default=",".join(ESTIMATORS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", default="20%")
    parser.add_argument("--strata", default=sampling.DEFAULT_STRATA)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    a = parser.parse_args(argv)
    spec, budget = sampling.parse_strata(a.strata), sampling.parse_budget(a.budget)
    rows = []
    for key in a.data.split(","):
        rows += measure_one(key, a.estimators.split(","), a.seeds, spec, budget, a.fresh)
        print(json.dumps(rows[-1]) if not a.markdown else "", file=sys.stderr, flush=True)
    load_avg = os.getloadavg()
    print(markdown(rows) if a.markdown else json.dumps(rows, indent=1))
    print(f"\n(strata {spec}, budget {budget}, {a.seeds} seeds; load average {load_avg[0]:.2f})")


if __name__ == "__main__":
    main()
