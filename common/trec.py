"""One concept: TREC run and qrels files, read and written once for every app. No Django here.

Imports (system runs, qrels), evaluation (``evaluate``, the analyses), the release (its
runs) and pooling all read these files here, each with the rules it needs; there is no
other reader of them in the project.

Runs: ``qid Q0 docid rank score tag``
    :func:`run_lines` streams :class:`ScoredDoc` records, checking each line;
    :func:`run_read` reads a whole file into :class:`RunArrays` (the entries in file
    order), adding the checks that need every line: one tag per file, no document twice
    for one topic, every topic in ``topic_ids``; :func:`read_run` gives an import's
    rankings ordered by (-score, docid), the house tie-break (the rank column is checked
    but not trusted). What a line must hold is a :class:`RunRules`: :data:`RUN_IMPORT`,
    :data:`RUN_EVALUATION` (as trec_eval reads runs: columns after the sixth ignored, ids
    compared as written) or :data:`RUN_RELEASE`.
Qrels: ``topic iteration|subtopic docid grade`` (and SMART's and Cranfield's forms)
    :func:`qrels_lines` streams ``(line, AdhocQrel | DiversityQrel)``; :func:`read_qrels`
    reads a whole file for import (a second grade for one judgment names both lines; a
    file in another format says which; ``id_map``); :func:`qrels_judgments` reads one for
    evaluation as ``{topic: {docid: grade}}`` (diversity: ``{topic: {intent: {docid:
    grade}}}``). What a line must hold is a :class:`QrelsRules`: :data:`QRELS_IMPORT` or
    :data:`QRELS_EVALUATION` (NTCIREVAL's ``L<n>`` grades, ids as written, no comments).

Whole files are read in bulk first (:func:`common.columns.read_columns`: compiled loops
over the bytes that check every byte, column count and number, on whole columns); a file
the bulk reader does not vouch for, or that fails a check, is read again line by line
(:func:`common.fileio.open_lines`: gzip accepted after its expansion check, strict
decoding, bounded lines), which accepts it or raises :class:`InputError` naming the file
and the line of the first problem. The bulk path accepts a subset of what the line path
accepts and returns the same values for it. Ids stay strings.

SMART relevance files (``smart``: ``query docid [more fields]``, every listed pair
relevant, grade 1; CACM's ``qrels.text``, CISI's and ADI's ``.REL``) and Cranfield's
``cranqrel`` (``query docid code``, graded 5 - code for codes 1-4, else 0) are read as ad
hoc qrels. In qrels, blank lines and (for imports) lines starting with ``#`` are skipped;
ad hoc qrels ignore the iteration column, as trec_eval does.
"""
from __future__ import annotations

import gzip
import io
import math
import os
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, NamedTuple, TextIO, Union

import numpy as np

from common import fileio
from common.columns import Unsure, read_columns
from common.fileio import InputError, quote

__all__ = [
    "ADHOC_FORMATS", "ID_MAPS", "QRELS_EVALUATION", "QRELS_FORMATS", "QRELS_IMPORT",
    "RUN_EVALUATION", "RUN_IMPORT", "RUN_RELEASE", "AdhocQrel", "DiversityQrel", "QrelsRules",
    "RunArrays", "RunRules", "ScoredDoc", "qrels_judgments", "qrels_lines", "qrels_records",
    "read_qrels",
    "read_run", "run_lines", "run_read", "strip_zeros", "write_qrels", "write_run",
]

PathLike = Union[str, os.PathLike]
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN = -(2**31)

# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class RunRules:
    """What each line of a run file must hold, past six whitespace-separated columns."""

    #: columns after the sixth are ignored (as trec_eval ignores them), else an error
    extra_columns: bool = False
    #: the rank column is a whole number in this range
    rank_min: int = 1
    rank_max: int = fileio.INT32_MAX
    #: the score is a finite number (else ``nan``/``inf`` are refused)
    finite_scores: bool = True
    #: ids pass the one id check of every importer (:func:`common.fileio.clean_id`: NFC,
    #: no blank, control, zero-width or bidirectional characters, at most 255 characters);
    #: otherwise they are compared as written, as trec_eval compares them
    check_ids: bool = True
    #: the longest run tag (``None``: no limit)
    max_tag_chars: int | None = 100


#: imported system runs
RUN_IMPORT = RunRules()
#: runs evaluated from files: as trec_eval reads them, with any 64-bit rank
RUN_EVALUATION = RunRules(extra_columns=True, rank_min=INT64_MIN, rank_max=INT64_MAX,
                          check_ids=False, max_tag_chars=None)
#: the runs of a release (which also ranks each query 1, 2, ... in one block of lines)
RUN_RELEASE = RunRules()


@dataclass(frozen=True)
class ScoredDoc:
    query_id: str
    doc_id: str
    rank: int
    score: float
    tag: str
    line: int


def _number(path, line: int, text: str, what: str, low: int, high: int) -> int:
    try:
        return fileio.parse_int(text, what, low=low, high=high)
    except ValueError as exc:
        raise InputError(path, line, str(exc)) from None


def run_lines(path: PathLike, rules: RunRules = RUN_IMPORT, *,
              encoding: str = "utf-8") -> Iterator[ScoredDoc]:
    """Stream the entries of a run file, checking each line against ``rules``."""
    path = fileio.require_file(path)
    later = "; later ones are ignored" if rules.extra_columns else ""
    for n, line in fileio.open_lines(path, encoding=encoding):
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 6 and not (rules.extra_columns and len(cols) > 6):
            raise InputError(path, n, f"expected 6 columns (qid Q0 docid rank score tag"
                                      f"{later}), found {len(cols)}")
        qid, _q0, docid, rank_s, score_s, tag = cols[:6]
        rank = _number(path, n, rank_s, "rank", rules.rank_min, rules.rank_max)
        try:
            score = float(score_s)
        except ValueError:
            raise InputError(path, n, f"score {quote(score_s)} is not a number") from None
        if rules.finite_scores and not math.isfinite(score):
            raise InputError(path, n, f"score {quote(score_s)} is not finite")
        if rules.check_ids:
            qid = fileio.checked_id(qid, "query id", path, n)
            docid = fileio.checked_id(docid, "document id", path, n)
            tag = fileio.checked_id(tag, "run tag", path, n,
                                    max_chars=rules.max_tag_chars or fileio.MAX_ID_CHARS)
        elif rules.max_tag_chars is not None and len(tag) > rules.max_tag_chars:
            raise InputError(path, n, f"run tag is {len(tag)} characters (at most "
                                      f"{rules.max_tag_chars}): {quote(tag, 60)}")
        yield ScoredDoc(qid, docid, rank, score, tag, n)


@dataclass
class RunArrays:
    """One run's entries in file order: document ids as UTF-8 byte strings, scores and
    the rank column; the topics as stretches of entries (``stretch_starts[i]`` is where
    the ``i``-th stretch of one topic, ``stretch_topics[i]`` in UTF-8, begins)."""

    stretch_starts: np.ndarray
    stretch_topics: list[bytes]
    docids: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray

    @classmethod
    def from_per_topic(cls, per: dict[str, tuple[list, list, list]]) -> "RunArrays":
        """From ``{topic: (docids, scores, ranks)}`` (one stretch per topic)."""
        sizes = [len(d) for d, _, _ in per.values()]
        docs = [x.encode("utf-8") for d, _, _ in per.values() for x in d]
        return cls(np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64),
                   [t.encode("utf-8") for t in per], np.array(docs, dtype=bytes),
                   np.array([x for _, s, _ in per.values() for x in s], dtype=np.float64),
                   np.array([x for _, _, k in per.values() for x in k], dtype=np.int64))

    def topic_index(self) -> tuple[list[str], np.ndarray]:
        """The topics in order of first appearance, and each entry's place in that list."""
        number: dict[bytes, int] = {}
        for value in self.stretch_topics:
            number.setdefault(value, len(number))
        sizes = np.diff(np.append(self.stretch_starts, len(self.docids)))
        tix = np.repeat(np.array([number[v] for v in self.stretch_topics], dtype=np.int64),
                        sizes)
        return [v.decode("utf-8") for v in number], tix

    def has_duplicates(self) -> bool:
        """Whether a document is ranked twice for one topic."""
        _, tix = self.topic_index()
        order = np.lexsort((self.docids, tix))
        return bool(((tix[order][1:] == tix[order][:-1])
                     & (self.docids[order][1:] == self.docids[order][:-1])).any())

    def per_topic(self) -> dict[str, tuple[list[str], list[float], list[int]]]:
        """``{topic: (docids, scores, ranks)}``, topics in order of first appearance,
        entries in file order."""
        names, tix = self.topic_index()
        order = np.argsort(tix, kind="stable")
        bounds = np.searchsorted(tix[order], np.arange(len(names) + 1)).tolist()
        docs = _strings(self.docids[order])
        scores, ranks = self.scores[order].tolist(), self.ranks[order].tolist()
        return {name: (docs[bounds[i]:bounds[i + 1]], scores[bounds[i]:bounds[i + 1]],
                       ranks[bounds[i]:bounds[i + 1]]) for i, name in enumerate(names)}


def _strings(values: np.ndarray) -> list[str]:
    """UTF-8 byte strings as ``str`` (ASCII ones converted by numpy at once)."""
    if values.size == 0 or bool((values.view(np.uint8) < 128).all()):
        return values.astype(str).tolist()
    return [v.decode("utf-8") for v in values.tolist()]


def _bulk_run(path, rules: RunRules, encoding: str) -> tuple[str, RunArrays]:
    """A run file read by :func:`common.columns.read_columns`, every check of
    :func:`run_lines` made on whole columns; :class:`Unsure` for anything the line
    reader should look at. Its tokens are printable ASCII, which the id check leaves as
    they are (only their length can fail it)."""
    blocks = [b for b in read_columns(path, 6, at_least=rules.extra_columns,
                                      encoding=encoding) if b.rows]
    if not blocks:
        raise Unsure
    tag = blocks[0].token(0, 5)
    limit = rules.max_tag_chars if rules.max_tag_chars is not None else len(tag)
    if len(tag) > limit or not all(b.all_equal(5, tag) for b in blocks):
        raise Unsure
    docids = np.concatenate([b.text(2) for b in blocks])
    if rules.check_ids and docids.dtype.itemsize > fileio.MAX_ID_CHARS:
        raise Unsure
    ranks = np.concatenate([b.ints(3) for b in blocks])
    if (rules.rank_min > INT64_MIN or rules.rank_max < INT64_MAX) and not bool(
            ((ranks >= rules.rank_min) & (ranks <= rules.rank_max)).all()):
        raise Unsure
    scores = np.concatenate([b.floats(4) for b in blocks])
    if rules.finite_scores and not bool(np.isfinite(scores).all()):
        raise Unsure
    starts, names, at = [], [], 0
    for b in blocks:  # stretches of one topic
        first, values = b.stretches(0)
        if names and values[0] == names[-1]:
            first, values = first[1:], values[1:]  # the stretch goes on across blocks
        starts.append(first + at)
        names += values
        at += b.rows
    if rules.check_ids and any(len(v) > fileio.MAX_ID_CHARS for v in names):
        raise Unsure
    return tag.decode("ascii"), RunArrays(np.concatenate(starts), names, docids, scores, ranks)


def _line_run(path, rules: RunRules, encoding: str, topic_ids
              ) -> tuple[str, dict[str, tuple[list, list, list]]]:
    tag = None
    per: dict[str, tuple[list, list, list]] = {}
    seen: dict[str, set] = {}
    known = None if topic_ids is None else set(topic_ids)
    for e in run_lines(path, rules, encoding=encoding):
        if tag is None:
            tag = e.tag
        elif e.tag != tag:
            raise InputError(path, e.line, f"run tag {quote(e.tag)} differs from {quote(tag)} "
                                           "on earlier lines")
        if known is not None and e.query_id not in known:
            raise InputError(path, e.line, f"topic {quote(e.query_id)} is not in the topic set")
        entry = per.get(e.query_id)
        if entry is None:
            entry = per[e.query_id] = ([], [], [])
            seen[e.query_id] = set()
        if e.doc_id in seen[e.query_id]:
            raise InputError(path, e.line, f"document {quote(e.doc_id)} appears twice for "
                                           f"topic {quote(e.query_id)}")
        seen[e.query_id].add(e.doc_id)
        entry[0].append(e.doc_id)
        entry[1].append(e.score)
        entry[2].append(e.rank)
    if tag is None:
        raise InputError(path, None, "the run file is empty")
    return tag, per


def run_read(path: PathLike, rules: RunRules = RUN_IMPORT, *, encoding: str = "utf-8",
             topic_ids: Iterable[str] | None = None, duplicates: bool = True,
             bulk: bool = True) -> tuple[str, RunArrays]:
    """A whole run file as ``(tag, entries)``: every line checked against ``rules``, one
    tag per file, every topic in ``topic_ids`` (when given), and (``duplicates``) no
    document twice for one topic. ``duplicates=False`` leaves that check of the bulk path
    to a caller that finds duplicates on its own way through the entries (evaluation
    codes every topic's documents); the line path always makes it. ``bulk=False`` reads
    line by line at once. Raises :class:`InputError` naming the file and line."""
    path = fileio.require_file(path)
    if bulk:
        try:
            tag, arrays = _bulk_run(path, rules, encoding)
            if topic_ids is not None:
                names, _ = arrays.topic_index()
                if not set(names) <= set(topic_ids):
                    raise Unsure
            if duplicates and arrays.has_duplicates():
                raise Unsure
            return tag, arrays
        except Unsure:
            pass
    tag, per = _line_run(path, rules, encoding, topic_ids)
    return tag, RunArrays.from_per_topic(per)


def read_run(path: PathLike, topic_ids: Iterable[str] | None = None, *,
             encoding: str = "utf-8", rules: RunRules = RUN_IMPORT
             ) -> tuple[str, dict[str, tuple[list[str], list[float]]]]:
    """A run to import: ``(tag, {qid: (docids, scores)})``, topics in order of first
    appearance, each ranking ordered by (-score, docid) (:func:`run_read` for the
    checks)."""
    tag, arrays = run_read(path, rules, encoding=encoding, topic_ids=topic_ids)
    names, tix = arrays.topic_index()
    order = np.lexsort((arrays.docids, -arrays.scores, tix))  # the house order
    bounds = np.searchsorted(tix[order], np.arange(len(names) + 1)).tolist()
    docs = _strings(arrays.docids[order])
    scores = arrays.scores[order].tolist()
    return tag, {name: (docs[bounds[i]:bounds[i + 1]], scores[bounds[i]:bounds[i + 1]])
                 for i, name in enumerate(names)}


def write_run(out: TextIO, rankings: Iterable[tuple[str, list[str], list[float]]],
              tag: str) -> int:
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


# --------------------------------------------------------------------------- qrels

QRELS_FORMATS = ("adhoc", "diversity", "smart", "cranqrel")
#: formats read as ad hoc qrels (what they are stored and evaluated as)
ADHOC_FORMATS = ("adhoc", "smart", "cranqrel")
ID_MAPS = ("strip-zeros",)
MAX_TOPIC_CHARS = 100
MAX_DOCID_CHARS = fileio.MAX_ID_CHARS
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


@dataclass(frozen=True)
class QrelsRules:
    """What each line of a qrels file must hold."""

    #: lines starting with ``#`` are skipped (else read as judgments)
    comments: bool = True
    #: grades may be written as NTCIREVAL's levels ``L0``, ``L1``, ...
    levels: bool = False
    #: grades are whole numbers in this range
    grade_min: int = GRADE_MIN
    grade_max: int = GRADE_MAX
    #: ids pass :func:`common.fileio.clean_id` (topics and subtopics at most 100
    #: characters, documents 255); otherwise they are compared as written
    check_ids: bool = True


#: imported qrels (stored as labels: grades fit a small integer)
QRELS_IMPORT = QrelsRules()
#: qrels evaluated from files, as trec_eval, ndeval and NTCIREVAL read them
QRELS_EVALUATION = QrelsRules(comments=False, levels=True, grade_min=INT32_MIN,
                              grade_max=fileio.INT32_MAX, check_ids=False)


def _layout(fmt: str) -> str:
    return "topic iteration docid grade" if fmt in ADHOC_FORMATS else "topic subtopic docid grade"


def _fields(path, fmt: str, rules: QrelsRules, encoding: str
            ) -> Iterator[tuple[int, list[str]]]:
    """Lines as ``[topic, second, docid, grade]`` (SMART and cranqrel lines turned into
    that form)."""
    for lineno, line in fileio.open_lines(path, encoding=encoding):
        s = line.strip()
        if not s or (rules.comments and s.startswith("#")):
            continue
        parts = s.split()
        if fmt == "smart":
            if len(parts) < 2:
                raise InputError(path, lineno,
                                 f"expected 'query docid' (SMART), got {quote(s, 80)}")
            parts = [parts[0], "0", parts[1], "1"]
        elif fmt == "cranqrel":
            if len(parts) != 3:
                raise InputError(path, lineno, "expected 3 fields 'query docid code' "
                                 f"(cranqrel), got {len(parts)}: {quote(s, 80)}")
            code = _number(path, lineno, parts[2], "relevance code", -1, 5)
            parts = [parts[0], "0", parts[1], str(5 - code if 1 <= code <= 4 else 0)]
        elif len(parts) != 4:
            hint = ""
            if len(parts) == 3:
                hint = " (three fields 'query docid code' are Cranfield's: --format cranqrel)"
            raise InputError(path, lineno, f"expected 4 fields, got {len(parts)} "
                                           f"({_layout(fmt)}): {quote(s, 80)}{hint}")
        yield lineno, parts


def _grade(path, lineno: int, text: str, rules: QrelsRules) -> int:
    plain = text
    if rules.levels and text[:1] in ("L", "l") and text[1:].isascii() and text[1:].isdigit():
        plain = text[1:]  # NTCIREVAL writes levels as L0, L1, ...
    try:
        return fileio.parse_int(plain, "relevance", low=rules.grade_min, high=rules.grade_max)
    except ValueError as exc:
        hint = " (or L<n>)" if rules.levels and "whole number" in str(exc) else ""
        raise InputError(path, lineno, f"{exc}{hint}") from None


def qrels_lines(path: PathLike, fmt: str, rules: QrelsRules = QRELS_IMPORT, *,
                encoding: str = "utf-8") -> Iterator[tuple[int, AdhocQrel | DiversityQrel]]:
    """Stream ``(line number, record)`` of a qrels file in format ``fmt`` (one of
    :data:`QRELS_FORMATS`), checking each line against ``rules``."""
    if fmt not in QRELS_FORMATS:
        raise ValueError(f"qrels format must be one of {', '.join(QRELS_FORMATS)}, not {fmt!r}")
    path = fileio.require_file(path)
    make, second_name = ((AdhocQrel, "iteration") if fmt in ADHOC_FORMATS
                         else (DiversityQrel, "subtopic"))
    for lineno, (t, second, d, g) in _fields(path, fmt, rules, encoding):
        rel = _grade(path, lineno, g, rules)
        if rules.check_ids:
            t = fileio.checked_id(t, "topic id", path, lineno, max_chars=MAX_TOPIC_CHARS)
            second = fileio.checked_id(second, second_name, path, lineno,
                                       max_chars=MAX_TOPIC_CHARS)
            d = fileio.checked_id(d, "document id", path, lineno, max_chars=MAX_DOCID_CHARS)
        yield lineno, make(t, second, d, rel)


def qrels_records(path: PathLike, fmt: str, rules: QrelsRules = QRELS_IMPORT, *,
                  encoding: str = "utf-8") -> Iterator[AdhocQrel | DiversityQrel]:
    """:func:`qrels_lines` without the line numbers."""
    for _, rec in qrels_lines(path, fmt, rules, encoding=encoding):
        yield rec


def _key(fmt: str, r) -> tuple:
    return (r.topic_id, r.docid) if fmt in ADHOC_FORMATS else (r.topic_id, r.subtopic, r.docid)


def _second_grade(path, fmt: str, lineno: int, r, first: tuple[int, int, str]) -> InputError:
    """The error for a judgment graded again on ``lineno``; ``first`` is the line, grade
    and second column of its first grade."""
    line, grade, second = first
    what = (f"topic {quote(r.topic_id)}, document {quote(r.docid)}" if fmt in ADHOC_FORMATS
            else f"topic {quote(r.topic_id)}, subtopic {quote(r.subtopic)}, "
                 f"document {quote(r.docid)}")
    hint = ""
    if fmt == "adhoc" and second != r.iteration:
        hint = ("; the second column differs, so if it numbers subtopics, import with "
                "--format diversity")
    return InputError(path, lineno, f"second grade ({r.rel}) for {what}, already graded "
                                    f"{grade} on line {line}{hint}")


def strip_zeros(topic_id: str) -> str:
    """``"007"`` -> ``"7"``, ``"000"`` -> ``"0"``; ids that are not all digits unchanged."""
    if topic_id.isascii() and topic_id.isdigit():
        return topic_id.lstrip("0") or "0"
    return topic_id


def read_qrels(path: PathLike, fmt: str, *, encoding: str = "utf-8", id_map: str | None = None,
               rules: QrelsRules = QRELS_IMPORT
               ) -> list[tuple[int, AdhocQrel | DiversityQrel]]:
    """Every judgment of a qrels file to import, as ``(line number, record)``, checked as
    a whole: a second grade for the same judgment (topic and docid; for diversity qrels
    with the subtopic) names both lines; a file that looks like another format says which
    (document ``0`` and grade ``0`` on every line while the second column varies is
    SMART's ``query docid 0 0``; diversity qrels whose subtopic is ``0`` on every line are
    ad hoc qrels); ``id_map="strip-zeros"`` maps all-digit topic ids to their number
    without leading zeros (``"01"`` -> ``"1"``, as CACM's qrels number its queries)."""
    if fmt not in QRELS_FORMATS:
        raise ValueError(f"qrels format must be one of {', '.join(QRELS_FORMATS)}, not {fmt!r}")
    if id_map is not None and id_map not in ID_MAPS:
        raise ValueError(f"id map must be one of {', '.join(ID_MAPS)}, not {id_map!r}")
    rows = list(qrels_lines(path, fmt, rules, encoding=encoding))
    if not rows:
        raise InputError(path, None, "no judgments found")
    if fmt in ("adhoc", "diversity"):
        _format_check(path, fmt, rows)
    if id_map == "strip-zeros":
        rows = [(n, r._replace(topic_id=strip_zeros(r.topic_id))) for n, r in rows]
    seen: dict[tuple, tuple[int, int, str]] = {}
    for lineno, r in rows:
        key = _key(fmt, r)
        if key in seen:
            raise _second_grade(path, fmt, lineno, r, seen[key])
        seen[key] = (lineno, r.rel, r[1])
    return rows


def _format_check(path, fmt: str, rows) -> None:
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


def _stretches(*keys: np.ndarray) -> np.ndarray:
    """Where runs of equal ``keys`` (compared together) start, and the end."""
    n = len(keys[0])
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for k in keys:
        change |= k[1:] != k[:-1]
    return np.concatenate(([0], np.flatnonzero(change) + 1, [n]))


def _bulk_judgments(path, kind: str, rules: QrelsRules, encoding: str) -> dict:
    """:func:`qrels_judgments` by :func:`common.columns.read_columns`; :class:`Unsure`
    for anything the line reader should look at (an ``L<n>`` grade, a document judged
    twice, a comment line, ...)."""
    blocks = [b for b in read_columns(path, 4, encoding=encoding) if b.rows]
    if not blocks:
        raise Unsure
    topics = np.concatenate([b.text(0) for b in blocks])
    second = np.concatenate([b.text(1) for b in blocks])
    docs = np.concatenate([b.text(2) for b in blocks])
    if rules.comments and bool(np.char.startswith(topics, b"#").any()):
        raise Unsure
    if rules.check_ids and (max(topics.dtype.itemsize, second.dtype.itemsize) > MAX_TOPIC_CHARS
                            or docs.dtype.itemsize > MAX_DOCID_CHARS):
        raise Unsure
    grades = np.concatenate([b.ints(3) for b in blocks])
    if not bool(((grades >= rules.grade_min) & (grades <= rules.grade_max)).all()):
        raise Unsure
    docs, grades = docs.astype(str).tolist(), grades.tolist()
    edges = _stretches(topics, second) if kind == "diversity" else _stretches(topics)
    out: dict = {}
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
        docs_of = out.setdefault(topics[lo].decode("ascii"), {})
        if kind == "diversity":
            docs_of = docs_of.setdefault(second[lo].decode("ascii"), {})
        before = len(docs_of)
        docs_of.update(zip(docs[lo:hi], grades[lo:hi]))
        if len(docs_of) != before + hi - lo:
            raise Unsure  # judged twice: the line reader names the line
    return out


def qrels_judgments(path: PathLike, kind: str, rules: QrelsRules = QRELS_EVALUATION, *,
                    encoding: str = "utf-8", bulk: bool = True) -> dict:
    """Ad hoc qrels as ``{topic: {docid: grade}}``, diversity qrels as ``{topic: {intent:
    {docid: grade}}}``, in file order; a judgment graded twice names both lines. Read in
    bulk; a file that fails a check is read again line by line to name the line."""
    if kind not in ("adhoc", "diversity"):
        raise InputError("--qrels-format", None,
                         f"unknown qrels format {kind!r}; use adhoc or diversity")
    path = fileio.require_file(path)
    if bulk:
        try:
            return _bulk_judgments(path, kind, rules, encoding)
        except Unsure:
            pass
    out: dict = {}
    first: dict[tuple, tuple[int, int, str]] = {}
    for lineno, r in qrels_lines(path, kind, rules, encoding=encoding):
        key = _key(kind, r)
        if key in first:
            raise _second_grade(path, kind, lineno, r, first[key])
        first[key] = (lineno, r.rel, r[1])
        docs = out.setdefault(r.topic_id, {})
        if kind == "diversity":
            docs = docs.setdefault(r.subtopic, {})
        docs[r.docid] = r.rel
    if not out:
        raise InputError(path, None, "no judgments found")
    return out


def write_qrels(dest: Union[PathLike, IO[str]],
                records: Iterable[AdhocQrel | DiversityQrel]) -> int:
    """Write records as ``topic iteration|subtopic docid rel`` lines; returns the line count.

    ``dest`` is a path (``.gz`` compresses; written to a temporary file and renamed, so a
    failure leaves no partial file) or an open text stream. Ids must not contain
    whitespace.
    """
    if hasattr(dest, "write"):
        return _write_qrels(dest, records)  # type: ignore[arg-type]
    p = str(dest)
    if p.endswith(".gz"):
        with fileio.atomic_output(p, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb") as gz, \
                    io.TextIOWrapper(gz, encoding="utf-8") as fh:
                return _write_qrels(fh, records)
    with fileio.atomic_output(p) as fh:
        return _write_qrels(fh, records)


def _write_qrels(fh: IO[str], records: Iterable[AdhocQrel | DiversityQrel]) -> int:
    n = 0
    for rec in records:
        second = rec.subtopic if isinstance(rec, DiversityQrel) else rec.iteration
        for f in (rec.topic_id, second, rec.docid):
            if not f or any(ch.isspace() for ch in f):
                raise ValueError(f"id {quote(f)} is empty or contains whitespace")
        fh.write(f"{rec.topic_id} {second} {rec.docid} {int(rec.rel)}\n")
        n += 1
    return n
