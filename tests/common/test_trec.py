import gzip
import io

import pytest

from common.fileio import InputError
from common.trec import read_run, write_run


def test_read_orders_by_score_then_docid_and_accepts_gz(tmp_path):
    p = tmp_path / "r.txt.gz"
    with gzip.open(p, "wt") as f:
        f.write("UQV100.001 Q0 b 1 2.0 sys\nUQV100.001 Q0 a 2 2.0 sys\n"
                "UQV100.001 Q0 c 3 3.5 sys\n\n7 Q0 z 1 -1 sys\n")
    tag, runs = read_run(p)
    assert tag == "sys"
    assert runs["UQV100.001"] == (["c", "a", "b"], [3.5, 2.0, 2.0])
    assert runs["7"] == (["z"], [-1.0])


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n", 2, "expected 6 columns"),
        ("1 Q0 a 1 2.0 t\n1 Q0 b x 1.0 t\n", 2, "rank 'x' is not a whole number"),
        ("1 Q0 a 1 high t\n", 1, "score 'high' is not a number"),
        ("1 Q0 a 1 nan t\n", 1, "not finite"),
        ("1 Q0 a 1 2 t\n2 Q0 a 1 2 t\n1 Q0 a 2 1 t\n", 3, "document 'a' appears twice for topic '1'"),
        ("1 Q0 a 1 2 t\n1 Q0 b 2 1 u\n", 2, "run tag 'u' differs"),
    ],
)
def test_errors_name_file_and_line(tmp_path, text, line, message):
    p = tmp_path / "bad.run"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        read_run(p)
    assert str(e.value).startswith(f"{p}, line {line}: ")
    assert message in str(e.value)


def test_write_round_trip(tmp_path):
    out = io.StringIO()
    n = write_run(out, [("t1", ["d2", "d1"], [1.5, 0.25]), ("t2:v0a1", ["d9"], [3.0])], "tag")
    assert n == 3
    p = tmp_path / "r"
    p.write_text(out.getvalue())
    assert out.getvalue().splitlines()[0] == "t1 Q0 d2 1 1.5 tag"
    tag, runs = read_run(p)
    assert runs == {"t1": (["d2", "d1"], [1.5, 0.25]), "t2:v0a1": (["d9"], [3.0])}


# --- the rules of each caller ------------------------------------------------------------

from common import trec  # noqa: E402


def test_each_caller_s_rules(tmp_path):
    """One reader, three sets of rules: evaluation reads as trec_eval does (a seventh
    column ignored, ids compared as written, any 64-bit rank); imports and releases
    refuse those."""
    p = tmp_path / "r.run"
    p.write_text("1 Q0 cafe\u0301 -5 2.0 t extra\n")
    tag, arrays = trec.run_read(p, trec.RUN_EVALUATION)
    assert tag == "t" and arrays.per_topic() == {"1": (["cafe\u0301"], [2.0], [-5])}
    for rules in (trec.RUN_IMPORT, trec.RUN_RELEASE):
        with pytest.raises(InputError, match=r"line 1: expected 6 columns .*found 7"):
            trec.run_read(p, rules)
    p.write_text("1 Q0 cafe\u0301 -5 2.0 t\n")
    with pytest.raises(InputError, match=r"line 1: rank '-5' is not positive"):
        trec.run_read(p, trec.RUN_IMPORT)
    p.write_text("1 Q0 cafe\u0301 5 2.0 t\n")
    assert trec.read_run(p) == ("t", {"1": (["caf\u00e9"], [2.0])})  # NFC on import


@pytest.mark.parametrize("rank", ["9223372036854775808", "-9223372036854775809", "9" * 5000])
def test_a_rank_beyond_64_bits_names_its_line_in_evaluation(tmp_path, rank):
    from evaluation.measures import read_runs

    p = tmp_path / "r.run"
    p.write_text(f"1 Q0 a 1 2.0 t\n1 Q0 b {rank} 1.0 t\n")
    with pytest.raises(InputError, match=rf"r\.run, line 2: rank '{rank[:50]}.*(too large|is below"
                                         r"|not a whole number)"):
        read_runs([p])


def test_qrels_rules_of_evaluation_and_imports(tmp_path):
    p = tmp_path / "q"
    p.write_text("1 0 a L2\n1 0 b 3\n")
    assert trec.qrels_judgments(p, "adhoc") == {"1": {"a": 2, "b": 3}}
    with pytest.raises(InputError, match=r"line 1: relevance 'L2' is not a whole number"):
        trec.read_qrels(p, "adhoc")  # levels are NTCIREVAL's, read by evaluation only
    p.write_text("# a comment\n1 0 a 1\n")
    assert trec.read_qrels(p, "adhoc") == [(2, trec.AdhocQrel("1", "0", "a", 1))]
    with pytest.raises(InputError, match=r"line 1: expected 4 fields, got 3"):
        trec.qrels_judgments(p, "adhoc")  # trec_eval reads no comments either
    p.write_text("1 0 a 1\n1 0 a 2\n")
    for read in (lambda: trec.read_qrels(p, "adhoc"), lambda: trec.qrels_judgments(p, "adhoc"),
                 lambda: trec.qrels_judgments(p, "adhoc", bulk=False)):
        with pytest.raises(InputError, match=r"line 2: second grade \(2\) for topic '1', "
                                             r"document 'a', already graded 1 on line 1"):
            read()


def test_no_other_module_reads_trec_files():
    """The readers that went stay gone: no module but common.trec splits a run or qrels
    line (the release, evaluation, imports and pooling all call it)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert not (root / "retrieval" / "trecrun.py").exists()
    assert not (root / "pooling" / "qrelsio.py").exists()
    for path in (root / "evaluation" / "measures" / "runs.py",
                 root / "projects" / "release" / "read.py"):
        text = path.read_text()
        assert "common.trec" in text or "from common import" in text and "trec" in text
        assert "read_columns(" not in text
