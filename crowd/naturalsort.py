"""Natural order of ids: digit runs compare as numbers. Plain Python: no Django here.

Topic ids sort as people read them ("1, 2, 9, 12, 15", "UQV100.2 < UQV100.10"), never as
strings ("1, 12, 15, 2"). Every crowd page and selector that lists topics sorts with
:func:`natural_key`, so one order holds everywhere.
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
