"""Readers for document collections as organisers bring them. No Django here.

Every reader streams ``Document(docid, contents, raw)`` records from one file through
:mod:`common.fileio` (gzip accepted; text decoded strictly, UTF-8 unless ``encoding=`` says
otherwise) and raises :class:`InputError` naming the file and line of the first
problem. ``contents`` is what gets indexed; ``raw`` is what the document page shows.

Formats
- ``jsonl``: one JSON object a line with ``id`` and ``contents``, or ``id`` with ``title``
  and/or ``text`` (contents = title, a blank line, text). Blank lines are skipped.
- ``trec``: TREC SGML, ``<DOC><DOCNO>id</DOCNO> ... </DOC>``. Contents = everything inside
  ``<DOC>`` except the ``DOCNO`` element, with SGML tags removed; raw = the whole element.
- ``smart``: SMART tagged text (CACM, CISI, Cranfield, MED, ADI): ``.I id`` starts a
  record; field markers are a dot, one letter, optional text. Contents = ``.T`` (title),
  ``.W`` (abstract) and ``.A`` (authors, so author queries can match); ``.B`` (source),
  ``.N`` (bookkeeping), ``.X`` (citation triples) and ``.K`` are kept in raw only.

Docids pass the one id check of every importer (:func:`common.fileio.clean_id`: NFC, at
most 255 characters, no whitespace, control, zero-width or bidirectional characters) and
are unique within a file (duplicates are an error, not silently merged). A line is at most
:data:`MAX_LINE_BYTES` bytes and a document at most :data:`MAX_DOCUMENT_CHARS` characters.
A document whose contents are empty is an error naming it (Anserini would drop it from the
index without a word) unless ``allow_empty=True`` asks for such documents to be yielded, for
the caller to leave out and report.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from common import fileio
from common.fileio import InputError, quote

FORMATS = ("jsonl", "trec", "smart")
SMART_CONTENT_FIELDS = ("T", "W", "A")
MAX_DOCID_CHARS = 255
MAX_LINE_BYTES = 64 << 20
MAX_DOCUMENT_CHARS = 64 << 20


@dataclass(frozen=True)
class Document:
    docid: str
    contents: str
    raw: str


def _lines(path, encoding: str):
    """``(line number, text with its newline)``: the readers keep line breaks in raw text."""
    for number, text in fileio.open_lines(path, encoding=encoding, max_line_bytes=MAX_LINE_BYTES):
        yield number, text + "\n"


def _check_docid(path, line_no: int, docid: str, seen: set) -> str:
    docid = fileio.checked_id(docid, "document id", path, line_no, max_chars=MAX_DOCID_CHARS)
    if docid in seen:
        raise InputError(path, line_no, f"duplicate document id {quote(docid)}")
    seen.add(docid)
    return docid


#: how to leave empty documents out instead, as the command line says it (a page says it
#: with its own words: common.webmessages)
SKIP_EMPTY_HINT = "to leave such documents out, skip empty documents (--skip-empty)"


def _check_document(path, line_no: int, doc: Document, allow_empty: bool) -> Document:
    if not allow_empty and not doc.contents.strip():
        raise InputError(
            path, line_no, f"document {quote(doc.docid)} has no text to index (Anserini "
            f"would drop it); {SKIP_EMPTY_HINT}")
    if len(doc.raw) > MAX_DOCUMENT_CHARS:
        raise InputError(
            path, line_no, f"document {quote(doc.docid)} is longer than {MAX_DOCUMENT_CHARS} "
            "characters")
    return doc


def read_collection(path: str | Path, fmt: str, *, encoding: str = "utf-8",
                    allow_empty: bool = False) -> Iterator[Document]:
    """Stream the documents of one collection file in the given format."""
    readers = {"jsonl": read_jsonl, "trec": read_trec, "smart": read_smart}
    if fmt not in readers:
        raise ValueError(f"unknown collection format {fmt!r}; use one of {', '.join(FORMATS)}")
    path = fileio.require_file(path)
    return readers[fmt](path, encoding=encoding, allow_empty=allow_empty)


def read_jsonl(path: str | Path, *, encoding: str = "utf-8",
               allow_empty: bool = False) -> Iterator[Document]:
    seen: set[str] = set()
    for line_no, line in _lines(path, encoding):
        if not line.strip():
            continue
        obj = fileio.parse_json(line, path, line_no)
        if not isinstance(obj, dict):
            raise InputError(path, line_no, "expected a JSON object")
        if "id" not in obj:
            raise InputError(path, line_no, "missing \"id\"")
        docid = _check_docid(path, line_no, str(obj["id"]).strip(), seen)
        if "contents" in obj:
            contents = str(obj["contents"] or "")
        elif "title" in obj or "text" in obj:
            contents = "\n\n".join(
                str(obj[k]) for k in ("title", "text") if obj.get(k)
            )
        else:
            raise InputError(
                path, line_no, "missing \"contents\" (or \"title\"/\"text\")"
            )
        yield _check_document(path, line_no, Document(docid, contents, contents), allow_empty)


_TAG = re.compile(r"<[^>]*>")
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.IGNORECASE | re.DOTALL)


def read_trec(path: str | Path, *, encoding: str = "utf-8",
              allow_empty: bool = False) -> Iterator[Document]:
    seen: set[str] = set()
    buf: list[str] = []
    size = 0
    start = None
    for line_no, line in _lines(path, encoding):
        stripped = line.strip()
        upper = stripped.upper()
        if start is None:
            if upper.startswith("<DOC>"):
                start = line_no
                buf, size = [line], len(line)
                if "</DOC>" in upper:
                    yield _trec_doc(path, start, "".join(buf), seen, allow_empty)
                    start = None
            elif upper.startswith("</DOC>"):
                raise InputError(path, line_no, "</DOC> without an opening <DOC>")
            elif stripped:
                raise InputError(
                    path, line_no, f"text outside <DOC>...</DOC>: {quote(stripped, 40)}"
                )
            continue
        if upper.startswith("<DOC>"):
            raise InputError(
                path, start, f"<DOC> opened here is not closed before line {line_no}"
            )
        buf.append(line)
        size += len(line)
        if size > MAX_DOCUMENT_CHARS:
            raise InputError(
                path, start, f"document longer than {MAX_DOCUMENT_CHARS} characters (is "
                "</DOC> missing?)")
        if "</DOC>" in upper:
            yield _trec_doc(path, start, "".join(buf), seen, allow_empty)
            start = None
    if start is not None:
        raise InputError(path, start,
                                    "<DOC> opened here is never closed (unterminated DOC)")


def _trec_doc(path, line_no: int, text: str, seen: set, allow_empty: bool) -> Document:
    m = _DOCNO.search(text)
    if m is None:
        raise InputError(path, line_no, "document without <DOCNO>...</DOCNO>")
    docid = _check_docid(path, line_no, m.group(1), seen)
    body = text[: m.start()] + text[m.end():]
    contents = " ".join(_TAG.sub(" ", body).split())
    return _check_document(path, line_no, Document(docid, contents, text.strip()), allow_empty)


_SMART_MARK = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


def read_smart(path: str | Path, *, encoding: str = "utf-8",
               allow_empty: bool = False) -> Iterator[Document]:
    seen: set[str] = set()
    docid = None
    start = 0
    size = 0
    fields: dict[str, list[str]] = {}
    raw: list[str] = []
    current = None
    for line_no, line in _lines(path, encoding):
        text = line.rstrip("\n")
        m = _SMART_MARK.match(text.rstrip())
        if m and m.group(1) == "I":
            if docid is not None:
                yield _check_document(path, start, _smart_doc(docid, fields, raw), allow_empty)
            docid = _check_docid(path, line_no, (m.group(2) or "").strip(), seen)
            start = line_no
            fields, raw, current, size = {}, [text], None, len(text)
            continue
        if docid is None:
            if text.strip():
                raise InputError(
                    path, line_no, f"text before the first .I record: {quote(text.strip(), 40)}"
                )
            continue
        raw.append(text)
        size += len(text)
        if size > MAX_DOCUMENT_CHARS:
            raise InputError(
                path, start, f"document longer than {MAX_DOCUMENT_CHARS} characters")
        if m:
            current = m.group(1)
            fields.setdefault(current, [])
            if m.group(2):
                fields[current].append(m.group(2))
        elif current is None:
            if text.strip():
                raise InputError(
                    path, line_no,
                    f"text in record {docid!r} (started line {start}) before any field marker",
                )
        else:
            fields[current].append(text)
    if docid is not None:
        yield _check_document(path, start, _smart_doc(docid, fields, raw), allow_empty)


def _smart_doc(docid: str, fields: dict[str, list[str]], raw: list[str]) -> Document:
    parts = []
    for name in SMART_CONTENT_FIELDS:
        body = " ".join(" ".join(fields.get(name, [])).split())
        if body:
            parts.append(body)
    return Document(docid, "\n".join(parts), "\n".join(raw).strip())


def write_json_collection(documents, out_dir: str | Path, per_file: int = 100_000,
                          progress=None) -> int:
    """Write documents as Anserini JsonCollection files (``{"id", "contents", "raw"}``)
    into ``out_dir``; returns the count. ``progress(n)`` is called every 1,000 documents."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n = 0
    f = None
    try:
        for doc in documents:
            if n % per_file == 0:
                if f is not None:
                    f.close()
                f = open(out_dir / f"part-{n // per_file:05d}.jsonl", "w", encoding="utf-8")
            f.write(json.dumps({"id": doc.docid, "contents": doc.contents, "raw": doc.raw},
                               ensure_ascii=False))
            f.write("\n")
            n += 1
            if progress is not None and n % 1000 == 0:
                progress(n)
    finally:
        if f is not None:
            f.close()
    return n
