"""The judging page's reading layout (judging.docfields): SMART records as labelled fields,
other formats as text, and a topic's statement shown once. No database."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judging.docfields import (
    ReadableDocument,
    looks_smart,
    readable_document,
    smart_document,
    statement_shown,
)

ROOT = Path(__file__).resolve().parents[2]
CACM = ROOT.parent / "shared" / "data" / "small-corpora" / "cacm" / "cacm.all"

RECORD = """.I 1
.T
Preliminary Report-International Algebraic Language
.B
CACM December, 1958
.A
Perlis, A. J.
Samelson,K.
.N
CA581203 JB March 22, 1978  8:28 PM
.X
100	5	1
123	5	1
.W
The algebraic language is
described here.

A second paragraph.
.K
algol, report
"""


def test_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import sys, judging.docfields, judging.overlap\n"
            "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
            "assert not bad, bad\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_smart_record_becomes_labelled_fields_without_markers():
    doc = smart_document(RECORD)
    assert doc == ReadableDocument(
        title="Preliminary Report-International Algebraic Language",
        fields=[("Authors", "Perlis, A. J.; Samelson,K."), ("Source", "CACM December, 1958"),
                ("Keywords", "algol, report")],
        paragraphs=["The algebraic language is described here.", "A second paragraph."])
    shown = " ".join([doc.title, *(t for _, t in doc.fields), *doc.paragraphs])
    assert ".I" not in shown and ".T" not in shown and ".W" not in shown
    assert "CA581203" not in shown and "123\t5\t1" not in shown  # .N and .X left out


def test_smart_text_on_the_marker_line_and_unknown_fields():
    doc = smart_document(".I 7\n.T Glossary of Terms\n.Z odd field\n.W\nBody.\n")
    assert doc.title == "Glossary of Terms"
    assert doc.fields == [(".Z", "odd field")]
    assert doc.paragraphs == ["Body."]
    # a record with a title only has no body and no fields
    assert smart_document(".I 8\n.T\nOnly a title\n") == ReadableDocument("Only a title", [], [])


def test_format_decides_and_unknown_format_is_sniffed():
    assert readable_document(RECORD, "smart").title.startswith("Preliminary Report")
    assert readable_document(RECORD, "").fields[0][0] == "Authors"
    html = "<html><head><title>T</title></head><body><p>One</p><p>Two</p></body></html>"
    assert readable_document(html, "jsonl") == ReadableDocument("T", [], ["One", "Two"])
    # a plain-text document that starts like a SMART record stays text when the format says so
    assert readable_document(".I 1\nhello", "jsonl").fields == []
    assert looks_smart(".I 12\n.T\nx") and not looks_smart(".I\n") and not looks_smart("<p>x")


@pytest.mark.skipif(not CACM.exists(), reason="the shared CACM file is not beside the repo")
def test_every_cacm_record_parses_to_text_and_no_markers():
    from retrieval.collections_io import read_smart

    n, untitled = 0, []
    for d in read_smart(CACM):
        doc = readable_document(d.raw, "smart")
        assert doc.title or doc.paragraphs, d.docid
        if not doc.title:
            untitled.append(d.docid)
        for text in [doc.title, *(t for _, t in doc.fields), *doc.paragraphs]:
            assert not any(line.startswith(".") and line[1:2].isupper() and len(line) <= 3
                           for line in text.split()), (d.docid, text)
        n += 1
    assert n == 3204 and untitled == ["3193"]  # CACM 3193 has an abstract and no .T
    first = readable_document(next(iter(read_smart(CACM))).raw, "smart")
    assert dict(first.fields)["Authors"] == "Perlis, A. J.; Samelson,K."


def test_statement_shown_once():
    q = "What articles exist which deal with TSS (Time Sharing System)?"
    # SMART topics: the query is the title, the description and the one statement
    assert statement_shown(q, q, "", [q]) == {"title": "", "texts": [q], "narrative": ""}
    assert statement_shown("tss", q, "", [q]) == {"title": "tss", "texts": [q],
                                                  "narrative": ""}
    # no statements: the description; repeated statements once; narrative when it differs
    assert statement_shown("t", "desc", "narr", []) == {"title": "t", "texts": ["desc"],
                                                        "narrative": "narr"}
    assert statement_shown("t", "", "a b", ["a  b", "a b", "c"]) == {
        "title": "t", "texts": ["a  b", "c"], "narrative": ""}
