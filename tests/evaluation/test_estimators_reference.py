"""The estimators against TREC's own scripts: ``sample_eval.pl`` (xinfAP, infNDCG, iP@k)
and ``statAP_MQ_eval_v3.pl`` (statAP, its precision at a cutoff), on three samples of the
Web 2011 depth-100 pool (tests/evaluation/sample_eval/README.md).

The scripts' outputs on those files are kept beside them (``out/``) and every printed
value is compared, to the digits printed. The scripts themselves are not shipped (their
terms do not say they may be passed on): with ``SAMPLE_EVAL_PL`` and ``STATAP_EVAL_PL``
naming copies of them, the live tests run them here on the same files and check that they
print exactly the kept outputs."""
import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from evaluation.estimators import estimate_runs, parse_estimated_measures, ranking_order
from evaluation.measures.runs import read_run_rankings
from judging.prels import read_prels

HERE = Path(__file__).resolve().parent / "sample_eval"
DESIGNS = ("depth", "rbp", "uniform")
RUNS = ("fair", "good", "noisy", "partial", "tied", "weak")
#: sample_eval.pl's names of the measures it prints
SAMPLE_EVAL_NAMES = {"infAP": "AP", "infNDCG": "nDCG", "iP10": "P@10", "iP50": "P@50",
                     "iP1000": "P@1000"}


def _run(shared_data, name):
    tag, per = read_run_rankings(shared_data / "eval-oracles" / "web2011" / "runs" / f"{name}.run")
    return tag, {t: ranking_order(d, s) for t, (d, s, _) in per.items()}


def _sample_eval_lines(text: str):
    """(measure, topic, printed value) of each line of ``sample_eval.pl -q``."""
    for line in text.splitlines():
        cols = line.split()
        if cols and cols[0] in SAMPLE_EVAL_NAMES:
            yield SAMPLE_EVAL_NAMES[cols[0]], cols[1], cols[2]


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("run", RUNS)
def test_xinf_equals_sample_eval(shared_data, design, run):
    samples = read_prels(HERE / f"{design}.sample-eval.gz", "sample-eval")
    tag, rankings = _run(shared_data, run)
    measures = parse_estimated_measures("AP nDCG P@10 P@50 P@1000")
    estimators = ["xinf", "infap"] if design == "uniform" else ["xinf"]
    expected = list(_sample_eval_lines((HERE / "out" / design / f"{run}.sample_eval.txt").read_text()))
    assert len(expected) == 5 * (len(samples) + 1 - (3 if run == "partial" else 0))
    for estimator in estimators:
        got = estimate_runs([(tag, rankings)], samples, measures, estimator)[tag]
        for key, topic, printed in expected:
            value = got["mean" if topic == "all" else "per_topic"]
            value = (value if topic == "all" else value[topic])[key]["estimate"]
            assert f"{value:6.4f}" == printed, (estimator, key, topic)


def _statap_blocks(text: str):
    """(topic, AP, cutoff, P@cutoff) per topic (AP ``None`` where the script prints
    "NA--no relevant docs") and the printed statMAP."""
    topics = []
    for block in text.split("topic=")[1:]:
        topic = block.split()[0]
        m = re.search(r"AP=(NA--no relevant docs|\S+)\s+R-prec=.*?Prec_at_(\d+)=(\S+)", block)
        topics.append((topic, None if m.group(1).startswith("NA") else m.group(1), m.group(2),
                       m.group(3)))
    mean = re.search(r"statMAP_on_valid_topics=(\S+)", text).group(1)
    return topics, mean


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("run", [r for r in RUNS if r != "tied"])
def test_statap_equals_statap_mq_eval(shared_data, design, run):
    tag, rankings = _run(shared_data, run)
    topics, mean = _statap_blocks((HERE / "out" / design / f"{run}.statap.txt").read_text())
    assert len(topics) == 15 - (3 if run == "partial" else 0)
    for fmt in ("prels", "sample-eval"):  # the same sample in either file
        samples = read_prels(HERE / f"{design}.{fmt}.gz", fmt)
        cutoff = topics[0][2]
        got = estimate_runs([(tag, rankings)], samples, parse_estimated_measures(f"AP P@{cutoff}"),
                            "statap")[tag]["per_topic"]
        for topic, ap, _, prec in topics:
            if ap is None:  # no judged relevant document: the script leaves the topic out
                assert got[topic]["AP"]["estimate"] == 0 == float(prec), (fmt, topic)
                continue
            assert f"{got[topic]['AP']['estimate']:f}" == ap, (fmt, topic)
            assert f"{got[topic][f'P@{cutoff}']['estimate']:f}" == prec, (fmt, topic)
        # the script averages over the topics with a judged relevant document
        valid = [v["AP"]["estimate"] for t, v in got.items()
                 if any(g > 0 for g in samples[t].grades.values())]
        assert sum(valid) / len(valid) == pytest.approx(float(mean), rel=1e-12)


def _script(variable: str, name: str) -> str:
    path = os.environ.get(variable)
    if not path:
        pytest.skip(f"{name} is not shipped (its terms do not say it may be passed on); set "
                    f"{variable} to a copy of TREC's script to run it here")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    return path


def _unpacked(tmp_path, design, suffix):
    out = tmp_path / f"{design}.{suffix}"
    out.write_bytes(gzip.decompress((HERE / f"{design}.{suffix}.gz").read_bytes()))
    return out


@pytest.mark.parametrize("design", DESIGNS)
def test_sample_eval_prints_the_kept_outputs(shared_data, tmp_path, design):
    script = _script("SAMPLE_EVAL_PL", "sample_eval.pl")
    qrels = _unpacked(tmp_path, design, "sample-eval")
    for run in RUNS:
        path = shared_data / "eval-oracles" / "web2011" / "runs" / f"{run}.run"
        out = subprocess.run(["perl", script, "-q", str(qrels), str(path)], capture_output=True,
                             text=True, check=True, timeout=120).stdout
        assert out == (HERE / "out" / design / f"{run}.sample_eval.txt").read_text(), run


@pytest.mark.parametrize("design", DESIGNS)
def test_statap_mq_eval_prints_the_kept_outputs(shared_data, tmp_path, design):
    script = _script("STATAP_EVAL_PL", "statAP_MQ_eval_v3.pl")
    prels = _unpacked(tmp_path, design, "prels")
    for run in RUNS:
        if run == "tied":
            continue
        tag, rankings = _run(shared_data, run)
        plain = tmp_path / f"{run}.untied"
        with open(plain, "w") as fh:  # statAP's script breaks ties in Perl's hash order
            for topic, docs in rankings.items():
                for i, d in enumerate(docs, 1):
                    fh.write(f"{topic} Q0 {d} {i} {1000 - i} {tag}\n")
        out = subprocess.run(["perl", script, "-q", str(prels), str(plain)], capture_output=True,
                             text=True, check=True, timeout=120).stdout
        _same_statap_output(out, (HERE / "out" / design / f"{run}.statap.txt").read_text(), run)


def _same_statap_output(out: str, kept: str, run: str) -> None:
    """The same text, but for the last digits of the numbers printed in full (varAP,
    statMAP): the script sums a topic's 1/π in Perl's hash order, which changes from one
    process to the next."""
    a, b = re.split(r"[\s=]+", out), re.split(r"[\s=]+", kept)
    assert len(a) == len(b), run
    for x, y in zip(a, b):
        if x != y:
            assert re.fullmatch(r"-?[\d.e+-]+", x) and len(x) > 9, (run, x, y)
            assert float(x) == pytest.approx(float(y), rel=1e-9), (run, x, y)
