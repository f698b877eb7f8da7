"""ERR@k against gdeval.pl (TREC Web track), the script ir_measures ships, run here."""
import shutil
import subprocess
from importlib import resources

import pytest

from evaluation.measures import evaluate_runs, parse_measures, read_qrels, read_runs


@pytest.mark.parametrize("name", ["fair", "tied", "partial"])
def test_err_equals_gdeval(shared_data, name):
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed; gdeval.pl needs it")
    script = resources.files("ir_measures") / "bin" / "gdeval.pl"
    qrels_path = shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"
    run_path = shared_data / "eval-oracles" / "web2011" / "runs" / f"{name}.run"
    result = evaluate_runs(read_runs([run_path]), read_qrels(qrels_path, "adhoc"),
                           parse_measures("ERR@5 ERR@20"))[name]["per_topic"]
    for k in (5, 20):
        out = subprocess.run(["perl", str(script), str(qrels_path), str(run_path), str(k)],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        assert out[0] == f"runid,topic,ndcg@{k},err@{k}"
        assert len(out) > 40
        for line in out[1:]:
            _, topic, _, err = line.split(",")
            assert f"{result[topic][f'ERR@{k}']:.5f}" == err, (topic, k)
