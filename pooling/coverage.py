"""Pool coverage against existing judgments, and summary statistics of qrels.

Plain Python; nothing here imports Django.

What counts as judged and relevant (one definition, used by :func:`coverage` and
:func:`qrels_stats` alike, with trec_eval's reading of grades): a document is **judged**
for a topic when it has any judgment for that topic -- junk/spam (``rel < 0``) included,
since an assessor looked at it; it is **relevant** when any of its judgments (for any
intent) has ``rel > 0``; a judged document that is not relevant is **non-relevant**, so
junk counts as judged and non-relevant.

Coverage of topic ``t`` with pool ``P_t`` and judgments ``Q_t``::

    size        = |P_t|
    relevant    = |{d in P_t : d relevant}|
    nonrelevant = |{d in P_t : d judged, not relevant}|
    unjudged    = |{d in P_t : d not judged}|
    pct_x = 100 * x / size            (0 when size = 0)

Every pool topic gets a row, with ``has_qrels`` saying whether the qrels judge that topic
at all. The mean row averages every column over the topics **that have qrels** (macro
average, as in a "pool size, % relevant, % non-relevant, % unjudged" table): a topic the
qrels never judged would count its whole pool as unjudged and drag the means down. The
mean row says how many topics it averages (``topics``) and how many were left out
(``topics_without_qrels``).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Mapping

from common.naturalsort import natural_key

__all__ = ["coverage", "judged_relevant", "judgment_table", "qrels_stats"]

COLUMNS = ("size", "relevant", "nonrelevant", "unjudged", "pct_relevant", "pct_nonrelevant",
           "pct_unjudged")


def judged_relevant(records: Iterable) -> tuple[dict[str, set], dict[str, set]]:
    """``(judged, relevant)``: per topic, the judged and the relevant docids (see the module
    docstring)."""
    judged: dict[str, set] = defaultdict(set)
    relevant: dict[str, set] = defaultdict(set)
    for r in records:
        judged[r.topic_id].add(r.docid)
        if r.rel > 0:
            relevant[r.topic_id].add(r.docid)
    return judged, relevant


def coverage(pool_docids_by_topic: Mapping[str, Iterable[str]], qrels: Iterable) -> list[dict]:
    """Per-topic coverage rows (topics in natural id order) followed by a mean row.

    ``qrels`` holds records with ``topic_id``, ``docid`` and ``rel`` (ad hoc or
    diversity records from :mod:`common.trec`). The mean row has ``topic="mean"``
    and averages over the topics with qrels only (see the module docstring).
    """
    judged, relevant = judged_relevant(qrels)
    rows = []
    for t in sorted(pool_docids_by_topic, key=natural_key):
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
                "has_qrels": t in judged,
                "size": size,
                "relevant": rel,
                "nonrelevant": non,
                "unjudged": unj,
                "pct_relevant": pct(rel),
                "pct_nonrelevant": pct(non),
                "pct_unjudged": pct(unj),
            }
        )
    counted = [r for r in rows if r["has_qrels"]]
    mean: dict = {"topic": "mean"}
    for k in COLUMNS:
        mean[k] = sum(r[k] for r in counted) / len(counted) if counted else 0.0
    mean["topics"] = len(counted)
    mean["topics_without_qrels"] = len(rows) - len(counted)
    rows.append(mean)
    return rows


def judgment_table(pools: Mapping[str, Mapping[str, Iterable[str]]], qrels: Iterable,
                   depth: int) -> list[dict]:
    """The seed paper's Tables 1–2: for each source (``pools`` maps a source name, in the
    order the rows should come, to that source's pool: docids per topic), one row
    ``{source, depth, size, relevant, irrelevant, unjudged}``::

        size       = mean over T of |P_t|
        relevant   = mean over T' of |{d in P_t : d relevant}|            / |P_t|
        irrelevant = mean over T' of |{d in P_t : d judged, not relevant}| / |P_t|
        unjudged   = mean over T' of |{d in P_t : d not judged}|           / |P_t|

    where T is every topic of the source's pool and T' those whose pool is not empty (a
    fraction of nothing is undefined), so the three fractions of a row sum to 1. Judged,
    relevant and junk follow the module docstring (junk is judged and irrelevant). A topic
    the qrels never judge is counted, its whole pool unjudged: the table says how much of
    each pool the judgments cover. A source with no topics gives no row.
    """
    judged, relevant = judged_relevant(qrels)
    rows = []
    for source, by_topic in pools.items():
        sizes, fractions = [], []
        for t, docids in by_topic.items():
            docs = {str(d) for d in docids}
            sizes.append(len(docs))
            if not docs:
                continue
            rel = len(docs & relevant.get(t, set()))
            jud = len(docs & judged.get(t, set()))
            fractions.append((rel / len(docs), (jud - rel) / len(docs),
                              (len(docs) - jud) / len(docs)))
        if not sizes:
            continue
        mean = [sum(f[k] for f in fractions) / len(fractions) if fractions else 0.0
                for k in range(3)]
        rows.append({"source": source, "depth": depth, "size": sum(sizes) / len(sizes),
                     "relevant": mean[0], "irrelevant": mean[1], "unjudged": mean[2]})
    return rows


def qrels_stats(records: Iterable) -> dict:
    """Summary of a qrels file.

    - ``topics``: number of distinct topics;
    - ``intents_per_topic``: mean over topics of the number of intents
      (subtopics; ad hoc records count their topic as one intent) with at least
      one judgment ``rel > 0``;
    - ``judged_per_topic``: mean over topics of the distinct judged documents (any
      judgment, junk included: the module docstring's definition);
    - ``judged_nonjunk_per_topic``: the same without junk: documents with at least one
      judgment of grade 0 or more (TREC's junk/spam grade is negative), the figure
      published tables give;
    - ``relevant_per_topic``: mean over topics of the distinct documents with
      ``rel > 0`` for some intent;
    - ``grades``: count of every grade over all judgments, keys as strings.
    """
    records = list(records)
    judged, relevant = judged_relevant(records)
    intents: dict[str, set] = defaultdict(set)
    nonjunk: dict[str, set] = defaultdict(set)
    grades: Counter = Counter()
    for r in records:
        grades[str(int(r.rel))] += 1
        if r.rel >= 0:
            nonjunk[r.topic_id].add(r.docid)
        if r.rel > 0:
            intents[r.topic_id].add(getattr(r, "subtopic", "0"))
    topics = set(judged)
    n = len(topics)

    def mean(d: dict) -> float:
        return sum(len(d.get(t, ())) for t in topics) / n if n else 0.0

    return {
        "topics": n,
        "intents_per_topic": mean(intents),
        "judged_per_topic": mean(judged),
        "judged_nonjunk_per_topic": mean(nonjunk),
        "relevant_per_topic": mean(relevant),
        "grades": dict(sorted(grades.items(), key=lambda kv: int(kv[0]))),
    }
