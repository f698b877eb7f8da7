"""Cells safe to open in a spreadsheet. Plain Python: no Django here.

A CSV or TSV cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is read as a formula by Excel, LibreOffice and Google Sheets ("CSV injection"): a worker
could type ``=HYPERLINK(...)`` as a query and have it run on an organiser's machine.
:func:`spreadsheet_cell` prefixes such text with an apostrophe, which spreadsheets show as
plain text (OWASP's advice). Only strings are changed; numbers are written as they are.
The JSON exports keep every text exactly as typed.
"""
from __future__ import annotations

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
