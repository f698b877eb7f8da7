"""Id-indexed scratch tables shared by the pool maths (:mod:`pooling.pools`,
:mod:`pooling.growth`): reusable tables and the grouping of equal integer ids with them.

Plain Python and NumPy; nothing here imports Django.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ID_TABLE_MAX", "TABLE_MAX", "Scratch", "group"]

#: Ids below this bound are grouped with an id-indexed scratch table (O(n), no
#: sort); larger ids fall back to np.unique (a sort).
ID_TABLE_MAX = 1 << 25
#: The size up to which a scratch table is used at all (tests lower it to force the
#: sorting fallbacks).
TABLE_MAX = ID_TABLE_MAX


class Scratch:
    """Reusable id-indexed tables (allocated lazily; np.empty touches no memory)."""

    def __init__(self) -> None:
        self.tables: dict = {}

    def get(self, name: str, size: int, dtype) -> np.ndarray:
        t = self.tables.get(name)
        if t is None or t.size < size or t.dtype != dtype:
            # boolean tables start all False and are restored by their users
            alloc = np.zeros if dtype == np.bool_ else np.empty
            t = alloc(max(size, 1024), dtype=dtype)
            self.tables[name] = t
        return t

    def grid(self, n: int, L: int) -> tuple[np.ndarray, np.ndarray]:
        """(rank0, ranking index) of the rank-major entries of an n x L matrix (cached)."""
        key = ("grid", n, L)
        g = self.tables.get(key)  # type: ignore[call-overload]
        if g is None:
            g = (
                np.repeat(np.arange(L, dtype=np.int32), n),
                np.tile(np.arange(n, dtype=np.intp), L),
            )
            self.tables[key] = g  # type: ignore[index]
        return g


def group(keys: np.ndarray, scratch: Scratch) -> tuple[np.ndarray, np.ndarray]:
    """Group equal non-negative keys: (one representative entry per group, group of every
    entry), groups numbered in entry order of their representatives.

    With a table ``T``: ``T[keys] = i`` leaves in ``T[k]`` the index of *some* entry
    holding ``k`` (which one does not matter), so each key has exactly one entry
    ``i`` with ``T[keys[i]] == i``.  O(n), no sort.  Keys beyond ``TABLE_MAX``
    are grouped with ``np.unique`` instead.
    """
    n = keys.size
    if n == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    hi = int(keys.max()) + 1
    if hi > TABLE_MAX or n >= (1 << 31):
        _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        gid = np.empty_like(order)
        gid[order] = np.arange(order.size)
        return first[order], gid[inv.reshape(-1)]
    table = scratch.get("group", hi, np.int32)
    idx = np.arange(n, dtype=np.int32)
    table[keys] = idx
    rep = table[keys]
    reps = np.flatnonzero(rep == idx)
    gid = np.empty(n, dtype=np.intp)
    gid[reps] = np.arange(reps.size)
    return reps, gid[rep]
