"""Which statements a worker gets, and in what order. Plain Python: no Django here.

``choose_statements`` picks the ``k`` statements with the fewest responses so far, where
"responses" counts answers already given plus assignments still in flight, among the
statements still under their quota and not already given to this worker. Ties are broken
by a per-worker seeded random key, then by id, so workers arriving together do not all
pile onto the lowest ids, and the outcome is reproducible from the seed.

``order_items`` shuffles a worker's items (statements, attention checks, gold items)
with ``random.Random(seed)``; the seed is stored with the worker, so the order shown can be
reconstructed. Items in ``not_first`` (attention checks) never open the list: when the
shuffle puts one first, it swaps places with the first item that may open it.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence


def choose_statements(counts: Mapping[str, int], *, quota: int, k: int, seed: int,
                      exclude: Iterable[str] = ()) -> list[str]:
    """Up to ``k`` ids from ``counts`` (id -> responses incl. in flight), fewest first.

    Only ids with ``counts[id] < quota`` and not in ``exclude`` are eligible.
    """
    if k <= 0:
        return []
    rng = random.Random(seed)
    skip = set(exclude)
    keyed = []
    for item_id in sorted(counts):  # sorted: the rng draws do not depend on dict order
        tie = rng.random()
        if item_id in skip or counts[item_id] >= quota:
            continue
        keyed.append((counts[item_id], tie, item_id))
    keyed.sort()
    return [item_id for _, _, item_id in keyed[:k]]


def order_items(item_ids: Sequence[str], seed: int, *, not_first: Iterable[str] = ()) -> list[str]:
    """The items in the worker's presentation order: sorted, then shuffled by ``seed``;
    an item of ``not_first`` is never first unless every item is one."""
    out = sorted(item_ids)
    random.Random(seed).shuffle(out)
    barred = set(not_first)
    if out and out[0] in barred:
        opener = next((i for i, x in enumerate(out) if x not in barred), None)
        if opener is not None:
            out[0], out[opener] = out[opener], out[0]
    return out
