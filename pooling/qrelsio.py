"""Reading and writing TREC relevance judgments (qrels).

Plain Python; nothing here imports Django. Files are read through :mod:`common.fileio`
(gzip accepted; text decoded strictly, UTF-8 unless ``encoding=`` says otherwise; lines
bounded in length). Ids stay strings (``UQV100.001`` is not an integer) and pass the one id
check of every importer (:func:`common.fileio.clean_id`: NFC; no whitespace, control,
zero-width or bidirectional characters; topic and intent ids at most 100 characters,
docids 255). Grades are whole numbers from -32768 to 32767.

Formats (whitespace separated, one judgment per line; blank lines and lines starting with
``#`` are skipped):

- ad hoc qrels:    ``topic iteration docid rel`` (the iteration column is ignored, as
  trec_eval ignores it)
- diversity qrels: ``topic subtopic docid rel`` (TREC Web track; ``rel < 0`` is junk/spam)
- SMART relevance files (``smart``): ``query docid [more fields]``, every listed pair
  relevant (grade 1), further fields ignored — CACM's ``qrels.text`` (``01 1410 0 0``),
  CISI's and ADI's ``.REL`` (``1 28 0 0.000000``); read as ad hoc qrels
- Cranfield's ``cranqrel`` (``cranqrel``): ``query docid code`` with Cleverdon's codes
  1 (a complete answer) to 4 (minimum interest) and -1/5 (no interest); read as ad hoc
  qrels graded so that more is better: grade = 5 - code for codes 1-4, grade 0 otherwise

:func:`read_adhoc_qrels` and :func:`read_diversity_qrels` stream records checking each
line. :func:`read_qrels` reads a whole file for import and adds the checks that need every
line:

- a second grade for the same judgment is an error naming both lines; the same judgment
  is (topic, docid) for ad hoc qrels and (topic, subtopic, docid) for diversity qrels;
- a file that looks like another format is an error saying which: document ``0`` and grade
  ``0`` on every line while the second column varies is SMART's ``query docid 0 0``
  (CACM's ``qrels.text``: read as ad hoc it would be hundreds of grade-0 judgments of
  document "0"); diversity qrels whose subtopic is ``0`` on every line (and more than one
  line) are ad hoc qrels;
- ``id_map="strip-zeros"`` maps all-digit topic ids to their number written without leading
  zeros (``"01"`` -> ``"1"``, as CACM's qrels number the queries of ``query.text``).
"""
from __future__ import annotations

import gzip
import io
import os
from typing import IO, Iterable, Iterator, NamedTuple, Union

from common import fileio
from common.fileio import InputError, quote

__all__ = [
    "AdhocQrel",
    "DiversityQrel",
    "ADHOC_FORMATS",
    "ID_MAPS",
    "QRELS_FORMATS",
    "read_adhoc_qrels",
    "read_diversity_qrels",
    "read_qrels",
    "write_qrels",
]

PathLike = Union[str, os.PathLike]
QRELS_FORMATS = ("adhoc", "diversity", "smart", "cranqrel")
#: formats read as ad hoc qrels (what they are stored and evaluated as)
ADHOC_FORMATS = ("adhoc", "smart", "cranqrel")
ID_MAPS = ("strip-zeros",)
MAX_TOPIC_CHARS = 100
MAX_DOCID_CHARS = 255
GRADE_MIN, GRADE_MAX = -32768, 32767


class AdhocQrel(NamedTuple):
    topic_id: str
    iteration: str
    docid: str
    rel: int


class DiversityQrel(NamedTuple):
    topic_id: str
    subtopic: str
    docid: str
    rel: int


def _lines(path: PathLike, encoding: str, fmt: str = "adhoc"
           ) -> Iterator[tuple[int, list[str]]]:
    """Checked lines as ``[topic, second, docid, grade]`` fields (SMART and cranqrel lines
    turned into that form)."""
    for lineno, line in fileio.open_lines(path, encoding=encoding):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        if fmt == "smart":
            if len(parts) < 2:
                raise InputError(
                    path, lineno, f"expected 'query docid' (SMART), got {quote(s, 80)}")
            parts = [parts[0], "0", parts[1], "1"]
        elif fmt == "cranqrel":
            if len(parts) != 3:
                raise InputError(
                    path, lineno, f"expected 3 fields 'query docid code' (cranqrel), got "
                    f"{len(parts)}: {quote(s, 80)}")
            try:
                code = fileio.parse_int(parts[2], "relevance code", low=-1, high=5)
            except ValueError as exc:
                raise InputError(path, lineno, str(exc)) from None
            parts = [parts[0], "0", parts[1], str(5 - code if 1 <= code <= 4 else 0)]
        elif len(parts) != 4:
            hint = ""
            if len(parts) == 3:
                hint = " (three fields 'query docid code' are Cranfield's: --format cranqrel)"
            raise InputError(
                path, lineno, f"expected 4 fields, got {len(parts)}: {quote(s, 80)}{hint}")
        yield lineno, parts


def _record(path: PathLike, lineno: int, parts: list[str], second_name: str):
    t, second, d, r = parts

    def checked(value, what, limit):
        return fileio.checked_id(value, what, path, lineno, max_chars=limit)

    try:
        rel = fileio.parse_int(r, "relevance", low=GRADE_MIN, high=GRADE_MAX)
    except ValueError as exc:
        raise InputError(path, lineno, str(exc)) from None
    return (checked(t, "topic id", MAX_TOPIC_CHARS), checked(second, second_name, MAX_TOPIC_CHARS),
            checked(d, "document id", MAX_DOCID_CHARS), rel)


def _read(path: PathLike, fmt: str,
          encoding: str) -> Iterator[tuple[int, AdhocQrel | DiversityQrel]]:
    make, second = ((AdhocQrel, "iteration") if fmt in ADHOC_FORMATS
                    else (DiversityQrel, "subtopic"))
    for lineno, parts in _lines(path, encoding, fmt):
        yield lineno, make(*_record(path, lineno, parts, second))


def read_adhoc_qrels(path: PathLike, *, encoding: str = "utf-8") -> Iterator[AdhocQrel]:
    """Yield :class:`AdhocQrel` records from ``topic iteration docid rel`` lines."""
    for _, rec in _read(path, "adhoc", encoding):
        yield rec


def read_diversity_qrels(path: PathLike, *, encoding: str = "utf-8") -> Iterator[DiversityQrel]:
    """Yield :class:`DiversityQrel` records from ``topic subtopic docid rel`` lines."""
    for _, rec in _read(path, "diversity", encoding):
        yield rec


def strip_zeros(topic_id: str) -> str:
    """``"007"`` -> ``"7"``, ``"000"`` -> ``"0"``; ids that are not all digits unchanged."""
    if topic_id.isascii() and topic_id.isdigit():
        return topic_id.lstrip("0") or "0"
    return topic_id


def read_qrels(path: PathLike, fmt: str, *, encoding: str = "utf-8",
               id_map: str | None = None) -> list[tuple[int, AdhocQrel | DiversityQrel]]:
    """Every judgment of a qrels file as ``(line number, record)``, checked as a whole
    (see the module docstring). Raises :class:`InputError`."""
    if fmt not in QRELS_FORMATS:
        raise ValueError(f"qrels format must be one of {', '.join(QRELS_FORMATS)}, not {fmt!r}")
    if id_map is not None and id_map not in ID_MAPS:
        raise ValueError(f"id map must be one of {', '.join(ID_MAPS)}, not {id_map!r}")
    rows = list(_read(path, fmt, encoding))
    if not rows:
        raise InputError(path, None, "no judgments found")
    if fmt in ("adhoc", "diversity"):
        _format_check(path, fmt, rows)
    if id_map == "strip-zeros":
        rows = [(n, r._replace(topic_id=strip_zeros(r.topic_id))) for n, r in rows]
    seen: dict[tuple, tuple[int, int]] = {}
    for lineno, r in rows:
        key = (r.topic_id, r.docid) if fmt in ADHOC_FORMATS else (r.topic_id, r.subtopic, r.docid)
        if key in seen:
            first, grade = seen[key]
            what = (f"topic {quote(r.topic_id)}, document {quote(r.docid)}" if fmt in ADHOC_FORMATS
                    else f"topic {quote(r.topic_id)}, subtopic {quote(r.subtopic)}, "
                         f"document {quote(r.docid)}")
            hint = ""
            if fmt == "adhoc" and dict(rows)[first].iteration != r.iteration:
                hint = ("; the second column differs, so if it numbers subtopics, import with "
                        "--format diversity")
            raise InputError(
                path, lineno, f"second grade ({r.rel}) for {what}, already graded {grade} on "
                f"line {first}{hint}")
        seen[key] = (lineno, r.rel)
    return rows


def _format_check(path: PathLike, fmt: str, rows) -> None:
    second = {r[1] for _, r in rows}
    if (len(second) > 1 and {r.docid for _, r in rows} == {"0"}
            and {r.rel for _, r in rows} == {0}):
        raise InputError(
            path, rows[0][0],
            f"every line has document id '0' and grade 0 while the second column takes "
            f"{len(second)} values: this looks like SMART qrels ('query docid 0 0', e.g. "
            "CACM's qrels.text), not TREC qrels ('topic 0 docid rel'): import it with "
            "--format smart (CACM also ships the TREC form as cacm.qrels)")
    if fmt == "diversity" and len(rows) > 1 and second == {"0"}:
        raise InputError(
            path, rows[0][0], "the subtopic column is 0 on every line: these are ad hoc qrels "
            "('topic 0 docid rel'); import them with --format adhoc")


def write_qrels(dest: Union[PathLike, IO[str]],
                records: Iterable[AdhocQrel | DiversityQrel]) -> int:
    """Write records as ``topic iteration|subtopic docid rel`` lines; returns the line count.

    ``dest`` is a path (``.gz`` compresses; written to a temporary file and renamed, so a
    failure leaves no partial file) or an open text stream. Ids must not contain
    whitespace.
    """
    if hasattr(dest, "write"):
        return _write(dest, records)  # type: ignore[arg-type]
    p = str(dest)
    if p.endswith(".gz"):
        with fileio.atomic_output(p, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb") as gz, \
                    io.TextIOWrapper(gz, encoding="utf-8") as fh:
                return _write(fh, records)
    with fileio.atomic_output(p) as fh:
        return _write(fh, records)


def _write(fh: IO[str], records: Iterable[AdhocQrel | DiversityQrel]) -> int:
    n = 0
    for rec in records:
        second = rec.subtopic if isinstance(rec, DiversityQrel) else rec.iteration
        fields = (rec.topic_id, second, rec.docid)
        for f in fields:
            if not f or any(ch.isspace() for ch in f):
                raise ValueError(f"id {quote(f)} is empty or contains whitespace")
        fh.write(f"{rec.topic_id} {second} {rec.docid} {int(rec.rel)}\n")
        n += 1
    return n
