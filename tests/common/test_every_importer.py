"""Every importer treats bad input alike: the same id check (NFC; no spaces, control,
zero-width or bidirectional characters), strict decoding with an encoding option, and
clear errors for truncated or fake gzip files -- each naming the file and the line."""
import gzip
import json
import re

import pytest

from common.fileio import InputError
from common.trec import read_qrels, read_run
from retrieval.collections_io import read_collection
from topics.topicfiles import read_topics
from topics.variantfiles import read_variants


def _ids_of_topics(records):
    return [r.topic_id for r in records]


# name -> (file name, template with {id} (and {text}, a free-text field), read, ids of result)
FORMATS = {
    "topics tsv": ("t.tsv", "{id}\tstatement {text}\n",
                   lambda p, **kw: read_topics(p, "tsv", **kw), _ids_of_topics),
    "topics smart": ("q.text", ".I {id}\n.W\nquery {text}\n",
                     lambda p, **kw: read_topics(p, "smart", **kw), _ids_of_topics),
    "topics trec": ("t.trec", "<top>\n<num> Number: {id}\n<title> t {text}\n</top>\n",
                    lambda p, **kw: read_topics(p, "trec", **kw), _ids_of_topics),
    "topics webxml": ("t.xml", '<webtrack><topic number="{id}">\n<query>q {text}</query>\n'
                               '</topic></webtrack>\n',
                      lambda p, **kw: read_topics(p, "webxml"), _ids_of_topics),
    "variants uqv100": ("u.txt", "q|UQV100.001|{id}|2|1\tquery {text}\n",
                        lambda p, **kw: read_variants(p, "uqv100", **kw),
                        lambda rs: [r.worker_id for r in rs]),
    "variants robust04-uqv": ("r.txt", "{id}-1-1;query {text}\n",
                              lambda p, **kw: read_variants(p, "robust04-uqv", **kw),
                              lambda rs: [r.topic_id for r in rs]),
    "variants tsv": ("v.tsv", "{id}\tquery {text}\n",
                     lambda p, **kw: read_variants(p, "tsv", **kw),
                     lambda rs: [r.topic_id for r in rs]),
    "run": ("run.txt", "{id} Q0 d1 1 1.0 tag{text}\n",
            lambda p, **kw: read_run(p, **kw), lambda r: list(r[1])),
    "collection jsonl": ("c.jsonl", '{{"id": "{id}", "contents": "x {text}"}}\n',
                         lambda p, **kw: list(read_collection(p, "jsonl", **kw)),
                         lambda ds: [d.docid for d in ds]),
    "collection trec": ("c.trec", "<DOC>\n<DOCNO>{id}</DOCNO>\nx {text}\n</DOC>\n",
                        lambda p, **kw: list(read_collection(p, "trec", **kw)),
                        lambda ds: [d.docid for d in ds]),
    "collection smart": ("c.all", ".I {id}\n.W\nx {text}\n",
                         lambda p, **kw: list(read_collection(p, "smart", **kw)),
                         lambda ds: [d.docid for d in ds]),
    "qrels": ("q.qrels", "{id} 0 d{text} 1\n",
              lambda p, **kw: read_qrels(p, "adhoc", **kw),
              lambda rows: [r.topic_id for _, r in rows]),
}

def _write(tmp_path, name, id_, text="ok"):
    fname, tpl = FORMATS[name][0], FORMATS[name][1]
    if name == "collection jsonl":  # a JSON string: escape what JSON escapes
        id_ = json.dumps(id_)[1:-1]
    p = tmp_path / fname
    p.write_text(tpl.format(id=id_, text=text), encoding="utf-8")
    return p


@pytest.mark.parametrize("name", FORMATS)
def test_ids_are_nfc_in_every_format(tmp_path, name):
    p = _write(tmp_path, name, "Xcafe\u0301")
    result = FORMATS[name][2](p)
    assert FORMATS[name][3](result) == ["Xcaf\u00e9"]


BAD = {
    "zero-width": ("X\u200bY", "contains an invisible format character (zero-width or "
                                "bidirectional control) (U+200B)"),
    "bidi": ("X\u202eY", "contains an invisible format character (zero-width or "
                          "bidirectional control) (U+202E)"),
    "replacement": ("X\ufffdY", "U+FFFD, the mark of text decoded with the wrong encoding"),
    "control": ("X\x07Y", "contains a control character (U+0007)"),
}


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name", FORMATS)
def test_bad_ids_are_refused_alike(tmp_path, name, bad):
    value, reason = BAD[bad]
    if name == "topics webxml" and bad == "control":
        pytest.skip("XML itself forbids control characters (a malformed-XML error)")
    p = _write(tmp_path, name, value)
    with pytest.raises(InputError) as info:
        FORMATS[name][2](p)
    assert info.value.line is not None
    assert reason in str(info.value)
    assert str(info.value).startswith(f"{p}, line {info.value.line}: ")


@pytest.mark.parametrize("name", FORMATS)
def test_ids_with_spaces_are_refused(tmp_path, name):
    p = _write(tmp_path, name, "X Y")
    with pytest.raises(InputError) as info:
        FORMATS[name][2](p)
    assert info.value.line is not None


@pytest.mark.parametrize("name", FORMATS)
def test_over_long_ids_are_refused_quoting_at_most_200_characters(tmp_path, name):
    p = _write(tmp_path, name, "X" * 5000)
    with pytest.raises(InputError) as info:
        FORMATS[name][2](p)
    assert re.search(r" is 500\d characters \(at most (100|200|255)\): 'XXX", str(info.value))
    assert len(str(info.value)) < len(str(p)) + 400


@pytest.mark.parametrize("name", [n for n in FORMATS if n != "topics webxml"])
def test_latin1_needs_its_encoding(tmp_path, name):
    fname, tpl, read, ids = FORMATS[name]
    p = tmp_path / fname
    p.write_bytes(tpl.format(id="X1", text="\u00e9").encode("latin-1"))
    with pytest.raises(InputError, match=r", line \d+: not valid utf-8 .*--encoding"):
        read(p)
    assert ids(read(p, encoding="latin-1")) == ["X1"]


def test_latin1_run_tag_is_not_stored_as_replacement_characters(tmp_path):
    p = tmp_path / "run.txt"
    p.write_bytes("1 Q0 d1 1 1.0 t\u00e9g\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"run\.txt, line 1: not valid utf-8 \(byte 0xe9"):
        read_run(p)
    assert read_run(p, encoding="latin-1")[0] == "t\u00e9g"


@pytest.mark.parametrize("name", FORMATS)
def test_truncated_and_fake_gzip(tmp_path, name):
    fname, tpl, read, _ = FORMATS[name]
    data = gzip.compress(tpl.format(id="X1", text="ok").encode())
    cut = tmp_path / (fname + ".gz")
    cut.write_bytes(data[: len(data) - 12])
    with pytest.raises(InputError, match="truncated or corrupt gzip data"):
        read(cut)
    fake = tmp_path / ("fake" + fname + ".gz")
    fake.write_text(tpl.format(id="X1", text="ok"))
    with pytest.raises(InputError, match="not gzip data"):
        read(fake)
    whole = tmp_path / ("whole" + fname + ".gz")
    whole.write_bytes(data)
    assert FORMATS[name][3](read(whole)) == ["X1"]


@pytest.mark.parametrize("name", FORMATS)
def test_over_long_file_names_are_errors(tmp_path, name):
    with pytest.raises(InputError, match="File name too long"):
        FORMATS[name][2](tmp_path / ("n" * 300))


def test_a_50_mb_variant_is_refused_without_reading_it_whole(tmp_path):
    import resource

    p = tmp_path / "v.tsv"
    with open(p, "w") as f:
        f.write("1\t" + "word " * 10_000_000 + "\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match=r"v\.tsv, line 1: line longer than 1048576 bytes"):
        read_variants(p, "tsv")
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 50_000  # not the 1.26 GB it took


def test_variant_query_and_statement_lengths_are_bounded(tmp_path):
    p = tmp_path / "v.tsv"
    p.write_text("1\t" + "w" * 1001 + "\n")
    with pytest.raises(InputError, match=r"line 1: query is 1001 characters \(at most 1000\)"):
        read_variants(p, "tsv")
    p = tmp_path / "t.tsv"
    p.write_text("1\t" + "w" * 20_001 + "\n")
    with pytest.raises(InputError, match=r"line 1: the statement is 20001 characters"):
        read_topics(p, "tsv")
    p = tmp_path / "q.text"
    p.write_text(".I 1\n.W\n" + ("w" * 1000 + "\n") * 21)
    with pytest.raises(InputError, match=r"line 1: the \.W text is 21020 characters"):
        read_topics(p, "smart")


@pytest.mark.parametrize("count, reason", [("0", "is not positive"), ("-1", "is not positive"),
                                           ("2147483648", "is too large"),
                                           ("1e3", "is not a whole number")])
def test_variant_counts_are_bounded(tmp_path, count, reason):
    p = tmp_path / "v.tsv"
    p.write_text(f"1\tquery\tw\t{count}\n")
    with pytest.raises(InputError, match=rf"line 1: count '{count}' {reason}"):
        read_variants(p, "tsv")


@pytest.mark.parametrize("rank, reason", [("0", "is not positive"), ("-5", "is not positive"),
                                          ("2147483648", "is too large")])
def test_run_ranks_are_positive_and_bounded(tmp_path, rank, reason):
    p = tmp_path / "run.txt"
    p.write_text(f"1 Q0 d1 1 2.0 t\n1 Q0 d2 {rank} 1.0 t\n")
    with pytest.raises(InputError, match=rf"run\.txt, line 2: rank '{rank}' {reason}"):
        read_run(p)


def test_run_score_overflow_is_not_finite(tmp_path):
    p = tmp_path / "run.txt"
    p.write_text("1 Q0 d1 1 1e400 t\n")
    with pytest.raises(InputError, match=r"line 1: score '1e400' is not finite"):
        read_run(p)


def test_webxml_refuses_entities(tmp_path):
    p = tmp_path / "t.xml"
    p.write_text('<?xml version="1.0"?>\n<!DOCTYPE w [<!ENTITY a "aaaaaaaaaa">'
                 '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
                 '<w><topic number="1"><query>&b;</query></topic></w>\n')
    with pytest.raises(InputError, match="refused XML"):
        read_topics(p, "webxml")


@pytest.mark.parametrize("name", FORMATS)
def test_a_nul_byte_is_refused_with_its_line(tmp_path, name):
    fname, tpl, read, _ = FORMATS[name]
    p = tmp_path / fname
    p.write_bytes(b"\n" + tpl.format(id="X1", text="a\x00b").encode())
    with pytest.raises(InputError) as info:
        read(p)
    assert info.value.line is not None
    if name != "topics webxml":  # XML refuses it itself (malformed XML, with the line)
        assert re.match(rf"{re.escape(str(p))}, line \d+: a NUL byte \(0x00\) at column \d+",
                        str(info.value))


@pytest.mark.parametrize("name", FORMATS)
def test_a_gzip_bomb_is_refused_past_the_cap(tmp_path, name, settings):
    fname, tpl, read, _ = FORMATS[name]
    settings.MAX_DECOMPRESSED_BYTES = 1 << 16
    p = tmp_path / (fname + ".gz")
    pad = b"\n" * (1 << 20) if name != "topics webxml" else b" " * (1 << 20)
    body = tpl.format(id="X1", text="ok").encode()
    p.write_bytes(gzip.compress(pad + body if name != "topics webxml" else body + pad))
    assert p.stat().st_size < 5_000  # 1 MiB in a few kB
    with pytest.raises(InputError) as info:
        read(p)
    assert str(info.value).startswith(str(p))
    assert "decompresses to more than 65536 bytes (MAX_DECOMPRESSED_BYTES)" in str(info.value)
