"""Tables 1–2 of the seed paper from pools and qrels: hand-computed values."""
from __future__ import annotations

import pytest

from pooling.coverage import judgment_table
from common.trec import AdhocQrel

QRELS = [
    AdhocQrel("1", "0", "a", 2),
    AdhocQrel("1", "0", "b", 0),
    AdhocQrel("1", "0", "c", -2),  # junk: judged, irrelevant
    AdhocQrel("1", "0", "z", 1),  # relevant, in no pool
    AdhocQrel("2", "0", "a", 0),
    AdhocQrel("2", "0", "d", 1),
]


def test_fractions_are_per_topic_then_averaged():
    pools = {
        "systems": {"1": ["a", "b"], "2": ["a", "d", "e", "f"]},
        "users": {"1": ["a", "c", "x", "y", "w"], "2": ["e"]},
    }
    rows = judgment_table(pools, QRELS, 10)
    assert [r["source"] for r in rows] == ["systems", "users"]
    s, u = rows
    # systems: topic 1 (1/2 rel, 1/2 irr, 0 unj), topic 2 (1/4, 1/4, 2/4)
    assert s == {"source": "systems", "depth": 10, "size": 3.0,
                 "relevant": pytest.approx(0.375), "irrelevant": pytest.approx(0.375),
                 "unjudged": pytest.approx(0.25)}
    # users: topic 1 (1/5 rel, 1/5 irr [junk], 3/5 unj), topic 2 (0, 0, 1)
    assert (u["size"], u["relevant"], u["irrelevant"], u["unjudged"]) == pytest.approx(
        (3.0, 0.1, 0.1, 0.8))
    # not the pooled ratio: users hold 1 relevant of 6 documents, 1/6 != 0.1
    assert u["relevant"] != pytest.approx(1 / 6)


def test_topics_without_qrels_count_as_unjudged_and_empty_pools_as_size_only():
    pools = {"combined": {"1": ["a"], "3": ["q", "r"], "4": []}}
    (row,) = judgment_table(pools, QRELS, 5)
    assert row["size"] == pytest.approx(1.0)  # (1 + 2 + 0) / 3
    # topic 1: all relevant; topic 3 (no qrels): all unjudged; topic 4: no fractions
    assert (row["relevant"], row["irrelevant"], row["unjudged"]) == pytest.approx((0.5, 0.0, 0.5))


def test_sources_without_topics_give_no_row_and_duplicates_count_once():
    rows = judgment_table({"systems": {}, "users": {"1": ["a", "a", "b"]}}, QRELS, 1)
    assert [r["source"] for r in rows] == ["users"]
    assert (rows[0]["size"], rows[0]["relevant"]) == (2.0, 0.5)
