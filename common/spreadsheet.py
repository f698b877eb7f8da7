"""CSV for spreadsheets, and exact tab-separated text for scripts: the one place that writes
either. Plain Python: no Django here.

A CSV cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read
as a formula by Excel, LibreOffice and Google Sheets ("CSV injection"): a worker could type
``=HYPERLINK(...)`` as a query, or a run could name a document so, and have it run on an
organiser's machine. :func:`spreadsheet_writer` is the writer of every CSV file the project
makes (exports, pool lists, analysis tables, the data behind figures); it prefixes such
text with an apostrophe, which spreadsheets show as plain text (OWASP's advice). Only
strings are changed; numbers are written as they are (floats with every digit).

TSV and JSON are meant for scripts and keep every text exactly as stored:
:func:`tsv_writer` quotes a cell only where it holds a tab, a line break or a quote.
"""
from __future__ import annotations

import csv
from typing import IO, Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value):
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_row(values):
    """:func:`spreadsheet_cell` of every value of a row (a list, or a dict's values)."""
    if isinstance(values, dict):
        return {k: spreadsheet_cell(v) for k, v in values.items()}
    return [spreadsheet_cell(v) for v in values]


class _Writer:
    """``writerow``/``writerows`` (a list, or a dict when ``fieldnames`` were given) and
    ``writeheader``; each returns what the file's ``write`` returned, so a writer over an
    echoing object yields lines for a streaming response."""

    def __init__(self, fh: IO[str], *, delimiter: str, cell, fieldnames: Sequence[str] | None):
        self._csv = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        self._cell = cell
        self.fieldnames = list(fieldnames) if fieldnames is not None else None

    def writeheader(self):
        return self._csv.writerow(self.fieldnames)

    def writerow(self, row):
        if isinstance(row, dict):
            row = [row.get(k, "") for k in self.fieldnames]
        return self._csv.writerow([repr(float(v)) if isinstance(v, float) else self._cell(v)
                                   for v in row])

    def writerows(self, rows: Iterable) -> None:
        for row in rows:
            self.writerow(row)


def spreadsheet_writer(fh: IO[str], fieldnames: Sequence[str] | None = None) -> _Writer:
    """A CSV writer whose every text cell passes :func:`spreadsheet_cell`."""
    return _Writer(fh, delimiter=",", cell=spreadsheet_cell, fieldnames=fieldnames)


def tsv_writer(fh: IO[str], fieldnames: Sequence[str] | None = None) -> _Writer:
    """A tab-separated writer for scripts: every value exactly as given."""
    return _Writer(fh, delimiter="\t", cell=lambda v: v, fieldnames=fieldnames)
