"""Reading query-variant files into plain records. No Django here.

Each reader returns a list of :class:`VariantRecord` in file order; every error is a
:class:`common.fileio.InputError` naming the file and the line. ``.gz`` is accepted.
Blank lines are skipped everywhere.

``uqv100``
    One answer per line: ``F1|...|Fk<TAB>query``. Left of the first TAB, fields are split
    on ``|``. Exactly one field is a topic id matching ``UQV100.<digits>``; the field after
    it is the worker id, the one after that the worker's estimate (kept as text, e.g. the
    number of queries or documents the worker expected to need), and the *last* field is
    the count (a positive integer: how many times this exact text was given). The count
    must come after the estimate; any fields between the estimate and the count are
    ignored. The fields before the topic id, joined with ``|``, become the variant id; if
    there are none the variant id is ``<topic>:<line>``. Everything right of the first TAB
    is the raw query.
``robust04-uqv``
    ``topic-user-seq;query`` (the ECIR 2022 Robust04 user query variations). The variant
    id is the full ``topic-user-seq``. User numbers restart with every topic, so the worker
    id is ``topic-user`` (user 1 of topic 301 is not user 1 of topic 302); the count is 1
    and the sequence number stays readable in the variant id.
``tsv``
    ``topic<TAB>query[<TAB>worker[<TAB>count]]`` (or comma-separated with CSV quoting when
    the file name ends in ``.csv``). A header row whose first cell is ``topic``,
    ``topic_id`` or ``qid`` is skipped. A missing or empty count is 1. The variant id is
    empty.

A query whose normalised form is empty (only punctuation) is rejected with its line, as is
a query longer than :data:`MAX_QUERY_CHARS` characters. Topic, worker and variant ids pass
the one id check of every importer (:func:`common.fileio.clean_id`: NFC, no whitespace,
control, zero-width or bidirectional characters; at most 100 characters, worker ids 200).
Counts are whole numbers from 1 to 2^31 - 1. Text is UTF-8 unless ``encoding=`` says
otherwise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from common import fileio
from common.fileio import InputError, plain_name, quote
from topics.normalise import normalise_query
from topics.topicfiles import split_rows, topic_id_check

VARIANT_FORMATS = ("uqv100", "robust04-uqv", "tsv")
MAX_QUERY_CHARS = 1000
MAX_WORKER_CHARS = 200
MAX_ESTIMATE_CHARS = 50


@dataclass(frozen=True)
class VariantRecord:
    topic_id: str
    raw: str
    worker_id: str = ""
    count: int = 1
    estimate: str = ""
    variant_id: str = ""
    source: str = ""
    line: int = 0


def read_variants(path: str | Path, fmt: str, *, encoding: str = "utf-8") -> list[VariantRecord]:
    """Read a variant file in one of :data:`VARIANT_FORMATS`."""
    return list(iter_variants(path, fmt, encoding=encoding))


def iter_variants(path: str | Path, fmt: str, *, encoding: str = "utf-8",
                  progress=None) -> Iterator[VariantRecord]:
    """The records of a variant file one at a time, in file order (for imports of any
    size: :func:`topics.services.variants_import` writes them in batches);
    ``progress(fraction)`` hears how much of the file has been read."""
    source = str(path)
    if fmt not in VARIANT_FORMATS:
        raise ValueError(f"unknown variant format {fmt!r}; expected one of {VARIANT_FORMATS}")
    lines = fileio.open_lines(path, encoding=encoding, progress=progress)
    if fmt == "uqv100":
        records = uqv100_records(lines, source)
    elif fmt == "robust04-uqv":
        records = robust04_uqv_records(lines, source)
    else:
        delimiter = "," if plain_name(path).endswith(".csv") else "\t"
        records = tsv_records(lines, source, delimiter=delimiter)
    empty = True
    for record in records:
        empty = False
        yield record
    if empty:
        raise InputError(source, None, f"no query variants found (format {fmt})")


def _raw_query(text: str, source: str, number: int) -> str:
    raw = text.strip()
    if not raw:
        raise InputError(source, number, "empty query")
    if len(raw) > MAX_QUERY_CHARS:
        raise InputError(source, number, f"query is {len(raw)} characters (at most "
                                         f"{MAX_QUERY_CHARS}): {quote(raw, 60)}")
    if not normalise_query(raw):
        raise InputError(source, number, f"query {quote(raw)} has no words after normalisation")
    return raw


def _count(text: str, source: str, number: int) -> int:
    try:
        return fileio.parse_int(text, "count", low=1)
    except ValueError as exc:
        raise InputError(source, number, str(exc)) from None


def _worker(text: str, source: str, number: int) -> str:
    return fileio.checked_id(text, "worker id", source, number, max_chars=MAX_WORKER_CHARS)


def _estimate(text: str, source: str, number: int) -> str:
    if len(text) > MAX_ESTIMATE_CHARS:
        raise InputError(source, number, f"estimate {quote(text, 60)} is longer than "
                                         f"{MAX_ESTIMATE_CHARS} characters")
    return text


_UQV_TOPIC = re.compile(r"^UQV100\.\d+$")


def parse_uqv100(lines: Iterable[tuple[int, str]], source: str) -> list[VariantRecord]:
    return list(uqv100_records(lines, source))


def uqv100_records(lines: Iterable[tuple[int, str]], source: str) -> Iterator[VariantRecord]:
    """UQV100 answers; see the module docstring for the accepted layout."""
    for number, text in lines:
        if not text.strip():
            continue
        if "\t" not in text:
            raise InputError(source, number, "no TAB between the fields and the query")
        left, query = text.split("\t", 1)
        fields = [f.strip() for f in left.split("|")]
        at = [i for i, f in enumerate(fields) if _UQV_TOPIC.match(f)]
        if len(at) != 1:
            raise InputError(
                source,
                number,
                "expected exactly one UQV100.<digits> topic field, found "
                f"{len(at) or 'none'}",
            )
        t = at[0]
        if len(fields) < t + 4:
            raise InputError(
                source, number, "expected topic|worker|estimate|...|count before the TAB"
            )
        topic_id = topic_id_check(fields[t], source, number)
        worker_id = _worker(fields[t + 1], source, number)
        estimate = _estimate(fields[t + 2], source, number)
        count = _count(fields[-1], source, number)
        variant_id = topic_id_check("|".join(fields[:t]) or f"{topic_id}:{number}", source,
                                    number, "variant id")
        yield (
            VariantRecord(
                topic_id=topic_id,
                raw=_raw_query(query, source, number),
                worker_id=worker_id,
                count=count,
                estimate=estimate,
                variant_id=variant_id,
                source=source,
                line=number,
            )
        )


_ROBUST_ID = re.compile(r"^(\w+)-(\w+)-(\d+)$")


def parse_robust04_uqv(lines: Iterable[tuple[int, str]], source: str) -> list[VariantRecord]:
    return list(robust04_uqv_records(lines, source))


def robust04_uqv_records(lines: Iterable[tuple[int, str]], source: str) -> Iterator[VariantRecord]:
    """``topic-user-seq;query`` lines; see the module docstring."""
    seen: dict[str, int] = {}
    for number, text in lines:
        if not text.strip():
            continue
        if ";" not in text:
            raise InputError(source, number, "expected 'topic-user-seq;query'")
        variant_id, query = text.split(";", 1)
        variant_id = topic_id_check(variant_id.strip(), source, number, "variant id")
        match = _ROBUST_ID.match(variant_id)
        if not match:
            raise InputError(
                source, number, f"id {quote(variant_id)} is not of the form topic-user-seq"
            )
        if variant_id in seen:
            raise InputError(
                source, number, f"id {variant_id!r} repeated (first on line {seen[variant_id]})"
            )
        seen[variant_id] = number
        topic_id, user = match.group(1), match.group(2)
        yield (
            VariantRecord(
                topic_id=topic_id,
                raw=_raw_query(query, source, number),
                worker_id=f"{topic_id}-{user}",
                count=1,
                variant_id=variant_id,
                source=source,
                line=number,
            )
        )


_HEADER_TOPICS = {"topic", "topic_id", "topicid", "qid", "query_id"}


def parse_tsv(
    lines: Iterable[tuple[int, str]], source: str, *, delimiter: str = "\t"
) -> list[VariantRecord]:
    """``topic, query[, worker[, count]]`` rows; see the module docstring."""
    return list(tsv_records(lines, source, delimiter=delimiter))


def tsv_records(
    lines: Iterable[tuple[int, str]], source: str, *, delimiter: str = "\t"
) -> Iterator[VariantRecord]:
    """:func:`parse_tsv` one record at a time."""
    first = True
    for number, cells in split_rows(lines, source, delimiter):
        if first:
            first = False
            if cells[0].lower() in _HEADER_TOPICS:
                continue
        if not 2 <= len(cells) <= 4:
            raise InputError(
                source,
                number,
                f"expected 2 to 4 columns (topic, query, worker, count), found {len(cells)}",
            )
        topic_id = topic_id_check(cells[0], source, number)
        worker_id = _worker(cells[2], source, number) if len(cells) > 2 and cells[2] else ""
        count = _count(cells[3], source, number) if len(cells) > 3 and cells[3] else 1
        yield (
            VariantRecord(
                topic_id=topic_id,
                raw=_raw_query(cells[1], source, number),
                worker_id=worker_id,
                count=count,
                source=source,
                line=number,
            )
        )
