"""Packing of rankings into compact arrays, and the house tie-break. No Django here.

A ranking is two parallel arrays: integer document ids (int32, into the docid vocabulary)
and scores (float64). Stored rankings are always ordered by (-score, docid string).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DOCID_DTYPE = np.dtype("<i4")
SCORE_DTYPE = np.dtype("<f8")


@dataclass(frozen=True)
class PackedRanking:
    docids: np.ndarray  # int32 ids
    scores: np.ndarray  # float64

    def __len__(self) -> int:
        return int(self.docids.shape[0])


def pack(ids: np.ndarray, scores: np.ndarray) -> tuple[bytes, bytes]:
    """Arrays -> (docid bytes, score bytes), little-endian."""
    ids = np.asarray(ids, dtype=DOCID_DTYPE)
    scores = np.asarray(scores, dtype=SCORE_DTYPE)
    if ids.shape != scores.shape:
        raise ValueError(f"ranking has {ids.shape[0]} docids but {scores.shape[0]} scores")
    return ids.tobytes(), scores.tobytes()


def unpack(docid_bytes: bytes, score_bytes: bytes) -> PackedRanking:
    ids = np.frombuffer(bytes(docid_bytes), dtype=DOCID_DTYPE)
    scores = np.frombuffer(bytes(score_bytes), dtype=SCORE_DTYPE)
    if ids.shape != scores.shape:
        raise ValueError("corrupt ranking: docid and score arrays differ in length")
    return PackedRanking(ids, scores)


def tie_break_order(docids: list[str], scores) -> list[int]:
    """Positions that order entries by (-score, docid): the house tie-break."""
    scores = [float(s) for s in scores]
    return sorted(range(len(docids)), key=lambda i: (-scores[i], docids[i]))


def query_key(text: str) -> str:
    """The retrieval key of a query text: lower case, single spaces.

    Both changes are invisible to Lucene's analysers (they lower-case and split on
    whitespace), so two texts with the same key always get the same ranking.
    """
    return " ".join(text.lower().split())
