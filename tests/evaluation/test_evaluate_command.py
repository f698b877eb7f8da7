"""The evaluate command on files: JSON shape, text output, errors that name the place."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.measures import parse_measures

from .oracles import ndeval_output, trec_eval_output


def _run(*args) -> str:
    out = io.StringIO()
    call_command("evaluate", *args, stdout=out)
    return out.getvalue()


def test_json_matches_trec_eval_for_two_runs(shared_data):
    o = shared_data / "eval-oracles" / "web2011"
    out = _run("--run", str(o / "runs" / "partial.run"), "--run", str(o / "runs" / "tied.run"),
               "--qrels", str(shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"),
               "--measures", "AP nDCG@20 RBP(p=0.8)", "--complete", "--json")
    data = json.loads(out)
    assert set(data) == {"runs", "conventions"} and set(data["runs"]) == {"partial", "tied"}
    assert data["conventions"] == [parse_measures("RBP(p=0.8)")[0].convention]
    assert "graded gain" in data["conventions"][0]
    tied = data["runs"]["tied"]
    assert set(tied) == {"mean", "per_topic"}
    assert set(tied["mean"]) == {"AP", "nDCG@20", "RBP(p=0.8)", "RBP_resid(p=0.8)"}
    assert len(data["runs"]["partial"]["per_topic"]) == 50
    for run, measure, topic, printed in trec_eval_output(o / "reference" / "trec_eval.txt"):
        if run in ("partial.run", "tied.run") and measure in ("map", "ndcg_cut_20"):
            r = data["runs"][run[:-4]]
            name = "AP" if measure == "map" else "nDCG@20"
            ours = r["mean"][name] if topic == "all" else r["per_topic"][topic][name]
            assert f"{ours:.4f}" == printed


def test_rank_order_and_diversity_qrels_match_ndeval(shared_data):
    o = shared_data / "eval-oracles" / "web2011"
    out = _run("--run", str(o / "runs" / "tied.run"),
               "--qrels", str(shared_data / "trec-web-diversity" / "2011" / "qrels-for-ndeval.txt"),
               "--qrels-format", "diversity", "--measures", "alpha_nDCG@20 nNRBP", "--order", "rank", "--json")
    tied = json.loads(out)["runs"]["tied"]
    rows = [r for r in ndeval_output(o / "reference" / "ndeval.csv") if r["runid"] == "tied"]
    for row in rows:
        values = tied["mean"] if row["topic"] == "amean" else tied["per_topic"][row["topic"]]
        assert f"{values['alpha_nDCG@20']:.6f}" == row["alpha-nDCG@20"]
        assert f"{values['nNRBP']:.6f}" == row["nNRBP"]


def test_text_output_per_topic(tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 c 1 1.0 sys\n")
    qrels = tmp_path / "q"
    qrels.write_text("1 0 b 1\n2 0 c 1\n")
    lines = _run("--run", str(run), "--qrels", str(qrels), "--measures", "RR P@1", "--per-topic").splitlines()
    assert [line.split("\t") for line in lines] == [
        ["sys", "RR ", "1", "0.5000"], ["sys", "P@1", "1", "0.0000"],
        ["sys", "RR ", "2", "1.0000"], ["sys", "P@1", "2", "1.0000"],
        ["sys", "RR ", "all", "0.7500"], ["sys", "P@1", "all", "0.5000"],
    ]


def test_errors_name_the_place(tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b two 1.0 sys\n")
    qrels = tmp_path / "q"
    qrels.write_text("1 0 b 1\n")
    with pytest.raises(CommandError, match=rf"{run}, line 2: rank 'two' is not a whole number"):
        _run("--run", str(run), "--qrels", str(qrels), "--measures", "AP")
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 9223372036854775808 1.0 sys\n")  # 2^63
    with pytest.raises(CommandError, match=rf"{run}, line 2: rank '9223372036854775808' is too "
                                           r"large \(at most 9223372036854775807\)"):
        _run("--run", str(run), "--qrels", str(qrels), "--measures", "AP")  # an OverflowError
    with pytest.raises(CommandError, match="unknown measure 'MAP'"):
        _run("--run", str(run), "--qrels", str(qrels), "--measures", "MAP")
    with pytest.raises(CommandError, match="need diversity qrels"):
        _run("--run", str(run), "--qrels", str(qrels), "--measures", "I-rec@10")
