"""Readers for document collections as organisers bring them. No Django here.

Every reader streams ``Document(docid, contents, raw)`` records from one file (``.gz``
accepted) and raises :class:`CollectionFormatError` naming the file and line of the first
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

Docids must be non-empty, at most 255 characters, without whitespace, and unique within a
file (duplicates are an error, not silently merged).
"""
from __future__ import annotations

import gzip
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

FORMATS = ("jsonl", "trec", "smart")
SMART_CONTENT_FIELDS = ("T", "W", "A")
MAX_DOCID_CHARS = 255


@dataclass(frozen=True)
class Document:
    docid: str
    contents: str
    raw: str


class CollectionFormatError(ValueError):
    """A collection file is malformed; the message names the file and line."""

    def __init__(self, path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        where = f"{path}, line {line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")


def open_text(path: str | Path) -> io.TextIOBase:
    """Open a text file, transparently decompressing ``.gz``; UTF-8, undecodable bytes
    replaced (old collections mix encodings)."""
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _check_docid(path, line_no: int, docid: str, seen: set) -> str:
    if not docid:
        raise CollectionFormatError(path, line_no, "empty document id")
    if len(docid) > MAX_DOCID_CHARS:
        raise CollectionFormatError(
            path, line_no, f"document id longer than {MAX_DOCID_CHARS} characters"
        )
    if any(c.isspace() for c in docid):
        raise CollectionFormatError(path, line_no, f"document id {docid!r} contains whitespace")
    if docid in seen:
        raise CollectionFormatError(path, line_no, f"duplicate document id {docid!r}")
    seen.add(docid)
    return docid


def read_collection(path: str | Path, fmt: str) -> Iterator[Document]:
    """Stream the documents of one collection file in the given format."""
    readers = {"jsonl": read_jsonl, "trec": read_trec, "smart": read_smart}
    if fmt not in readers:
        raise ValueError(f"unknown collection format {fmt!r}; use one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise CollectionFormatError(path, None, "no such file")
    return readers[fmt](path)


def read_jsonl(path: str | Path) -> Iterator[Document]:
    seen: set[str] = set()
    with open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CollectionFormatError(path, line_no, f"invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise CollectionFormatError(path, line_no, "expected a JSON object")
            if "id" not in obj:
                raise CollectionFormatError(path, line_no, "missing \"id\"")
            docid = _check_docid(path, line_no, str(obj["id"]).strip(), seen)
            if "contents" in obj:
                contents = str(obj["contents"] or "")
            elif "title" in obj or "text" in obj:
                contents = "\n\n".join(
                    str(obj[k]) for k in ("title", "text") if obj.get(k)
                )
            else:
                raise CollectionFormatError(
                    path, line_no, "missing \"contents\" (or \"title\"/\"text\")"
                )
            yield Document(docid, contents, contents)


_TAG = re.compile(r"<[^>]*>")
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.IGNORECASE | re.DOTALL)


def read_trec(path: str | Path) -> Iterator[Document]:
    seen: set[str] = set()
    buf: list[str] = []
    start = None
    with open_text(path) as f:
        line_no = 0
        for line_no, line in enumerate(f, 1):
            stripped = line.strip()
            upper = stripped.upper()
            if start is None:
                if upper.startswith("<DOC>"):
                    start = line_no
                    buf = [line]
                    if "</DOC>" in upper:
                        yield _trec_doc(path, start, "".join(buf), seen)
                        start = None
                elif upper.startswith("</DOC>"):
                    raise CollectionFormatError(path, line_no, "</DOC> without an opening <DOC>")
                elif stripped:
                    raise CollectionFormatError(
                        path, line_no, f"text outside <DOC>...</DOC>: {stripped[:40]!r}"
                    )
                continue
            if upper.startswith("<DOC>"):
                raise CollectionFormatError(
                    path, start, f"<DOC> opened here is not closed before line {line_no}"
                )
            buf.append(line)
            if "</DOC>" in upper:
                yield _trec_doc(path, start, "".join(buf), seen)
                start = None
        if start is not None:
            raise CollectionFormatError(path, start, "<DOC> opened here is never closed (unterminated DOC)")


def _trec_doc(path, line_no: int, text: str, seen: set) -> Document:
    m = _DOCNO.search(text)
    if m is None:
        raise CollectionFormatError(path, line_no, "document without <DOCNO>...</DOCNO>")
    docid = _check_docid(path, line_no, m.group(1), seen)
    body = text[: m.start()] + text[m.end():]
    contents = " ".join(_TAG.sub(" ", body).split())
    return Document(docid, contents, text.strip())


_SMART_MARK = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


def read_smart(path: str | Path) -> Iterator[Document]:
    seen: set[str] = set()
    docid = None
    start = 0
    fields: dict[str, list[str]] = {}
    raw: list[str] = []
    current = None
    with open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            text = line.rstrip("\n")
            m = _SMART_MARK.match(text.rstrip())
            if m and m.group(1) == "I":
                if docid is not None:
                    yield _smart_doc(docid, fields, raw)
                docid = _check_docid(path, line_no, (m.group(2) or "").strip(), seen)
                start = line_no
                fields, raw, current = {}, [text], None
                continue
            if docid is None:
                if text.strip():
                    raise CollectionFormatError(
                        path, line_no, f"text before the first .I record: {text.strip()[:40]!r}"
                    )
                continue
            raw.append(text)
            if m:
                current = m.group(1)
                fields.setdefault(current, [])
                if m.group(2):
                    fields[current].append(m.group(2))
            elif current is None:
                if text.strip():
                    raise CollectionFormatError(
                        path, line_no,
                        f"text in record {docid!r} (started line {start}) before any field marker",
                    )
            else:
                fields[current].append(text)
        if docid is not None:
            yield _smart_doc(docid, fields, raw)


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
