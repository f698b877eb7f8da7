"""Estimated measures from a judged sample (evaluation.estimators), by hand and against
the exact measures when the whole pool is judged; the sampling design (judging.sampling)
and the prels formats (judging.prels). The reference scripts' own outputs are checked in
test_estimators_reference.py."""
import io
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from common.fileio import InputError
from evaluation.estimators import (estimate_runs, estimated_names, parse_estimated_measures,
                                   ranking_order)
from evaluation.measures import Qrels, RunSet, evaluate_runs, parse_measures
from judging import sampling
from judging.prels import TopicSample, read_prels, write_prels, write_sample_eval

ROOT = Path(__file__).resolve().parents[2]
EPS = 0.00001


def test_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import sys, judging.sampling, judging.prels, evaluation.estimators\n"
            "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
            "assert not bad, bad\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --- a sample small enough to follow by hand ---------------------------------------------
# pool: stratum 1 = A B C (N = 3), stratum 2 = D E F G (N = 4); judged A (1), B (0) of
# stratum 1 and D (2), E (0) of stratum 2; the run ranks A D X B F C (X is not pooled)

def _sample() -> dict:
    return {"1": TopicSample(
        strata={"A": "1", "B": "1", "C": "1", "D": "2", "E": "2", "F": "2", "G": "2"},
        grades={"A": 1, "B": 0, "D": 2, "E": 0},
        probability={"A": 2 / 3, "B": 2 / 3, "D": 1 / 2, "E": 1 / 2})}


RUN = [("r", {"1": ["A", "D", "X", "B", "F", "C"]})]


def _one(estimator: str, measures: str, sample=None) -> dict:
    return estimate_runs(RUN, sample or _sample(), parse_estimated_measures(measures),
                         estimator)["r"]["per_topic"]["1"]


def test_xinf_by_hand():
    got = _one("xinf", "AP nDCG nDCG@2 P@2 P@10")
    # R̂ = 1·3/2 + 1·4/2 = 3.5; A at rank 1: nothing pooled above, prec 1; D at rank 2: A
    # above (stratum 1: 1 pooled, 1 judged, 1 relevant): prec = 1/2 + (1/2)·(1+ε)/(1+3ε)
    prec_d = 1 / 2 + (1 / 2) * (1 + EPS) / (1 + 3 * EPS)
    assert got["AP"]["estimate"] == pytest.approx(1.5 / 3.5 * 1 + 2 / 3.5 * prec_d, abs=1e-15)
    # first 1,000 ranks: stratum 1 has A B C pooled (A B judged), stratum 2 D F (D judged);
    # DCG = 5 · (3/5 · 1/2 · 1 + 2/5 · 1/1 · 2/log2(3)); ideal: grade 2 round(1·4/2) = 2
    # documents, grade 1 round(1·3/2) = 2
    ideal = 2 + 2 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    dcg = 5 * (3 / 5 * 1 / 2 * 1 + 2 / 5 * (2 / math.log2(3)))
    assert got["nDCG"]["estimate"] == pytest.approx(dcg / ideal, abs=1e-15)
    # @2: A D pooled and judged; ideal cut at 2: 2 + 2/log2(3)
    assert got["nDCG@2"]["estimate"] == pytest.approx(
        2 * (1 / 2 * 1 + 1 / 2 * 2 / math.log2(3)) / (2 + 2 / math.log2(3)), abs=1e-15)
    # iP@2 = Σ_h a_h (r_h + ε)/(n_h + 3ε) / 2 through rank 2; the run is shorter than 10:
    # its last rank's estimate over 10
    p2 = ((1 + EPS) / (1 + 3 * EPS) + (1 + EPS) / (1 + 3 * EPS)) / 2
    assert got["P@2"]["estimate"] == pytest.approx(p2, abs=1e-15)
    last = 3 * (1 + EPS) / (2 + 3 * EPS) + 2 * (1 + EPS) / (1 + 3 * EPS)
    assert got["P@10"]["estimate"] == pytest.approx(last / 10, abs=1e-15)


def test_statap_by_hand_with_its_jackknife_variance():
    got = _one("statap", "AP P@2")
    # π = 2/3 (stratum 1), 1/2 (stratum 2); R̂ = 3/2 + 2 = 3.5; A: prec 1, weight 3/2;
    # D: prec (1 + 3/2)/2 = 1.25, weight 2: statAP = (1.5 + 2.5)/3.5
    assert got["AP"]["estimate"] == pytest.approx(4 / 3.5, abs=1e-15)
    assert got["P@2"]["estimate"] == pytest.approx((1.5 + 2) / 2, abs=1e-15)
    # delete-one replicates (the stratum's π becomes (n_h − 1)/N_h): without A 0.5,
    # without B 7/5, without D 1, without E 6.5/5.5; v = Σ_h (1 − f_h)(n_h − 1)/n_h Σ (θ − θ̄_h)²
    s1, s2 = [0.5, 1.4], [1.0, 6.5 / 5.5]
    v = ((1 - 2 / 3) * 0.5 * sum((x - np.mean(s1)) ** 2 for x in s1)
         + (1 - 1 / 2) * 0.5 * sum((x - np.mean(s2)) ** 2 for x in s2))
    assert got["AP"]["se"] == pytest.approx(math.sqrt(v), abs=1e-12)
    # the jackknife's bias: Σ_h (1 − f_h)(n_h − 1)(θ̄_h − θ̂)
    bias = (1 - 2 / 3) * (np.mean(s1) - 4 / 3.5) + (1 - 1 / 2) * (np.mean(s2) - 4 / 3.5)
    assert got["AP"]["corrected"] == pytest.approx(4 / 3.5 - bias, abs=1e-12)
    # the interval spans both centres (here the estimate is the lower one), cut at 1
    assert got["AP"]["low"] == pytest.approx(4 / 3.5 - 1.959963984540054 * math.sqrt(v))
    assert got["AP"]["high"] == 1.0


def test_jackknife_of_a_linear_estimate_is_the_textbook_variance():
    # statAP's P@k is N/n · (judged relevant in the top k) / k within one stratum: the
    # stratified jackknife must give N²(1 − f)s²/n / k² exactly (Cochran 1977, 5.9)
    N, k = 10, 10
    docs = [f"d{i}" for i in range(N)]
    judged = {"d0": 1, "d1": 0, "d3": 1, "d6": 1, "d8": 0}
    sample = {"1": TopicSample(strata={d: "1" for d in docs}, grades=judged,
                               probability={d: len(judged) / N for d in judged})}
    got = estimate_runs([("r", {"1": docs})], sample, parse_estimated_measures("P@10"),
                        "statap")["r"]["per_topic"]["1"]["P@10"]
    y = np.array([1, 0, 1, 1, 0], dtype=float)
    n = len(y)
    assert got["estimate"] == pytest.approx(N * y.mean() / k)
    assert got["se"] ** 2 == pytest.approx(N ** 2 * (1 - n / N) * y.var(ddof=1) / n / k ** 2)


def test_the_mean_over_topics_adds_variances():
    two = {**_sample(), "2": _sample()["1"]}
    run = [("r", {"1": RUN[0][1]["1"], "2": RUN[0][1]["1"][:2]})]
    got = estimate_runs(run, two, parse_estimated_measures("AP"), "statap")["r"]
    a, b = got["per_topic"]["1"]["AP"], got["per_topic"]["2"]["AP"]
    assert got["mean"]["AP"]["estimate"] == pytest.approx((a["estimate"] + b["estimate"]) / 2)
    assert got["mean"]["AP"]["se"] == pytest.approx(math.sqrt(a["se"] ** 2 + b["se"] ** 2) / 2)


def test_infap_refuses_strata_judged_at_different_rates():
    sample = _sample()
    sample["1"].grades.pop("E")  # stratum 1: 2 of 3, stratum 2: 1 of 4
    with pytest.raises(InputError, match="different rates.*use the xinf"):
        _one("infap", "AP", sample)
    even = _sample()  # 2 of 3 and 2 of 4 differ too; one stratum at one rate is accepted
    even["1"].strata = {d: "x" for d in even["1"].strata}
    assert _one("infap", "AP", even)["AP"]["estimate"] == pytest.approx(
        _one("xinf", "AP", even)["AP"]["estimate"])


def test_a_prels_file_serves_statap_only():
    only_judged = _sample()
    only_judged["1"].strata = {}
    for estimator in ("xinf", "infap"):
        with pytest.raises(InputError, match="need every pooled document"):
            _one(estimator, "AP", only_judged)
    # statAP from the probabilities alone: the same estimate and (groups of equal π being
    # the strata, sized n/π) the same variance
    assert _one("statap", "AP", only_judged)["AP"] == pytest.approx(_one("statap", "AP")["AP"])


def test_measure_names_and_refusals():
    assert [m.key for m in parse_estimated_measures("AP nDCG nDCG@20 P@10 AP")] == [
        "AP", "nDCG", "nDCG@20", "P@10"]
    assert estimated_names("xinf", parse_estimated_measures("AP nDCG@20 P@10")) == {
        "AP": "xinfAP", "nDCG@20": "infNDCG@20", "P@10": "iP@10"}
    for bad in ("RR", "P", "AP@10", "nDCG@0", "P@x", ""):
        with pytest.raises(InputError):
            parse_estimated_measures(bad)
    assert ranking_order(["a", "c", "b", "d"], [1.0, 2.0, 2.0, 0.5]) == ["c", "b", "a", "d"]


# --- everything judged: the estimates are the measures -----------------------------------

def _full_pool_case(seed: int):
    rng = np.random.default_rng(seed)
    pool = [f"doc{i:03d}" for i in range(60)]
    grades = {d: int(rng.choice([0, 0, 0, 1, 2])) for d in pool}
    runs = []
    for r in range(3):
        docs = list(rng.permutation(pool)[:40]) + [f"out{r}{i}" for i in range(5)]
        runs.append((f"run{r}", {"1": docs}))
    strata = {d: str(1 + i // 20) for i, d in enumerate(pool)}
    sample = {"1": TopicSample(strata=strata, grades=dict(grades),
                               probability={d: 1.0 for d in pool})}
    return runs, sample, grades


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_fully_judged_pool_gives_the_exact_measures(seed):
    runs, sample, grades = _full_pool_case(seed)
    exact_runs = RunSet.from_rankings([
        (tag, tag, {t: (docs, [float(len(docs) - i) for i in range(len(docs))],
                        list(range(1, len(docs) + 1))) for t, docs in per.items()})
        for tag, per in runs])
    exact = evaluate_runs(exact_runs, Qrels("adhoc", {"1": grades}),
                          parse_measures("AP nDCG@10 P@10"))
    stat = estimate_runs(runs, sample, parse_estimated_measures("AP nDCG@10 P@10"), "statap")
    xinf = estimate_runs(runs, sample, parse_estimated_measures("AP nDCG@10 P@10"), "xinf")
    for tag, _ in runs:
        for key in ("AP", "nDCG@10", "P@10"):
            want = exact[tag]["mean"][key]
            # statAP with every π = 1 is AP itself; xinfAP differs by its smoothing ε
            assert stat[tag]["mean"][key]["estimate"] == pytest.approx(want, abs=1e-12)
            assert xinf[tag]["mean"][key]["estimate"] == pytest.approx(want, abs=1e-4)
            # nothing left to sample: no variance
            assert stat[tag]["mean"][key]["se"] == 0.0


# --- the sampling design -----------------------------------------------------------------

def test_strata_specs():
    assert str(sampling.parse_strata(None)) == sampling.DEFAULT_STRATA
    assert sampling.parse_strata("depth:5,50").cuts == (5, 50)
    assert sampling.parse_strata("rbp:3").count == 3
    for bad in ("depth:10,5", "depth:0", "depth:a", "rbp:0", "rbp:x", "pool:3"):
        with pytest.raises(ValueError):
            sampling.parse_strata(bad)
    assert sampling.parse_budget("20%").of(101) == 21
    assert sampling.parse_budget("60").of(40) == 40
    for bad in ("0", "0%", "120%", "x"):
        with pytest.raises(ValueError):
            sampling.parse_budget(bad)


def test_strata_by_depth_and_by_prior():
    min_rank = [1, 3, 11, 12, 60, 2]
    depth = sampling.strata_of(min_rank, [0] * 6, list("abcdef"), sampling.parse_strata("depth:10,20,50"))
    assert depth.tolist() == [1, 1, 2, 2, 3, 1]  # the empty 21–50 stratum is dropped
    # rbp:2 over weights 4 3 2 1 (total 10): a starts at 0, b at 0.4, c at 0.7, d at 0.9
    rbp = sampling.strata_of([0] * 4, [1, 4, 2, 3], list("dacb"), sampling.parse_strata("rbp:2"))
    assert rbp.tolist() == [2, 1, 2, 1]


def test_allocation_by_hand():
    # two each first (6), the other 24 in proportion to weight 5 : 4 : 1 → 12, 9.6, 2.4;
    # the first two strata are capped at 3 and 8 more, the rest (13) goes to the third
    assert sampling.allocate([5, 10, 100], [5, 4, 1], 30).tolist() == [5, 10, 15]
    # largest remainders: 2 + 7·(3/7, 2/7, 2/7) = 5, 4, 4 → 3, 2, 2 → 5, 4, 4
    assert sampling.allocate([50, 50, 50], [3, 2, 2], 13).tolist() == [5, 4, 4]
    assert sampling.allocate([1, 50, 50], [1, 1, 1], 3).tolist() == [1, 2, 0]  # below the minimums
    assert sampling.allocate([3, 4], [1, 1], 100).tolist() == [3, 4]  # more than the pool


def test_draw_is_seeded_and_records_probabilities():
    docs = [f"d{i}" for i in range(100)]
    min_rank = list(range(1, 101))
    weights = [0.9 ** r for r in range(100)]
    spec, budget = sampling.parse_strata("depth:10,50"), sampling.parse_budget("20%")
    a = sampling.draw_topic("7", docs, min_rank, weights, spec=spec, budget=budget, seed=3)
    b = sampling.draw_topic("7", docs, min_rank, weights, spec=spec, budget=budget, seed=3)
    c = sampling.draw_topic("7", docs, min_rank, weights, spec=spec, budget=budget, seed=4)
    assert a == b and a != c
    drawn = [u for u in a if u.drawn]
    assert len(drawn) == 20
    assert sorted(u.order for u in drawn) == list(range(1, 21))
    assert all(u.order == 0 for u in a if not u.drawn)
    for h in (1, 2, 3):
        units = [u for u in a if u.stratum == h]
        assert sum(u.drawn for u in units) == units[0].drawn_in_stratum
        assert units[0].probability == units[0].drawn_in_stratum / len(units)
    # the top stratum is sampled at the highest rate
    rates = [next(u for u in a if u.stratum == h).probability for h in (1, 2, 3)]
    assert rates[0] > rates[1] > rates[2]


# --- the two file formats ------------------------------------------------------------------

def test_prels_formats_round_trip(tmp_path):
    sample = _sample()["1"]
    se, pr = io.StringIO(), io.StringIO()
    write_sample_eval(se, [("1", d, s, sample.grades.get(d)) for d, s in sample.strata.items()])
    write_prels(pr, [("1", d, g, sample.probability[d]) for d, g in sample.grades.items()])
    (tmp_path / "s").write_text(se.getvalue())
    (tmp_path / "p").write_text(pr.getvalue())
    assert se.getvalue().splitlines()[2] == "1 0 C 1 -1"
    assert pr.getvalue().splitlines()[0] == "1 A 1 1 0.6666666666666666"
    back = read_prels(tmp_path / "s", "sample-eval")["1"]
    assert back.strata == sample.strata and back.grades == sample.grades
    assert back.probability == pytest.approx(sample.probability)
    back = read_prels(tmp_path / "p", "prels")["1"]
    assert back.grades == sample.grades and back.probability == sample.probability
    assert back.strata == {}


@pytest.mark.parametrize("fmt, text, message", [
    ("sample-eval", "1 0 A 1 1\n1 0 A 2 0\n", "line 2.*listed twice"),
    ("sample-eval", "1 0 A 1 -2\n", "line 1.*write -1"),
    ("sample-eval", "1 0 A 1\n", "line 1.*expected 5 columns"),
    ("prels", "1 A 1 1 0\n", "line 1.*not in \\(0, 1\\]"),
    ("prels", "1 A 1 1 1.5\n", "line 1.*not in \\(0, 1\\]"),
    ("prels", "1 A x 1 0.5\n", "line 1.*not a whole number"),
    ("prels", "1 A 1 1 0.5\n1 A 0 1 0.5\n", "line 2.*judged twice"),
    ("prels", "# nothing\n", "no judgments"),
])
def test_prels_errors_name_the_line(tmp_path, fmt, text, message):
    path = tmp_path / "f"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_prels(path, fmt)
