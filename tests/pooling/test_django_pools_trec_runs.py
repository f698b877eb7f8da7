"""Pools over real system runs (trec_eval's test data) imported with the retrieval app,
against expectations computed here from the run files in plain Python."""
from __future__ import annotations

from collections import defaultdict

import pytest

from pooling import selectors, services
from retrieval.services import system_run_import
from topics.models import Topic, TopicSet


def read_ranked(path) -> dict[str, list[tuple[str, float]]]:
    """{topic: [(docid, score)]} ordered by (-score, docid), the house tie-break."""
    out = defaultdict(list)
    for line in open(path):
        if line.strip():
            t, _, d, _, s, _ = line.split()
            out[t].append((d, float(s)))
    return {t: sorted(v, key=lambda ds: (-ds[1], ds[0])) for t, v in out.items()}


@pytest.fixture
def trec_runs(db, shared_data, tmp_path):
    ts = TopicSet.objects.create(name="trec-eval")
    for t in ("301", "302", "303"):
        Topic.objects.create(topic_set=ts, topic_id=t)
    standard = shared_data / "runs" / "trec_eval-testdata" / "results.test"
    # a second run: the same documents with the scores negated (the ranking reversed), so
    # that documents of the two runs meet at equal ranks with exactly equal RBP weights
    reversed_run = tmp_path / "reversed.test"
    with open(reversed_run, "w") as f:
        for line in open(standard):
            t, q0, d, r, s, _ = line.split()
            f.write(f"{t} {q0} {d} {r} {-float(s)!r} REVERSED\n")
    ranked = {}
    for path in (standard, reversed_run):
        run = system_run_import(path, topic_set_name="trec-eval")
        ranked[run.tag] = read_ranked(path)
    assert set(ranked) == {"STANDARD", "REVERSED"}
    return ranked


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [1, 10, 100, 1000])
def test_depth_pool_of_trec_eval_runs(trec_runs, depth):
    pool = services.pool_build(services.pool_create(
        topic_set_name="trec-eval", sources="systems", depth=depth).id)
    want: dict[str, set] = defaultdict(set)
    for by_topic in trec_runs.values():
        for t, docs in by_topic.items():
            want[t].update(d for d, _ in docs[:depth])
    got = selectors.pool_docids_by_topic(pool)
    assert {t: set(v) for t, v in got.items()} == dict(want)


@pytest.mark.django_db
def test_rbp_pool_of_trec_eval_runs_is_in_weight_then_docid_order(trec_runs):
    p, depth = 0.8, 50
    pool = services.pool_build(services.pool_create(
        topic_set_name="trec-eval", sources="systems", depth=depth, strategy="rbp", p=p).id)
    want: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for by_topic in trec_runs.values():
        for t, docs in by_topic.items():
            for r, (d, _) in enumerate(docs[:depth], start=1):
                want[t][d] += (1 - p) * p ** (r - 1)
    docs = list(selectors.pool_documents(pool))
    ties = 0
    for t in want:
        mine = [d for d in docs if d.topic_id == t]
        assert {d.docid: d.weight for d in mine} == pytest.approx(dict(want[t]), rel=1e-11)
        keys = [(-d.weight, d.docid) for d in mine]
        assert keys == sorted(keys)  # equal weights fall back to docid string order
        ties += sum(1 for a, b in zip(keys, keys[1:]) if a[0] == b[0])
    assert ties > 100  # the two runs put different documents at the same ranks
