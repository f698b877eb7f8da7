"""build_pool, export_pool and pool_analysis from the command line."""
from __future__ import annotations

import csv
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pooling.models import Pool
from retrieval.models import Run
from tests.pooling.test_django_pools import (  # noqa: F401  (fixture)
    expected_depth_union,
    expected_rbp,
    rankings_db,
)


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize("sources", ["users", "systems", "combined"])
def test_build_pool_json(rankings_db, sources):
    got = json.loads(run("build_pool", "--topic-set", "ts", "--sources", sources,
                         "--depth", "2", "--json"))
    want = {t: len(d) for t, d in expected_depth_union(sources, 2).items()}
    pool = Pool.objects.get()
    assert got == {"pool": pool.id, "topics": len(want),
                   "mean_size": sum(want.values()) / len(want), "sizes": want,
                   "runs": expected_runs(sources)}
    assert pool.status == "done" and pool.sources == sources


def expected_runs(sources: str) -> list[dict]:
    """The runs of rankings_db a pool of ``sources`` is built from (never the title run)."""
    users = [{"kind": "retrieval", "tag": "", "model": "bm25", "source": "variants"}]
    systems = [{"kind": "system", "tag": tag, "model": None, "source": "system"}
               for tag in ("sysA", "sysB")]
    want = {"users": users, "systems": systems, "combined": users + systems}[sources]
    ids = {(r.kind, r.tag, r.source): r.id for r in Run.objects.all()}
    return [{"id": ids[(r["kind"], r["tag"], r["source"])], **r} for r in want]


@pytest.mark.django_db
def test_build_pool_json_names_a_named_pool_and_passes_every_option(rankings_db):
    got = json.loads(run("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "3",
                         "--strategy", "rbp", "--p", "0.5", "--budget", "3",
                         "--budget-scope", "global", "--model", "bm25", "--name", "u-rbp",
                         "--json"))
    # global budget 3: the three heaviest documents over both topics, ties by (topic, docid)
    weights = [(-w, t, d) for t, docs in expected_rbp("users", 3, 0.5).items() for d, w in docs]
    chosen = sorted(weights)[:3]
    sizes = {t: sum(1 for _, tt, _ in chosen if tt == t) for t in ("1", "2")}
    assert got == {"pool": "u-rbp", "topics": 2, "mean_size": 1.5, "sizes": sizes,
                   "runs": expected_runs("users")}
    pool = Pool.objects.get(name="u-rbp")
    assert (pool.strategy, pool.p, pool.budget, pool.budget_scope, pool.model.name) == (
        "rbp", 0.5, 3, "global", "bm25")


@pytest.mark.django_db
def test_build_pool_errors_are_command_errors(rankings_db):
    with pytest.raises(CommandError, match="no topic set"):
        run("build_pool", "--topic-set", "nope", "--sources", "users", "--depth", "2")
    with pytest.raises(CommandError, match="depth"):
        run("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "0")
    with pytest.raises(CommandError, match="no finished user-variant rankings of model 'qld'"):
        run("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "2",
            "--model", "qld")
    pool = Pool.objects.get()
    assert pool.status == "failed"
    # a sentence to act on, not an exception class
    assert pool.error.startswith("Topic set 'ts' has no finished user-variant rankings")
    assert "run_retrieval --source variants" in pool.error and "ValueError" not in pool.error
    with pytest.raises(CommandError, match="give a depth"):
        run("build_pool", "--topic-set", "ts", "--sources", "users")


@pytest.mark.django_db
def test_export_pool_formats(rankings_db, tmp_path):
    run("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
        "--strategy", "rbp", "--p", "0.5", "--name", "c2")
    expected = expected_rbp("combined", 2, 0.5)
    order = [(t, d) for t in sorted(expected) for d, _ in expected[t]]

    txt = tmp_path / "pool.txt"
    run("export_pool", "c2", "--out", str(txt))
    lines = [ln.split() for ln in txt.read_text().splitlines()]
    assert [(f[0], f[1]) for f in lines] == order
    assert all(len(f) == 6 for f in lines)
    by = {(f[0], f[1]): f for f in lines}
    # doc-c of topic 1: 2 people at rank 1 (v1), sysB at rank 1, sysA at rank 2
    assert float(by[("1", "doc-c")][2]) == pytest.approx(2 * 0.5 + 0.5 + 0.25)
    assert by[("1", "doc-c")][3:] == ["1", "2", "2"]

    csv_path = tmp_path / "pool.csv"
    run("export_pool", "c2", "--out", str(csv_path), "--format", "csv")
    rows = list(csv.DictReader(open(csv_path)))
    assert list(rows[0]) == ["topic", "docid", "weight", "min_rank", "users", "systems"]
    assert [(r["topic"], r["docid"]) for r in rows] == order
    assert [float(r["weight"]) for r in rows] == [float(f[2]) for f in lines]

    trec = tmp_path / "pool.trec"
    run("export_pool", "c2", "--out", str(trec), "--format", "trec")
    tl = [ln.split() for ln in trec.read_text().splitlines()]
    assert [(f[0], f[2]) for f in tl] == order
    assert {f[1] for f in tl} == {"Q0"} and {f[5] for f in tl} == {"c2"}
    for t in expected:
        ranks = [int(f[3]) for f in tl if f[0] == t]
        assert ranks == list(range(1, len(ranks) + 1))

    assert run("export_pool", "c2", "--out", "-").splitlines() == txt.read_text().splitlines()
    with pytest.raises(CommandError, match="no pool"):
        run("export_pool", "nope", "--out", str(txt))


@pytest.mark.django_db
def test_pool_analysis_cli(rankings_db, tmp_path):
    from tests.pooling.test_django_analysis import small_qrels  # noqa: F401

    run("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "2", "--name", "u2")
    run("build_pool", "--topic-set", "ts", "--sources", "systems", "--depth", "2", "--name", "s2")
    sizes = json.loads(run("pool_analysis", "sizes", "u2"))
    assert sizes == {"pool": "u2", "topics": 2, "mean_size": 3.0, "sizes": {"1": 4, "2": 2}}

    out = tmp_path / "sizes.csv"
    run("pool_analysis", "sizes", "s2", "--out", str(out))
    assert list(csv.reader(open(out))) == [["topic", "size"], ["1", "3"], ["2", "1"],
                                          ["mean", "2.0"]]

    growth = json.loads(run("pool_analysis", "growth", "--topic-set", "ts", "--depths", "2",
                            "--orders", "3"))
    assert growth["systems"]["curves"]["2"]["ordered"] == [1.5, 3.0]
    assert growth["users"]["curves"]["2"]["ordered"] == [2.0, 2.0, 4.0]
    out = tmp_path / "growth.csv"
    run("pool_analysis", "growth", "--topic-set", "ts", "--depths", "1", "2", "--out", str(out))
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 2 * 3 + 2 * 2  # users: 3 people, systems: 2 runs, two depths each

    rbo = json.loads(run("pool_analysis", "rbo", "--topic-set", "ts", "--reference", "pairs"))
    assert rbo["summary"]["user"]["pairs"] == 1 and rbo["summary"]["system"]["pairs"] == 1
    out = tmp_path / "rbo.json"
    run("pool_analysis", "rbo", "--topic-set", "ts", "--out", str(out))
    assert json.loads(out.read_text())["reference"] == "titles"


@pytest.mark.django_db
def test_pool_analysis_coverage_and_scatter(rankings_db, tmp_path):
    from judging import services

    f = tmp_path / "q.txt"
    f.write_text("1 0 doc-a 1\n1 0 doc-c 0\n2 0 doc-b 2\n")
    services.qrels_import(f, format="adhoc", name="q")
    run("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "2", "--name", "u2")
    run("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
        "--name", "c2")
    cov = json.loads(run("pool_analysis", "coverage", "u2", "c2", "--qrels", "q"))
    assert cov["qrels"] == "q" and set(cov["pools"]) == {"u2", "c2"}
    u = {r["topic"]: r for r in cov["pools"]["u2"]["rows"]}
    assert (u["1"]["relevant"], u["1"]["nonrelevant"], u["1"]["unjudged"]) == (1, 1, 2)
    assert (u["2"]["relevant"], u["2"]["unjudged"]) == (1, 1)
    out = tmp_path / "cov.csv"
    run("pool_analysis", "coverage", "u2", "c2", "--qrels", "q", "--out", str(out))
    rows = list(csv.DictReader(open(out)))
    assert [(r["pool"], r["topic"]) for r in rows] == [
        ("u2", "1"), ("u2", "2"), ("u2", "mean"), ("c2", "1"), ("c2", "2"), ("c2", "mean")]
    assert float(rows[2]["pct_relevant"]) == pytest.approx((25.0 + 50.0) / 2)

    scatter = json.loads(run("pool_analysis", "scatter", "c2", "--qrels", "q"))
    pts = {(p["topic"], p["docid"]): p for p in scatter["points"]}
    assert len(pts) == 5 + 3  # topic 2: b d from v1, a from sysA
    assert pts[("1", "doc-a")]["judged"] and not pts[("1", "doc-d")]["judged"]
    assert pts[("1", "doc-d")]["systems"] == 1 and pts[("1", "doc-d")]["users"] == 0
