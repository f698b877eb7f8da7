"""Reading runs, qrels and probabilities; orders; measure names; hand-computed values."""
import gzip
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.fileio import InputError
from evaluation.measures import (RunSet, evaluate_runs, parse_measures,
                                 read_intent_probabilities, read_qrels, read_runs)
from evaluation.measures import adhoc
from evaluation.measures.runs import NONPOOL, PAD, Qrels


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, line, message", [
    ("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n", 2, "expected 6 columns"),
    ("1 Q0 a x 2.0 t\n", 1, "rank 'x' is not a whole number"),
    ("1 Q0 a 1 high t\n", 1, "score 'high' is not a number"),
    ("1 Q0 a 1 inf t\n", 1, "not finite"),
    ("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n", 2, "document 'a' appears twice for topic '1'"),
    ("1 Q0 a 1 2 t\n1 Q0 b 2 1 u\n", 2, "run tag 'u' differs"),
])
def test_bad_run_lines_name_file_and_line(tmp_path, text, line, message):
    p = _write(tmp_path / "bad.run", text)
    with pytest.raises(InputError, match=message) as e:
        read_runs([p])
    assert str(e.value).startswith(f"{p}, line {line}: ")


def test_runs_must_have_distinct_tags(tmp_path):
    a = _write(tmp_path / "a.run", "1 Q0 a 1 2 same\n")
    b = _write(tmp_path / "b.run", "1 Q0 b 1 2 same\n")
    with pytest.raises(InputError, match="tag 'same' is also the tag of"):
        read_runs([a, b])


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_runs([tmp_path / "nothing.run"])
    with pytest.raises(InputError, match="the run file is empty"):
        read_runs([_write(tmp_path / "empty.run", "\n")])


@pytest.mark.parametrize("text, kind, message", [
    ("1 0 a\n", "adhoc", "line 1: expected 4 fields"),
    ("1 0 a x\n", "adhoc", "line 1: relevance 'x' is not a whole number"),
    ("1 0 a 1\n1 0 a 0\n", "adhoc",
     "line 2: second grade \\(0\\) for topic '1', document 'a', already graded 1 on line 1"),
    ("1 2 a 1\n1 2 a 0\n", "diversity", "line 2: second grade \\(0\\) for topic '1', subtopic '2', "
     "document 'a', already graded 1 on line 1"),
])
def test_bad_qrels(tmp_path, text, kind, message):
    with pytest.raises(InputError, match=message):
        read_qrels(_write(tmp_path / "q", text), kind)


def test_qrels_accept_gz_and_ntcireval_levels(tmp_path):
    p = tmp_path / "q.gz"
    with gzip.open(p, "wt") as f:
        f.write("0001 1 d1 L2\n0001 2 d1 L0\n")
    assert read_qrels(p, "diversity").judgments == {"0001": {"1": {"d1": 2}, "2": {"d1": 0}}}


def test_intent_probabilities(tmp_path):
    assert read_intent_probabilities(_write(tmp_path / "p", "7 1 0.25\n7 2 0.75\n")) == {"7": {"1": 0.25, "2": 0.75}}
    with pytest.raises(InputError, match="line 1: probability '1.5' is not between 0 and 1"):
        read_intent_probabilities(_write(tmp_path / "p2", "7 1 1.5\n"))


def test_orders_trec_eval_and_rank():
    # equal scores: trec_eval puts the larger docid first and ignores the rank column
    runs = RunSet.from_rankings([("r", "x", {"1": (["a", "c", "b"], [1.0, 1.0, 2.0], [1, 2, 3])})])
    words = runs.vocab[0]
    assert [words[c] for c in runs.ordered_codes("trec_eval")[0, 0]] == ["b", "c", "a"]
    assert [words[c] for c in runs.ordered_codes("rank")[0, 0]] == ["a", "c", "b"]
    with pytest.raises(InputError, match="unknown order"):
        runs.ordered_codes("file")


def test_ties_change_the_score_only_through_the_order():
    runs = RunSet.from_rankings([("r", "x", {"1": (["a", "b"], [1.0, 1.0], [1, 2])})])
    qrels = Qrels("adhoc", {"1": {"a": 1, "b": 0}})
    assert evaluate_runs(runs, qrels, parse_measures("RR"))["r"]["mean"]["RR"] == 0.5  # b before a
    assert evaluate_runs(runs, qrels, parse_measures("RR"), order="rank")["r"]["mean"]["RR"] == 1.0


@pytest.mark.parametrize("text, message", [
    ("P", "P needs a cutoff"),
    ("AP@10", "AP takes no cutoff"),
    ("P@99999999999999999999", r"cutoff of 'P@99999999999999999999' is too large \(at most 1000000\)"),
    ("P@1000001", "is too large"),
    ("P(rel=99999999999999999999)@10", "rel in .* must be a whole number from 1 to 1000"),
    ("nDCG(rel=2)@5", "nDCG has no parameter 'rel'"),
    ("RBP(p=1.5)", r"p in 'RBP\(p=1\.5\)' must be a number strictly between 0 and 1"),
    ("MAP", "unknown measure 'MAP'"),
    ("", "give at least one measure"),
])
def test_bad_measure_names(text, message):
    with pytest.raises(InputError, match=message):
        parse_measures(text)


def test_measure_keys():
    specs = parse_measures("AP AP(rel=2) nDCG@20 RBP RBP(p=0.95) D#-nDCG@10 AP")
    assert [k for s in specs for k in s.keys] == [
        "AP", "AP(rel=2)", "nDCG@20", "RBP(p=0.8)", "RBP_resid(p=0.8)", "RBP(p=0.95)", "RBP_resid(p=0.95)",
        "D#-nDCG@10"]


def test_measure_family_needs_matching_qrels():
    runs = RunSet.from_rankings([("r", "x", {"1": (["a"], [1.0], [1])})])
    with pytest.raises(InputError, match="need diversity qrels"):
        evaluate_runs(runs, Qrels("adhoc", {"1": {"a": 1}}), parse_measures("alpha_nDCG@5"))
    with pytest.raises(InputError, match="need ad hoc qrels"):
        evaluate_runs(runs, Qrels("diversity", {"1": {"1": {"a": 1}}}), parse_measures("AP"))


def test_run_without_qrels_topics_is_an_error():
    runs = RunSet.from_rankings([("r", "x.run", {"9": (["a"], [1.0], [1])})])
    with pytest.raises(InputError, match="x.run: no topic of run 'r' is in the qrels"):
        evaluate_runs(runs, Qrels("adhoc", {"1": {"a": 1}}), parse_measures("AP"))


def test_hand_computed_adhoc_values():
    # ranking: rel(2), nonrel, unjudged, rel(1); the qrels also hold one unretrieved rel(1)
    g = np.array([2, 0, NONPOOL, 1, PAD])
    assert adhoc.average_precision(g, 3) == pytest.approx((1 / 1 + 2 / 4) / 3)
    assert adhoc.precision(g, 2) == 0.5
    assert adhoc.precision(g, 10) == 0.2
    assert adhoc.reciprocal_rank(g) == 1.0
    assert adhoc.r_precision(g, 3) == pytest.approx(1 / 3)
    assert adhoc.reciprocal_rank(g, rel_level=2) == 1.0 and adhoc.precision(g, 4, rel_level=2) == 0.25
    ideal = np.array([2, 1, 1])
    dcg = 2 + 1 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert adhoc.ndcg(g, ideal, 4) == pytest.approx(dcg / idcg)
    value, resid = adhoc.rbp(g, 0.5, 2)
    assert value == pytest.approx(0.5 * (1.0 + 0.5 * 0.125))  # gains scaled by the top grade 2
    assert resid == pytest.approx(0.5 ** 4 + 0.5 * 0.25)  # p^n + (1-p) p^(3-1)
    r1, r4 = 3 / 16, 1 / 16
    assert adhoc.err(g, 4) == pytest.approx(r1 + (1 - r1) * r4 / 4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=-1, max_value=3), min_size=1, max_size=30),
       st.integers(min_value=0, max_value=3))
def test_measures_stay_in_range_and_ideal_scores_one(grades, extra):
    g = np.array(grades)
    positives = np.sort(g[g > 0])[::-1]
    num_rel = int((g > 0).sum()) + extra
    ideal = np.concatenate([positives, np.ones(extra, dtype=int)])
    for v in (adhoc.average_precision(g, num_rel), adhoc.r_precision(g, num_rel), adhoc.ndcg(g, ideal, 10),
              adhoc.reciprocal_rank(g), adhoc.err(g, 10), *adhoc.rbp(g, 0.8, 3)):
        assert 0.0 <= float(v) <= 1.0 + 1e-12
    if len(positives):
        best = np.concatenate([positives, np.zeros(len(g) - len(positives), dtype=int)])
        assert adhoc.ndcg(best, positives) == pytest.approx(1.0)
        assert adhoc.average_precision(best, len(positives)) == pytest.approx(1.0)


def test_measures_import_no_django():
    code = ("import sys, evaluation.measures, evaluation.measures.engine; "
            "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), 'django imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 3)), min_size=0, max_size=8,
                         unique_by=lambda x: x[0]), min_size=1, max_size=4),
       st.booleans())
def test_trec_eval_order_equals_a_plain_sort(rankings, presorted):
    """(score descending, docid descending) on tied, untied, sorted and unsorted rankings."""
    per = {}
    for i, entries in enumerate(rankings):
        if presorted:  # how most tools write runs: score descending, docid ascending
            entries = sorted(entries, key=lambda e: (-e[1], e[0]))
        if entries:
            per[str(i)] = ([d for d, _ in entries], [float(s) for _, s in entries], list(range(1, len(entries) + 1)))
    if not per:
        return
    runs = RunSet.from_rankings([("r", "x", per)])
    ordered = runs.ordered_codes("trec_eval")
    for ti, topic in enumerate(runs.topics):
        docs, scores, _ = per[topic]
        expected = [d for d, _ in sorted(zip(docs, scores), key=lambda e: (e[1], e[0]), reverse=True)]
        words = runs.vocab[ti]
        got = [words[c] for c in ordered[0, ti] if c >= 0]
        assert got == expected


def test_rbp_graded_and_binary_hand_computed():
    """RBP(p=0.5) grades (gain = grade / the topic's top grade 3); RBP(p=0.5,rel=1) and
    rel=2 count a document as 1 at or above the level; the residual is the same."""
    runs = RunSet.from_rankings([("r", "x", {"1": (["a", "b", "c", "d"], [4.0, 3.0, 2.0, 1.0],
                                                   [1, 2, 3, 4])})])
    qrels = Qrels("adhoc", {"1": {"a": 1, "b": 3, "c": 0, "e": 2}})  # d unjudged
    got = evaluate_runs(runs, qrels, parse_measures("RBP(p=0.5) RBP(p=0.5,rel=1) RBP(p=0.5,rel=2)"))
    mean = got["r"]["mean"]
    w = [0.5 * 0.5 ** i for i in range(4)]  # (1 - p) p^(i-1)
    assert mean["RBP(p=0.5)"] == pytest.approx(w[0] * 1 / 3 + w[1] * 3 / 3)
    assert mean["RBP(p=0.5,rel=1)"] == pytest.approx(w[0] + w[1])
    assert mean["RBP(p=0.5,rel=2)"] == pytest.approx(w[1])
    resid = 0.5 ** 4 + w[3]
    for key in ("RBP_resid(p=0.5)", "RBP_resid(p=0.5,rel=1)", "RBP_resid(p=0.5,rel=2)"):
        assert mean[key] == pytest.approx(resid)
    # on binary qrels the two forms agree
    binary = Qrels("adhoc", {"1": {"a": 1, "b": 1, "c": 0}})
    both = evaluate_runs(runs, binary, parse_measures("RBP(p=0.5) RBP(p=0.5,rel=1)"))["r"]["mean"]
    assert both["RBP(p=0.5)"] == pytest.approx(both["RBP(p=0.5,rel=1)"])
    assert [s.convention.split(":")[0] for s in parse_measures("RBP RBP(rel=1) AP")
            if s.convention] == ["RBP(p=0.8)", "RBP(p=0.8,rel=1)"]
