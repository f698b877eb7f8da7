"""The bulk column reader: the same values as the line readers, or Unsure (never a wrong
value, never an accepted file the line reader refuses)."""
import gzip
import random

import numpy as np
import pytest

from common import bytescan, columns
from common.columns import Unsure, read_columns
from common.fileio import InputError
from evaluation.measures import runs as eval_runs
from common import trec


def _line_rankings(p):
    """A run file read by the line reader alone, as ``(tag, {topic: (docids, scores,
    ranks)})``."""
    tag, arrays = trec.run_read(p, trec.RUN_EVALUATION, bulk=False)
    return tag, arrays.per_topic()


def _column(tmp_path, tokens):
    p = tmp_path / "c.txt"
    p.write_text("".join(f"t{i} x {tok}\n" for i, tok in enumerate(tokens)))
    (block,) = read_columns(p, 3)
    return block


NUMBERS = [
    ["1.5", "-0.0", "+.5", "5.", "12.25", "-3"],  # one decimal or none, signs
    ["1e5", "2.5E-3", "1_0", "-7", "0.1"],  # exponents and underscores: float() itself
    ["3.1415926535897931", "-0.30000000000000004", "9007199254740993"],  # beyond 2**53
    ["0.10000000", "12345678.12345678", "-99999999.99999999"],  # fixed, up to 16 characters
    [f"{x:.6f}" for x in np.random.default_rng(1).normal(0, 50, 500)],
    [f"{x:.2f}" for x in np.random.default_rng(2).normal(0, 5, 500)],
    [repr(x) for x in np.random.default_rng(3).normal(0, 1, 500)],
]


@pytest.mark.parametrize("tokens", NUMBERS)
def test_floats_equal_float(tmp_path, tokens):
    got = _column(tmp_path, tokens).floats(2)
    want = [float(t) for t in tokens]
    assert [x.hex() for x in got.tolist()] == [x.hex() for x in want]  # -0.0 stays -0.0


def test_fixed_decimals_take_the_compiled_path_and_agree(tmp_path):
    rng = random.Random(4)
    for decimals in range(0, 9):
        tokens = [f"{rng.uniform(-1e6, 1e6):.{decimals}f}" for _ in range(200)]
        block = _column(tmp_path, tokens)
        s, e = block.span(2)
        out, slow = np.zeros(len(s)), np.zeros(len(s), dtype=bool)
        assert bytescan.parse_numbers(block.data, s, e, False, out, np.zeros(0, np.int64), slow) == 0
        assert out.tolist() == [float(t) for t in tokens]


@pytest.mark.parametrize("tokens", [["1", "+2", "-3", "0004", "123456789012345"], ["-0", "7"]])
def test_ints_equal_int(tmp_path, tokens):
    assert _column(tmp_path, tokens).ints(2).tolist() == [int(t) for t in tokens]


@pytest.mark.parametrize("bad", ["high", "1.0.0", "-", ".", "nan1"])
def test_a_number_it_cannot_read_is_unsure(tmp_path, bad):
    block = _column(tmp_path, ["1.5", bad])
    with pytest.raises(Unsure):
        block.floats(2)


@pytest.mark.parametrize("text", [
    "1 Q0 d\u00e9 1 1.0 t\n",  # non-ASCII: the line reader decodes and checks it
    "1 Q0 d\x0b 1 1.0 t\n",  # a control byte
    "1 Q0 d\x00 1 1.0 t\n",  # NUL
    "1 Q0 d 1 1.0 t\n1 Q0 e 2 1.0\n",  # a short line
    "1 Q0 d 1 1.0 t x\n",  # a seventh column where six are expected
])
def test_what_it_does_not_understand_is_unsure(tmp_path, text):
    p = tmp_path / "r.txt"
    p.write_bytes(text.encode("utf-8"))
    with pytest.raises(Unsure):
        read_columns(p, 6)


def test_blocks_cut_at_line_ends_crlf_blank_lines_and_gzip(tmp_path):
    lines = [f"{t} Q0 d{i} {i} {1.0 / (i + 1):.5f} run\r\n" for t in (3, 1, 2) for i in range(50)]
    text = "\n  \n".join(lines) + "1 Q0 last 9 0.5 run"  # no final line end
    p = tmp_path / "r.txt.gz"
    with gzip.open(p, "wt", newline="") as f:
        f.write(text)
    blocks = read_columns(p, 6, block_bytes=512)
    assert len(blocks) > 3
    docs = np.concatenate([b.text(2) for b in blocks]).astype(str).tolist()
    assert docs == [line.split()[2] for line in text.splitlines() if line.strip()]


def _run_files(tmp_path):
    """Runs with ties, topics out of order and interleaved, extra columns, gzip."""
    rng = np.random.default_rng(5)
    paths = []
    for r in range(3):
        lines = []
        for t in ["10", "2", "UQV100.001", "2b"]:
            n = int(rng.integers(1, 40))
            docs = rng.choice(60, n, replace=False)
            scores = np.round(rng.normal(size=n), 1)
            lines += [f"{t} Q0 D{d:03d} {k} {s} tag{r}" + (" extra" if k == 3 else "")
                      for k, (d, s) in enumerate(zip(docs, scores), 1)]
        lines.insert(5, lines.pop(-1))  # a topic's entry out of place
        p = tmp_path / (f"run{r}.txt" + (".gz" if r == 1 else ""))
        data = ("\n".join(lines) + "\n").encode()
        p.write_bytes(gzip.compress(data) if r == 1 else data)
        paths.append(p)
    return paths


def test_read_runs_equals_the_line_reader(tmp_path):
    paths = _run_files(tmp_path)
    bulk = eval_runs.read_runs(paths)
    lines = eval_runs.RunSet.from_rankings(
        [(lambda tag, per, p=p: (tag, str(p), per))(*_line_rankings(p)) for p in paths])
    assert (bulk.tags, bulk.sources, bulk.topics) == (lines.tags, lines.sources, lines.topics)
    for name in ("codes", "scores", "ranks", "lengths"):
        assert np.array_equal(getattr(bulk, name), getattr(lines, name)), name
    assert [v.tolist() for v in bulk.vocab] == [v.tolist() for v in lines.vocab]
    assert bulk.vocab_index == lines.vocab_index


def test_read_runs_falls_back_to_name_the_line(tmp_path):
    paths = _run_files(tmp_path)
    bad = tmp_path / "dup.txt"
    bad.write_text("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n1 Q0 a 3 0 t\n")
    with pytest.raises(InputError, match=r"dup.txt, line 3: document 'a' appears twice"):
        eval_runs.read_runs([*paths, bad])


@pytest.mark.parametrize("kind", ["adhoc", "diversity"])
def test_read_qrels_equals_the_line_reader(tmp_path, monkeypatch, kind):
    p = tmp_path / "q.txt"
    p.write_text("".join(f"{t} {i % 3} d{j} {(j * 7) % 4 - (j == 5)}\n"
                         for t in ("9", "10") for i in range(3) for j in range(i, 12, 3)))
    bulk = eval_runs.read_qrels(p, kind)

    def unsure(*args):
        raise Unsure
    monkeypatch.setattr(trec, "_bulk_judgments", unsure)
    lines = eval_runs.read_qrels(p, kind)
    assert bulk.judgments == lines.judgments
    assert repr(bulk.judgments) == repr(lines.judgments)  # the same order too


def test_trecrun_read_run_equals_the_line_reader(tmp_path, monkeypatch):
    p = tmp_path / "r.txt"
    p.write_text("q2 Q0 b 1 2.0 s\nq1 Q0 z 1 1.5 s\nq2 Q0 a 2 2.0 s\nq2 Q0 c 3 3.5 s\n"
                 "q1 Q0 y 2 -0.0 s\nq1 Q0 x 3 0.0 s\n")
    bulk = trec.read_run(p, {"q1", "q2"})

    def unsure(*args):
        raise Unsure
    monkeypatch.setattr(trec, "_bulk_run", unsure)
    lines = trec.read_run(p, {"q1", "q2"})
    assert bulk == lines and list(bulk[1]) == list(lines[1]) == ["q2", "q1"]
    assert bulk[1]["q2"] == (["c", "a", "b"], [3.5, 2.0, 2.0])


def test_trecrun_bulk_refuses_what_the_line_reader_refuses(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("1 Q0 a 1 2 t\n1 Q0 b 0 1 t\n")
    with pytest.raises(InputError, match="line 2: rank '0' is not positive"):
        trec.read_run(p)
    p.write_text("1 Q0 a 1 2 t\n3 Q0 b 1 1 t\n")
    with pytest.raises(InputError, match="line 2: topic '3' is not in the topic set"):
        trec.read_run(p, {"1"})
    assert columns.BLOCK_BYTES > (1 << 20)  # a block always holds a whole line


def test_read_runs_without_padding_equals_the_line_reader(tmp_path):
    # every run ranks as many documents for every topic: no position is left as padding
    paths = []
    for r in range(2):
        p = tmp_path / f"full{r}.txt"
        p.write_text("".join(f"{t} Q0 d{(d * (r + 3)) % 7} {d + 1} {round(1 - d / 4, 1)} f{r}\n"
                             for t in ("1", "2") for d in range(5)))
        paths.append(p)
    bulk = eval_runs.read_runs(paths)
    lines = eval_runs.RunSet.from_rankings(
        [(lambda tag, per, p=p: (tag, str(p), per))(*_line_rankings(p)) for p in paths])
    for name in ("codes", "scores", "ranks", "lengths"):
        assert np.array_equal(getattr(bulk, name), getattr(lines, name)), name


@pytest.mark.parametrize("text", [b"\xef\xbb\xbf1 Q0 a 1 2.5 t\n1 Q0 b 2 1.5 t",
                                  b"1 Q0 a 1 2.5 t\r\n\r\n1 Q0 b 2 1.5 t\r\n"])
def test_a_plain_file_read_in_place(tmp_path, monkeypatch, text):
    # a byte-order mark is dropped, a missing last line end or CRLF changes nothing
    p = tmp_path / "r.txt"
    p.write_bytes(text)
    bulk = trec.read_run(p)

    def unsure(*args):
        raise Unsure
    monkeypatch.setattr(trec, "_bulk_run", unsure)
    assert bulk == trec.read_run(p) == ("t", {"1": (["a", "b"], [2.5, 1.5])})


@pytest.mark.parametrize("sep", [" ", "\t", " \t", "  "])
def test_every_layout_gives_the_same_columns(tmp_path, sep):
    rng = np.random.default_rng(6)
    rows = [(f"q{int(t)}", "Q0", f"doc-{int(d)}", str(k), f"{s:.4f}", "tag")
            for k, (t, d, s) in enumerate(zip(rng.integers(0, 3, 300), rng.integers(0, 10**6, 300),
                                              rng.normal(size=300)), 1)]
    p = tmp_path / "r.txt"
    p.write_text("".join(sep.join(r) + "\n" for r in rows))
    (block,) = read_columns(p, 6)
    assert block.text(0).astype(str).tolist() == [r[0] for r in rows]
    assert block.text(2).astype(str).tolist() == [r[2] for r in rows]
    assert block.ints(3).tolist() == [int(r[3]) for r in rows]
    assert block.floats(4).tolist() == [float(r[4]) for r in rows]
    assert [block.token(i, j).decode() for i in (0, 1, 299) for j in range(6)] == [
        r[j] for i in (0, 1, 299) for r in [rows[i]] for j in range(6)]
    first, values = block.stretches(0)
    assert [rows[i][0].encode() for i in first.tolist()] == values


def test_a_line_too_long_is_unsure_in_the_single_separator_layout(tmp_path, monkeypatch):
    monkeypatch.setattr(columns.fileio, "MAX_LINE_BYTES", 40)
    p = tmp_path / "r.txt"
    p.write_text("1 Q0 d 1 1.0 t\n1 Q0 " + "e" * 40 + " 2 0.5 t\n")
    with pytest.raises(Unsure):
        read_columns(p, 6)


def test_read_runs_with_long_and_short_stretches_equals_the_line_reader(tmp_path):
    rng = np.random.default_rng(7)
    paths = []
    for r in range(3):
        lines = []
        for t in ["3", "1", "2"]:  # long stretches: laid out slice by slice
            docs = rng.choice(5000, 300 + 100 * r, replace=False)
            lines += [f"{t} Q0 D{d} {k} {s:.2f} tag{r}"
                      for k, (d, s) in enumerate(zip(docs, rng.normal(size=len(docs))), 1)]
        if r == 2:  # every line its own stretch: laid out by index ramps
            rng.shuffle(lines)
        p = tmp_path / f"run{r}.txt"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    for group in (paths[:2], paths):
        bulk = eval_runs.read_runs(group)
        lines = eval_runs.RunSet.from_rankings(
            [(lambda tag, per, p=p: (tag, str(p), per))(*_line_rankings(p)) for p in group])
        for name in ("codes", "scores", "ranks", "lengths"):
            assert np.array_equal(getattr(bulk, name), getattr(lines, name)), name
        assert bulk.vocab_index == lines.vocab_index
    bad = tmp_path / "dup.txt"
    bad.write_text(paths[0].read_text() + "1 Q0 X 9 0.0 tag0\n1 Q0 X 10 0.0 tag0\n")
    with pytest.raises(InputError, match=r"dup.txt, line 902: document 'X' appears twice"):
        eval_runs.read_runs([bad])


SPELLINGS = ["1.5", "-0.0", "+.5", "5.", ".5", "1e5", "1E+05", "-2.5e-3", "1_0", "0x10", "0X1f",
             "0b1", "0o7", "inf", "-Infinity", "nan", "1e400", "+5", "-0", "007", "1.0", "9" * 19,
             "9223372036854775808", "e5", ".", "-", "1.2.3", "1e", "--1", "+-1"]


@pytest.mark.parametrize("integer", [False, True])
def test_the_compiled_parser_reads_only_what_float_and_int_read_and_to_the_same_value(tmp_path, integer):
    convert = int if integer else float
    for token in SPELLINGS:
        block = _column(tmp_path, ["1", token])
        s, e = block.span(2)
        out_f, out_i, slow = np.zeros(2), np.zeros(2, np.int64), np.zeros(2, dtype=bool)
        bytescan.parse_numbers(block.data, s, e, integer, out_f, out_i, slow)
        if slow[1]:
            continue  # left to float()/int() themselves
        want = convert(token)  # raises if the fast path took what Python refuses
        got = out_i if integer else out_f
        if integer:
            assert got.tolist() == [1, want], token
        else:
            assert [x.hex() for x in got.tolist()] == [(1.0).hex(), want.hex()], token


def test_random_decimals_up_to_2_to_the_53_equal_float(tmp_path):
    rng = np.random.default_rng(8)
    tokens = []
    for digits in range(1, 19):
        for _ in range(60):
            mant = str(int(rng.integers(0, 10**digits)))
            cut = int(rng.integers(0, len(mant) + 1))
            sign = ("-", "+", "")[int(rng.integers(0, 3))]
            tokens.append(f"{sign}{mant[:cut]}.{mant[cut:]}")
    got = _column(tmp_path, tokens).floats(2)
    assert [x.hex() for x in got.tolist()] == [float(t).hex() for t in tokens]


def test_a_hexadecimal_rank_is_refused_and_named(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("1 Q0 a 1 2.5 t\n1 Q0 b 0x10 1.5 t\n")
    with pytest.raises(InputError, match=r"r.txt, line 2: rank '0x10' is not a whole number"):
        eval_runs.read_runs([p])
