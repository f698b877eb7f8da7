"""pooling.qrelsio and pooling.coverage: reading, writing, coverage, qrels statistics."""
from __future__ import annotations

import gzip
from collections import Counter, defaultdict

import pytest

from pooling.coverage import coverage, qrels_stats
from pooling.qrelsio import (
    AdhocQrel,
    DiversityQrel,
    QrelsFormatError,
    read_adhoc_qrels,
    read_diversity_qrels,
    read_run,
    write_qrels,
)


def _web(shared_data):
    return shared_data / "trec-web-diversity" / "2011"


# --- reading and writing -----------------------------------------------------------------


def test_read_diversity_typed_records(shared_data):
    recs = list(read_diversity_qrels(_web(shared_data) / "qrels.diversity.txt"))
    assert recs[0] == DiversityQrel("101", "1", "clueweb09-en0007-71-07471", 0)
    assert all(isinstance(r.topic_id, str) and isinstance(r.rel, int) for r in recs)
    with open(_web(shared_data) / "qrels.diversity.txt") as fh:
        assert len(recs) == sum(1 for line in fh if line.strip())


def test_read_adhoc_keeps_string_ids(shared_data):
    recs = list(read_adhoc_qrels(shared_data / "small-corpora" / "cacm" / "cacm.qrels"))
    assert recs[0] == AdhocQrel("01", "0", "1410", 1)  # "01" stays "01"


def test_comments_and_blank_lines_skipped(shared_data):
    path = shared_data / "runs" / "trec_eval-testdata"
    with_comments = list(read_adhoc_qrels(path / "qrels.test.with-comments"))
    assert with_comments[0] == AdhocQrel("301", "0", "CR93E-10279", 0)
    assert len(with_comments) >= 3000


def test_roundtrip_gz(tmp_path, shared_data):
    recs = list(read_diversity_qrels(_web(shared_data) / "qrels.diversity.txt"))[:500]
    out = tmp_path / "q.txt.gz"
    assert write_qrels(out, recs) == 500
    with gzip.open(out, "rt") as fh:
        assert fh.readline() == "101 1 clueweb09-en0007-71-07471 0\n"
    assert list(read_diversity_qrels(out)) == recs
    plain = tmp_path / "a.txt"
    write_qrels(plain, [AdhocQrel("UQV100.001", "0", "d1", 2)])
    assert plain.read_text() == "UQV100.001 0 d1 2\n"


def test_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.qrels"
    bad.write_text("1 0 d1 1\n\n1 0 d2\n")
    with pytest.raises(QrelsFormatError, match=r"bad\.qrels:3: expected 4 fields, got 3"):
        list(read_adhoc_qrels(bad))
    bad.write_text("1 0 d1 high\n")
    with pytest.raises(QrelsFormatError, match=r"bad\.qrels:1: relevance must be an integer"):
        list(read_adhoc_qrels(bad))
    with pytest.raises(ValueError, match="whitespace"):
        write_qrels(tmp_path / "x", [AdhocQrel("1", "0", "a b", 1)])


def test_read_run(shared_data):
    recs = list(read_run(shared_data / "runs" / "trec_eval-testdata" / "results.test"))
    assert len(recs) == 1500
    assert recs[0].topic_id == "301" and recs[0].docid == "FR940202-2-00150"
    assert recs[0].rank == 104 and recs[0].score == pytest.approx(2.129133)


# --- qrels statistics --------------------------------------------------------------------


def test_qrels_stats_web2011_diversity(shared_data):
    path = _web(shared_data) / "qrels.diversity.txt"
    got = qrels_stats(read_diversity_qrels(path))
    # independent computation with plain Python
    intents, judged, relevant, grades = defaultdict(set), defaultdict(set), defaultdict(set), Counter()
    topics = set()
    with open(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            t, sub, doc, rel = line.split()
            rel = int(rel)
            topics.add(t)
            grades[str(rel)] += 1
            if rel >= 0:
                judged[t].add(doc)
            if rel > 0:
                relevant[t].add(doc)
                intents[t].add(sub)
    n = len(topics)
    assert got["topics"] == n == 50
    assert got["intents_per_topic"] == pytest.approx(sum(len(intents[t]) for t in topics) / n)
    assert got["judged_per_topic"] == pytest.approx(sum(len(judged[t]) for t in topics) / n)
    assert got["relevant_per_topic"] == pytest.approx(sum(len(relevant[t]) for t in topics) / n)
    assert got["grades"] == dict(grades)
    # pinned
    assert got["intents_per_topic"] == pytest.approx(3.28)
    assert got["judged_per_topic"] == pytest.approx(367.24)
    assert got["relevant_per_topic"] == pytest.approx(100.6)
    assert got["grades"] == {"-2": 3435, "0": 53055, "1": 5469, "2": 1828, "3": 1081}


def test_qrels_stats_hand_computed():
    recs = [
        DiversityQrel("1", "1", "a", 1),
        DiversityQrel("1", "2", "a", 0),
        DiversityQrel("1", "3", "b", -2),  # junk: not judged, intent 3 has nothing relevant
        DiversityQrel("1", "2", "c", 2),
        DiversityQrel("2", "1", "a", 0),
    ]
    got = qrels_stats(recs)
    assert got == {
        "topics": 2,
        "intents_per_topic": (2 + 0) / 2,
        "judged_per_topic": (2 + 1) / 2,
        "relevant_per_topic": (2 + 0) / 2,
        "grades": {"-2": 1, "0": 2, "1": 1, "2": 1},
    }


# --- coverage ----------------------------------------------------------------------------


def test_coverage_hand_computed():
    qrels = [
        AdhocQrel("1", "0", "a", 1),
        AdhocQrel("1", "0", "b", 0),
        AdhocQrel("1", "0", "c", -2),  # junk is judged, not relevant
        AdhocQrel("2", "0", "z", 1),
    ]
    rows = coverage({"1": {"a", "b", "c", "d"}, "2": ["y"]}, qrels)
    assert rows[0] == {
        "topic": "1", "size": 4, "relevant": 1, "nonrelevant": 2, "unjudged": 1,
        "pct_relevant": 25.0, "pct_nonrelevant": 50.0, "pct_unjudged": 25.0,
    }
    assert rows[1]["unjudged"] == 1 and rows[1]["pct_unjudged"] == 100.0
    assert rows[2]["topic"] == "mean"
    assert rows[2]["size"] == 2.5
    assert rows[2]["pct_unjudged"] == pytest.approx(62.5)


def test_coverage_diversity_collapses_intents(shared_data):
    recs = list(read_diversity_qrels(_web(shared_data) / "qrels.diversity.txt"))
    judged101 = {r.docid for r in recs if r.topic_id == "101"}
    rel101 = {r.docid for r in recs if r.topic_id == "101" and r.rel > 0}
    pool = {"101": sorted(judged101)[:200] + ["not-judged-1", "not-judged-2"]}
    row = coverage(pool, recs)[0]
    assert row["size"] == 202 and row["unjudged"] == 2
    assert row["relevant"] == len(set(sorted(judged101)[:200]) & rel101)
    assert row["relevant"] + row["nonrelevant"] + row["unjudged"] == row["size"]
