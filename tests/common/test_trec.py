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
