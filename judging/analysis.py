"""Simulated judging for planning: how many relevant documents an order finds for a budget.

An existing judgment set plays the assessor: a document is relevant to a topic when some
intent of the topic (or the topic itself) has a grade above 0 (the majority grade when
several assessors labelled it); a document it does not hold counts as non-relevant. Each
judgment is fed back before the next document is chosen (the sequential policy of
:mod:`judging.priority`).

Budget: ``per_topic`` spends ``budget`` judgments on every topic; otherwise ``budget``
judgments in all, one per topic in turn (topic id order, skipping topics with nothing
left) so that every topic gets an equal share. Every order offered is deterministic; the
seed draws the random negatives of the text orders (``cal-text``, ``cal``) and is recorded
in the output. The learned orders (:mod:`judging.learned`) are fed each judgment as the
adaptive ones are; ``al-rank`` shares one pooled model across the topics, which therefore
learns from every topic judged so far (with a shared budget the topics take turns).

Knowing when to stop (:mod:`judging.stopping`): :func:`stop_simulation` replays the same
streams under a stopping rule; :func:`task_recall_estimates` estimates, for a live task,
the recall of its judgments so far.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from common.naturalsort import natural_key

from . import learned, priority, stopping
from .selectors import (
    pool_contributing_rankings,
    pool_document_texts,
    pool_topic_statements,
    relevance_by_topic,
    task_judged_sequences,
    task_topics_stopping,
)

ORDERS = ("pool", "mtf", "bandit", "bandit-discounted", "depth", *learned.LEARNED_ORDERS)


def _topic_stream(order, docs, min_rank, rankings, relevant, log=None, learn=None):
    """Judge a topic's documents in ``order``: yields True/False (relevant) per judgment;
    ``log``, when given, receives each judged docid; ``learn`` holds the keyword arguments
    of :func:`judging.learned.learned_order` for a learned order."""
    known: dict[int, bool] = {}
    items = (learned.learned_order(order, rankings, len(docs), known, **learn)
             if order in learned.LEARNED_ORDERS else
             priority.order_items(order, n_items=len(docs), rankings=rankings,
                                  min_rank=min_rank, known=known))
    for item in items:
        rel = docs[item] in relevant
        known[item] = rel
        if log is not None:
            log.append(docs[item])
        yield rel


def _pool_streams(pool, jset, order: str, sizes: dict | None = None,
                  logs: dict | None = None, seed: int = 0) -> dict:
    """``{topic: judging stream}`` (:func:`_topic_stream`) of every topic of the pool.
    ``sizes``, when given, receives ``{topic: (pooled documents, relevant among them)}``;
    ``logs`` ``{topic: [judged docids in order]}`` as the streams are read."""
    from pooling.selectors import pool_documents

    docs: dict[str, list[str]] = defaultdict(list)
    ranks: dict[str, list[int]] = defaultdict(list)
    for d in pool_documents(pool):
        docs[d.topic_id].append(d.docid)
        ranks[d.topic_id].append(d.min_rank)
    if not docs:
        raise ValueError(f"pool {pool.label} has no documents")
    sources: dict[str, list[str]] = {}
    rankings = (pool_contributing_rankings(pool, sources)
                if order in priority.ADAPTIVE_ORDERS + learned.LEARNED_ORDERS else {})
    learn: dict[str, dict] = {t: {} for t in docs}
    if order in learned.LEARNED_ORDERS:
        shared = learned.PooledModel()
        texts = (pool_document_texts(pool, {d for ds in docs.values() for d in ds})
                 if order in learned.TEXT_ORDERS else {})
        statements = pool_topic_statements(pool) if order in learned.TEXT_ORDERS else {}
        for t in docs:
            learn[t] = {"sources": sources.get(t) or None, "pooled": shared, "seed": seed}
            if order in learned.TEXT_ORDERS:
                missing = [d for d in docs[t] if d not in texts]
                if missing:
                    raise ValueError(
                        f"the collection of pool {pool.label} has no text for {len(missing)} "
                        f"pooled document(s) of topic {t} (e.g. {missing[0]!r})")
                learn[t].update(texts=[texts[d] for d in docs[t]],
                                statement=statements.get(t, ""))
    relevant = relevance_by_topic(jset)
    if sizes is not None:
        for t in docs:
            rel = relevant.get(t, set())
            sizes[t] = (len(docs[t]), sum(1 for d in docs[t] if d in rel))
    if logs is not None:
        logs.update({t: [] for t in docs})
    return {t: _topic_stream(order, docs[t], np.asarray(ranks[t]), rankings.get(t, []),
                             relevant.get(t, set()), None if logs is None else logs[t],
                             learn[t])
            for t in sorted(docs, key=natural_key)}


#: shares of the pool's relevant documents ``judgments_for_recall`` reports
RECALL_SHARES = (0.8, 0.9, 0.95)


def judging_simulation(pool, jset, *, order: str, budget: int, per_topic: bool = False,
                       seed: int = 0, judged_log: list | None = None) -> dict:
    """``{"order", "budget", "per_topic", "seed", "topics", "judged", "relevant_found",
    "pool_size", "relevant_in_pool", "judgments_for_recall", "curve": [[judged,
    relevant_found], …]}``, one curve point per judgment.

    ``judgments_for_recall`` maps each share in :data:`RECALL_SHARES` (as ``"0.8"``…) to
    the smallest number of judgments at which that share of the pool's relevant documents
    was found within the budget, else None. With a shared budget that is a point of the
    curve; with ``per_topic`` it is the judgments of the smallest per-topic budget that
    finds the share (every topic judged up to that many documents).

    ``judged_log``, when given, receives ``(topic, docid, relevant)`` for every judgment
    in the order of the curve."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if budget < 1:
        raise ValueError("budget must be at least 1")
    sizes: dict[str, tuple[int, int]] = {}
    logs: dict[str, list[str]] = {}
    streams = _pool_streams(pool, jset, order, sizes, logs, seed)
    topics = sorted(streams, key=natural_key)
    judged = found = 0
    curve = []
    per: dict[str, list[int]] = {t: [] for t in topics}  # relevant found after each judgment

    def step(t) -> bool:
        nonlocal judged, found
        rel = next(streams[t], None)
        if rel is None:
            return False
        judged += 1
        found += int(rel)
        curve.append([judged, found])
        per[t].append((per[t][-1] if per[t] else 0) + int(rel))
        if judged_log is not None:
            judged_log.append((t, logs[t][-1], rel))
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
    relevant = sum(r for _, r in sizes.values())
    return {"order": order, "budget": budget, "per_topic": per_topic, "seed": seed,
            "topics": len(topics), "judged": judged, "relevant_found": found,
            "pool_size": sum(n for n, _ in sizes.values()), "relevant_in_pool": relevant,
            "judgments_for_recall": (_per_topic_for_recall(per, relevant) if per_topic
                                     else _shared_for_recall(curve, relevant)),
            "curve": curve}


def _shared_for_recall(curve: list[list[int]], relevant: int) -> dict:
    out = {}
    for share in RECALL_SHARES:
        out[f"{share:g}"] = next((j for j, f in curve if relevant and f >= share * relevant),
                                 None)
    return out


def _per_topic_for_recall(per: dict[str, list[int]], relevant: int) -> dict:
    """Judgments of the smallest per-topic budget b whose found documents, summed over the
    topics (each judged min(b, its length) documents), reach each share."""
    out = dict.fromkeys((f"{s:g}" for s in RECALL_SHARES))
    longest = max((len(f) for f in per.values()), default=0)
    for b in range(1, longest + 1):
        found = sum(f[min(b, len(f)) - 1] for f in per.values() if f)
        for share in RECALL_SHARES:
            key = f"{share:g}"
            if out[key] is None and relevant and found >= share * relevant:
                out[key] = sum(min(b, len(f)) for f in per.values())
        if all(v is not None for v in out.values()):
            break
    return out


# --- knowing when to stop ---------------------------------------------------------------------


def _stop_outcome(rule, seqs: dict[str, list[bool]], stops: dict[str, int | None],
                  judged: dict[str, int]) -> dict:
    """The figures of one budget mode: ``judged`` judgments per topic, ``stops`` where the
    rule fired (None: never)."""
    rows, early, stopped, with_rel, estimated, covered = [], 0, 0, 0, 0, 0
    for t, seq in seqs.items():
        n = judged[t]
        found, rel = sum(seq[:n]), sum(seq)
        fired = stops[t] is not None and stops[t] == n
        stopped += fired
        est = stopping.estimate(seq[:n], len(seq))
        if rel:
            with_rel += 1
            early += fired and found / rel < rule.target
            if est.recall_low is not None:
                estimated += 1
                covered += est.recall_low <= found / rel <= est.recall_high
        rows.append({"topic": t, "judged": n, "relevant_found": found,
                     "relevant_in_pool": rel, "stopped": fired,
                     "estimate": {k: getattr(est, k) for k in (
                         "remaining", "remaining_low", "remaining_high", "recall",
                         "recall_low", "recall_high")}})
    judged_all = sum(judged.values())
    pool_size = sum(len(s) for s in seqs.values())
    found_all = sum(r["relevant_found"] for r in rows)
    rel_all = sum(r["relevant_in_pool"] for r in rows)
    return {"judged": judged_all, "pool_size": pool_size,
            "pool_share": judged_all / pool_size if pool_size else None,
            "relevant_found": found_all, "relevant_in_pool": rel_all,
            "recall": found_all / rel_all if rel_all else None,
            "topics": len(seqs), "topics_with_relevant": with_rel,
            "stopped": stopped, "stopped_before_target": early,
            "estimated": estimated, "interval_covers": covered, "per_topic": rows}


def stop_simulation(pool, jset, *, order: str, budget: int, rule: str, every: int = 10
                    ) -> dict:
    """Where a stopping rule (:func:`judging.stopping.parse_rule`) stops judging the pool
    in ``order``, with a budget of ``budget`` judgments per topic (``"per_topic"``) and in
    all, one per topic in turn (``"shared"``), as :func:`judging_simulation` spends them.
    The rule is tried after every ``every`` judgments of a topic (a live task tries it
    after each). Per mode: the judgments and recall (of the relevant documents in the
    pool) where judging stopped, how many topics the rule stopped and how many of them
    short of the rule's target recall (``stopped_before_target``), and per topic with
    the estimate (:func:`judging.stopping.estimate`) a live task would show there;
    ``interval_covers`` counts the topics whose true recall lies in that interval, of
    the ``estimated`` ones (something relevant found)."""
    parsed = stopping.parse_rule(rule)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if budget < 1:
        raise ValueError("budget must be at least 1")
    seqs = {t: list(stream) for t, stream in _pool_streams(pool, jset, order).items()}
    stops = {t: stopping.first_stop(parsed, seq, len(seq), every=every)
             for t, seq in seqs.items()}
    caps = {t: stops[t] or len(seq) for t, seq in seqs.items()}
    per_topic = {t: min(caps[t], budget) for t in seqs}
    shared = dict.fromkeys(seqs, 0)
    live, spent = [t for t in seqs if caps[t]], 0
    while live and spent < budget:
        for t in list(live):
            if spent >= budget:
                break
            shared[t] += 1
            spent += 1
            if shared[t] >= caps[t]:
                live.remove(t)
    return {"rule": str(parsed), "target": parsed.target, "every": every,
            "shared": _stop_outcome(parsed, seqs, stops, shared),
            "per_topic": _stop_outcome(parsed, seqs, stops, per_topic)}


def task_recall_estimates(task, *, confidence: float = stopping.DEFAULT_CONFIDENCE) -> dict:
    """What the task page shows: per topic (topic id order) the judged items, the
    relevant found and :func:`judging.stopping.estimate` of the recall of the pool, with
    the topic's stop; and all topics together (:func:`judging.stopping.combine`)."""
    seqs = task_judged_sequences(task)
    topics = []
    for t, info in task_topics_stopping(task).items():
        seq = seqs.get(t, [])
        topics.append({"topic_id": t, **info,
                       "estimate": stopping.estimate(seq, max(info["size"], len(seq)),
                                                     confidence=confidence)})
    return {"rule": stopping.parse_rule(task.stop_rule) if task.stop_rule else None,
            "confidence": confidence, "topics": topics,
            "total": stopping.combine([t["estimate"] for t in topics])}
