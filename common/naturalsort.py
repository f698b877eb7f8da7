"""Natural order of ids: digit runs compare as numbers. Plain Python: no Django here.

Topic ids sort as people read them ("1, 2, 9, 12, 15", "UQV100.2 < UQV100.10"), never as
strings ("1, 12, 15, 2"). Every crowd page and selector that lists topics sorts with
:func:`natural_key`, so one order holds everywhere.

:func:`natural_sort_key` is the same order as one string that a database can sort and
seek in (each topic stores it, so a set of a million topics is read a page at a time with
keyset pagination instead of being loaded and sorted in Python). It is written in
lower-case hexadecimal only, so every collation -- PostgreSQL's ``C`` or ``en_US``,
SQLite's ``BINARY`` -- orders it as bytes.
"""
from __future__ import annotations

import re

_RUNS = re.compile(r"([0-9]+)")


def natural_key(value: str) -> tuple:
    """A sort key: text runs compare case-insensitively, digit runs as numbers.

    Ties (``"01"`` and ``"1"``, ``"a"`` and ``"A"``) are broken by the text itself, so the
    order is total and the same on every run.
    """
    parts = []
    for i, run in enumerate(_RUNS.split(value)):
        if i % 2:  # a digit run
            parts.append((1, int(run), ""))
        else:
            parts.append((0, 0, run.casefold()))
    return (tuple(parts), value)


def natural_sort_key(value: str) -> str:
    """A string whose byte order is the order of :func:`natural_key`.

    Text runs become their case-folded UTF-8 bytes (each byte kept at 0x01 or above)
    followed by the terminator 0x00, so a shorter run sorts first; digit runs become the
    length of the number without leading zeros (two bytes) and its digits, so numbers
    compare by value. Two zero bytes end the runs (below any length, so an id with fewer
    runs sorts first) and the value itself follows, breaking ties as :func:`natural_key` does
    (``"01"`` after ``"1"``), which makes the key unique for unique ids. Bytes are written
    as hexadecimal.
    """
    out = bytearray()
    for i, run in enumerate(_RUNS.split(value)):
        if i % 2:
            digits = run.lstrip("0") or "0"
            out += len(digits).to_bytes(2, "big") + digits.encode("ascii")
        else:
            out += bytes(b + 1 for b in run.casefold().encode("utf-8"))  # UTF-8 has no 0xFF
            out.append(0)
    out += b"\x00\x00"  # the end: below any digit run's length, so fewer runs sort first
    out += value.encode("utf-8")
    return out.hex()
