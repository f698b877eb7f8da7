"""Reading and writing TREC run files (``qid Q0 docid rank score tag``). No Django here.

This is the one TREC run reader of the project for imports. :func:`read_run` reads in
bulk (:mod:`common.columns`, the reader evaluation uses too) and, for a file that fails a
check, again line by line; the line reader streams through
:mod:`common.fileio` (gzip accepted; text decoded strictly, UTF-8 unless ``encoding=``
says otherwise; lines bounded in length) and raises :class:`InputError` naming the
file and line of the first problem: wrong column count, a rank that is not a whole number
from 1 to 2^31 - 1, a score that is not a finite number, an id refused by the id check of
every importer (:func:`common.fileio.clean_id`: NFC, no whitespace, control, zero-width or
bidirectional characters, at most 255 characters), the same docid twice for one topic, or
several tags in one file. Topic and document ids stay strings. Rankings come back ordered
by (-score, docid), the house tie-break; the file's rank column is validated but not
trusted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, TextIO

import numpy as np

from common import fileio
from common.columns import Unsure, read_columns
from common.fileio import InputError, quote

MAX_TAG_CHARS = 100


@dataclass(frozen=True)
class ScoredDoc:
    query_id: str
    doc_id: str
    rank: int
    score: float
    tag: str
    line: int


def read_run_lines(path: str | Path, *, encoding: str = "utf-8") -> Iterator[ScoredDoc]:
    """Stream the entries of a TREC run file, validating each line."""
    path = fileio.require_file(path)

    def checked(value: str, what: str, line_no: int, max_chars: int = fileio.MAX_ID_CHARS):
        return fileio.checked_id(value, what, path, line_no, max_chars=max_chars)

    for line_no, line in fileio.open_lines(path, encoding=encoding):
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 6:
            raise InputError(
                path, line_no,
                f"expected 6 columns (qid Q0 docid rank score tag), found {len(cols)}",
            )
        qid, _q0, docid, rank_s, score_s, tag = cols
        try:
            rank = fileio.parse_int(rank_s, "rank", low=1)
        except ValueError as exc:
            raise InputError(path, line_no, str(exc)) from None
        try:
            score = float(score_s)
        except ValueError:
            raise InputError(path, line_no, f"score {quote(score_s)} is not a number") from None
        if not math.isfinite(score):
            raise InputError(path, line_no, f"score {quote(score_s)} is not finite")
        yield ScoredDoc(checked(qid, "query id", line_no), checked(docid, "document id", line_no),
                        rank, score, checked(tag, "run tag", line_no, MAX_TAG_CHARS), line_no)


def _bulk_read_run(path, topic_ids, encoding: str
                   ) -> tuple[str, dict[str, tuple[list[str], list[float]]]]:
    """:func:`read_run` by :func:`common.columns.read_columns`, every check made on whole
    columns; :class:`common.columns.Unsure` for anything the line reader should look at.
    Its tokens are printable ASCII, which the id check leaves as they are."""
    blocks = [b for b in read_columns(path, 6, encoding=encoding) if b.rows]
    if not blocks:
        raise Unsure
    tags = np.concatenate([b.text(5) for b in blocks])
    if tags.dtype.itemsize > MAX_TAG_CHARS or not bool((tags == tags[0]).all()):
        raise Unsure
    topics = np.concatenate([b.text(0) for b in blocks])
    docs = np.concatenate([b.text(2) for b in blocks])
    if max(topics.dtype.itemsize, docs.dtype.itemsize) > fileio.MAX_ID_CHARS:
        raise Unsure
    ranks = np.concatenate([b.ints(3) for b in blocks])
    if not bool(((ranks >= 1) & (ranks <= fileio.INT32_MAX)).all()):
        raise Unsure
    scores = np.concatenate([b.floats(4) for b in blocks])
    if not bool(np.isfinite(scores).all()):
        raise Unsure
    # topics numbered in order of first appearance (the order of the returned dict)
    change = np.concatenate(([0], np.flatnonzero(topics[1:] != topics[:-1]) + 1, [len(topics)]))
    number: dict[bytes, int] = {}
    for value in topics[change[:-1]].tolist():
        number.setdefault(value, len(number))
    names = [v.decode("ascii") for v in number]
    if topic_ids is not None and not set(names) <= set(topic_ids):
        raise Unsure
    tix = np.repeat(np.array([number[v] for v in topics[change[:-1]].tolist()], dtype=np.int64),
                    np.diff(change))
    by_doc = np.lexsort((docs, tix))
    same = (tix[by_doc][1:] == tix[by_doc][:-1]) & (docs[by_doc][1:] == docs[by_doc][:-1])
    if bool(same.any()):
        raise Unsure  # a document twice for one topic
    order = np.lexsort((docs, -scores, tix))  # the house order: (-score, docid)
    bounds = np.searchsorted(tix[order], np.arange(len(names) + 1)).tolist()
    doc_list = docs[order].astype(str).tolist()
    score_list = scores[order].tolist()
    out = {name: (doc_list[bounds[i]:bounds[i + 1]], score_list[bounds[i]:bounds[i + 1]])
           for i, name in enumerate(names)}
    return tags[0].decode("ascii"), out


def read_run(path: str | Path, topic_ids=None, *, encoding: str = "utf-8"
             ) -> tuple[str, dict[str, tuple[list[str], list[float]]]]:
    """Read a whole run: returns ``(tag, {qid: (docids, scores)})``, each ranking ordered by
    (-score, docid). Raises InputError on duplicates or mixed tags, and, when
    ``topic_ids`` (a set) is given, on the first line whose topic is not in it.

    The file is read in bulk (:func:`common.columns.read_columns`); one the bulk reader
    does not vouch for, or that fails a check, is read again line by line, which names
    the file and line of the first problem."""
    path = fileio.require_file(path)
    try:
        return _bulk_read_run(path, topic_ids, encoding)
    except Unsure:
        pass
    tag = None
    per_topic: dict[str, dict[str, float]] = {}
    known = None if topic_ids is None else set(topic_ids)
    for e in read_run_lines(path, encoding=encoding):
        if tag is None:
            tag = e.tag
        elif e.tag != tag:
            raise InputError(
                path, e.line, f"run tag {quote(e.tag)} differs from {quote(tag)} on earlier lines"
            )
        if known is not None and e.query_id not in known:
            raise InputError(path, e.line, f"topic {quote(e.query_id)} is not in the topic set")
        docs = per_topic.setdefault(e.query_id, {})
        if e.doc_id in docs:
            raise InputError(
                path, e.line,
                f"document {quote(e.doc_id)} appears twice for topic {quote(e.query_id)}"
            )
        docs[e.doc_id] = e.score
    if tag is None:
        raise InputError(path, None, "the run file is empty")
    out = {}
    for qid, docs in per_topic.items():
        ordered = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
        out[qid] = ([d for d, _ in ordered], [s for _, s in ordered])
    return tag, out


def write_run(out: TextIO, rankings: Iterable[tuple[str, list[str], list[float]]], tag: str) -> int:
    """Write ``(qid, docids, scores)`` rankings in TREC format; ranks start at 1. Each
    ranking must already be ordered. Returns the number of lines written."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag {quote(tag)} must be non-empty without spaces")
    n = 0
    for qid, docids, scores in rankings:
        if not qid or any(c.isspace() for c in qid):
            raise ValueError(f"query id {quote(qid)} must be non-empty without spaces")
        for rank, (d, s) in enumerate(zip(docids, scores), 1):
            out.write(f"{qid} Q0 {d} {rank} {float(s)!r} {tag}\n")
            n += 1
    return n
