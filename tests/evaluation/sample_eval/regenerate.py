"""Rebuilds the inputs of the sample_eval and statAP reference checks, and (given the two
TREC scripts) their outputs. Run from the repository root:

    .venv/bin/python tests/evaluation/sample_eval/regenerate.py \
        [--sample-eval PATH/sample_eval.pl] [--statap PATH/statAP_MQ_eval_v3.pl]

Inputs: the depth-100 pool of the six eval-oracles Web 2011 runs (pooling.pools, RBP
p = 0.95), topics 101–115, sampled by judging.sampling (seed 1) in three designs, graded
by NIST's qrels.adhoc.txt (a pooled document NIST did not judge is not relevant; junk is
written 0):

- ``depth``: strata depth:10,20,50, 20% of each topic's pool;
- ``rbp``: strata rbp:4, 10%;
- ``uniform``: one stratum (depth:1000), 15%.

Each design is written as sample_eval's stratified qrels (``NAME.sample-eval.gz``) and as
statAP's prels (``NAME.prels.gz``). Outputs: ``out/NAME/RUN.sample_eval.txt`` is
``perl sample_eval.pl -q NAME.sample-eval RUN`` and ``out/NAME/RUN.statap.txt`` is
``perl statAP_MQ_eval_v3.pl -q NAME.prels RUN.untied`` where ``RUN.untied`` is the run in
trec_eval's order with scores 1000 − rank (statAP's script breaks score ties by Perl's
hash order, which changes from one process to the next), as the test writes it.
"""
from __future__ import annotations

import argparse
import gzip
import io
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from evaluation.estimators import ranking_order  # noqa: E402
from evaluation.measures.runs import read_run_rankings  # noqa: E402
from judging import prels, sampling  # noqa: E402
from pooling.pools import Contribution, pool_compute  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
RUNS = ("fair", "good", "noisy", "partial", "tied", "weak")
TOPICS = [str(t) for t in range(101, 116)]
DESIGNS = {"depth": ("depth:10,20,50", "20%"), "rbp": ("rbp:4", "10%"),
           "uniform": ("depth:1000", "15%")}


def run_path(name: str) -> Path:
    return SHARED / "eval-oracles" / "web2011" / "runs" / f"{name}.run"


def untied(name: str, out: Path) -> Path:
    """The run in trec_eval's order with distinct scores 1000 − rank."""
    tag, per = read_run_rankings(run_path(name))
    with open(out, "w") as fh:
        for topic, (docs, scores, _) in per.items():
            for i, d in enumerate(ranking_order(docs, scores), 1):
                fh.write(f"{topic} Q0 {d} {i} {1000 - i} {tag}\n")
    return out


def inputs() -> None:
    runs = {}
    for name in RUNS:
        _, per = read_run_rankings(run_path(name))
        runs[name] = {t: ranking_order(d, s) for t, (d, s, _) in per.items() if t in TOPICS}
    qrels: dict = {}
    for line in open(SHARED / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"):
        t, _, d, g = line.split()
        qrels.setdefault(t, {})[d] = int(g)
    vocab = sorted({d for r in runs.values() for ranking in r.values() for d in ranking})
    ids = {d: i for i, d in enumerate(vocab)}
    pool = pool_compute([Contribution(t, "system", 1, np.array([ids[d] for d in ranking]))
                         for r in runs.values() for t, ranking in r.items()], depth=100, p=0.95)
    for name, (strata, budget) in DESIGNS.items():
        rows, judged = [], []
        for topic, tp in pool.items():
            units = sampling.draw_topic(topic, [vocab[i] for i in tp.docids], tp.min_rank,
                                        tp.weights, spec=sampling.parse_strata(strata),
                                        budget=sampling.parse_budget(budget), seed=1)
            for u in units:
                grade = qrels.get(topic, {}).get(u.docid, 0) if u.drawn else None
                rows.append((topic, u.docid, str(u.stratum), grade))
                if u.drawn:
                    judged.append((topic, u.docid, grade, u.probability))
        for suffix, write, data in (("sample-eval", prels.write_sample_eval, rows),
                                    ("prels", prels.write_prels, judged)):
            text = io.StringIO()
            write(text, data)
            # no time or name in the gzip header: the same sample, the same bytes
            (HERE / f"{name}.{suffix}.gz").write_bytes(
                gzip.compress(text.getvalue().encode("utf-8"), mtime=0))


def outputs(sample_eval: str | None, statap: str | None, scratch: Path) -> None:
    for name in DESIGNS:
        (HERE / "out" / name).mkdir(parents=True, exist_ok=True)
        for suffix in ("sample-eval", "prels"):
            (scratch / f"{name}.{suffix}").write_bytes(
                gzip.decompress((HERE / f"{name}.{suffix}.gz").read_bytes()))
        for run in RUNS:
            if sample_eval:
                out = subprocess.run(["perl", sample_eval, "-q", str(scratch / f"{name}.sample-eval"),
                                      str(run_path(run))], capture_output=True, text=True, check=True)
                (HERE / "out" / name / f"{run}.sample_eval.txt").write_text(out.stdout)
            if statap and run != "tied":
                plain = untied(run, scratch / f"{run}.untied")
                out = subprocess.run(["perl", statap, "-q", str(scratch / f"{name}.prels"), str(plain)],
                                     capture_output=True, text=True, check=True)
                (HERE / "out" / name / f"{run}.statap.txt").write_text(out.stdout)


if __name__ == "__main__":
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample-eval")
    parser.add_argument("--statap")
    parser.add_argument("--no-inputs", action="store_true", help="keep the inputs as they are")
    a = parser.parse_args()
    if not a.no_inputs:
        inputs()
    with tempfile.TemporaryDirectory() as scratch:
        outputs(a.sample_eval, a.statap, Path(scratch))
