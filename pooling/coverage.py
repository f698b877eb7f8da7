"""Pool coverage against existing judgments, and summary statistics of qrels.

Plain Python; nothing here imports Django.

Coverage of topic ``t`` with pool ``P_t`` and judgments ``Q_t`` (a document is
relevant if any of its judgments has ``rel > 0``; judged if it has any judgment,
junk included)::

    size = |P_t|
    relevant    = |{d in P_t : d relevant}|
    nonrelevant = |{d in P_t : d judged, not relevant}|
    unjudged    = |{d in P_t : d not judged}|
    pct_x = 100 * x / size            (0 when size = 0)

The mean row averages every column over the topics of the pool (macro average,
as in a "pool size, % relevant, % non-relevant, % unjudged" table).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Mapping

__all__ = ["coverage", "qrels_stats"]


def _key_sets(records: Iterable) -> tuple[dict, dict]:
    judged: dict[str, set] = defaultdict(set)
    relevant: dict[str, set] = defaultdict(set)
    for r in records:
        judged[r.topic_id].add(r.docid)
        if r.rel > 0:
            relevant[r.topic_id].add(r.docid)
    return judged, relevant


def coverage(pool_docids_by_topic: Mapping[str, Iterable[str]], qrels: Iterable) -> list[dict]:
    """Per-topic coverage rows (topics in ascending id order) followed by a mean row.

    ``qrels`` holds records with ``topic_id``, ``docid`` and ``rel`` (ad hoc or
    diversity records from :mod:`pooling.qrelsio`).  The mean row has
    ``topic="mean"``.
    """
    judged, relevant = _key_sets(qrels)
    rows = []
    for t in sorted(pool_docids_by_topic):
        docs = {str(d) for d in pool_docids_by_topic[t]}
        size = len(docs)
        rel = len(docs & relevant.get(t, set()))
        jud = len(docs & judged.get(t, set()))
        non = jud - rel
        unj = size - jud
        pct = (lambda x: 100.0 * x / size) if size else (lambda x: 0.0)
        rows.append(
            {
                "topic": t,
                "size": size,
                "relevant": rel,
                "nonrelevant": non,
                "unjudged": unj,
                "pct_relevant": pct(rel),
                "pct_nonrelevant": pct(non),
                "pct_unjudged": pct(unj),
            }
        )
    keys = ["size", "relevant", "nonrelevant", "unjudged", "pct_relevant", "pct_nonrelevant", "pct_unjudged"]
    mean = {"topic": "mean"}
    for k in keys:
        mean[k] = sum(r[k] for r in rows) / len(rows) if rows else 0.0
    rows.append(mean)
    return rows


def qrels_stats(records: Iterable) -> dict:
    """Summary of a qrels file.

    - ``topics``: number of distinct topics;
    - ``intents_per_topic``: mean over topics of the number of intents
      (subtopics; ad hoc records count their topic as one intent) with at least
      one judgment ``rel > 0``;
    - ``judged_per_topic``: mean over topics of the distinct documents with at
      least one non-junk judgment (``rel >= 0``);
    - ``relevant_per_topic``: mean over topics of the distinct documents with
      ``rel > 0`` for some intent;
    - ``grades``: count of every grade over all judgments, keys as strings.
    """
    intents: dict[str, set] = defaultdict(set)
    judged: dict[str, set] = defaultdict(set)
    relevant: dict[str, set] = defaultdict(set)
    topics: set[str] = set()
    grades: Counter = Counter()
    for r in records:
        topics.add(r.topic_id)
        grades[str(int(r.rel))] += 1
        if r.rel >= 0:
            judged[r.topic_id].add(r.docid)
        if r.rel > 0:
            relevant[r.topic_id].add(r.docid)
            intents[r.topic_id].add(getattr(r, "subtopic", "0"))
    n = len(topics)

    def mean(d: dict) -> float:
        return sum(len(d.get(t, ())) for t in topics) / n if n else 0.0

    return {
        "topics": n,
        "intents_per_topic": mean(intents),
        "judged_per_topic": mean(judged),
        "relevant_per_topic": mean(relevant),
        "grades": dict(sorted(grades.items(), key=lambda kv: int(kv[0]))),
    }
