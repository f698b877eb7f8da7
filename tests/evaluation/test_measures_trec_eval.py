"""Ad hoc measures against trec_eval's own outputs: its test data (out.test*) and the
shared Web 2011 oracle (tied and partial runs included), digit for digit."""
import pytest

from evaluation.measures import evaluate_runs, parse_measures, read_qrels, read_runs

from .oracles import WEB2011_RUNS, trec_eval_name, trec_eval_output

# trec_eval's own test commands: output file, qrels, run, -c, -l
TESTDATA = [
    ("out.test", "qrels.test", "results.test", False, 1),
    ("out.test.a", "qrels.test", "results.test", False, 1),
    ("out.test.aq", "qrels.test", "results.test", False, 1),
    ("out.test.aqc", "qrels.test", "results.trunc", True, 1),
    ("out.test.aql", "qrels.rel_level", "results.test", False, 2),
    ("out.test.meas_params", "qrels.test", "results.test", False, 1),
]


def _compare(result, rows, rel_level=1, run=None):
    compared = 0
    for run_col, measure, topic, printed in rows:
        name = trec_eval_name(measure, rel_level)
        if name is None:
            continue
        r = result[run if run_col is None else run_col]
        ours = r["mean"][name] if topic == "all" else r["per_topic"][topic][name]
        assert f"{ours:.4f}" == printed, (run_col, measure, topic)
        compared += 1
    return compared


@pytest.mark.parametrize("out, qrels, run, complete, level", TESTDATA)
def test_trec_eval_testdata(shared_data, out, qrels, run, complete, level):
    d = shared_data / "runs" / "trec_eval-testdata"
    rows = trec_eval_output(d / out)
    names = sorted({trec_eval_name(m, level) for _, m, _, _ in rows} - {None})
    specs = parse_measures([n for n in names if not n.startswith("RBP_resid")])
    result = evaluate_runs(read_runs([d / run]), read_qrels(d / qrels, "adhoc"), specs, complete=complete)
    per_topic = {t for _, _, t, _ in rows if t != "all"}
    assert _compare(result, rows, level, run="STANDARD") >= (4 if not per_topic else 30)


def test_trec_eval_web2011_oracle(shared_data):
    o = shared_data / "eval-oracles" / "web2011"
    runs = read_runs([o / "runs" / f"{n}.run" for n in WEB2011_RUNS])
    qrels = read_qrels(shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt", "adhoc")
    result = evaluate_runs(runs, qrels, parse_measures("AP nDCG@10 nDCG@20 P@10 P@20 RR"), complete=True)
    rows = [(r[:-4], m, t, v) for r, m, t, v in trec_eval_output(o / "reference" / "trec_eval.txt")]
    assert _compare(result, rows) == 1836
    # -c: the partial run's missing topics count as 0 and are printed
    assert result["partial"]["per_topic"]["111"]["AP"] == 0.0
    assert len(result["partial"]["per_topic"]) == 50


def test_without_complete_only_the_runs_topics_count(shared_data):
    o = shared_data / "eval-oracles" / "web2011"
    runs = read_runs([o / "runs" / "partial.run"])
    qrels = read_qrels(shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt", "adhoc")
    plain = evaluate_runs(runs, qrels, parse_measures("AP"))["partial"]
    full = evaluate_runs(runs, qrels, parse_measures("AP"), complete=True)["partial"]
    assert len(plain["per_topic"]) == 47
    assert plain["mean"]["AP"] == pytest.approx(full["mean"]["AP"] * 50 / 47)
