"""Compiled loops over a file's bytes for :mod:`common.columns`. No Django here.

A run file of 100,000 lines is read in one pass that finds every token and checks every
byte, then one pass per number column; numpy's whole-array operations need a dozen passes
for the same work, and Arrow's number parser costs more than these loops. The loops are
compiled by numba on first use (and cached beside this file, so later processes load
them) and release the GIL, so files are read on several threads at once.

Each loop only vouches for what it understands; everything else is reported back, and
:mod:`common.columns` hands it to ``float()``/``int()`` or to the line reader.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["UNSURE", "OK", "all_equal", "changes", "gather_text", "parse_numbers", "tokenize"]

OK = 0
#: the file holds something the bulk reader does not vouch for (the line reader says what)
UNSURE = 1

_POW10 = np.array([10.0**k for k in range(23)])  # exact doubles
_EXACT = 1 << 53  # every integer up to here is an exact double


@njit(cache=True, nogil=True)
def tokenize(a, lead, ncols, at_least, max_line, lines):
    """The tokens of every non-blank line of ``a[lead:]`` (which ends with a line end and
    holds ``lines`` line ends):
    ``(status, starts, ends)``, ``starts[i, j]``/``ends[i, j]`` the byte offsets of column
    ``j`` of row ``i``. Tokens are printable ASCII separated by blanks, tabs and ``\\r``;
    ``status`` is :data:`UNSURE` (and the arrays empty) on any other byte, a line longer
    than ``max_line`` bytes, a line with fewer than ``ncols`` tokens, or with more unless
    ``at_least``."""
    n = len(a)
    starts = np.empty((lines, ncols), np.int32)  # a block is below 2 GiB
    ends = np.empty((lines, ncols), np.int32)
    empty = starts[:0]
    row = 0
    col = 0
    line_start = lead
    i = lead
    while i < n:
        c = a[i]
        if c > 32:
            s = i
            while i < n and a[i] > 32 and a[i] < 127:
                i += 1
            if i < n and a[i] >= 127:
                return UNSURE, empty, empty
            if col < ncols:
                starts[row, col] = s
                ends[row, col] = i
            elif not at_least:
                return UNSURE, empty, empty
            col += 1
        elif c == 10:
            if i - line_start > max_line:
                return UNSURE, empty, empty
            if col:
                if col < ncols:
                    return UNSURE, empty, empty
                row += 1
                col = 0
            line_start = i + 1
            i += 1
        elif c == 32 or c == 9 or c == 13:
            i += 1
        else:
            return UNSURE, empty, empty
    if col:
        return UNSURE, empty, empty  # no line end after the last token
    return OK, starts[:row], ends[:row]


@njit(cache=True, nogil=True)
def parse_numbers(a, starts, ends, integer, out_f, out_i, slow):
    """Each token ``a[starts[k]:ends[k]]`` written ``[+-]digits[.digits]`` with at most 18
    digits, a mantissa up to 2**53 and at most 22 decimals, as ``out_f[k]`` (the mantissa
    divided by ``10**decimals``: both exact doubles, so one correctly rounded division, the
    value ``float()`` returns) or, when ``integer`` (no dot allowed), as ``out_i[k]``.
    Any other token is marked in ``slow`` for ``float()``/``int()``; returns their count."""
    pow10 = _POW10
    n_slow = 0
    for k in range(len(starts)):
        i = starts[k]
        end = ends[k]
        neg = False
        c = a[i]
        if c == 45:
            neg = True
            i += 1
        elif c == 43:
            i += 1
        mant = 0
        digits = 0
        decimals = 0
        dot = False
        ok = True
        while i < end:
            c = a[i]
            if c >= 48 and c <= 57:
                if digits < 18:
                    mant = mant * 10 + (c - 48)
                digits += 1
                if dot:
                    decimals += 1
            elif c == 46 and not dot and not integer:
                dot = True
            else:
                ok = False
                break
            i += 1
        if not ok or digits == 0 or digits > 18 or mant > _EXACT or decimals > 22:
            slow[k] = True
            n_slow += 1
        elif integer:
            out_i[k] = -mant if neg else mant
        else:
            v = mant / pow10[decimals]
            out_f[k] = -v if neg else v
    return n_slow


@njit(cache=True, nogil=True)
def gather_text(a, starts, ends, out):
    """Copy each token ``a[starts[k]:ends[k]]`` to row ``k`` of the zeroed byte matrix
    ``out`` (as wide as the longest token)."""
    for k in range(len(starts)):
        s = starts[k]
        m = ends[k] - s
        for j in range(m):
            out[k, j] = a[s + j]


@njit(cache=True, nogil=True)
def _same(a, s1, e1, s2, e2):
    if e1 - s1 != e2 - s2:
        return False
    for j in range(e1 - s1):
        if a[s1 + j] != a[s2 + j]:
            return False
    return True


@njit(cache=True, nogil=True)
def changes(a, starts, ends, out):
    """Write to ``out`` the rows whose token differs from the row before's (row 0 first);
    returns their count."""
    n = 0
    for k in range(len(starts)):
        if k == 0 or not _same(a, starts[k], ends[k], starts[k - 1], ends[k - 1]):
            out[n] = k
            n += 1
    return n


@njit(cache=True, nogil=True)
def all_equal(a, starts, ends, token):
    """Whether every token ``a[starts[k]:ends[k]]`` is the byte array ``token``."""
    m = len(token)
    for k in range(len(starts)):
        s = starts[k]
        if ends[k] - s != m:
            return False
        for j in range(m):
            if a[s + j] != token[j]:
                return False
    return True
