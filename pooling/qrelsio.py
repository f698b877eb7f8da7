"""Streaming readers and a writer for TREC relevance judgments (qrels) and runs.

Plain Python; nothing here imports Django.  Files may be gzip-compressed
(``.gz``).  Ids stay strings (``UQV100.001`` is not an integer).

Formats (whitespace separated, one judgment per line; blank lines and lines
starting with ``#`` are skipped):

- ad hoc qrels:    ``topic iteration docid rel``
- diversity qrels: ``topic subtopic docid rel`` (TREC Web track; ``rel < 0`` is junk/spam)
- runs:            ``topic Q0 docid rank score tag``
"""
from __future__ import annotations

import gzip
import io
import os
from typing import IO, Iterable, Iterator, NamedTuple, Union

__all__ = [
    "AdhocQrel",
    "DiversityQrel",
    "QrelsFormatError",
    "RunRecord",
    "read_adhoc_qrels",
    "read_diversity_qrels",
    "read_run",
    "write_qrels",
]

PathLike = Union[str, os.PathLike]


class QrelsFormatError(ValueError):
    """A malformed line; the message names the file and the 1-based line number."""

    def __init__(self, path: str, lineno: int, message: str):
        super().__init__(f"{path}:{lineno}: {message}")
        self.path = path
        self.lineno = lineno


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


class RunRecord(NamedTuple):
    topic_id: str
    docid: str
    rank: int
    score: float
    tag: str


def _open_text(path: PathLike) -> IO[str]:
    p = str(path)
    if p.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8")
    return open(p, "r", encoding="utf-8")


def _fields(path: PathLike, n: int) -> Iterator[tuple[int, list[str]]]:
    name = str(path)
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split()
            if len(parts) != n:
                raise QrelsFormatError(name, lineno, f"expected {n} fields, got {len(parts)}: {s!r}")
            yield lineno, parts


def _int(path: PathLike, lineno: int, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise QrelsFormatError(str(path), lineno, f"{what} must be an integer, got {value!r}") from None


def read_adhoc_qrels(path: PathLike) -> Iterator[AdhocQrel]:
    """Yield :class:`AdhocQrel` records from ``topic iteration docid rel`` lines."""
    for lineno, (t, it, d, r) in _fields(path, 4):
        yield AdhocQrel(t, it, d, _int(path, lineno, r, "relevance"))


def read_diversity_qrels(path: PathLike) -> Iterator[DiversityQrel]:
    """Yield :class:`DiversityQrel` records from ``topic subtopic docid rel`` lines."""
    for lineno, (t, sub, d, r) in _fields(path, 4):
        yield DiversityQrel(t, sub, d, _int(path, lineno, r, "relevance"))


def read_run(path: PathLike) -> Iterator[RunRecord]:
    """Yield :class:`RunRecord` records from ``topic Q0 docid rank score tag`` lines."""
    name = str(path)
    for lineno, (t, _q0, d, rank, score, tag) in _fields(path, 6):
        try:
            sc = float(score)
        except ValueError:
            raise QrelsFormatError(name, lineno, f"score must be a number, got {score!r}") from None
        yield RunRecord(t, d, _int(path, lineno, rank, "rank"), sc, tag)


def write_qrels(dest: Union[PathLike, IO[str]], records: Iterable[AdhocQrel | DiversityQrel]) -> int:
    """Write records as ``topic iteration|subtopic docid rel`` lines; returns the line count.

    ``dest`` is a path (``.gz`` compresses) or an open text stream.  Ids must not
    contain whitespace.
    """
    if hasattr(dest, "write"):
        return _write(dest, records)  # type: ignore[arg-type]
    p = str(dest)
    if p.endswith(".gz"):
        with io.TextIOWrapper(gzip.open(p, "wb"), encoding="utf-8") as fh:
            return _write(fh, records)
    with open(p, "w", encoding="utf-8") as fh:
        return _write(fh, records)


def _write(fh: IO[str], records: Iterable[AdhocQrel | DiversityQrel]) -> int:
    n = 0
    for rec in records:
        second = rec.subtopic if isinstance(rec, DiversityQrel) else rec.iteration
        fields = (rec.topic_id, second, rec.docid)
        for f in fields:
            if not f or any(ch.isspace() for ch in f):
                raise ValueError(f"id {f!r} is empty or contains whitespace")
        fh.write(f"{rec.topic_id} {second} {rec.docid} {int(rec.rel)}\n")
        n += 1
    return n
