"""The docid vocabulary: integer ids for docid strings, and a per-process cache of them."""
from __future__ import annotations

from typing import Iterable

from cachetools import LRUCache
from django.db import connection

from ..models import Docid
from ..selectors import docid_ids


DOCID_ANALYZE_AFTER = 50_000  # new docids in one call that refresh the planner statistics


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
    if len(missing) >= DOCID_ANALYZE_AFTER and connection.vendor == "postgresql":
        # Fresh planner statistics: until autovacuum gets to it, a bulk-loaded vocabulary
        # looks empty, and pool builds then sort millions of docids instead of reading
        # them in order from the index (retrieval.selectors.docid_order).
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(Docid._meta.db_table)}")
    return known



#: Entries of the per-process docid cache (least recently used dropped first).
VOCAB_CACHE_MAX = 5_000_000
# docid string -> vocabulary id, per process. Vocabulary ids never change once assigned
# (rows are only ever added, and chunk_retrieve adds them outside its transaction, so only
# committed ids are cached): a worker looks each docid up once, not once per chunk.
_vocab_cache: LRUCache[str, int] = LRUCache(maxsize=VOCAB_CACHE_MAX)


def vocabulary_ids(strings: set[str]) -> dict[str, int]:
    """Vocabulary ids of ``strings`` (added where unknown); every string is in the result."""
    result, missing = {}, []
    for s in strings:
        known = _vocab_cache.get(s)
        if known is None:
            missing.append(s)
        else:
            result[s] = known
    if missing:
        found = docids_ensure(missing)
        result.update(found)
        _vocab_cache.update(found)
    return result


def vocabulary_cache_clear() -> None:
    """Forget cached vocabulary ids (for tests that roll the database back)."""
    _vocab_cache.clear()
