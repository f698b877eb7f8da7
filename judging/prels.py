"""Judgments of a probability sample: the two TREC file formats, read and written.

Plain Python; nothing here imports Django. A sampled judgment set (a judging task in
``sample`` mode, :mod:`judging.sampling`) knows, for each topic, every pooled document's
stratum, which documents were judged and each judged document's inclusion probability.
TREC's two evaluation scripts for sampled judgments read it in two forms:

- ``sample-eval`` — the stratified qrels of ``sample_eval.pl`` (Yilmaz, Kanoulas & Aslam;
  TREC Web, Clinical Decision Support): ``topic iteration docid stratum grade``, one line
  per pooled document; ``grade`` ``-1`` for a document of the pool that was not judged.
  The script takes a stratum's inclusion probability as judged / listed documents of
  the stratum, so the file says everything: the pool, the strata and the sample.
- ``prels`` — the prels of ``statAP_MQ_eval_v3.pl`` (Aslam & Pavlu; TREC Million Query):
  ``topic docid grade method probability``, one line per judged document with its
  inclusion probability; ``method`` is written ``1`` (the script's code for a document
  drawn by the sampling method, whose probability it uses as given).

Grades below 0 (junk) are written as 0 (not relevant): both scripts would read a
negative grade as "not judged". Ids are strings; probabilities are written with
Python's shortest round-trip representation, so reading a file back gives the same
numbers.

:func:`read_prels` reads either form into one :class:`TopicSample` per topic, checking
every line (:class:`common.fileio.InputError` names the file and line).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import IO, Iterable, Union

from common import fileio
from common.fileio import InputError, quote

__all__ = ["PRELS_FORMATS", "NOT_JUDGED", "TopicSample", "read_prels", "write_prels",
           "write_sample_eval"]

PathLike = Union[str, os.PathLike]
PRELS_FORMATS = ("sample-eval", "prels")
#: the grade sample_eval.pl reads as "in the pool, not judged"
NOT_JUDGED = -1


@dataclass
class TopicSample:
    """One topic's sample. ``strata``: every pooled document's stratum (empty when only
    the judged documents are known, as in a ``prels`` file); ``grades``: the judged
    documents' grades (0 or more); ``probability``: each judged document's inclusion
    probability."""

    strata: dict[str, str] = field(default_factory=dict)
    grades: dict[str, int] = field(default_factory=dict)
    probability: dict[str, float] = field(default_factory=dict)


def _int(path, n: int, text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(path, n, f"{what} {quote(text)} is not a whole number") from None


def read_prels(path: PathLike, fmt: str) -> dict[str, TopicSample]:
    """``{topic: TopicSample}`` from a ``sample-eval`` or ``prels`` file (module
    docstring). In a ``sample-eval`` file a judged document's probability is the
    judged share of its stratum."""
    if fmt not in PRELS_FORMATS:
        raise InputError("--prels-format", None,
                         f"unknown format {fmt!r}; use {' or '.join(PRELS_FORMATS)}")
    path = fileio.require_file(path)
    out: dict[str, TopicSample] = {}
    for n, line in fileio.open_lines(path):
        cols = line.split()
        if not cols or cols[0].startswith("#"):
            continue
        if len(cols) != 5:
            what = ("topic iteration docid stratum grade" if fmt == "sample-eval"
                    else "topic docid grade method probability")
            raise InputError(path, n, f"expected 5 columns ({what}), found {len(cols)}")
        if fmt == "sample-eval":
            topic, _, doc, stratum, g = cols
        else:
            topic, doc, g, _method, p_s = cols
        topic = fileio.checked_id(topic, "topic id", path, n, max_chars=100)
        doc = fileio.checked_id(doc, "docid", path, n)
        grade = _int(path, n, g, "grade")
        sample = out.setdefault(topic, TopicSample())
        if fmt == "sample-eval":
            if doc in sample.strata:
                raise InputError(path, n, f"document {quote(doc)} is listed twice for topic "
                                 f"{quote(topic)}")
            if grade < NOT_JUDGED:
                raise InputError(path, n, f"grade {grade}: write -1 for a pooled document "
                                 "that was not judged and 0 for one judged not relevant")
            sample.strata[doc] = stratum
            if grade >= 0:
                sample.grades[doc] = grade
            continue
        try:
            p = float(p_s)
        except ValueError:
            p = math.nan
        if not 0 < p <= 1:
            raise InputError(path, n, f"inclusion probability {quote(p_s)} is not in (0, 1]")
        if doc in sample.grades:
            raise InputError(path, n, f"document {quote(doc)} is judged twice for topic "
                             f"{quote(topic)}")
        if grade < 0:
            raise InputError(path, n, f"grade {grade}: a judged document's grade is 0 or more")
        sample.grades[doc] = grade
        sample.probability[doc] = p
    if not out:
        raise InputError(path, None, "the file holds no judgments")
    if fmt == "sample-eval":
        for sample in out.values():
            _stratum_probabilities(sample)
    return out


def _stratum_probabilities(sample: TopicSample) -> None:
    listed: dict[str, int] = {}
    judged: dict[str, int] = {}
    for doc, stratum in sample.strata.items():
        listed[stratum] = listed.get(stratum, 0) + 1
        if doc in sample.grades:
            judged[stratum] = judged.get(stratum, 0) + 1
    sample.probability = {doc: judged[sample.strata[doc]] / listed[sample.strata[doc]]
                          for doc in sample.grades}


def write_sample_eval(out: IO[str], rows: Iterable[tuple[str, str, str, int | None]]) -> int:
    """``topic 0 docid stratum grade`` for each ``(topic, docid, stratum, grade)``; a
    grade of ``None`` (not judged) is written ``-1``, a negative one ``0``. Lines written."""
    n = 0
    for topic, doc, stratum, grade in rows:
        g = NOT_JUDGED if grade is None else max(int(grade), 0)
        out.write(f"{topic} 0 {doc} {stratum} {g}\n")
        n += 1
    return n


def write_prels(out: IO[str], rows: Iterable[tuple[str, str, int, float]]) -> int:
    """``topic docid grade 1 probability`` for each judged ``(topic, docid, grade,
    probability)``; a negative grade is written ``0``. Lines written."""
    n = 0
    for topic, doc, grade, p in rows:
        out.write(f"{topic} {doc} {max(int(grade), 0)} 1 {float(p)!r}\n")
        n += 1
    return n
