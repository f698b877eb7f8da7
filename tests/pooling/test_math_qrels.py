"""common.trec's qrels and pooling.coverage: reading, writing, coverage, qrels statistics."""
from __future__ import annotations

import gzip
from collections import Counter, defaultdict

import pytest

from common.fileio import InputError
from common.trec import AdhocQrel, DiversityQrel, qrels_records, read_qrels, write_qrels
from pooling.coverage import coverage, qrels_stats


def read_adhoc_qrels(path):
    return qrels_records(path, "adhoc")


def read_diversity_qrels(path):
    return qrels_records(path, "diversity")


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
    with pytest.raises(InputError, match=r"bad\.qrels, line 3: expected 4 fields, got 3"):
        list(read_adhoc_qrels(bad))
    bad.write_text("1 0 d1 high\n")
    with pytest.raises(InputError,
                       match=r"bad\.qrels, line 1: relevance 'high' is not a whole number"):
        list(read_adhoc_qrels(bad))
    with pytest.raises(ValueError, match="whitespace"):
        write_qrels(tmp_path / "x", [AdhocQrel("1", "0", "a b", 1)])


# --- qrels statistics --------------------------------------------------------------------


def test_qrels_stats_web2011_diversity(shared_data):
    path = _web(shared_data) / "qrels.diversity.txt"
    got = qrels_stats(read_diversity_qrels(path))
    # independent computation with plain Python
    intents, judged, relevant = defaultdict(set), defaultdict(set), defaultdict(set)
    nonjunk = defaultdict(set)
    grades = Counter()
    topics = set()
    with open(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            t, sub, doc, rel = line.split()
            rel = int(rel)
            topics.add(t)
            grades[str(rel)] += 1
            judged[t].add(doc)  # junk (rel < 0) is judged too
            if rel >= 0:
                nonjunk[t].add(doc)
            if rel > 0:
                relevant[t].add(doc)
                intents[t].add(sub)
    n = len(topics)
    assert got["topics"] == n == 50
    assert got["intents_per_topic"] == pytest.approx(sum(len(intents[t]) for t in topics) / n)
    assert got["judged_per_topic"] == pytest.approx(sum(len(judged[t]) for t in topics) / n)
    assert got["judged_nonjunk_per_topic"] == pytest.approx(
        sum(len(nonjunk[t]) for t in topics) / n)
    assert got["judged_nonjunk_per_topic"] < got["judged_per_topic"]
    assert got["relevant_per_topic"] == pytest.approx(sum(len(relevant[t]) for t in topics) / n)
    assert got["grades"] == dict(grades)
    # pinned
    assert got["intents_per_topic"] == pytest.approx(3.28)
    assert got["judged_per_topic"] == pytest.approx(387.62)
    assert got["relevant_per_topic"] == pytest.approx(100.6)
    assert got["grades"] == {"-2": 3435, "0": 53055, "1": 5469, "2": 1828, "3": 1081}


def test_qrels_stats_hand_computed():
    recs = [
        DiversityQrel("1", "1", "a", 1),
        DiversityQrel("1", "2", "a", 0),
        DiversityQrel("1", "3", "b", -2),  # junk: judged, non-relevant; intent 3 none relevant
        DiversityQrel("1", "2", "c", 2),
        DiversityQrel("2", "1", "a", 0),
    ]
    got = qrels_stats(recs)
    assert got == {
        "topics": 2,
        "intents_per_topic": (2 + 0) / 2,
        "judged_per_topic": (3 + 1) / 2,
        "judged_nonjunk_per_topic": (2 + 1) / 2,
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
        "topic": "1", "has_qrels": True, "size": 4, "relevant": 1, "nonrelevant": 2, "unjudged": 1,
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


def test_coverage_means_count_only_topics_with_qrels():
    qrels = [AdhocQrel("1", "0", "a", 1), AdhocQrel("1", "0", "b", 0)]
    rows = coverage({"1": {"a", "b", "c", "d"}, "2": {"x", "y"}, "3": {"z"}}, qrels)
    assert [r["has_qrels"] for r in rows[:-1]] == [True, False, False]
    assert rows[1]["pct_unjudged"] == 100.0  # shown, but not averaged
    mean = rows[-1]
    assert (mean["topics"], mean["topics_without_qrels"]) == (1, 2)
    assert (mean["size"], mean["pct_relevant"], mean["pct_unjudged"]) == (4, 25.0, 50.0)


def test_one_definition_of_judged_in_coverage_and_stats():
    """Junk is judged and non-relevant in both."""
    qrels = [DiversityQrel("1", "1", "j", -2), DiversityQrel("1", "2", "j", -2),
             DiversityQrel("1", "1", "r", 1), DiversityQrel("1", "2", "r", -2)]
    row = coverage({"1": {"j", "r"}}, qrels)[0]
    assert (row["relevant"], row["nonrelevant"], row["unjudged"]) == (1, 1, 0)
    stats = qrels_stats(qrels)
    assert stats["judged_per_topic"] == row["relevant"] + row["nonrelevant"] == 2
    assert stats["relevant_per_topic"] == row["relevant"] == 1


# --- whole-file checks ----------------------------------------------------------------------


def _qrels(tmp_path, text, name="q.txt"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_cacm_smart_qrels_are_recognised_as_the_wrong_format(shared_data):
    path = shared_data / "small-corpora" / "cacm" / "qrels.text"
    for fmt in ("adhoc", "diversity"):
        with pytest.raises(InputError, match=r"qrels\.text, line 1: every line has "
                           r"document id '0' and grade 0 .* looks like SMART qrels"):
            read_qrels(path, fmt)


def test_adhoc_qrels_offered_as_diversity_are_refused(shared_data):
    path = shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"
    with pytest.raises(InputError, match="--format adhoc"):
        read_qrels(path, "diversity")
    assert len(read_qrels(path, "adhoc")) == 19381


def test_second_grade_names_both_lines(tmp_path):
    p = _qrels(tmp_path, "1 0 a 1\n1 0 b 0\n# note\n1 0 a 2\n")
    with pytest.raises(InputError, match=r"q\.txt, line 4: second grade \(2\) for "
                       r"topic '1', document 'a', already graded 1 on line 1"):
        read_qrels(p, "adhoc")
    # ad hoc qrels ignore the iteration column: a different one is still the same judgment
    p = _qrels(tmp_path, "1 1 a 1\n1 2 a 0\n")
    with pytest.raises(InputError, match=r"line 2: .*already graded 1 on line 1; .*"
                       "--format diversity"):
        read_qrels(p, "adhoc")
    # diversity: per subtopic
    assert len(read_qrels(p, "diversity")) == 2
    p = _qrels(tmp_path, "1 1 a 1\n1 2 a 0\n1 1 a 1\n")
    with pytest.raises(InputError, match=r"line 3: second grade \(1\) for topic '1', "
                       r"subtopic '1', document 'a', already graded 1 on line 1"):
        read_qrels(p, "diversity")


def test_strip_zeros_maps_topic_ids(shared_data):
    rows = read_qrels(shared_data / "small-corpora" / "cacm" / "cacm.qrels", "adhoc",
                      id_map="strip-zeros")
    assert rows[0] == (1, AdhocQrel("1", "0", "1410", 1))
    assert {r.topic_id for _, r in rows} >= {"1", "10", "64"}
    assert not any(r.topic_id.startswith("0") for _, r in rows)


@pytest.mark.parametrize("line, fragment", [
    ("1 0 d\u200b1 1", r"document id 'd\u200b1' contains an invisible format character"),
    ("1\u202e 0 d1 1", r"topic id '1\u202e' contains an invisible format character"),
    ("1 0 d\x07 1", "contains a control character"),
    ("1 0 d1 99999", "relevance '99999' is too large"),
    ("1 0 d1 " + "9" * 5000, "is not a whole number"),
    ("1 0 " + "d" * 300 + " 1", "is 300 characters (at most 255)"),
])
def test_bad_values_name_the_line(tmp_path, line, fragment):
    p = _qrels(tmp_path, "1 0 ok 1\n" + line + "\n")
    with pytest.raises(InputError) as info:
        read_qrels(p, "adhoc")
    assert info.value.line == 2 and fragment in str(info.value)
    assert len(str(info.value)) < len(str(p)) + 300  # quotes at most ~200 characters


def test_ids_are_nfc(tmp_path):
    p = _qrels(tmp_path, "caf\u0065\u0301 0 d1 1\n")
    assert read_qrels(p, "adhoc")[0][1].topic_id == "caf\u00e9"


def test_encoding_truncation_and_non_gzip(tmp_path):
    p = tmp_path / "l1.txt"
    p.write_bytes("t\u00e9 0 d1 1\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"l1\.txt, line 1: not valid utf-8 .*--encoding"):
        read_qrels(p, "adhoc")
    assert read_qrels(p, "adhoc", encoding="latin-1")[0][1].topic_id == "t\u00e9"
    whole = gzip.compress(b"".join(b"1 0 d%d 1\n" % i for i in range(20000)))
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match=r"cut\.txt\.gz, line \d+: truncated or corrupt"):
        read_qrels(cut, "adhoc")
    fake = tmp_path / "fake.txt.gz"
    fake.write_text("1 0 d1 1\n")
    with pytest.raises(InputError, match="not gzip data"):
        read_qrels(fake, "adhoc")


def test_failed_write_leaves_no_file(tmp_path):
    out = tmp_path / "out.qrels"
    with pytest.raises(ValueError, match="whitespace"):
        write_qrels(out, [AdhocQrel("1", "0", "d1", 1), AdhocQrel("1", "0", "a b", 1)])
    assert list(tmp_path.iterdir()) == []
    write_qrels(out, [AdhocQrel("1", "0", "d1", 1)])
    assert out.read_text() == "1 0 d1 1\n"


def test_smart_and_cranqrel_files_of_the_small_corpora(shared_data, tmp_path):
    """CACM's qrels.text is CACM's cacm.qrels in SMART form; CISI's .REL reads the same
    way; Cranfield's cranqrel is graded 5 - code, -1 (no interest) 0."""
    cacm = shared_data / "small-corpora" / "cacm"
    smart = read_qrels(cacm / "qrels.text", "smart", id_map="strip-zeros")
    trec = read_qrels(cacm / "cacm.qrels", "adhoc", id_map="strip-zeros")
    assert ({(r.topic_id, r.docid, r.rel) for _, r in smart}
            == {(r.topic_id, r.docid, r.rel) for _, r in trec})
    cisi = read_qrels(shared_data / "small-corpora" / "cisi" / "CISI.REL", "smart")
    assert cisi[0][1] == AdhocQrel("1", "0", "28", 1) and len(cisi) > 3000
    cran = shared_data / "small-corpora" / "cranfield" / "cranqrel"
    got = {(r.topic_id, r.docid): r.rel for _, r in read_qrels(cran, "cranqrel")}
    raw = [line.split() for line in cran.read_text().splitlines() if line.strip()]
    assert len(got) == len(raw) == 1837
    for q, d, code in raw:
        assert got[(q, d)] == (5 - int(code) if 1 <= int(code) <= 4 else 0)
    bad = tmp_path / "bad.rel"
    bad.write_text("1 184 2\n1 29 x\n")
    with pytest.raises(InputError, match=r"bad.rel, line 2: .*relevance code"):
        read_qrels(bad, "cranqrel")
    with pytest.raises(InputError, match=r"bad.rel, line 1: expected 4 fields, got 3.*"
                                               r"--format cranqrel"):
        read_qrels(bad, "adhoc")
