"""Reading and writing TREC run files (``qid Q0 docid rank score tag``). No Django here.

Reading streams line by line (``.gz`` accepted) and raises :class:`RunFormatError` naming
the file and line of the first problem: wrong column count, a rank that is not an integer,
a score that is not a finite number, the same docid twice for one topic, or several tags in
one file. Topic and document ids stay strings. Rankings come back ordered by
(-score, docid), the house tie-break; the file's rank column is validated but not trusted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, TextIO

from .collections_io import open_text


@dataclass(frozen=True)
class ScoredDoc:
    query_id: str
    doc_id: str
    rank: int
    score: float
    tag: str
    line: int


class RunFormatError(ValueError):
    """A run file is malformed; the message names the file and line."""

    def __init__(self, path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


def read_run_lines(path: str | Path) -> Iterator[ScoredDoc]:
    """Stream the entries of a TREC run file, validating each line."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError(path, None, "no such file")
    with open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            cols = line.split()
            if not cols:
                continue
            if len(cols) != 6:
                raise RunFormatError(
                    path, line_no,
                    f"expected 6 columns (qid Q0 docid rank score tag), found {len(cols)}",
                )
            qid, _q0, docid, rank_s, score_s, tag = cols
            try:
                rank = int(rank_s)
            except ValueError:
                raise RunFormatError(path, line_no, f"rank {rank_s!r} is not an integer") from None
            try:
                score = float(score_s)
            except ValueError:
                raise RunFormatError(path, line_no, f"score {score_s!r} is not a number") from None
            if not math.isfinite(score):
                raise RunFormatError(path, line_no, f"score {score_s!r} is not finite")
            yield ScoredDoc(qid, docid, rank, score, tag, line_no)


def read_run(path: str | Path, topic_ids=None) -> tuple[str, dict[str, tuple[list[str], list[float]]]]:
    """Read a whole run: returns ``(tag, {qid: (docids, scores)})``, each ranking ordered by
    (-score, docid). Raises RunFormatError on duplicates or mixed tags, and, when
    ``topic_ids`` (a set) is given, on the first line whose topic is not in it."""
    tag = None
    per_topic: dict[str, dict[str, float]] = {}
    known = None if topic_ids is None else set(topic_ids)
    for e in read_run_lines(path):
        if tag is None:
            tag = e.tag
        elif e.tag != tag:
            raise RunFormatError(
                path, e.line, f"run tag {e.tag!r} differs from {tag!r} on earlier lines"
            )
        if known is not None and e.query_id not in known:
            raise RunFormatError(path, e.line, f"topic {e.query_id!r} is not in the topic set")
        docs = per_topic.setdefault(e.query_id, {})
        if e.doc_id in docs:
            raise RunFormatError(
                path, e.line, f"document {e.doc_id!r} appears twice for topic {e.query_id!r}"
            )
        docs[e.doc_id] = e.score
    if tag is None:
        raise RunFormatError(path, None, "the run file is empty")
    out = {}
    for qid, docs in per_topic.items():
        ordered = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
        out[qid] = ([d for d, _ in ordered], [s for _, s in ordered])
    return tag, out


def write_run(out: TextIO, rankings: Iterable[tuple[str, list[str], list[float]]], tag: str) -> int:
    """Write ``(qid, docids, scores)`` rankings in TREC format; ranks start at 1. Each
    ranking must already be ordered. Returns the number of lines written."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag {tag!r} must be non-empty without spaces")
    n = 0
    for qid, docids, scores in rankings:
        if not qid or any(c.isspace() for c in qid):
            raise ValueError(f"query id {qid!r} must be non-empty without spaces")
        for rank, (d, s) in enumerate(zip(docids, scores), 1):
            out.write(f"{qid} Q0 {d} {rank} {float(s)!r} {tag}\n")
            n += 1
    return n
