"""Writes of retrieval data. The function that writes owns the transaction."""
from __future__ import annotations

from typing import Iterable

from .models import Docid
from .selectors import docid_ids


def docids_ensure(strings: Iterable[str], batch_size: int = 5000) -> dict[str, int]:
    """Return integer ids for docid strings, adding unknown ones to the vocabulary."""
    strings = list(dict.fromkeys(strings))
    for s in strings:
        if not s or len(s) > 255 or any(c.isspace() for c in s):
            raise ValueError(f"invalid docid {s!r}: docids are 1-255 characters without spaces")
    known = docid_ids(strings)
    missing = [s for s in strings if s not in known]
    for start in range(0, len(missing), batch_size):
        Docid.objects.bulk_create(
            [Docid(docid=s) for s in missing[start : start + batch_size]],
            ignore_conflicts=True,
            batch_size=batch_size,
        )
    if missing:
        known.update(docid_ids(missing))
    return known
