"""Runs, qrels and intent probabilities read into arrays for evaluation. No Django here.

A :class:`RunSet` holds several runs over the same topics as padded arrays: for run ``r``,
topic ``t`` and position ``i`` in the file, ``codes[r, t, i]`` is the document's code in the
topic's vocabulary (every docid any run retrieved for that topic, sorted as byte strings,
so code order is docid order), ``scores[r, t, i]`` its score and ``ranks[r, t, i]`` its
rank column. Positions past the end of a ranking hold ``PAD_CODE``. Measures then work on
the grades of each ranking gathered through these codes, never on strings.

Readers stream ``.gz`` or plain text and stop at the first bad line with
:class:`EvaluationInputError` naming the file and the line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from common import fileio
from crowd.naturalsort import natural_key  # the one natural order of ids (plain Python)

__all__ = [
    "EvaluationInputError",
    "NONPOOL",
    "UNJUDGED",
    "PAD",
    "PAD_CODE",
    "ORDERS",
    "Qrels",
    "RunSet",
    "read_runs",
    "read_run_file",
    "read_qrels",
    "read_intent_probabilities",
    "natural_key",
]

#: grade of a retrieved document absent from the qrels (trec_eval's RELVALUE_NONPOOL)
NONPOOL = -1
#: grade of a document the qrels list with a negative judgment (trec_eval's RELVALUE_UNJUDGED)
UNJUDGED = -2
#: grade of a position past the end of a ranking (no document there)
PAD = -9
PAD_CODE = -1

ORDERS = ("trec_eval", "rank")


class EvaluationInputError(ValueError):
    """A run, qrels or probability file (or argument) is unusable; the message says where."""

    def __init__(self, where, line: int | None, message: str):
        self.path = str(where)
        self.message = message
        self.line = line
        loc = f"{where}, line {line}" if line is not None else str(where)
        super().__init__(f"{loc}: {message}")


def _lines(path: str | Path) -> Iterable[tuple[int, list[str]]]:
    # The project's one opener: gzip, strict UTF-8 and bounded lines, errors with the line.
    path = fileio.require_file(path, error=EvaluationInputError)
    for n, line in fileio.open_lines(path, error=EvaluationInputError):
        cols = line.split()
        if cols:
            yield n, cols


# --------------------------------------------------------------------------- runs


@dataclass
class RunSet:
    """Several runs as padded arrays (see the module docstring).

    ``topics`` are in natural order (:func:`natural_key`: ``UQV100.2`` before ``UQV100.10``);
    ``vocab[t]`` is the sorted array of docids of topic ``t`` and ``vocab_index[t]`` maps them
    to codes; ``lengths[r, t]`` is the number of documents run ``r`` ranked for topic ``t``
    (0: the topic is absent from that run)."""

    tags: list[str]
    sources: list[str]
    topics: list[str]
    vocab: list[np.ndarray]
    codes: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray
    lengths: np.ndarray
    vocab_index: list[dict[str, int]]

    @classmethod
    def from_rankings(cls, runs: Sequence[tuple[str, str, dict[str, tuple[list, list, list]]]]):
        """Build from ``(tag, source, {topic: (docids, scores, ranks)})`` in file order.
        Raises :class:`EvaluationInputError` if two runs share a tag."""
        seen: dict[str, str] = {}
        for tag, source, _ in runs:
            if tag in seen:
                raise EvaluationInputError(
                    source, None, f"run tag {tag!r} is also the tag of {seen[tag]}; tags must differ"
                )
            seen[tag] = source
        topics = sorted({t for _, _, per in runs for t in per}, key=natural_key)
        n_runs, n_topics = len(runs), len(topics)
        lengths = np.zeros((n_runs, n_topics), dtype=np.int64)
        for r, (_, _, per) in enumerate(runs):
            for ti, t in enumerate(topics):
                if t in per:
                    lengths[r, ti] = len(per[t][0])
        depth = int(lengths.max()) if lengths.size else 0
        codes = np.full((n_runs, n_topics, depth), PAD_CODE, dtype=np.int32)
        scores = np.full((n_runs, n_topics, depth), -np.inf)
        ranks = np.full((n_runs, n_topics, depth), np.iinfo(np.int64).max, dtype=np.int64)
        vocab, indexes = [], []
        for ti, t in enumerate(topics):
            words = sorted(set().union(*(per[t][0] for _, _, per in runs if t in per)))
            index = {w: i for i, w in enumerate(words)}
            indexes.append(index)
            vocab.append(np.array(words, dtype=str))
            for r, (_, _, per) in enumerate(runs):
                if t not in per:
                    continue
                d, s, k = per[t]
                n = len(d)
                codes[r, ti, :n] = np.fromiter(map(index.__getitem__, d), dtype=np.int32, count=n)
                scores[r, ti, :n] = s
                ranks[r, ti, :n] = k
        return cls([t for t, _, _ in runs], [s for _, s, _ in runs], topics, vocab,
                   codes, scores, ranks, lengths, indexes)

    def ordered_codes(self, order: str, topics: Sequence[int] | None = None) -> np.ndarray:
        """Codes of every ranking in evaluation order, ``(runs, topics, depth)``, for all
        topics or for the topic positions ``topics``.

        ``trec_eval``: score descending, ties by docid descending (trec_eval's
        ``comp_sim_docno``; the rank column is ignored). ``rank``: the rank column ascending,
        as ndeval and NTCIREVAL read runs; a rank used twice in one topic is an error."""
        if order not in ORDERS:
            raise EvaluationInputError("--order", None, f"unknown order {order!r}; use one of {ORDERS}")
        idx = np.arange(len(self.topics)) if topics is None else np.asarray(topics, dtype=np.int64)
        codes = self.codes[:, idx, :]
        valid = codes != PAD_CODE
        if order == "trec_eval":
            s = self.scores[:, idx, :]
            nxt = valid[..., 1:]
            if not bool(np.all((s[..., :-1] >= s[..., 1:]) | ~nxt)):
                # not written by score: sort each ranking by score first (ties keep file order)
                perm = np.argsort(-s, axis=-1, kind="stable")
                s = np.take_along_axis(s, perm, axis=-1)
                codes = np.take_along_axis(codes, perm, axis=-1)
            out = _ties_by_docid_descending(codes, s)
        else:
            k = self.ranks[:, idx, :]
            if bool(np.all((k[..., :-1] < k[..., 1:]) | ~valid[..., 1:])):
                out = codes
            else:
                perm = np.argsort(k, axis=-1, kind="stable")
                out = np.take_along_axis(codes, perm, axis=-1)
                k = np.take_along_axis(k, perm, axis=-1)
            # after the sort, the documents of each ranking come first
            filled = np.arange(codes.shape[-1]) < self.lengths[:, idx, None]
            dup = (k[..., :-1] == k[..., 1:]) & filled[..., 1:]
            if dup.any():
                r, t, i = (int(x[0]) for x in np.nonzero(dup))
                raise EvaluationInputError(
                    self.sources[r], None,
                    f"rank {int(k[r, t, i])} appears twice for topic {self.topics[idx[t]]!r}; "
                    "--order rank needs distinct ranks",
                )
        return out


def _ties_by_docid_descending(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Codes of rankings already ordered by score descending, with each run of equal scores
    reordered by docid descending. Only the tied positions are touched: groups written in
    docid ascending order (the usual way) are reversed; otherwise the groups of equal scores
    are numbered along the flattened array and one stable sort of
    ``group * V + (V - 2 - code)``, already sorted by group, orders them."""
    tie = (scores[..., :-1] == scores[..., 1:]) & (codes[..., 1:] != PAD_CODE)
    if not bool(np.any(tie & (codes[..., :-1] < codes[..., 1:]))):
        return codes
    depth = codes.shape[-1]
    pairs = np.flatnonzero(tie)  # position i tied with i + 1, in (..., depth - 1) layout
    first = pairs + pairs // (depth - 1)  # the same position in (..., depth) layout
    mark = np.zeros(codes.size, dtype=np.int8)
    mark[first] = 1  # tied with the next position
    mark[first + 1] |= 2  # tied with the previous one
    where = np.flatnonzero(mark)
    starts = (mark[where] & 2) == 0
    out = codes.reshape(-1).copy()
    tied = out[where]
    if not bool(np.any(tie & (codes[..., :-1] > codes[..., 1:]))):
        # every group is in docid ascending order (as most tools write runs): reverse each
        first_of = np.flatnonzero(starts)
        sizes = np.diff(np.append(first_of, len(where)))
        mirror = np.repeat(2 * first_of + sizes - 1, sizes) - np.arange(len(where))
        out[where] = tied[mirror]
    else:
        group = np.cumsum(starts, dtype=np.int64)
        v = int(tied.max()) + 2
        key = group * v + (v - 2 - tied.astype(np.int64))
        out[where] = tied[np.argsort(key, kind="stable")]
    return out.reshape(codes.shape)


def read_run_file(path: str | Path) -> tuple[str, dict[str, tuple[list, list, list]]]:
    """One run file as ``(tag, {topic: (docids, scores, ranks)})`` in file order (see
    :func:`read_runs` for the checks)."""
    tag = None
    per: dict[str, tuple[list, list, list]] = {}
    seen: dict[str, set] = {}
    for n, cols in _lines(path):
        if len(cols) < 6:
            raise EvaluationInputError(
                path, n, f"expected 6 columns (topic Q0 docid rank score tag), found {len(cols)}"
            )
        # columns after the sixth are ignored, as trec_eval does (its own test data has them)
        topic, _q0, doc, rank_s, score_s, run_tag = cols[:6]
        try:
            rank = int(rank_s)
        except ValueError:
            raise EvaluationInputError(path, n, f"rank {rank_s!r} is not a whole number") from None
        try:
            score = float(score_s)
        except ValueError:
            raise EvaluationInputError(path, n, f"score {score_s!r} is not a number") from None
        if not math.isfinite(score):
            raise EvaluationInputError(path, n, f"score {score_s!r} is not finite")
        if tag is None:
            tag = run_tag
        elif run_tag != tag:
            raise EvaluationInputError(path, n, f"run tag {run_tag!r} differs from {tag!r} on earlier lines")
        entry = per.get(topic)
        if entry is None:
            entry = per[topic] = ([], [], [])
            seen[topic] = set()
        if doc in seen[topic]:
            raise EvaluationInputError(path, n, f"document {doc!r} appears twice for topic {topic!r}")
        seen[topic].add(doc)
        entry[0].append(doc)
        entry[1].append(score)
        entry[2].append(rank)
    if tag is None:
        raise EvaluationInputError(path, None, "the run file is empty")
    return tag, per


def read_runs(paths: Sequence[str | Path]) -> RunSet:
    """Read TREC run files (``topic Q0 docid rank score tag``) into one :class:`RunSet`.

    Every line is checked: six columns (later ones are ignored, as trec_eval does), an integer rank, a finite score, one tag per file,
    no docid twice in a topic (trec_eval and ndeval refuse those too)."""
    if not paths:
        raise EvaluationInputError("--run", None, "give at least one run file")
    runs = []
    for p in paths:
        tag, per = read_run_file(p)
        runs.append((tag, str(p), per))
    return RunSet.from_rankings(runs)


# --------------------------------------------------------------------------- qrels


def _grade(path, n, s: str) -> int:
    t = s[1:] if s[:1] in ("L", "l") else s  # NTCIREVAL writes levels as L0, L1, ...
    try:
        return int(t)
    except ValueError:
        raise EvaluationInputError(path, n, f"relevance {s!r} is not a whole number (or L<n>)") from None


@dataclass
class Qrels:
    """Judgments. ``kind`` is ``adhoc`` (``topic iteration docid grade``, where
    ``judgments[topic][docid] = grade``) or ``diversity`` (``topic intent docid grade``,
    where ``judgments[topic][intent][docid] = grade``). Negative grades are kept: the
    measures say how they treat them."""

    kind: str
    judgments: dict
    source: str = ""

    @property
    def topics(self) -> list[str]:
        return sorted(self.judgments, key=natural_key)


def read_qrels(path: str | Path, kind: str) -> Qrels:
    """Read ad hoc or diversity qrels; a (topic, [intent,] docid) judged twice is an error."""
    if kind not in ("adhoc", "diversity"):
        raise EvaluationInputError("--qrels-format", None, f"unknown qrels format {kind!r}; use adhoc or diversity")
    out: dict = {}
    for n, cols in _lines(path):
        if len(cols) != 4:
            what = "topic iteration docid grade" if kind == "adhoc" else "topic intent docid grade"
            raise EvaluationInputError(path, n, f"expected 4 columns ({what}), found {len(cols)}")
        topic, second, doc, g = cols
        grade = _grade(path, n, g)
        if kind == "adhoc":
            docs = out.setdefault(topic, {})
            if doc in docs:
                raise EvaluationInputError(path, n, f"document {doc!r} is judged twice for topic {topic!r}")
            docs[doc] = grade
        else:
            docs = out.setdefault(topic, {}).setdefault(second, {})
            if doc in docs:
                raise EvaluationInputError(
                    path, n, f"document {doc!r} is judged twice for topic {topic!r}, intent {second!r}"
                )
            docs[doc] = grade
    if not out:
        raise EvaluationInputError(path, None, "the qrels file is empty")
    return Qrels(kind, out, str(path))


def read_intent_probabilities(path: str | Path) -> dict[str, dict[str, float]]:
    """Read ``topic intent probability`` lines (NTCIREVAL's ``.Iprob`` files)."""
    out: dict[str, dict[str, float]] = {}
    for n, cols in _lines(path):
        if len(cols) != 3:
            raise EvaluationInputError(path, n, f"expected 3 columns (topic intent probability), found {len(cols)}")
        topic, intent, p_s = cols
        try:
            p = float(p_s)
        except ValueError:
            raise EvaluationInputError(path, n, f"probability {p_s!r} is not a number") from None
        if not (0.0 <= p <= 1.0):
            raise EvaluationInputError(path, n, f"probability {p_s!r} is not between 0 and 1")
        probs = out.setdefault(topic, {})
        if intent in probs:
            raise EvaluationInputError(path, n, f"intent {intent!r} of topic {topic!r} is given twice")
        probs[intent] = p
    if not out:
        raise EvaluationInputError(path, None, "the intent probability file is empty")
    return out
