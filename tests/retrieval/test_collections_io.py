import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common.fileio import InputError
from retrieval.collections_io import (
    read_collection,
    write_json_collection,
)

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_jsonl_both_shapes_and_gz(tmp_path):
    p = tmp_path / "c.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"id": "d1", "contents": "alpha beta"}) + "\n\n")
        f.write(json.dumps({"id": "d2", "title": "T", "text": "body"}) + "\n")
    docs = list(read_collection(p, "jsonl"))
    assert [(d.docid, d.contents) for d in docs] == [("d1", "alpha beta"), ("d2", "T\n\nbody")]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ('{"id": "a", "contents": "x"}\n{"id": "a", "contents": "y"}\n', 2, "duplicate document id 'a'"),
        ('{"id": "a", "contents": "x"}\n{"contents": "y"}\n', 2, 'missing "id"'),
        ('{"id": "", "contents": "x"}\n', 1, "empty document id"),
        ('{"id": "a b", "contents": "x"}\n', 1, "contains a space"),
        ('{"id": "a", "contents": "x"}\n{"id": "b", \n', 2, "invalid JSON"),
        ('{"id": "a", "body": "x"}\n', 1, 'missing "contents"'),
        # a raw ValueError before (Python refuses to convert more than 4,300 digits)
        ('{"id": "a", "contents": "x"}\n{"id": ' + "9" * 100_000 + ', "contents": "y"}\n', 2,
         "invalid JSON (a number of more than 4300 digits)"),
        ('[' * 100_000 + ']' * 100_000 + '\n', 1, "invalid JSON (nested too deeply)"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path, text, line, message):
    p = _write(tmp_path, "bad.jsonl", text)
    with pytest.raises(InputError) as e:
        list(read_collection(p, "jsonl"))
    assert str(e.value).startswith(f"{p}, line {line}: ")
    assert message in str(e.value)
    assert e.value.line == line


def test_trec_reads_docno_and_strips_tags(tmp_path):
    p = _write(tmp_path, "c.trec", "<DOC>\n<DOCNO> FT-1 </DOCNO>\n<TEXT>\nHello <b>world</b>\n</TEXT>\n</DOC>\n"
                                 "<DOC><DOCNO>2</DOCNO>one line</DOC>\n")
    docs = list(read_collection(p, "trec"))
    assert [d.docid for d in docs] == ["FT-1", "2"]
    assert docs[0].contents == "Hello world"
    assert docs[0].raw.startswith("<DOC>") and docs[0].raw.endswith("</DOC>")
    assert docs[1].contents == "one line"


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("<DOC>\n<DOCNO>1</DOCNO>\ntext\n", 1, "unterminated DOC"),
        ("<DOC>\n<DOCNO>1</DOCNO>\n<DOC>\n<DOCNO>2</DOCNO></DOC>\n", 1, "not closed before line 3"),
        ("<DOC>\n<DOCNO>1</DOCNO>x\n</DOC>\n<DOC>\ntext\n</DOC>\n", 4, "without <DOCNO>"),
        ("<DOC>\n<DOCNO>1</DOCNO>x\n</DOC>\n<DOC>\n<DOCNO>1</DOCNO>\n</DOC>\n", 4, "duplicate document id '1'"),
        ("<DOC>\n<DOCNO></DOCNO>\n</DOC>\n", 1, "empty document id"),
        ("stray\n<DOC>\n<DOCNO>1</DOCNO>\n</DOC>\n", 1, "text outside"),
    ],
)
def test_trec_errors_name_file_and_line(tmp_path, text, line, message):
    p = _write(tmp_path, "bad.trec", text)
    with pytest.raises(InputError) as e:
        list(read_collection(p, "trec"))
    assert str(e.value).startswith(f"{p}, line {line}: ")
    assert message in str(e.value)


def test_smart_fields(tmp_path):
    p = _write(tmp_path, "c.all", ".I 1\n.T\nA title\n.W\nsome\nabstract\n.B\nCACM 1958\n"
                                  ".A\nPerlis, A.\n.X\n1\t5\t1\n.I 2\n.T\nSecond\n")
    docs = list(read_collection(p, "smart"))
    assert [d.docid for d in docs] == ["1", "2"]
    assert docs[0].contents == "A title\nsome abstract\nPerlis, A."
    assert "CACM 1958" in docs[0].raw and "CACM 1958" not in docs[0].contents
    assert docs[1].contents == "Second"


@pytest.mark.parametrize(
    "text, line, message",
    [
        (".I 1\n.T\nx\n.I 1\n.T\ny\n", 4, "duplicate document id '1'"),
        (".I\n.T\nx\n", 1, "empty document id"),
        ("junk\n.I 1\n", 1, "before the first .I"),
        (".I 1\nno marker\n", 2, "before any field marker"),
    ],
)
def test_smart_errors_name_file_and_line(tmp_path, text, line, message):
    p = _write(tmp_path, "bad.all", text)
    with pytest.raises(InputError) as e:
        list(read_collection(p, "smart"))
    assert str(e.value).startswith(f"{p}, line {line}: ")
    assert message in str(e.value)


def test_real_collections_read(cacm_dir, shared_data):
    cacm = list(read_collection(cacm_dir / "cacm.all", "smart"))
    assert len(cacm) == 3204 and len({d.docid for d in cacm}) == 3204
    npl = shared_data / "small-corpora" / "vaswani-npl" / "corpus" / "doc-text.trec"
    assert sum(1 for _ in read_collection(npl, "trec")) == 11429


def test_json_collection_written(tmp_path):
    docs = list(read_collection(_write(tmp_path, "c.trec", "<DOC><DOCNO>x</DOCNO>hi</DOC>\n"), "trec"))
    assert write_json_collection(docs, tmp_path / "out") == 1
    rec = json.loads((tmp_path / "out" / "part-00000.jsonl").read_text())
    assert rec == {"id": "x", "contents": "hi", "raw": "<DOC><DOCNO>x</DOCNO>hi</DOC>"}


def test_pure_modules_import_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import sys\n"
        "import retrieval.anserini, retrieval.collections_io, common.trec, retrieval.rankings\n"
        "bad = [m for m in sys.modules if m == 'django' or m.startswith('django.') or m == 'jnius'"
        " or m.startswith('pyserini')]\n"
        "assert not bad, bad\n"
        "assert not retrieval.anserini.jvm_started()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
