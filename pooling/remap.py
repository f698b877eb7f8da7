"""Vocabulary ids <-> dense ids in docid string order.

Plain Python and NumPy; nothing here imports Django. The caller passes the two reads a
remap needs (the order of ids by their docid strings, and the strings themselves), so
the structure is tested without a database.

Pools and analyses break ties by docid string, while rankings store docids as vocabulary
ids allocated in insertion order. A :class:`DocidRemap` maps the ids a computation needs
to dense ids ``0..n-1`` whose numeric order is the docid string order, and back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

__all__ = ["DocidRemap", "LOOKUP_MAX_SPAN"]

LOOKUP_MAX_SPAN = 1 << 26  # id spans up to this use a lookup table (8 bytes per id)

OrderRead = Callable[[np.ndarray], np.ndarray]  # distinct ids -> the same ids in string order
StringsRead = Callable[[np.ndarray], dict]  # ids -> {id: docid string}

_INT32_MIN, _INT32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)


def _ids(a) -> np.ndarray:
    """``a`` as a 1-D int32 or int64 array (ids are int32 on disk: no 8-byte copy)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu" and a.size:
        raise TypeError(f"docid ids must be integers, not {a.dtype}")
    if a.dtype != np.int32:
        a = a.astype(np.int64, copy=False)
    return a.reshape(-1)


def _offsets(a: np.ndarray, lo: int) -> np.ndarray:
    """``a - lo``, in int32 when ``lo`` fits it (the caller knows the result does)."""
    if a.dtype == np.int32 and not _INT32_MIN <= lo <= _INT32_MAX:
        a = a.astype(np.int64)
    return a - a.dtype.type(lo)


@dataclass(frozen=True)
class DocidRemap:
    """Vocabulary ids <-> dense ids in docid string order.

    ``vocab`` holds the distinct vocabulary ids in numeric order; ``vocab_of_dense[k]``
    the vocabulary id whose string is the k-th smallest. When the ids fill enough of
    their span (the usual case: a collection's ids are allocated together) a lookup table
    over the span maps ids to dense ids; otherwise a binary search over ``vocab`` does.
    The strings themselves are read only when asked for (:meth:`strings`).
    """

    vocab: np.ndarray
    vocab_of_dense: np.ndarray
    lo: int
    table: np.ndarray | None  # dense id of ``lo + i`` (-1: not in the vocabulary)
    dense_of: np.ndarray | None  # dense id of each ``vocab`` entry, when no table
    read_strings: StringsRead | None = field(default=None, repr=False, compare=False)
    _strings: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_arrays(cls, arrays: Iterable[np.ndarray], *, order: OrderRead,
                    strings: StringsRead | None = None) -> "DocidRemap":
        """The remap of every id in ``arrays``; ``order`` sorts distinct ids by their
        strings, ``strings`` reads the strings when :meth:`strings` is first asked."""
        arrays = [_ids(a) for a in arrays]  # int32 ids stay int32: no 8-byte copy of each
        arrays = [a for a in arrays if a.size]
        if not arrays:
            empty = np.zeros(0, np.int64)
            return cls(vocab=empty, vocab_of_dense=empty, lo=0, table=None, dense_of=empty,
                       read_strings=strings)
        lo = min(int(a.min()) for a in arrays)
        span = max(int(a.max()) for a in arrays) - lo + 1
        use_table = span <= LOOKUP_MAX_SPAN and span <= 4 * sum(a.size for a in arrays) + (1 << 20)
        if use_table:  # distinct ids by marking them: no sort of every ranked entry
            seen = np.zeros(span, dtype=bool)
            for a in arrays:
                seen[_offsets(a, lo)] = True
            vocab = np.flatnonzero(seen) + lo
        else:
            vocab = np.unique(np.concatenate(arrays)).astype(np.int64, copy=False)
        vocab_of_dense = np.asarray(order(vocab), dtype=np.int64)
        if vocab_of_dense.shape != vocab.shape:
            raise ValueError("the docid order read returned a different number of ids")
        dense = np.arange(len(vocab), dtype=np.int64)
        table = dense_of = None
        if use_table:
            table = np.full(span, -1, dtype=np.int64)
            table[vocab_of_dense - lo] = dense
        else:
            dense_of = np.empty(len(vocab), dtype=np.int64)
            dense_of[np.searchsorted(vocab, vocab_of_dense)] = dense
        return cls(vocab=vocab, vocab_of_dense=vocab_of_dense, lo=lo, table=table,
                   dense_of=dense_of, read_strings=strings)

    def strings(self) -> dict[int, str]:
        """``{vocabulary id: docid string}`` of the whole vocabulary (read once)."""
        if not self._strings and len(self.vocab):
            if self.read_strings is None:
                raise ValueError("this remap was built without a way to read docid strings")
            self._strings.update(self.read_strings(self.vocab))
        return self._strings

    def to_dense(self, ids: np.ndarray) -> np.ndarray:
        """The dense ids (int64) of vocabulary ids; raises ``ValueError`` for an id
        outside the vocabulary."""
        ids = _ids(ids)
        if not ids.size:
            return np.zeros(0, np.int64)
        if self.table is not None:
            if int(ids.min()) < self.lo or int(ids.max()) >= self.lo + self.table.size:
                raise ValueError("docid id outside the remapped vocabulary")
            dense = self.table[_offsets(ids, self.lo)]
            if dense.min() < 0:
                raise ValueError("docid id outside the remapped vocabulary")
            return dense
        pos = np.searchsorted(self.vocab, ids)
        if pos.max() >= len(self.vocab) or (self.vocab[pos] != ids).any():
            raise ValueError("docid id outside the remapped vocabulary")
        return self.dense_of[pos]

    def to_vocab(self, dense: np.ndarray) -> np.ndarray:
        return self.vocab_of_dense[np.asarray(dense, dtype=np.int64)]

    def string_of_dense(self, dense: int) -> str:
        return self.strings()[int(self.vocab_of_dense[int(dense)])]
