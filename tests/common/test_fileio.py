"""common.fileio: the one opener, id check, sha256 and atomic writer of every app."""
import gzip
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common import fileio
from common.fileio import InputError, OutputError, atomic_output, clean_id, clean_name

ROOT = Path(__file__).resolve().parents[2]


def test_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = ("import sys, common.fileio\n"
            "assert not [m for m in sys.modules if m.split('.')[0] == 'django']\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# --- ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["UQV100.001", "301", "clueweb09-en0007-71-07471",
                                   "FR940202-2-00150", "caf\u00e9", "\u6587\u66f8-1", "a:b/c"])
def test_ordinary_ids_pass_unchanged(value):
    assert clean_id(value) == value


def test_ids_are_normalised_to_nfc():
    assert clean_id("cafe\u0301") == "caf\u00e9"
    assert clean_id("\u212b") == "\u00c5"  # ANGSTROM SIGN -> A WITH RING (NFC)


@pytest.mark.parametrize("value, fragment", [
    ("", "empty id"),
    ("a b", "contains a space (U+0020)"),
    ("a\tb", "contains a control character (U+0009)"),
    ("a\u00a0b", "contains a space (U+00A0)"),
    ("a\u200bb", "contains an invisible format character (zero-width or bidirectional "
                 "control) (U+200B)"),
    ("a\u200db", "(U+200D)"),
    ("\ufeffa", "(U+FEFF)"),
    ("a\u202eb", "(U+202E)"),
    ("a\u2066b", "(U+2066)"),
    ("a\u2028b", "a line separator (U+2028)"),
    ("a\x00b", "a control character (U+0000)"),
    ("a\x85b", "a control character (U+0085)"),
    ("a\ue000b", "a private-use character (U+E000)"),
    ("a\ufffdb", "U+FFFD"),
    ("x" * 256, "is 256 characters (at most 255)"),
])
def test_refused_ids_say_why(value, fragment):
    with pytest.raises(ValueError) as info:
        clean_id(value)
    assert fragment in str(info.value)


def test_messages_quote_at_most_200_characters():
    with pytest.raises(ValueError) as info:
        clean_id("x" * 1_000_000 + " ")
    assert len(str(info.value)) < 400 and "is 1000001 characters" in str(info.value)
    with pytest.raises(ValueError) as info:
        clean_id("x" * 1_000_000 + " ", max_chars=10**7)
    assert len(str(info.value)) < 400 and "(1000001 characters) contains a space" in str(
        info.value)
    assert fileio.quote("abc") == "'abc'"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a b", "x" * 101])
def test_names_that_break_addresses_are_refused(name):
    with pytest.raises(ValueError):
        clean_name(name)
    assert clean_name("web-2011_adhoc.v2") == "web-2011_adhoc.v2"


def test_checked_id_names_the_place():
    with pytest.raises(InputError, match=r"^f\.txt, line 3: docid 'a b' contains a space"):
        fileio.checked_id("a b", "docid", "f.txt", 3)


@pytest.mark.parametrize("text, fragment", [
    ("0", "is not positive"), ("-3", "is not positive"), ("2147483648", "is too large"),
    ("1.5", "is not a whole number"), ("9" * 5000, "is not a whole number"),
])
def test_parse_int_bounds(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        fileio.parse_int(text, "rank", low=1)
    assert fileio.parse_int("2147483647", "rank", low=1) == 2**31 - 1


# --- reading --------------------------------------------------------------------------------


def test_lines_utf8_strict_and_other_encodings(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"\xef\xbb\xbfok\r\nt\xe9g\n")
    with pytest.raises(InputError, match=r"f\.txt, line 2: not valid utf-8 \(byte 0xe9 at column "
                       r"2\); give --encoding"):
        list(fileio.open_lines(p))
    assert list(fileio.open_lines(p, encoding="latin-1")) == [
        (1, "\u00ef\u00bb\u00bfok"), (2, "t\u00e9g")]
    p.write_bytes(b"\xef\xbb\xbfok\r\n")
    assert list(fileio.open_lines(p)) == [(1, "ok")]  # the byte-order mark is dropped
    with pytest.raises(InputError, match="unknown encoding"):
        list(fileio.open_lines(p, encoding="klingon"))
    with pytest.raises(InputError, match="not ASCII-compatible"):
        list(fileio.open_lines(p, encoding="utf-16"))


def test_gzip_by_magic_truncated_and_fake(tmp_path):
    body = b"".join(b"line %d\n" % i for i in range(50000))
    named = tmp_path / "a.gz"
    named.write_bytes(gzip.compress(body))
    unnamed = tmp_path / "a.txt"
    unnamed.write_bytes(gzip.compress(body))
    assert sum(1 for _ in fileio.open_lines(named)) == sum(1 for _ in fileio.open_lines(unnamed))
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(body)[:5000])
    with pytest.raises(InputError, match=r"cut\.gz, line \d+: truncated or corrupt gzip data"):
        list(fileio.open_lines(cut))
    corrupt = tmp_path / "corrupt.gz"
    data = bytearray(gzip.compress(body))
    data[100:110] = b"\x00" * 10
    corrupt.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"corrupt\.gz, line \d+: truncated or corrupt"):
        list(fileio.open_lines(corrupt))
    fake = tmp_path / "fake.gz"
    fake.write_text("plain\n")
    with pytest.raises(InputError, match=r"fake\.gz: the name ends in \.gz but the file is not"):
        list(fileio.open_lines(fake))


def test_line_length_is_bounded(tmp_path):
    p = tmp_path / "long.txt"
    p.write_bytes(b"short\n" + b"x" * 5000 + b"\nshort\n")
    with pytest.raises(InputError, match=r"long\.txt, line 2: line longer than 1000 bytes"):
        list(fileio.open_lines(p, max_line_bytes=1000))
    assert len(list(fileio.open_lines(p, max_line_bytes=5000))) == 3


def test_open_errors_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="cannot open"):
        list(fileio.open_lines(tmp_path / "missing"))
    with pytest.raises(InputError, match="cannot open"):
        list(fileio.open_lines(tmp_path))
    long = tmp_path / ("n" * 300)
    with pytest.raises(InputError) as info:
        list(fileio.open_lines(long))
    assert "File name too long" in str(info.value) and len(str(info.value)) < 300
    with pytest.raises(InputError, match="no such file"):
        fileio.require_file(tmp_path / "missing")
    with pytest.raises(InputError, match="File name too long"):
        fileio.require_file(long)
    with pytest.raises(InputError, match="not a regular file"):
        fileio.require_file(tmp_path)


def test_read_bytes_is_bounded(tmp_path):
    p = tmp_path / "big.xml"
    p.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="larger than 100 bytes"):
        fileio.read_bytes(p, max_bytes=100)
    assert fileio.read_bytes(p, max_bytes=101) == b"x" * 101


def test_file_sha256_is_of_the_stored_bytes(tmp_path):
    p = tmp_path / "q.gz"
    p.write_bytes(gzip.compress(b"abc"))
    assert fileio.file_sha256(p) == hashlib.sha256(p.read_bytes()).hexdigest()


# --- writing --------------------------------------------------------------------------------


def test_atomic_output_replaces_only_when_complete(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_output(out) as fh:
            fh.write("half")
            raise RuntimeError("stopped")
    assert out.read_text() == "old\n" and list(tmp_path.iterdir()) == [out]
    with atomic_output(out) as fh:
        fh.write("new\n")
    assert out.read_text() == "new\n" and list(tmp_path.iterdir()) == [out]
    assert (out.stat().st_mode & 0o777) == 0o666 & ~_umask()
    new = tmp_path / "fresh.txt"
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(new) as fh:
            fh.write("x")
            raise KeyboardInterrupt
    assert not new.exists() and list(tmp_path.iterdir()) == [out]


def test_atomic_output_errors_are_short(tmp_path):
    with pytest.raises(OutputError, match="File name too long"):
        with atomic_output(tmp_path / ("n" * 300)) as fh:
            fh.write("x")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OutputError, match="No such file or directory"):
        with atomic_output(tmp_path / "no" / "dir.txt") as fh:
            fh.write("x")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_gzip_is_refused_as_soon_as_it_decompresses_past_the_cap(tmp_path, settings):
    """It stops at the cap (the error names the first line past it), not at the end of the
    512 MiB the file would give, and before the reader has parsed a line: the check
    decompresses first, in a pass of its own."""
    import resource

    settings.MAX_DECOMPRESSED_BYTES = 4 << 20
    bomb = tmp_path / "bomb.tsv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:  # 512 MiB of 1 KiB lines, ~0.5 MB
        block = (b"x" * 1023 + b"\n") * (64 << 10)
        for _ in range(8):
            out.write(block)
    assert bomb.stat().st_size < 2_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    lines = 0
    with pytest.raises(InputError, match=r"bomb\.tsv\.gz, line 4097: the gzip data "
                                         r"decompresses to more than 4194304 bytes"):
        for _ in fileio.open_lines(bomb):  # keeping nothing
            lines += 1
    assert lines == 0  # refused before the first line was handed out
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000
    small = tmp_path / "small.gz"
    small.write_bytes(gzip.compress((b"x" * 1023 + b"\n") * 4096))  # exactly the cap: read
    assert sum(1 for _ in fileio.open_lines(small)) == 4096
    with pytest.raises(InputError, match=r"bomb\.tsv\.gz, line 4097: the gzip data decompresses "):
        fileio.read_bytes(bomb)


def test_the_cap_is_the_django_setting_when_django_is_configured(settings):
    settings.MAX_DECOMPRESSED_BYTES = 12345
    assert fileio.decompressed_limit() == 12345


def test_a_nul_byte_is_an_input_error_with_line_and_column(tmp_path):
    p = tmp_path / "n.tsv"
    p.write_bytes(b"1\tok\n2\tb\x00d\n")
    with pytest.raises(InputError, match=r"n\.tsv, line 2: a NUL byte \(0x00\) at column 4"):
        list(fileio.open_lines(p))


def test_the_printable_ascii_shortcut_accepts_and_refuses_as_the_full_check():
    """Ids of printable ASCII without a blank skip the character-by-character check; every
    ASCII character in every place, and the length and emptiness limits, are decided as
    the full check decides them."""
    from common import fileio

    cases = [f"{a}{c}{b}" for c in map(chr, range(128)) for a, b in (("", ""), ("x", ""), ("x", "y"))]
    cases += ["", "a" * 200, "a" * 201, "doc-1_ok.txt", "caf\u00e9"]

    def outcome(value):
        try:
            return fileio.clean_id(value, max_chars=200)
        except ValueError as exc:
            return f"refused: {exc}"

    fast = [outcome(v) for v in cases]
    assert fast == [_full_check(v) for v in cases]
    assert sum(x.startswith("refused") for x in fast) > 30  # controls, blanks, "", too long


def _full_check(value):
    """clean_id without the shortcut: a str subclass is not ``type(value) is str``."""
    from common import fileio

    class Id(str):
        pass

    try:
        return fileio.clean_id(Id(value), max_chars=200)
    except ValueError as exc:
        return f"refused: {exc}"
