"""Reading judgment files and writing qrels. Plain Python; no Django.

Input formats (``.gz`` accepted; blank lines and lines starting with ``#`` are skipped):

``adhoc``
    TREC ad hoc qrels ``topic iteration docid grade``; the iteration column is ignored and
    the label is for the topic as a whole (no intent). One assessor for the whole file.
``diversity``
    TREC Web diversity qrels ``topic subtopic docid grade``; the label is for that
    subtopic (intent). One assessor for the whole file.
``tsv``
    ``topic intent docid assessor grade``, tab separated (or, when a line has no tab, split
    on whitespace), with an optional header line (recognised when its grade field is not
    a number). Intent ``0`` or empty means no intent (the topic as a whole).
``trec-rf10``
    The TREC 2010 Relevance Feedback track crowd data: ``topicID workerID docID gold
    label`` with a header; each crowd ``label`` becomes a label by assessor ``workerID``
    (no intent); ``gold`` is not read.
``trec-rf10-gold``
    The ``gold`` column of the same file: one label by the assessor given (``nist``) per
    (topic, document) whose gold is not -1 (-1: no NIST label), checked to agree wherever
    the pair repeats.

In the qrels formats a (topic, intent, docid) judged twice is an error. In ``tsv`` and
``trec-rf10`` the same assessor labelling the same (topic, intent, docid) again is a later
revision: both are kept, the later line counts.

Output: :func:`write_qrels` writes ``topic second docid grade`` lines (``second`` is the
intent, or ``0`` for ad hoc qrels); :func:`write_raw` writes every label with its history.
"""
from __future__ import annotations

from typing import IO, Iterable, Iterator, NamedTuple

from common.fileio import InputError, checked_id, open_lines, parse_int

FORMATS = ("adhoc", "diversity", "tsv", "trec-rf10", "trec-rf10-gold")
NO_INTENT = ""
GRADE_MIN, GRADE_MAX = -32768, 32767
TOPIC_ID_CHARS = 100
ASSESSOR_CHARS = 200


class LabelRecord(NamedTuple):
    line: int
    topic_id: str
    intent_id: str  # "" = no intent
    docid: str
    assessor: str
    grade: int


def _grade(text: str, path, line: int) -> int:
    try:
        return parse_int(text, "grade", low=GRADE_MIN, high=GRADE_MAX)
    except ValueError as exc:
        raise InputError(path, line, str(exc)) from None


def _fields(text: str) -> list[str]:
    return text.split("\t") if "\t" in text else text.split()


def _data_lines(path) -> Iterator[tuple[int, str]]:
    for number, text in open_lines(path):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        yield number, text


def _ids(path, number, topic, intent, docid, assessor=None):
    topic = checked_id(topic, "topic id", path, number, max_chars=TOPIC_ID_CHARS)
    if intent not in ("", "0"):
        intent = checked_id(intent, "intent id", path, number, max_chars=TOPIC_ID_CHARS)
    else:
        intent = NO_INTENT
    docid = checked_id(docid, "docid", path, number)
    if assessor is not None:
        assessor = checked_id(assessor, "assessor", path, number, max_chars=ASSESSOR_CHARS)
    return topic, intent, docid, assessor


def read_labels(path, fmt: str, *, assessor: str = "nist") -> Iterator[LabelRecord]:
    """Yield the labels of a judgment file in file order (see the module docstring).

    Raises :class:`common.fileio.InputError` naming the file and line on the first bad
    line; callers that store must read everything before committing.
    """
    if fmt not in FORMATS:
        raise ValueError(f"judgment format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt in ("adhoc", "diversity", "trec-rf10-gold"):
        assessor = checked_id(assessor, "assessor", "--assessor", None, max_chars=ASSESSOR_CHARS)
    if fmt in ("adhoc", "diversity"):
        yield from _read_qrels(path, fmt, assessor)
    elif fmt == "tsv":
        yield from _read_tsv(path)
    else:
        yield from _read_rf10(path, gold=fmt == "trec-rf10-gold", assessor=assessor)


def _read_qrels(path, fmt: str, assessor: str) -> Iterator[LabelRecord]:
    seen: dict[tuple[str, str, str], int] = {}
    for number, text in _data_lines(path):
        parts = text.split()
        if len(parts) != 4:
            second = "iteration" if fmt == "adhoc" else "subtopic"
            raise InputError(path, number,
                             f"expected 4 fields (topic {second} docid grade), found {len(parts)}")
        topic, second, docid, grade = parts
        if fmt == "adhoc":
            second = ""
        topic, intent, docid, _ = _ids(path, number, topic, second, docid)
        if fmt == "diversity" and intent == NO_INTENT:
            raise InputError(path, number, "a diversity qrels line needs a subtopic other than 0")
        key = (topic, intent, docid)
        if key in seen:
            sub = f"subtopic {intent} " if intent else ""
            raise InputError(path, number, f"topic {topic} {sub}document {docid} judged twice "
                             f"(first on line {seen[key]})")
        seen[key] = number
        yield LabelRecord(number, topic, intent, docid, assessor, _grade(grade, path, number))


def _read_tsv(path) -> Iterator[LabelRecord]:
    first = True
    for number, text in _data_lines(path):
        parts = [p.strip() for p in _fields(text)]
        if len(parts) != 5:
            raise InputError(path, number, "expected 5 fields (topic intent docid assessor "
                             f"grade), found {len(parts)}")
        topic, intent, docid, assessor, grade = parts
        if first:
            first = False
            try:
                int(grade)
            except ValueError:
                continue  # a header line
        topic, intent, docid, assessor = _ids(path, number, topic, intent, docid, assessor)
        yield LabelRecord(number, topic, intent, docid, assessor, _grade(grade, path, number))


def _read_rf10(path, *, gold: bool, assessor: str) -> Iterator[LabelRecord]:
    first = True
    gold_seen: dict[tuple[str, str], tuple[int, int]] = {}
    for number, text in _data_lines(path):
        parts = [p.strip() for p in _fields(text)]
        if len(parts) != 5:
            raise InputError(path, number, "expected 5 fields (topicID workerID docID gold "
                             f"label), found {len(parts)}")
        topic, worker, docid, gold_grade, label = parts
        if first:
            first = False
            if topic.lower() == "topicid":
                continue
        topic, _, docid, worker = _ids(path, number, topic, "", docid, worker)
        if not gold:
            yield LabelRecord(number, topic, NO_INTENT, docid, worker, _grade(label, path, number))
            continue
        g = _grade(gold_grade, path, number)
        if g == -1:
            continue
        key = (topic, docid)
        if key in gold_seen:
            if gold_seen[key][1] != g:
                first_line, first_gold = gold_seen[key]
                raise InputError(path, number, f"gold {g} for topic {topic} document {docid} "
                                 f"differs from {first_gold} on line {first_line}")
            continue
        gold_seen[key] = (number, g)
        yield LabelRecord(number, topic, NO_INTENT, docid, assessor, g)


# --- writing -----------------------------------------------------------------------------


class QrelsLine(NamedTuple):
    topic_id: str
    second: str  # intent id, or "0" for ad hoc qrels
    docid: str
    grade: int


def write_qrels(fh: IO[str], lines: Iterable[QrelsLine]) -> int:
    """``topic second docid grade`` lines, single spaces, as NIST writes them."""
    n = 0
    for t, s, d, g in lines:
        fh.write(f"{t} {s} {d} {int(g)}\n")
        n += 1
    return n


RAW_COLUMNS = ("topic", "intent", "docid", "assessor", "grade", "seconds", "time",
               "revision", "current", "cannot_judge", "simulated")


def write_raw(fh: IO[str], rows: Iterable[tuple]) -> int:
    """Tab-separated rows under a :data:`RAW_COLUMNS` header. Intent ``0`` means none, an
    empty grade a label the assessor could not judge, an empty ``seconds`` time not
    recorded; ``time`` is ISO 8601 UTC; ``current`` is 1 for the revision that counts;
    ``simulated`` is 1 for a label the demo's simulated assessor gave, 0 for a person's."""
    fh.write("\t".join(RAW_COLUMNS) + "\n")
    n = 0
    for row in rows:
        fh.write("\t".join("" if v is None else str(v) for v in row) + "\n")
        n += 1
    return n
