"""simulate_judging on the TREC Web 2011 qrels over a pool of the eval-oracles runs."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from judging import priority

pytestmark = pytest.mark.django_db


def simulate(order, budget, *extra):
    out = StringIO()
    call_command("simulate_judging", "--pool", "w", "--qrels", "web2011", "--order", order,
                 "--budget", str(budget), *extra, "--json", stdout=out)
    return json.loads(out.getvalue())


def relevant_by_hand(path):
    rel: dict[str, set[str]] = {}
    for line in open(path):
        t, _i, d, g = line.split()
        if int(g) > 0:
            rel.setdefault(t, set()).add(d)
    return rel


@pytest.mark.slow
def test_simulated_orders_on_web2011(shared_data):
    from pooling.selectors import pool_docids_by_topic, pool_get

    web = shared_data / "trec-web-diversity/2011"
    call_command("import_topics", str(web / "full-topics.xml"), "--format", "webxml",
                 "--topic-set", "web2011")
    for run in sorted((shared_data / "eval-oracles/web2011/runs").glob("*.run")):
        call_command("import_run", str(run), "--topic-set", "web2011")
    call_command("build_pool", "--topic-set", "web2011", "--sources", "systems", "--depth",
                 "100", "--name", "w")
    call_command("import_judgments", str(web / "qrels.diversity.txt"), "--format",
                 "diversity", "--name", "web2011")
    docs = pool_docids_by_topic(pool_get("w"))
    rel = relevant_by_hand(web / "qrels.diversity.txt")

    # pool order, per topic: the relevant documents among each topic's first 50, by hand
    res = simulate("pool", 50, "--per-topic")
    assert set(res) == {"order", "budget", "judged", "relevant_found", "curve"}
    assert res["judged"] == sum(min(50, len(d)) for d in docs.values())
    assert res["relevant_found"] == sum(len(set(d[:50]) & rel.get(t, set()))
                                        for t, d in docs.items())
    assert res["curve"][-1] == [res["judged"], res["relevant_found"]]
    assert [p[0] for p in res["curve"]] == list(range(1, res["judged"] + 1))

    # the whole pool finds every relevant pooled document whatever the order
    everything = sum(len(set(d) & rel.get(t, set())) for t, d in docs.items())
    total = sum(len(d) for d in docs.values())
    for order in ("pool", "mtf", "bandit", "bandit-ns", "depth"):
        r = simulate(order, total + 5)
        assert (r["judged"], r["relevant_found"]) == (total, everything)

    # adaptive orders beat the pool order early on this data (values pinned from the run
    # reported in the README; they depend only on the data and the policies)
    pool, mtf, bandit, bandit_ns = (simulate(o, 25, "--per-topic")["relevant_found"]
                                    for o in ("pool", "mtf", "bandit", "bandit-ns"))
    assert (pool, mtf, bandit, bandit_ns) == (686, 870, 835, 868)
    # at 100 per topic the non-stationary bandit finds the most
    at100 = {o: simulate(o, 100, "--per-topic")["relevant_found"]
             for o in ("pool", "mtf", "bandit", "bandit-ns")}
    assert at100 == {"pool": 2260, "mtf": 2587, "bandit": 2506, "bandit-ns": 2634}


def test_order_items_feeds_judgments_back():
    known: dict[int, bool] = {}
    seq = []
    for item in priority.order_items("mtf", n_items=6, rankings=[[0, 1, 2], [3, 4, 5]],
                                     known=known):
        seq.append(item)
        known[item] = item >= 3  # ranking 2 holds the relevant documents
    assert seq == [0, 3, 4, 5, 1, 2]
