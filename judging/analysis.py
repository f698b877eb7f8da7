"""Simulated judging for planning: how many relevant documents an order finds for a budget.

An existing judgment set plays the assessor: a document is relevant to a topic when some
intent of the topic (or the topic itself) has a grade above 0 (the majority grade when
several assessors labelled it); a document it does not hold counts as non-relevant. Each
judgment is fed back before the next document is chosen (the sequential policy of
:mod:`judging.priority`).

Budget: ``per_topic`` spends ``budget`` judgments on every topic; otherwise ``budget``
judgments in all, one per topic in turn (topic id order, skipping topics with nothing
left) so that every topic gets an equal share. Every order offered is deterministic; the
seed is recorded in the output only.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import priority
from .selectors import pool_contributing_rankings, relevance_by_topic

ORDERS = ("pool", "mtf", "bandit", "bandit-ns", "depth")


def _topic_stream(order, docs, min_rank, rankings, relevant):
    """Judge a topic's documents in ``order``: yields True/False (relevant) per judgment."""
    known: dict[int, bool] = {}
    for item in priority.order_items(order, n_items=len(docs), rankings=rankings,
                                     min_rank=min_rank, known=known):
        rel = docs[item] in relevant
        known[item] = rel
        yield rel


def judging_simulation(pool, jset, *, order: str, budget: int, per_topic: bool = False,
                       seed: int = 0) -> dict:
    """``{"order", "budget", "per_topic", "seed", "topics", "judged", "relevant_found",
    "curve": [[judged, relevant_found], …]}``, one curve point per judgment."""
    from pooling.selectors import pool_documents

    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if budget < 1:
        raise ValueError("budget must be at least 1")
    docs: dict[str, list[str]] = defaultdict(list)
    ranks: dict[str, list[int]] = defaultdict(list)
    for d in pool_documents(pool):
        docs[d.topic_id].append(d.docid)
        ranks[d.topic_id].append(d.min_rank)
    if not docs:
        raise ValueError(f"pool {pool.label} has no documents")
    rankings = (pool_contributing_rankings(pool) if order in priority.ADAPTIVE_ORDERS
                else {})
    relevant = relevance_by_topic(jset)
    topics = sorted(docs)
    streams = {t: _topic_stream(order, docs[t], np.asarray(ranks[t]), rankings.get(t, []),
                                relevant.get(t, set())) for t in topics}
    judged = found = 0
    curve = []

    def step(t) -> bool:
        nonlocal judged, found
        rel = next(streams[t], None)
        if rel is None:
            return False
        judged += 1
        found += int(rel)
        curve.append([judged, found])
        return True

    if per_topic:
        for t in topics:
            for _ in range(budget):
                if not step(t):
                    break
    else:
        live = list(topics)
        while live and judged < budget:
            for t in list(live):
                if judged >= budget:
                    break
                if not step(t):
                    live.remove(t)
    return {"order": order, "budget": budget, "per_topic": per_topic, "seed": seed,
            "topics": len(topics), "judged": judged, "relevant_found": found, "curve": curve}
