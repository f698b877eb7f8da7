"""One concept: the evaluator's input files (runs, qrels, intent probabilities) as arrays.

Runs, qrels and intent probabilities read into arrays for evaluation. No Django here.

A :class:`RunSet` holds several runs over the same topics as padded arrays: for run ``r``,
topic ``t`` and position ``i`` in the file, ``codes[r, t, i]`` is the document's code in the
topic's vocabulary (every docid any run retrieved for that topic, sorted as byte strings,
so code order is docid order), ``scores[r, t, i]`` its score and ``ranks[r, t, i]`` its
rank column. Positions past the end of a ranking hold ``PAD_CODE``. Measures then work on
the grades of each ranking gathered through these codes, never on strings.

Runs and qrels files are read by the project's one TREC reader (:mod:`common.trec`, with
its evaluation rules :data:`common.trec.RUN_EVALUATION` and
:data:`common.trec.QRELS_EVALUATION`: ``.gz`` or plain text, read in bulk and, for a file
that fails a check, again line by line to name the file and line). This module turns
what it reads into the arrays the measures index grades with.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from common import fileio, trec
from common.columns import Unsure
from common.fileio import InputError
from common.trec import RunArrays
from common.naturalsort import natural_key  # the one natural order of ids (plain Python)

__all__ = [
    "NONPOOL",
    "UNJUDGED",
    "PAD",
    "PAD_CODE",
    "ORDERS",
    "Qrels",
    "RunSet",
    "read_runs",
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

#: threads that read run files and code topics side by side
WORKERS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _in_threads(fn, items) -> list:
    """``[fn(x) for x in items]`` on up to :data:`WORKERS` threads. The work inside is
    numpy's, pandas' and Arrow's, which release the GIL, so the threads use the cores; the
    results come back in order and so does the exception of the first item that fails."""
    items = list(items)
    workers = min(WORKERS, len(items))
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def _lines(path: str | Path) -> Iterable[tuple[int, list[str]]]:
    # The project's one opener: gzip, strict UTF-8 and bounded lines, errors with the line.
    path = fileio.require_file(path)
    for n, line in fileio.open_lines(path):
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

    @cached_property
    def vocab_index(self) -> list[dict[str, int]]:
        """``vocab_index[t][docid]`` is the docid's code in topic ``t`` (its place in
        ``vocab[t]``), built when first asked for."""
        return [dict(zip(words.tolist(), range(len(words)))) for words in self.vocab]

    @classmethod
    def from_rankings(cls, runs: Sequence[tuple[str, str, dict[str, tuple[list, list, list]]]]):
        """Build from ``(tag, source, {topic: (docids, scores, ranks)})`` in file order.
        Raises :class:`InputError` if two runs share a tag."""
        seen: dict[str, str] = {}
        for tag, source, _ in runs:
            if tag in seen:
                raise InputError(
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
        vocab = []
        for ti, t in enumerate(topics):
            words = sorted(set().union(*(per[t][0] for _, _, per in runs if t in per)))
            index = {w: i for i, w in enumerate(words)}
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
                   codes, scores, ranks, lengths)

    @classmethod
    def from_arrays(cls, runs: Sequence[tuple[str, str, "RunArrays"]]):
        """Build from ``(tag, source, arrays)`` with the entries of each run in file order;
        the same :class:`RunSet` as :meth:`from_rankings` on the same rankings (a topic's
        vocabulary array may be wider: its string width is that of the files' docids). Each
        topic is coded and laid out on its own, the topics spread over threads. Raises
        :class:`InputError` if two runs share a tag, and :class:`Unsure` if a run
        ranks a document twice for one topic (the line reader says where)."""
        seen: dict[str, str] = {}
        for tag, source, _ in runs:
            if tag in seen:
                raise InputError(
                    source, None, f"run tag {tag!r} is also the tag of {seen[tag]}; tags must differ"
                )
            seen[tag] = source
        # Each run's entries come in stretches of one topic (usually one per topic). All
        # the bookkeeping is done on stretches; entries are only moved in bulk.
        st_values, st_run, st_start, st_size = [], [], [], []
        offset = 0
        for r, (_, _, a) in enumerate(runs):
            n = len(a.docids)
            start = a.stretch_starts
            st_values += a.stretch_topics
            st_run.append(np.full(len(start), r, dtype=np.int64))
            st_start.append(start + offset)
            st_size.append(np.diff(np.append(start, n)))
            offset += n
        total = offset
        topics = sorted({b.decode("utf-8") for b in st_values}, key=natural_key)
        position = {name.encode("utf-8"): i for i, name in enumerate(topics)}
        n_runs, n_topics = len(runs), len(topics)
        st_topic = np.array([position[v] for v in st_values], dtype=np.int64)
        st_run, st_start, st_size = (np.concatenate(x) if x else np.zeros(0, np.int64)
                                     for x in (st_run, st_start, st_size))
        lengths = np.bincount(st_run * n_topics + st_topic, weights=st_size,
                              minlength=n_runs * n_topics).astype(np.int64).reshape(n_runs, n_topics)
        depth = int(lengths.max()) if lengths.size else 0
        # stretches by topic, then run, then file order: each topic's entries in that order,
        # which is the order of its cells in the (runs, depth) plane of the output arrays
        o = np.lexsort((st_start, st_run, st_topic))
        size_o = st_size[o]
        first_o = np.searchsorted(st_topic[o], np.arange(n_topics + 1))
        run_offset = np.concatenate(([0], np.cumsum([len(a.docids) for _, _, a in runs])))
        shape = (n_runs, n_topics, depth)
        if lengths.size and int(lengths.min()) == depth:  # no padding: every cell is written
            codes, scores, ranks = np.empty(shape, np.int32), np.empty(shape), np.empty(shape, np.int64)
        else:
            codes = np.full(shape, PAD_CODE, dtype=np.int32)
            scores = np.full(shape, -np.inf)
            ranks = np.full(shape, np.iinfo(np.int64).max, dtype=np.int64)
        if len(o) * 64 <= total:
            # a few long stretches (a run is usually one stretch per topic): joined slice by slice
            o_l, size_l, first_l = o.tolist(), size_o.tolist(), first_o.tolist()
            run_l = st_run.tolist()
            local = (st_start - run_offset[st_run]).tolist()

            width = {a.docids.dtype for _, _, a in runs}
            width = width.pop() if len(width) == 1 else None

            def entries(t: int):
                lo, hi = first_l[t], first_l[t + 1]
                parts = [(runs[run_l[i]][2], local[i], size_l[k]) for k, i in zip(range(lo, hi), o_l[lo:hi])]
                if width is None:  # docids of several widths: numpy pads the narrower
                    docs = np.concatenate([a.docids[at:at + n] for a, at, n in parts])
                else:  # joined as bytes, which numpy copies without holding the GIL
                    docs = np.concatenate([a.docids[at:at + n].view(np.uint8) for a, at, n in parts]
                                          ).view(width)
                return (docs, np.concatenate([a.scores[at:at + n] for a, at, n in parts]),
                        np.concatenate([a.ranks[at:at + n] for a, at, n in parts]))
        else:
            # many short stretches: every entry's place in the sorted order, then one gather
            sorted_at = _ramps(st_start[o], size_o) if total else np.zeros(0, np.int64)
            everything = [np.concatenate([getattr(a, name) for _, _, a in runs])[sorted_at]
                          for name in ("docids", "scores", "ranks")]
            bounds = np.append(np.cumsum(size_o) - size_o, total)[first_o] if total else (
                np.zeros(n_topics + 1, np.int64))

            def entries(t: int):
                lo, hi = int(bounds[t]), int(bounds[t + 1])
                return tuple(x[lo:hi] for x in everything)

        def one_topic(t: int) -> np.ndarray:
            docs, s, k = entries(t)
            code, words = _codes(docs)
            cells = lengths[:, t]
            if int(cells.min()) == depth:
                where = np.s_[:, t, :]
                codes[where] = code.reshape(n_runs, depth)
                scores[where] = s.reshape(n_runs, depth)
                ranks[where] = k.reshape(n_runs, depth)
            else:
                filled = np.arange(depth) < cells[:, None]
                codes[:, t, :][filled] = code
                scores[:, t, :][filled] = s
                ranks[:, t, :][filled] = k
            # a document twice for one topic of one run: fewer (run, code) pairs than entries
            seen = np.zeros(n_runs * len(words), dtype=bool)
            seen[np.repeat(np.arange(n_runs) * len(words), cells) + code] = True
            if int(np.count_nonzero(seen)) != len(code):
                raise Unsure  # the line reader names the file and line
            raw = words.view(np.uint8)
            if bool((raw < 128).all()):  # ASCII: each byte is its code point (as astype(str))
                return raw.astype(np.uint32).view(f"<U{words.dtype.itemsize}")
            return np.array([w.decode("utf-8") for w in words.tolist()], dtype=str)

        vocab = _in_threads(one_topic, range(n_topics))
        return cls([t for t, _, _ in runs], [s for _, s, _ in runs], topics, vocab,
                   codes, scores, ranks, lengths)

    def ordered_codes(self, order: str, topics: Sequence[int] | None = None) -> np.ndarray:
        """Codes of every ranking in evaluation order, ``(runs, topics, depth)``, for all
        topics or for the topic positions ``topics``.

        ``trec_eval``: score descending, ties by docid descending (trec_eval's
        ``comp_sim_docno``; the rank column is ignored). ``rank``: the rank column ascending,
        as ndeval and NTCIREVAL read runs; a rank used twice in one topic is an error."""
        if order not in ORDERS:
            raise InputError("--order", None, f"unknown order {order!r}; use one of {ORDERS}")
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
                raise InputError(
                    self.sources[r], None,
                    f"rank {int(k[r, t, i])} appears twice for topic {self.topics[idx[t]]!r}; "
                    "--order rank needs distinct ranks",
                )
        return out


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _words(docs: np.ndarray) -> list[np.ndarray]:
    """The 8-byte words that together cover every byte of each fixed-width string (the
    last one may overlap the one before): equal words, equal strings. Each is copied out
    of the strings into an array of its own: hashing and comparing aligned words is
    faster than reading them in place."""
    width = docs.dtype.itemsize
    if width < 8:
        docs = docs.astype("S8")
        width = 8
    docs = np.ascontiguousarray(docs)
    offsets = list(range(0, width - 7, 8))
    if offsets[-1] != width - 8:
        offsets.append(width - 8)
    return [np.ndarray(len(docs), dtype="<u8", buffer=docs, offset=o, strides=(width,)).copy()
            for o in offsets] if len(docs) else [np.zeros(0, np.uint64)]


def _byte_order(docs: np.ndarray) -> np.ndarray:
    """The permutation that sorts byte strings in byte order (with integer sorts on
    big-endian words of the zero-padded strings)."""
    width = docs.dtype.itemsize
    padded = docs.astype(f"S{-(-width // 8) * 8}")
    words = padded.view(">u8").reshape(len(docs), -1)
    return np.lexsort(words.T[::-1])


def _codes(docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Code each entry of ``docs`` (one topic's) by its docid's place in the topic's sorted
    docids; returns the codes and the sorted docids. Docids are hashed to 64 bits and
    grouped by pandas' hash table; when docids are longer than 8 bytes every entry is then
    compared with its group's representative, and a collision (never seen in practice)
    makes an exact sort group them instead."""
    words = _words(docs)
    h = words[0] * _MIX
    for w in words[1:]:
        h ^= h >> np.uint64(29)
        h ^= w
        h *= _MIX
    c, uniques = pd.factorize(h)
    reps = np.empty(len(uniques), dtype=np.int64)
    reps[c] = np.arange(len(docs))
    # one word: the hash is a product with an odd number, one-to-one, so exact
    if len(words) > 1:
        rep_of = reps[c]
        if not all(bool((w[rep_of] == w).all()) for w in words):
            uniq, c = np.unique(docs, return_inverse=True)
            reps = np.empty(len(uniq), dtype=np.int64)
            reps[c] = np.arange(len(docs))
    order = _byte_order(docs[reps])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[c], docs[reps[order]]


def _ramps(first: np.ndarray, sizes: np.ndarray, step: int = 1) -> np.ndarray:
    """``first[k], first[k] + step, ...`` for ``sizes[k]`` (at least 1) entries each, one
    segment after another (one cumulative sum; ``np.repeat`` is several times slower)."""
    total = int(sizes.sum())
    inc = np.zeros(total, dtype=np.int64) if step == 0 else np.full(total, step, dtype=np.int64)
    if total:
        at = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        inc[at[1:]] = first[1:] - first[:-1] - step * (sizes[:-1] - 1)
        inc[0] = first[0]
    return np.cumsum(inc, out=inc)


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


def read_runs(paths: Sequence[str | Path]) -> RunSet:
    """Read TREC run files (``topic Q0 docid rank score tag``) into one :class:`RunSet`.

    Every line is checked (:data:`common.trec.RUN_EVALUATION`): six columns (later ones
    are ignored, as trec_eval does), a whole-number rank that fits 64 bits, a finite
    score, one tag per file, no docid twice in a topic (trec_eval and ndeval refuse those
    too). Files are read in bulk; one that fails a check is read again line by line to
    name the line."""
    if not paths:
        raise InputError("--run", None, "give at least one run file")

    def one(p) -> tuple[str, str, RunArrays]:
        # duplicates are found while each topic's documents are coded (RunSet.from_arrays)
        tag, arrays = trec.run_read(p, trec.RUN_EVALUATION, duplicates=False)
        return tag, str(p), arrays

    runs = _in_threads(one, paths)
    try:
        return RunSet.from_arrays(runs)
    except Unsure:
        # a document twice in a topic: the line reader names the file and line
        for p in paths:
            trec.run_read(p, trec.RUN_EVALUATION, bulk=False)
        raise


def read_run_rankings(path: str | Path) -> tuple[str, dict[str, tuple[list, list, list]]]:
    """One run file as ``(tag, {topic: (docids, scores, ranks)})`` in file order, checked
    as :func:`read_runs` checks it (for :meth:`RunSet.from_rankings`, beside stored runs)."""
    tag, arrays = trec.run_read(path, trec.RUN_EVALUATION)
    return tag, arrays.per_topic()


# --------------------------------------------------------------------------- qrels


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
    """Read ad hoc or diversity qrels (:func:`common.trec.qrels_judgments` with
    :data:`common.trec.QRELS_EVALUATION`); a (topic, [intent,] docid) judged twice is an
    error naming both lines."""
    return Qrels(kind, trec.qrels_judgments(path, kind, trec.QRELS_EVALUATION), str(path))


def read_intent_probabilities(path: str | Path) -> dict[str, dict[str, float]]:
    """Read ``topic intent probability`` lines (NTCIREVAL's ``.Iprob`` files)."""
    out: dict[str, dict[str, float]] = {}
    for n, cols in _lines(path):
        if len(cols) != 3:
            raise InputError(path, n, f"expected 3 columns (topic intent probability), found {len(cols)}")
        topic, intent, p_s = cols
        try:
            p = float(p_s)
        except ValueError:
            raise InputError(path, n, f"probability {p_s!r} is not a number") from None
        if not (0.0 <= p <= 1.0):
            raise InputError(path, n, f"probability {p_s!r} is not between 0 and 1")
        probs = out.setdefault(topic, {})
        if intent in probs:
            raise InputError(path, n, f"intent {intent!r} of topic {topic!r} is given twice")
        probs[intent] = p
    if not out:
        raise InputError(path, None, "the intent probability file is empty")
    return out
