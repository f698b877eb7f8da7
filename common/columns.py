"""Whitespace-separated columns read in bulk, by compiled loops over a file's bytes. No Django here.

Runs and qrels files hold millions of short lines; reading them one ``str.split`` at a
time costs more than evaluating them. :func:`read_columns` reads the bytes (gzip
accepted, in blocks cut at line ends) and finds every token and checks every byte in one
compiled pass (:mod:`common.bytescan`); columns then come out as fixed-width byte strings
(:meth:`Columns.text`) or as numbers (:meth:`Columns.floats`, :meth:`Columns.ints`).

The bulk reader only vouches for files it understands completely: printable ASCII
tokens separated by spaces, tabs and line ends (``\\r\\n`` too), lines within
:data:`common.fileio.MAX_LINE_BYTES`, the expected number of columns on every non-blank
line. Anything else -- a non-ASCII or control byte, a wrong column count, a number it
cannot read, an unreadable or corrupt file -- raises :class:`Unsure`, and the caller
reads the file again with its line-by-line reader (:func:`common.fileio.open_lines`),
which either accepts the file or names the file and line of the problem. So the bulk
path accepts a subset of what the line path accepts, and for that subset returns the
same values: ASCII text is its own UTF-8, NFC and Latin-1 form; a number written
``[+-]digits[.digits]`` with at most 18 digits, a mantissa up to 2**53 and at most 22
decimals is ``mantissa / 10**decimals``, one correctly rounded division of two exact
doubles, which is what ``float()`` returns; every other number goes through
``float()``/``int()`` itself.
"""
from __future__ import annotations

import codecs
import gzip
import os
import zlib
from dataclasses import dataclass

import numpy as np

from common import fileio

__all__ = ["BULK_ENCODINGS", "Columns", "Unsure", "read_columns"]

#: encodings in which printable ASCII bytes decode to themselves
BULK_ENCODINGS = frozenset({"utf-8", "ascii", "iso8859-1", "latin-1", "cp1252", "iso8859-15"})
BLOCK_BYTES = 64 << 20  # bytes parsed at once (cut at a line end)
_UTF8_BOM = b"\xef\xbb\xbf"
_LEAD = b" " * 16
_TAIL = b"\0" * 8


class Unsure(Exception):
    """The bulk reader cannot vouch for this input; read it line by line."""


@dataclass
class Columns:
    """The tokens of ``rows`` non-blank lines: ``starts[i, j]``/``ends[i, j]`` are the byte
    offsets of column ``j`` of row ``i`` in ``data``."""

    data: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.ends)

    def span(self, j: int, rows=slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Where the tokens of column ``j`` (of ``rows``) start and end."""
        return self.starts[rows, j], self.ends[rows, j]

    def token(self, i: int, j: int) -> bytes:
        """The token of row ``i``, column ``j``."""
        return self.data[int(self.starts[i, j]):int(self.ends[i, j])].tobytes()

    def all_equal(self, j: int, token: bytes) -> bool:
        """Whether every token of column ``j`` is ``token``."""
        s, e = self.span(j)
        return bool(_scan().all_equal(self.data, s, e, np.frombuffer(token, dtype=np.uint8)))

    def stretches(self, j: int) -> tuple[np.ndarray, list[bytes]]:
        """Where each run of equal tokens in column ``j`` starts, and its token."""
        s, e = self.span(j)
        first = np.empty(self.rows, dtype=np.int64)
        first = first[:_scan().changes(self.data, s, e, first)]
        return first, [self.token(i, j) for i in first.tolist()]

    def text(self, j: int) -> np.ndarray:
        """Column ``j`` as a numpy byte-string array (``S<width>``)."""
        if self.rows == 0:
            return np.zeros(0, dtype="S1")
        s, e = self.span(j)
        width = int((e - s).max())
        out = np.zeros((self.rows, width), dtype=np.uint8)
        _scan().gather_text(self.data, s, e, out)
        return out.view(f"S{width}").ravel()

    def _numbers(self, j: int, integer: bool) -> np.ndarray:
        n = self.rows
        out = np.zeros(n, dtype=np.int64 if integer else np.float64)
        if n == 0:
            return out
        s, e = self.span(j)
        slow = np.zeros(n, dtype=np.bool_)
        out_f, out_i = (np.zeros(0), out) if integer else (out, np.zeros(0, np.int64))
        if _scan().parse_numbers(self.data, s, e, integer, out_f, out_i, slow):
            convert = int if integer else float
            raw = self.data
            at = np.flatnonzero(slow)
            try:
                out[at] = [convert(raw[a:b].tobytes().decode("ascii"))
                           for a, b in zip(s[at].tolist(), e[at].tolist())]
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
    # the blocks keep the blanks in front and the NULs behind that the earlier word-at-a-
    # time reads needed; the scan starts after the blanks and stops before the NULs
    scan = _scan()
    a = data[:-len(_TAIL)]
    if len(a) >= 1 << 31:
        raise Unsure  # offsets are 32-bit; blocks are far smaller
    status, starts, ends = scan.tokenize(a, len(_LEAD), ncols, at_least, fileio.MAX_LINE_BYTES,
                                         np.count_nonzero(a == 10))
    if status != scan.OK:
        raise Unsure
    return Columns(data, starts, ends)


def _scan():
    """The compiled loops (:mod:`common.bytescan`), imported on first use: numba's import
    and its cached machine code cost a quarter second that processes which never read a
    run or qrels file do not pay."""
    from common import bytescan

    return bytescan


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
