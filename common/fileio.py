"""Reading input files, writing output files and checking ids, once for every app.

No Django here. This module lives outside the apps because crowd (topics, variants),
retrieval (collections, runs) and pooling (qrels) all read organisers' files the same way,
and none of them should reach into another app's internals to do so; being plain Python it
is used by the plain readers (``topics.topicfiles``, ``common.trec``, ...) as much as
by services and management commands.

Reading
    :func:`open_binary` opens a file, decompressing gzip (recognised by its magic bytes; a
    name ending in ``.gz`` that is not gzip data is an error) after :func:`gzip_check` has
    refused a file that would expand past the caps (:func:`decompressed_limit` bytes, or
    :func:`expansion_limit` times its stored size), in one streaming pass that only
    decompresses, before any reader parses a row. :func:`open_lines` yields
    ``(line number, text)`` decoded strictly (UTF-8 by default; ``encoding=`` reads other
    ASCII-compatible encodings such as ``latin-1`` or ``cp1252``) with lines bounded in
    length. :func:`read_bytes` reads a whole (bounded) file, :func:`parse_json` JSON.
    Every failure -- a missing or unreadable file, a name too long for the file system,
    bytes that are not in the encoding, truncated or corrupt gzip data, an over-long line,
    JSON nested too deeply or with a number too long to convert -- raises
    :class:`InputError` naming the file and, where there is one, the line.
Writing
    :func:`atomic_output` writes to a temporary file beside the target and renames it over
    the target only when everything was written: a failed export leaves no empty or
    partial file.
Ids
    :func:`clean_id` is the one id check of every importer: the id is normalised to Unicode
    NFC, and refused when empty, longer than its limit, or when it contains whitespace,
    control characters, format characters (zero-width spaces and joiners, bidirectional
    controls, the byte-order mark), surrogates, private-use or unassigned code points, or
    U+FFFD (the mark of text decoded with the wrong encoding). :func:`clean_name` adds the
    rules for names that become parts of page addresses (no ``/``, ``\\``, ``.`` or ``..``).
Messages
    :func:`quote` shows at most :data:`QUOTE_CHARS` characters of an offending value, and
    :class:`InputError` shortens over-long file names the same way.
"""
from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import hashlib
import json
import os
import stat
import sys
import tempfile
import unicodedata
import zlib
from pathlib import Path
from typing import IO, Callable, Iterator

GZIP_MAGIC = b"\x1f\x8b"
QUOTE_CHARS = 200
MAX_LINE_BYTES = 1 << 20  # 1 MiB: topics, variants, runs and qrels
MAX_FILE_BYTES = 64 << 20  # whole-file reads (XML topic files)
MAX_ID_CHARS = 255
MAX_DECOMPRESSED_BYTES = 1 << 30  # 1 GiB of text out of one gzip file, unless set otherwise
#: text files compress 3 to 12 times (runs, qrels, topics, variants, documents); a file
#: that expands more than this many times past EXPANSION_FLOOR_BYTES is refused
MAX_EXPANSION_RATIO = 100
EXPANSION_FLOOR_BYTES = 16 << 20  # what any file may expand to, whatever its ratio
CHECK_BLOCK_BYTES = 1 << 20  # the check decompresses this much at a time
PROGRESS_BYTES = 1 << 20  # open_lines reports its progress about once per MiB
INT32_MAX = 2**31 - 1

_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character (zero-width or bidirectional control)",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zs": "a space",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def quote(value, limit: int = QUOTE_CHARS) -> str:
    """``repr`` of ``value`` cut to ``limit`` characters, saying how long the whole was."""
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _shown(source) -> str:
    text = str(source)
    if len(text) <= QUOTE_CHARS:
        return text
    half = QUOTE_CHARS // 2
    return f"{text[:half]}...{text[-half:]}"


class InputError(ValueError):
    """A file (or an argument standing for one) could not be read; the message names the
    file and the line. The one input error of every reader in every app: catch this.

    ``source`` (also ``path``) is the file, ``line`` (also ``lineno``) the 1-based line
    number or ``None``, ``reason`` the message without the place.
    """

    def __init__(self, source, line: int | None, message: str):
        self.source = str(source)
        self.path = self.source
        self.line = line
        self.lineno = line
        self.reason = message
        where = _shown(source) if line is None else f"{_shown(source)}, line {line}"
        super().__init__(f"{where}: {message}")


# --- reading --------------------------------------------------------------------------------


def check_encoding(encoding: str) -> str:
    """Return the codec's canonical name; refuse unknown and non-ASCII-compatible ones
    (lines are split on the newline byte before decoding)."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(f"unknown encoding {quote(encoding)}") from None
    if "\n".encode(name) != b"\n" or "a".encode(name) != b"a":
        raise ValueError(
            f"encoding {encoding!r} is not ASCII-compatible; convert the file to UTF-8 first"
        )
    return name


def require_file(path) -> Path:
    """``Path(path)`` if it names a readable regular file; :class:`InputError` saying why
    not."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        reason = "no such file" if exc.errno == errno.ENOENT else (
            f"cannot open ({exc.strerror or exc})")
        raise InputError(path, None, reason) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, None, "not a regular file")
    return path


def _setting(name: str, default: int) -> int:
    conf = sys.modules.get("django.conf")
    if conf is not None and conf.settings.configured:
        value = getattr(conf.settings, name, None)
        if value is not None:
            return int(value)
    return default


def decompressed_limit() -> int:
    """The most bytes one gzip file may decompress to: Django's ``MAX_DECOMPRESSED_BYTES``
    setting when Django is already loaded and configured (this module never imports it),
    else :data:`MAX_DECOMPRESSED_BYTES`."""
    return _setting("MAX_DECOMPRESSED_BYTES", MAX_DECOMPRESSED_BYTES)


def expansion_limit() -> int:
    """How many times its stored size a gzip file may expand to once past
    :data:`EXPANSION_FLOOR_BYTES`: Django's ``MAX_EXPANSION_RATIO`` setting when Django is
    loaded and configured, else :data:`MAX_EXPANSION_RATIO`."""
    return _setting("MAX_EXPANSION_RATIO", MAX_EXPANSION_RATIO)


def _too_large(path, line: int | None, limit: int) -> InputError:
    return InputError(path, line, f"the gzip data decompresses to more than {limit} bytes "
                             "(MAX_DECOMPRESSED_BYTES); refused")


class ExpansionGuard:
    """A readable stream of the decompressed bytes of the gzip stream ``raw`` (an open
    binary file) that refuses, with :class:`InputError` naming ``source``, to give more
    than ``limit`` bytes, or more than ``ratio`` times the stored bytes read so far once
    past ``floor`` bytes. ``lines``: say on which line (1-based) the size limit was
    passed. Corrupt data raises what :mod:`gzip` raises (``OSError``, ``EOFError``,
    ``zlib.error``)."""

    def __init__(self, raw: IO[bytes], source, *, limit: int | None = None,
                 ratio: int | None = None, floor: int = EXPANSION_FLOOR_BYTES,
                 what: str = "the gzip data", limit_name: str = "MAX_DECOMPRESSED_BYTES",
                 lines: bool = False):
        self.raw, self.source = raw, source
        self.limit = decompressed_limit() if limit is None else limit
        self.ratio = expansion_limit() if ratio is None else ratio
        self.floor, self.what, self.limit_name = floor, what, limit_name
        self.lines = 0 if lines else None
        self.total = 0
        self._start = raw.tell()
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > CHECK_BLOCK_BYTES:
            size = CHECK_BLOCK_BYTES
        chunk = self._gz.read(size)
        if self.total + len(chunk) > self.limit:
            line = None
            if self.lines is not None:
                line = self.lines + chunk.count(b"\n", 0, self.limit - self.total) + 1
            raise InputError(self.source, line, f"{self.what} decompresses to more than "
                             f"{self.limit} bytes ({self.limit_name}); refused")
        self.total += len(chunk)
        if self.lines is not None:
            self.lines += chunk.count(b"\n")
        stored = max(1, self.raw.tell() - self._start)
        if self.total > self.floor and self.total > self.ratio * stored:
            raise InputError(self.source, None, f"{self.what} expands more than {self.ratio} "
                             f"times ({stored} bytes stored gave {self.total}; "
                             "MAX_EXPANSION_RATIO); refused")
        return chunk

    def close(self) -> None:
        self._gz.close()


_CHECKED: dict[tuple, InputError | None] = {}  # file -> its refusal, or None: passed
_CHECKED_KEEP = 256


def gzip_check(path) -> None:
    """Refuse a gzip file that decompresses to more than :func:`decompressed_limit` bytes
    (naming the line where it passes the limit) or that expands more than
    :func:`expansion_limit` times: one streaming pass that only decompresses and counts
    line ends, in bounded memory, before any reader parses a row (a bomb is refused in
    seconds, not after hours of parsing). Files that are not gzip data pass at once;
    corrupt gzip data is left to the reader, which names the line. A file checked once
    (same inode, size and modification time, same caps) is not decompressed again: the
    bulk reader and the line reader that may follow it share one check."""
    try:
        st = os.stat(path)
        raw = open(path, "rb")
    except OSError:
        return  # the reader says why it cannot open the file
    limit, ratio = decompressed_limit(), expansion_limit()
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, limit, ratio)
    with raw:
        if key in _CHECKED:
            refused = _CHECKED[key]
            if refused is not None:
                raise InputError(path, refused.line, refused.reason)
            return
        if raw.read(2) != GZIP_MAGIC:
            return
        raw.seek(0)
        guard = ExpansionGuard(raw, path, limit=limit, ratio=ratio, lines=True)
        refused = None
        try:
            while guard.read(CHECK_BLOCK_BYTES):
                pass
        except (EOFError, OSError, zlib.error):
            return
        except InputError as exc:
            refused = exc
        finally:
            guard.close()
    if len(_CHECKED) >= _CHECKED_KEEP:
        _CHECKED.clear()
    _CHECKED[key] = refused
    if refused is not None:
        raise refused


def open_binary(path) -> IO[bytes]:
    """Open ``path`` for reading bytes, decompressing gzip data; failures raise
    :class:`InputError`."""
    path = Path(path)
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise InputError(path, None, f"cannot open ({exc.strerror or exc})") from None
    if magic == GZIP_MAGIC:
        gzip_check(path)
        return gzip.open(path, "rb")
    if path.name.lower().endswith(".gz"):
        raise InputError(path, None, "the name ends in .gz but the file is not gzip data")
    return open(path, "rb")


def _gzip_error(path, line: int | None, exc: BaseException) -> InputError:
    return InputError(path, line, f"truncated or corrupt gzip data ({exc})")


def _decode(raw: bytes, encoding: str, path, number: int) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        byte = raw[exc.start : exc.start + 1].hex()
        hint = "; give --encoding for files in another encoding (e.g. latin-1)" if (
            encoding == "utf-8") else ""
        raise InputError(
            path, number,
            f"not valid {encoding} (byte 0x{byte} at column {exc.start + 1}){hint}",
        ) from None


def open_lines(path, *, encoding: str = "utf-8", max_line_bytes: int = MAX_LINE_BYTES,
               progress: Callable[[float], None] | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` with the line break removed.

    Bytes are decoded strictly; a UTF-8 byte-order mark at the start is dropped. A line
    longer than ``max_line_bytes`` bytes is an error (it would otherwise be read whole), so
    is a NUL byte (no database text column holds one) and gzip data that decompresses
    past :func:`decompressed_limit`. ``progress(fraction)`` hears, about every
    :data:`PROGRESS_BYTES` bytes, how much of the file as stored has been read.
    """
    try:
        encoding = check_encoding(encoding)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None
    number = 0
    limit = decompressed_limit()
    with open_binary(path) as fh:
        capped = isinstance(fh, gzip.GzipFile)
        total = 0
        stored = fh.fileobj if capped else fh
        size = max(1, os.fstat(stored.fileno()).st_size) if progress is not None else 1
        told = 0
        while True:
            try:
                raw = fh.readline(max_line_bytes + 1)
            except (EOFError, OSError, zlib.error) as exc:
                raise _gzip_error(path, number + 1, exc) from None
            if not raw:
                return
            number += 1
            total += len(raw)
            if capped and total > limit:
                raise _too_large(path, number, limit)
            if progress is not None and total - told >= PROGRESS_BYTES:
                told = total
                progress(min(1.0, stored.tell() / size))
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                raise InputError(
                    path, number, f"line longer than {max_line_bytes} bytes; is this the "
                    "right file and format?")
            nul = raw.find(b"\x00")
            if nul >= 0:
                raise InputError(path, number, f"a NUL byte (0x00) at column {nul + 1}; is this a "
                                          "text file?")
            text = _decode(raw, encoding, path, number)
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield number, text.rstrip("\r\n")


def read_bytes(path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The whole (decompressed) content of a file of at most ``max_bytes`` bytes (and, for
    gzip data, of at most :func:`decompressed_limit` bytes)."""
    with open_binary(path) as fh:
        limit = decompressed_limit() if isinstance(fh, gzip.GzipFile) else None
        if limit is not None and limit < max_bytes:
            max_bytes = limit
        else:
            limit = None
        try:
            data = fh.read(max_bytes + 1)
        except (EOFError, OSError, zlib.error) as exc:
            raise _gzip_error(path, None, exc) from None
    if limit is not None and len(data) > limit:
        raise _too_large(path, None, limit)
    if len(data) > max_bytes:
        raise InputError(path, None, f"larger than {max_bytes} bytes")
    return data


def file_sha256(path) -> str:
    """Hex SHA-256 of a file's bytes as stored (not decompressed)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise InputError(path, None, f"cannot read ({exc.strerror or exc})") from None
    return h.hexdigest()


def plain_name(path) -> str:
    """The file name without a trailing ``.gz``, lower-cased (for extension checks)."""
    name = Path(path).name.lower()
    return name[:-3] if name.endswith(".gz") else name


# --- numbers and JSON -----------------------------------------------------------------------


def parse_json(text: str | bytes, source, line: int | None = None):
    """``json.loads(text)``, every failure an :class:`InputError` naming ``source`` (and
    ``line``): text that is not JSON, nesting too deep for the parser (``[[[…]]]`` 10^5
    deep) and an integer too long to convert (Python refuses more than 4,300 digits)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, line, f"invalid JSON ({exc.msg} at column {exc.colno})") \
            from None
    except RecursionError:
        raise InputError(source, line, "invalid JSON (nested too deeply)") from None
    except ValueError:
        raise InputError(source, line, f"invalid JSON (a number of more than "
                                       f"{sys.get_int_max_str_digits()} digits)") from None


def parse_int(text: str, what: str, *, low: int, high: int = INT32_MAX) -> int:
    """``int(text)`` within ``[low, high]``; ValueError with a message otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} {quote(text)} is not a whole number") from None
    if value < low:
        below = {1: "is not positive", 0: "is negative"}.get(low, f"is below {low}")
        raise ValueError(f"{what} {quote(text)} {below}")
    if value > high:
        raise ValueError(f"{what} {quote(text)} is too large (at most {high})")
    return value


# --- ids ------------------------------------------------------------------------------------


def clean_id(value: str, what: str = "id", *, max_chars: int = MAX_ID_CHARS) -> str:
    """The id in Unicode NFC; ValueError (saying what is wrong) for a refused id."""
    if (type(value) is str and 0 < len(value) <= max_chars and value.isascii()
            and value.isprintable() and " " not in value):
        # printable ASCII without a blank: its own NFC form, and no character of it is
        # refused (the check below, character by character, costs ten times as much)
        return value
    text = unicodedata.normalize("NFC", str(value))
    if not text:
        raise ValueError(f"empty {what}")
    if len(text) > max_chars:
        raise ValueError(f"{what} is {len(text)} characters (at most {max_chars}): "
                         f"{text[:60]!r}...")
    for ch in text:
        category = unicodedata.category(ch)
        refused = _REFUSED_CATEGORIES.get(category)
        if refused is None and ch.isspace():
            refused = "whitespace"
        if refused is None and ch == "\ufffd":
            refused = "U+FFFD, the mark of text decoded with the wrong encoding"
        if refused is not None:
            raise ValueError(f"{what} {quote(text)} contains {refused} (U+{ord(ch):04X})")
    return text


def clean_name(value: str, what: str = "name", *, max_chars: int = 100) -> str:
    """:func:`clean_id`, and safe as one segment of a page address or file name."""
    text = clean_id(value, what, max_chars=max_chars)
    if text in (".", "..") or "/" in text or "\\" in text:
        raise ValueError(f"{what} {quote(text)} must not be '.' or '..' nor contain '/' or '\\'")
    return text


def checked_id(value: str, what: str, source, line: int | None, *,
               max_chars: int = MAX_ID_CHARS) -> str:
    """:func:`clean_id`, raising ``InputError(source, line, reason)`` for a refused id."""
    try:
        return clean_id(value, what, max_chars=max_chars)
    except ValueError as exc:
        raise InputError(source, line, str(exc)) from None


# --- writing --------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class OutputError(ValueError):
    """An output file could not be written; the message names it and says why."""

    def __init__(self, path, exc: OSError):
        self.path = str(path)
        super().__init__(f"cannot write {_shown(path)}: {exc.strerror or exc}")


@contextlib.contextmanager
def atomic_output(path, mode: str = "w", *, encoding: str | None = "utf-8",
                  newline: str | None = None):
    """Open a temporary file beside ``path`` for writing; on success rename it to ``path``,
    on any error (or interruption) remove it, leaving ``path`` as it was."""
    path = Path(path)
    binary = "b" in mode
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".part",
                                   dir=path.parent)
    except OSError as exc:
        raise OutputError(path, exc) from None
    try:
        with os.fdopen(fd, mode, **({} if binary else {"encoding": encoding,
                                                        "newline": newline})) as fh:
            yield fh
        os.chmod(tmp, 0o666 & ~_umask())
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise OutputError(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
