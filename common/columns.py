"""Whitespace-separated columns read in bulk, with numpy over a file's bytes. No Django here.

Runs and qrels files hold millions of short lines; reading them one ``str.split`` at a
time costs more than evaluating them. :func:`read_columns` reads the bytes (gzip
accepted, in blocks cut at line ends), finds every token boundary and every line end
with array operations, and checks in bulk that every non-blank line has the expected
number of columns; in the usual layout (one blank or tab between tokens, nothing else)
the positions of the whitespace bytes alone give every token. Columns then come out as
fixed-width byte strings (:meth:`Columns.text`) or as numbers (:meth:`Columns.floats`,
:meth:`Columns.ints`).

The bulk reader only vouches for files it understands completely: printable ASCII
tokens separated by spaces, tabs and line ends (``\\r\\n`` too), lines within
:data:`common.fileio.MAX_LINE_BYTES`. Anything else -- a non-ASCII or control byte, a
wrong column count, a number it cannot read, an unreadable or corrupt file -- raises
:class:`Unsure`, and the caller reads the file again with its line-by-line reader
(:func:`common.fileio.open_lines`), which either accepts the file or names the file and
line of the problem. So the bulk path accepts a subset of what the line path accepts,
and for that subset returns the same values: ASCII text is its own UTF-8, NFC and
Latin-1 form; numbers are converted by Arrow's compiled parser, which rounds decimals
correctly as ``float()`` does and accepts fewer spellings than ``float()``/``int()``
(its one extra, ``0x`` hexadecimal integers, is kept away from it). What Arrow refuses
goes to numpy: a decimal with at most 15 significant digits and no exponent is parsed
as ``mantissa / 10**decimals``, one correctly rounded division of two exact doubles,
which is what ``float()`` returns; other numbers go through ``float()``/``int()``.
"""
from __future__ import annotations

import codecs
import gzip
import os
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.stride_tricks import sliding_window_view

from common import fileio

__all__ = ["BULK_ENCODINGS", "Columns", "Unsure", "read_columns"]

#: encodings in which printable ASCII bytes decode to themselves
BULK_ENCODINGS = frozenset({"utf-8", "ascii", "iso8859-1", "latin-1", "cp1252", "iso8859-15"})
BLOCK_BYTES = 64 << 20  # bytes parsed at once (cut at a line end)
_MAX_FAST_DIGITS = 15  # below 2**53: the mantissa is an exact double
_POW10 = np.array([10.0**k for k in range(23)])  # exact doubles
_UTF8_BOM = b"\xef\xbb\xbf"
_LEAD = b" " * 16
_TAIL = b"\0" * 8


_F0 = np.uint64(0xF0F0F0F0F0F0F0F0)
_ZEROS = np.uint64(0x3030303030303030)
_SIXES = np.uint64(0x0606060606060606)


def _all_digits(words: np.ndarray) -> bool:
    """Whether every byte of every word is an ASCII digit (bytes below 0x80)."""
    return bool(((words & _F0) == _ZEROS).all()) and bool((((words + _SIXES) & _F0) == _ZEROS).all())


def _swar8(words: np.ndarray) -> np.ndarray:
    """The numbers written by eight ASCII digits, the first in the lowest byte."""
    v = words - _ZEROS
    v = v * np.uint64(10) + (v >> np.uint64(8))
    v = ((v & np.uint64(0x000000FF000000FF)) * np.uint64(100 + (1000000 << 32))
         + ((v >> np.uint64(16)) & np.uint64(0x000000FF000000FF)) * np.uint64(1 + (10000 << 32)))
    return v >> np.uint64(32)


class Unsure(Exception):
    """The bulk reader cannot vouch for this input; read it line by line."""


@dataclass
class Columns:
    """The tokens of ``rows`` non-blank lines: ``starts[i, j]``/``ends[i, j]`` are the byte
    offsets of column ``j`` of row ``i`` in ``data``. ``starts`` is ``None`` when every
    token is followed by a single separator: a token then starts one byte after the end
    of the token before it (the first at ``first``)."""

    data: np.ndarray
    starts: np.ndarray | None
    ends: np.ndarray
    first: int = 0

    @property
    def rows(self) -> int:
        return len(self.ends)

    def span(self, j: int, rows=slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Where the tokens of column ``j`` (of ``rows``) start and end."""
        e = self.ends[rows, j]
        if self.starts is not None:
            return self.starts[rows, j], e
        if j:
            return self.ends[rows, j - 1] + 1, e
        before = np.empty(self.rows, dtype=self.ends.dtype)
        before[0] = self.first
        before[1:] = self.ends[:-1, -1]
        before[1:] += 1
        return before[rows], e

    def _matrix(self, j: int, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Column ``j`` left-aligned in a ``(rows, width)`` byte matrix, zeros after each
        token, and the tokens' lengths."""
        s, e = self.span(j)
        lengths = e - s
        w = int(lengths.max()) if width is None else width
        if int(s.max()) + w <= len(self.data):  # rows of a sliding window: one copy each
            m = sliding_window_view(self.data, w)[s]
        else:
            idx = s[:, None] + np.arange(w)
            np.minimum(idx, len(self.data) - 1, out=idx)
            m = self.data[idx]
        if int(lengths.min()) < w:
            m *= np.arange(w) < lengths[:, None]
        return m, lengths

    def token(self, i: int, j: int) -> bytes:
        """The token of row ``i``, column ``j``."""
        if self.starts is not None:
            s = int(self.starts[i, j])
        elif j:
            s = int(self.ends[i, j - 1]) + 1
        else:
            s = int(self.ends[i - 1, -1]) + 1 if i else self.first
        return self.data[s:int(self.ends[i, j])].tobytes()

    def _keys(self, j: int) -> np.ndarray | None:
        """Column ``j`` as one 64-bit word per token (its bytes, zeros after), when every
        token has at most 8 bytes: equal words, equal tokens (no token holds a NUL)."""
        s, e = self.span(j)
        lengths = e - s
        if int(lengths.max()) > 8 or int(s.max()) + 8 > len(self.data):
            return None
        words = np.ndarray((len(self.data) - 7,), dtype="<u8", buffer=self.data, strides=(1,))
        shift = np.uint64(8) * (np.uint64(8) - lengths.astype(np.uint64))
        return words[s] & (np.uint64(0xFFFFFFFFFFFFFFFF) >> shift)

    def all_equal(self, j: int, token: bytes) -> bool:
        """Whether every token of column ``j`` is ``token``."""
        if self.rows == 0:
            return True
        keys = self._keys(j)
        if keys is None:
            return bool((self.text(j) == token).all())
        return len(token) <= 8 and bool((keys == keys[0]).all()) and self.token(0, j) == token

    def stretches(self, j: int) -> tuple[np.ndarray, list[bytes]]:
        """Where each run of equal tokens in column ``j`` starts, and its token."""
        keys = self._keys(j)
        if keys is None:
            keys = self.text(j)
        first = np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1)) if self.rows else (
            np.zeros(0, np.int64))
        return first, [self.token(i, j) for i in first.tolist()]

    def text(self, j: int) -> np.ndarray:
        """Column ``j`` as a numpy byte-string array (``S<width>``)."""
        if self.rows == 0:
            return np.zeros(0, dtype="S1")
        m, _ = self._matrix(j)
        return np.ascontiguousarray(m).view(f"S{m.shape[1]}").ravel()

    def _fixed(self, j: int, integer: bool) -> np.ndarray | None:
        """Column ``j`` when every token is ``[+-]digits[.digits]`` with the same number of
        decimals and at most 16 characters (the way programs write scores and ranks).
        The last 16 bytes before each token's end are read as two 64-bit words, the
        bytes before the token (and the sign and the dot) set to ``'0'``, the digits
        checked and combined eight at a time (SWAR), and the decimals divided out:
        ``mantissa / 10**decimals``, exact below 2**53 as ``float()`` is. ``None`` when
        the column is not like that."""
        s, e = self.span(j)
        data = self.data
        lengths = e - s
        if int(lengths.max()) > 16 or int(e.min()) < 16:
            return None
        first = data[s[0]:e[0]].tobytes()
        k = 0 if integer or b"." not in first else len(first) - 1 - first.rfind(b".")
        words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
        hi = words[e - 8]
        lead = data[s]
        neg = lead == ord("-")
        keep = lengths - (neg | (lead == ord("+")))  # the token without its sign
        if bool((keep - (k > 0) < 1).any()):
            return None  # a sign or a dot without digits
        ones, zeros = np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0x3030303030303030)
        keep_hi = np.minimum(keep, 8).astype(np.uint64)
        mask = ones << (np.uint64(8) * (np.uint64(8) - keep_hi))
        hi = (hi & mask) | (zeros & ~mask)
        short = int(keep.max()) <= 8  # every token fits the last word
        if short:
            lo = None
        else:
            lo = words[e - 16]
            keep_lo = np.clip(keep - 8, 0, 8).astype(np.uint64)
            mask = np.where(keep_lo > 0, ones << (np.uint64(8) * (np.uint64(8) - keep_lo)),
                            np.uint64(0))
            lo = (lo & mask) | (zeros & ~mask)
        if k:
            if k > 14 or (short and k > 6):
                return None
            word, at = (hi, 7 - k) if k < 8 else (lo, 15 - k)
            byte = np.uint64(0xFF) << np.uint64(8 * at)
            if not bool(((word & byte) == (np.uint64(ord(".")) << np.uint64(8 * at))).all()):
                return None
            word &= ~byte
            word |= np.uint64(0x30) << np.uint64(8 * at)
        if not (_all_digits(hi) and (short or _all_digits(lo))):
            return None
        x = _swar8(hi) if short else _swar8(lo) * np.uint64(10**8) + _swar8(hi)
        if k:
            x = (x // np.uint64(10 ** (k + 1))) * np.uint64(10**k) + x % np.uint64(10**k)
        if bool((x >= np.uint64(1 << 53)).any()):
            return None
        if integer:
            mant = x.astype(np.int64)
            return np.where(neg, -mant, mant)
        value = x.astype(np.float64) / _POW10[k]
        return np.where(neg, -value, value)

    def _converted(self, j: int, integer: bool) -> np.ndarray | None:
        """Column ``j`` converted by Arrow's compiled parser, or ``None`` when Arrow
        refuses a token. Its decimal parser rounds correctly, as ``float()`` does, and
        accepts fewer spellings (no ``_``, no blanks); its integer parser also reads
        ``0x`` hexadecimal, which ``int()`` refuses, so a column with a byte above
        ``'9'`` (a letter) is not given to it."""
        s, e = self.span(j)
        n = len(s)
        if len(self.data) >= 1 << 31:
            return None  # Arrow's 32-bit offsets
        # every other element of one binary array over the block is a token: the ones in
        # between hold the rest of the line, and one take puts the tokens side by side
        bounds = np.empty(2 * n, dtype=np.int32)
        bounds[0::2] = s
        bounds[1::2] = e
        spans = pa.Array.from_buffers(pa.binary(), 2 * n - 1,
                                      [None, pa.py_buffer(bounds), pa.py_buffer(self.data)])
        tokens = spans.take(np.arange(0, 2 * n, 2))
        if integer and int(np.frombuffer(tokens.buffers()[2], np.uint8).max()) > ord("9"):
            return None
        try:
            return pc.cast(tokens, pa.int64() if integer else pa.float64()).to_numpy()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    def _numbers(self, j: int, integer: bool) -> np.ndarray:
        n = self.rows
        if n == 0:
            return np.zeros(0, dtype=np.int64 if integer else np.float64)
        converted = self._converted(j, integer)
        if converted is not None:
            return converted
        fixed = self._fixed(j, integer)
        if fixed is not None:
            return fixed
        s, e = self.span(j)
        lengths = e - s
        width = min(int(lengths.max()), _MAX_FAST_DIGITS + 2)
        m, _ = self._matrix(j, width)
        cols = np.arange(width)
        inside = cols < lengths[:, None]
        first = m[:, 0]
        neg = first == ord("-")
        signed = neg | (first == ord("+"))
        d = m - np.uint8(ord("0"))
        digit = (d < 10) & inside
        dot = (m == ord(".")) & inside
        other = inside & ~digit & ~dot
        other[:, 0] &= ~signed
        n_digits = digit.sum(axis=1)
        fast = (~other.any(axis=1)) & (n_digits >= 1) & (n_digits <= _MAX_FAST_DIGITS) & (
            lengths <= width)
        if integer:
            fast &= ~dot.any(axis=1)
        else:
            fast &= dot.sum(axis=1) <= 1
        mant = np.zeros(n, dtype=np.int64)
        for c in range(width):
            dc = digit[:, c]
            mant = np.where(dc, mant * 10 + d[:, c], mant)
        if integer:
            out = np.where(neg, -mant, mant)
        else:
            decimals = (digit & (np.cumsum(dot, axis=1) > 0)).sum(axis=1)
            value = mant / _POW10[np.minimum(decimals, 22)]
            out = np.where(neg, -value, value)
        slow = np.flatnonzero(~fast)
        if len(slow):
            convert = int if integer else float
            raw = self.data
            s, e = self.span(j, slow)
            try:
                out[slow] = [convert(raw[a:b].tobytes().decode("ascii")) for a, b in zip(s, e)]
            except (ValueError, OverflowError):
                raise Unsure from None
        return out

    def floats(self, j: int) -> np.ndarray:
        """Column ``j`` as float64, each equal to ``float(token)``; :class:`Unsure` if one
        is not a number. The array may be a read-only view of Arrow's memory."""
        return self._numbers(j, integer=False)

    def ints(self, j: int) -> np.ndarray:
        """Column ``j`` as int64, each equal to ``int(token)``; :class:`Unsure` if one is
        not a whole number (or does not fit). The array may be a read-only view of
        Arrow's memory."""
        return self._numbers(j, integer=True)


def _padded(content: bytes) -> np.ndarray:
    return np.frombuffer(_LEAD + content + _TAIL, dtype=np.uint8)


def _blocks(path, block_bytes: int):
    """The file's (decompressed) bytes in blocks that end at a line end, each as a byte
    array with :data:`_LEAD` in front and :data:`_TAIL` behind."""
    limit = fileio.decompressed_limit()
    try:
        fh = fileio.open_binary(path)
    except fileio.InputError:
        raise Unsure from None
    with fh:
        capped = isinstance(fh, gzip.GzipFile)
        if not capped:  # a plain file that fits one block: read in place, no copies
            try:
                size = os.fstat(fh.fileno()).st_size
            except OSError:
                raise Unsure from None
            if size <= block_bytes:
                data = np.empty(len(_LEAD) + size + 1 + len(_TAIL), dtype=np.uint8)
                data[:len(_LEAD)] = ord(" ")
                data[len(_LEAD) + size:] = 0  # the spare byte and the tail
                try:
                    got = fh.readinto(memoryview(data)[len(_LEAD):len(_LEAD) + size + 1])
                except OSError:
                    raise Unsure from None
                if got != size:
                    raise Unsure  # the file changed while read
                if size == 0 or data[len(_LEAD) + size - 1] != ord("\n"):
                    data[len(_LEAD) + size] = ord("\n")  # the last line's end
                    yield data
                else:
                    yield data[:-1]  # the spare byte was not needed
                return
        total = 0
        rest = b""
        while True:
            try:
                chunk = fh.read(block_bytes)
            except (EOFError, OSError, zlib.error):
                raise Unsure from None
            total += len(chunk)
            if capped and total > limit:
                raise Unsure
            if not chunk:
                break
            buf = rest + chunk
            cut = buf.rfind(b"\n") + 1
            if cut == 0 and len(buf) <= fileio.MAX_LINE_BYTES:
                rest = buf
                continue
            if cut == 0:
                raise Unsure  # a line too long: the line reader says where
            yield _padded(buf[:cut])
            rest = buf[cut:]
        if rest:
            yield _padded(rest + b"\n")


def _parse_block(data: np.ndarray, ncols: int, at_least: bool) -> Columns:
    # sixteen blanks in front: every number's last 16 bytes lie inside the buffer,
    # and eight bytes after the last line end: every token's first 8 bytes lie inside
    a = data[:-len(_TAIL)]
    if int(a.max()) > 126:
        raise Unsure  # non-ASCII (or DEL): the line reader decodes and checks it
    space = a <= 32
    simple = _single_blanks(data, a, space, ncols)
    if simple is not None:
        return simple
    if np.count_nonzero(space) != np.count_nonzero(a == 32) + np.count_nonzero(a == 10) + (
            np.count_nonzero(a == 9) + np.count_nonzero(a == 13)):
        raise Unsure  # a control byte (NUL, vertical tab, ...)
    edges = np.flatnonzero(space[1:] != space[:-1]) + 1
    if not space[0]:
        edges = np.concatenate(([0], edges))
    starts, ends = edges[0::2], edges[1::2]  # the block ends with a line end
    if len(starts) == 0:
        return Columns(data, np.zeros((0, ncols), np.int64), np.zeros((0, ncols), np.int64))
    # Which gaps after a token hold a line end: the gap's first byte, or for the few
    # longer gaps ("\r\n", trailing blanks, blank lines) a search among the line ends.
    gap_ends = np.append(starts[1:], len(a))
    breaks = a[ends] == 10
    wide = np.flatnonzero(gap_ends - ends > 1)
    if len(wide):
        newlines = np.flatnonzero(a == 10)
        breaks[wide] = np.searchsorted(newlines, gap_ends[wide]) > np.searchsorted(newlines, ends[wide])
    if len(starts) % ncols == 0:
        shape = breaks.reshape(-1, ncols)
        if bool(shape[:, -1].all()) and not bool(shape[:, :-1].any()):
            line_starts = starts[::ncols]
            # a line is at most as long as the distance between the starts of the next
            if int(np.diff(np.append(line_starts, len(a))).max()) > fileio.MAX_LINE_BYTES:
                _check_line_lengths(a)
            return Columns(data, starts.reshape(-1, ncols), ends.reshape(-1, ncols))
    if not at_least:
        raise Unsure
    _check_line_lengths(a)
    last = np.flatnonzero(breaks)  # the last token of each line
    first = np.concatenate(([0], last[:-1] + 1))
    if bool((last - first + 1 < ncols).any()):
        raise Unsure
    idx = first[:, None] + np.arange(ncols)
    return Columns(data, starts[idx], ends[idx])


def _single_blanks(data: np.ndarray, a: np.ndarray, space: np.ndarray, ncols: int
                   ) -> Columns | None:
    """The common layout, found with one search for whitespace: every line is ``ncols``
    tokens, each followed by a single blank or tab, the last by the line end (no blank
    lines, no ``\\r``, no blanks at either end of a line). ``None`` when the block is
    laid out otherwise (the general path below reads it)."""
    lead = len(_LEAD)
    if int(np.count_nonzero(space[1:] & space[:-1])) != lead - 1:
        return None  # whitespace next to whitespace after the lead blanks
    sep = np.flatnonzero(space)[lead:]
    if len(sep) == 0 or len(sep) % ncols:
        return None
    ends = sep.reshape(-1, ncols)
    after = a[ends]  # the byte after each token
    if not bool((after == np.array([32] * (ncols - 1) + [10], dtype=np.uint8)).all()):
        inner = after[:, :-1]
        if not (bool((after[:, -1] == 10).all()) and bool(((inner == 32) | (inner == 9)).all())):
            return None  # a control byte, a "\\r", or lines of another length
    block = Columns(data, None, ends, lead)
    if int(np.diff(ends[:, -1], prepend=lead - 1).max()) - 1 > fileio.MAX_LINE_BYTES:
        raise Unsure  # a line too long: the line reader says where
    return block


def _check_line_lengths(a: np.ndarray) -> None:
    newlines = np.flatnonzero(a == 10)
    if int(np.diff(newlines, prepend=-1).max()) - 1 > fileio.MAX_LINE_BYTES:
        raise Unsure


def read_columns(path, ncols: int, *, at_least: bool = False, encoding: str = "utf-8",
                 block_bytes: int = BLOCK_BYTES) -> list[Columns]:
    """The non-blank lines of ``path`` split on whitespace, as one :class:`Columns` per
    block of the file. Each line has exactly ``ncols`` columns (``at_least``: ``ncols``
    or more; the first ``ncols`` are kept). Raises :class:`Unsure` for anything the bulk
    path does not vouch for (see the module docstring)."""
    try:
        if codecs.lookup(encoding).name not in BULK_ENCODINGS:
            raise Unsure
    except LookupError:
        raise Unsure from None
    out = []
    for n, data in enumerate(_blocks(path, block_bytes)):
        head = len(_LEAD)
        if n == 0 and data[head:head + 3].tobytes() == _UTF8_BOM:
            if codecs.lookup(encoding).name != "utf-8":
                raise Unsure
            data = data.copy()
            data[head:head + 3] = ord(" ")  # dropped, as the line reader drops it
        out.append(_parse_block(data, ncols, at_least))
    return out
