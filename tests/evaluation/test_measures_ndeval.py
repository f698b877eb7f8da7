"""Diversity measures against ndeval v4.5's own output on the Web 2011 oracle runs (every
topic and the amean row, 6 printed decimals) and its published one-topic example."""
import pytest

from evaluation.measures import RunSet, evaluate_runs, parse_measures, read_qrels, read_runs
from evaluation.measures.runs import Qrels

from .oracles import NDEVAL_COLUMNS, WEB2011_RUNS, ndeval_output


def test_ndeval_web2011_oracle(shared_data):
    o = shared_data / "eval-oracles" / "web2011"
    runs = read_runs([o / "runs" / f"{n}.run" for n in WEB2011_RUNS])
    qrels = read_qrels(shared_data / "trec-web-diversity" / "2011" / "qrels-for-ndeval.txt", "diversity")
    result = evaluate_runs(runs, qrels, parse_measures(list(NDEVAL_COLUMNS.values())), order="rank")
    rows = ndeval_output(o / "reference" / "ndeval.csv")
    compared = 0
    for row in rows:
        r = result[row["runid"]]
        values = r["mean"] if row["topic"] == "amean" else r["per_topic"][row["topic"]]
        for column, name in NDEVAL_COLUMNS.items():
            assert f"{values[name]:.6f}" == row[column], (row["runid"], row["topic"], column)
            compared += 1
    assert compared == len(rows) * 21 == 6363
    # ndeval averages over the topics the run has: partial lacks three
    assert len(result["partial"]["per_topic"]) == 47


def test_ndeval_published_example():
    # one topic, intents 1: {A}, 2: {B, D}, 3: {C}; the run ranks A, D, E, B
    runs = RunSet.from_rankings([("r", "example", {"1": (["A", "D", "E", "B"], [4.0, 3.0, 2.0, 1.0], [1, 2, 3, 4])})])
    qrels = Qrels("diversity", {"1": {"1": {"A": 1}, "2": {"B": 1, "D": 1}, "3": {"C": 1}}})
    names = [f"{m}@{k}" for m in ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG", "P_IA") for k in (5, 10, 20)]
    r = evaluate_runs(runs, qrels, parse_measures(names + ["NRBP", "nNRBP", "AP_IA", "StRecall@20"]),
                      order="rank")["r"]["mean"]
    expected = {
        "ERR_IA@5": 0.393343, "ERR_IA@10": 0.390776, "ERR_IA@20": 0.390730,
        "nERR_IA@5": 0.829787, "nERR_IA@10": 0.829787, "nERR_IA@20": 0.829787,
        "alpha_DCG@5": 0.405289, "alpha_DCG@10": 0.399879, "alpha_DCG@20": 0.399741,
        "alpha_nDCG@5": 0.786896, "alpha_nDCG@10": 0.786896, "alpha_nDCG@20": 0.786896,
        "NRBP": 0.390625, "nNRBP": 0.862069, "AP_IA": 0.5,
        "P_IA@5": 0.2, "P_IA@10": 0.1, "P_IA@20": 0.05, "StRecall@20": 0.666667,
    }
    for name, value in expected.items():
        assert f"{r[name]:.6f}" == f"{value:.6f}", name


def test_greedy_ideal_breaks_ties_by_largest_docid():
    from evaluation.measures.diversity import ideal_gains
    import numpy as np

    # b and c tie for the first place; ndeval takes the larger docid (c) first, after
    # which a (intent 0 only, already covered by c) gains 0.5 and b gains 1
    rel = np.array([[1, 0], [0, 1], [1, 0]], dtype=bool)  # a: intent 0, b: intent 1, c: intent 0
    gains = ideal_gains(rel, np.array(["a", "b", "c"]))
    assert gains.tolist() == [1.0, 1.0, 0.5]


def test_topic_without_relevant_documents_scores_zero():
    runs = RunSet.from_rankings([("r", "x", {"1": (["A"], [1.0], [1])})])
    qrels = Qrels("diversity", {"1": {"1": {"A": 0}}})
    r = evaluate_runs(runs, qrels, parse_measures("alpha_nDCG@5 nNRBP AP_IA"), order="rank")["r"]["mean"]
    assert r == {"alpha_nDCG@5": 0.0, "nNRBP": 0.0, "AP_IA": 0.0}


def test_rank_order_refuses_a_repeated_rank():
    runs = RunSet.from_rankings([("r", "some.run", {"1": (["A", "B"], [1.0, 2.0], [1, 1])})])
    qrels = Qrels("diversity", {"1": {"1": {"A": 1}}})
    with pytest.raises(ValueError, match="some.run: rank 1 appears twice for topic '1'"):
        evaluate_runs(runs, qrels, parse_measures("NRBP"), order="rank")
