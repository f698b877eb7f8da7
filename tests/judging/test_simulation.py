"""simulate_judging on the TREC Web 2011 qrels over a pool of the eval-oracles runs."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging import priority, stopping

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
    assert set(res) == {"order", "budget", "per_topic", "judged", "relevant_found", "pool_size",
                        "relevant_in_pool", "judgments_for_recall", "curve"}
    assert res["judged"] == sum(min(50, len(d)) for d in docs.values())
    assert res["relevant_found"] == sum(len(set(d[:50]) & rel.get(t, set()))
                                        for t, d in docs.items())
    assert res["curve"][-1] == [res["judged"], res["relevant_found"]]
    assert [p[0] for p in res["curve"]] == list(range(1, res["judged"] + 1))

    # the whole pool finds every relevant pooled document whatever the order
    everything = sum(len(set(d) & rel.get(t, set())) for t, d in docs.items())
    total = sum(len(d) for d in docs.values())
    for_recall = {}
    for order in ("pool", "mtf", "bandit", "bandit-discounted", "depth"):
        r = simulate(order, total + 5)
        assert (r["judged"], r["relevant_found"]) == (total, everything)
        assert (r["pool_size"], r["relevant_in_pool"]) == (total, everything)
        curve = r["curve"]
        for share, n in r["judgments_for_recall"].items():  # the first curve point there
            assert curve[n - 1][1] >= float(share) * everything > curve[n - 2][1]
        for_recall[order] = r["judgments_for_recall"]
    # the README's table: judgments to find 80/90/95% of the pool's relevant documents
    assert for_recall == {
        "pool": {"0.8": 10180, "0.9": 12593, "0.95": 13885},
        "mtf": {"0.8": 9142, "0.9": 11680, "0.95": 13447},
        "bandit": {"0.8": 8387, "0.9": 11080, "0.95": 13114},
        "bandit-discounted": {"0.8": 8449, "0.9": 11025, "0.95": 13114},
        "depth": {"0.8": 10180, "0.9": 12593, "0.95": 13885}}
    assert simulate("bandit-discounted", total, "--per-topic")["judgments_for_recall"] == {
        "0.8": 8450, "0.9": 11050, "0.95": 13131}
    # judged enough to rank the six systems (README): MAP's tau_b with the full judgments
    # reaches 1 at 5% of the pool in pool order, 20% with mtf, 40% with bandit-discounted
    taus = {o: [(r["judged"], round(r["AP"]["tau_b"], 3)) for r in simulate(o, total, "--tau")["tau"]]
            for o in ("pool", "mtf", "bandit-discounted")}
    assert taus["pool"][:4] == [(161, 0.867), (321, 0.867), (803, 1.0), (1606, 1.0)]
    assert taus["mtf"][:5] == [(161, 0.733), (321, 0.867), (803, 0.867), (1606, 0.867), (3212, 1.0)]
    assert [t for t in taus["bandit-discounted"] if t[1] < 1] == [
        (161, 0.733), (321, 0.733), (803, 0.867), (1606, 0.867), (3212, 0.867), (4818, 0.867)]

    # adaptive orders beat the pool order early on this data (values pinned from the run
    # reported in the README; they depend only on the data and the policies)
    pool, mtf, bandit, bandit_discounted = (simulate(o, 25, "--per-topic")["relevant_found"]
                                    for o in ("pool", "mtf", "bandit", "bandit-discounted"))
    assert (pool, mtf, bandit, bandit_discounted) == (686, 870, 835, 868)
    # at 100 per topic the discounted bandit finds the most
    at100 = {o: simulate(o, 100, "--per-topic")["relevant_found"]
             for o in ("pool", "mtf", "bandit", "bandit-discounted")}
    assert at100 == {"pool": 2260, "mtf": 2587, "bandit": 2506, "bandit-discounted": 2634}

    # the stopping rules of the README's table, pool order, unlimited budget
    stop = simulate("pool", total, "--stop", "recall:0.9:0.95")["stop"]
    assert stop["shared"] == stop["per_topic"]
    got = stop["per_topic"]
    assert (got["judged"], got["relevant_found"], got["relevant_in_pool"], got["stopped"],
            got["stopped_before_target"]) == (14350, 4333, 4556, 50, 2)
    knee = simulate("pool", total, "--stop", "knee")["stop"]["per_topic"]
    assert (knee["judged"], knee["stopped"]) == (total, 0)


def test_order_items_feeds_judgments_back():
    known: dict[int, bool] = {}
    seq = []
    for item in priority.order_items("mtf", n_items=6, rankings=[[0, 1, 2], [3, 4, 5]],
                                     known=known):
        seq.append(item)
        known[item] = item >= 3  # ranking 2 holds the relevant documents
    assert seq == [0, 3, 4, 5, 1, 2]


def test_simulate_judging_reports_where_the_stopping_rule_stops(tmp_path):
    """Pool order over 40 documents a topic. Topic 1 holds relevant documents at pool
    positions 1–3 and 30, topic 2 at 1–3. The rule recall:0.8:0.6 fires after 26
    judgments on both (test_stopping pins the estimator): topic 1 with 3 of its 4, short
    of 0.8; topic 2 with all 3."""
    from pooling.selectors import pool_docids_by_topic

    from .conftest import make_pool

    pool = make_pool(tmp_path, docs=40, name="w")
    docs = pool_docids_by_topic(pool)
    rel = {"1": docs["1"][:3] + [docs["1"][29]], "2": docs["2"][:3]}
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"{t} 0 {d} {int(d in rel[t])}\n"
                             for t in ("1", "2") for d in docs[t]))
    call_command("import_judgments", str(qrels), "--format", "adhoc", "--name", "web2011")

    res = simulate("pool", 100, "--stop", "recall:0.8:0.6", "--stop-every", "1")
    stop = res["stop"]
    assert (stop["rule"], stop["target"], stop["every"]) == ("recall:0.8:0.6", 0.8, 1)
    per = stop["per_topic"]
    assert (per["judged"], per["pool_size"], per["relevant_found"],
            per["relevant_in_pool"]) == (52, 80, 6, 7)
    assert per["recall"] == pytest.approx(6 / 7) and per["pool_share"] == pytest.approx(0.65)
    assert (per["topics"], per["stopped"], per["stopped_before_target"]) == (2, 2, 1)
    assert [{k: v for k, v in row.items() if k != "estimate"} for row in per["per_topic"]] == [
        {"topic": "1", "judged": 26, "relevant_found": 3, "relevant_in_pool": 4,
         "stopped": True},
        {"topic": "2", "judged": 26, "relevant_found": 3, "relevant_in_pool": 3,
         "stopped": True}]
    # the estimate a live task shows there (95% bounds): the same for both (three
    # relevant, then 23 not); 0.6–1.0 holds topic 1's true 0.75 and topic 2's 1.0
    est = stopping.estimate([True] * 3 + [False] * 23, 40)
    assert (est.recall_low, est.recall_high) == (0.6, 1.0)
    for row in per["per_topic"]:
        assert row["estimate"] == pytest.approx({
            "remaining": est.remaining, "remaining_low": est.remaining_low,
            "remaining_high": est.remaining_high, "recall": est.recall,
            "recall_low": est.recall_low, "recall_high": est.recall_high})
    assert (per["estimated"], per["interval_covers"]) == (2, 2)
    # a shared budget of 100 is enough to reach both stops; the same outcome
    assert stop["shared"] == per
    # a shared budget of 31: one per topic in turn, 16 and 15; neither stopped
    small = simulate("pool", 31, "--stop", "recall:0.8:0.6", "--stop-every", "1")["stop"]
    assert [(t["judged"], t["stopped"]) for t in small["shared"]["per_topic"]] == [
        (16, False), (15, False)]
    assert small["shared"]["stopped"] == 0 and small["shared"]["judged"] == 31
    assert small["per_topic"]["judged"] == 52  # 31 per topic: both reach their stop
    # tried after every 10 judgments: at 30, when topic 1's fourth is found
    tens = simulate("pool", 100, "--stop", "recall:0.8:0.6")["stop"]["per_topic"]
    assert [(t["judged"], t["relevant_found"]) for t in tens["per_topic"]] == [(30, 4), (30, 3)]
    assert tens["stopped_before_target"] == 0
    # the knee never fires under 150 judgments: the whole pool is judged
    knee = simulate("pool", 100, "--stop", "knee")["stop"]["per_topic"]
    assert (knee["judged"], knee["stopped"], knee["recall"]) == (80, 0, 1.0)
    with pytest.raises(CommandError, match="must be 'recall' or 'knee'"):
        simulate("pool", 100, "--stop", "never")


def test_simulate_judging_reports_judgments_for_recall(tmp_path):
    """Pool order over 40 documents a topic; topic 1 relevant at positions 1-3 and 30,
    topic 2 at 1-3 (7 relevant). Shared budget, one per topic in turn: the 6th judgment
    finds the 6th relevant (0.8 of 7 needs 5.6), the 59th (topic 1's 30th) the 7th. Per
    topic: a budget of 3 each finds 6 in 6 judgments, 30 each finds 7 in 60."""
    from pooling.selectors import pool_docids_by_topic

    from .conftest import make_pool

    pool = make_pool(tmp_path, docs=40, name="w")
    docs = pool_docids_by_topic(pool)
    rel = {"1": docs["1"][:3] + [docs["1"][29]], "2": docs["2"][:3]}
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"{t} 0 {d} {int(d in rel[t])}\n"
                             for t in ("1", "2") for d in docs[t]))
    call_command("import_judgments", str(qrels), "--format", "adhoc", "--name", "web2011")
    shared = simulate("pool", 100)
    assert (shared["pool_size"], shared["relevant_in_pool"]) == (80, 7)
    assert shared["judgments_for_recall"] == {"0.8": 6, "0.9": 59, "0.95": 59}
    assert shared["curve"][58] == [59, 7]
    per = simulate("pool", 100, "--per-topic")
    assert per["judgments_for_recall"] == {"0.8": 6, "0.9": 60, "0.95": 60}
    short = simulate("pool", 20)  # never reaches 0.9 within 20 judgments
    assert short["judgments_for_recall"] == {"0.8": 6, "0.9": None, "0.95": None}
    text = StringIO()
    call_command("simulate_judging", "--pool", "w", "--qrels", "web2011", "--order", "pool",
                 "--budget", "20", stdout=text)
    assert "80% of the relevant: 6 judgments (7.5% of the pool)" in text.getvalue()
    assert "90% of the relevant: not within the budget" in text.getvalue()


def test_simulate_judging_tau_curve(tmp_path):
    """--tau: three systems over the pool; at each checkpoint the means of AP and nDCG@20
    under the judgments so far, compared with the full judgment set's ordering. Once the
    whole pool is judged (and every relevant document is pooled) the orderings agree."""
    from evaluation import measures
    from evaluation.selectors import stored_runs
    from evaluation.ranking import correlations
    from pooling.selectors import pool_docids_by_topic

    from .conftest import make_pool

    from topics.models import Topic, TopicSet

    ts = TopicSet.objects.create(name="ts")
    for t in ("1", "2"):
        Topic.objects.create(topic_set=ts, topic_id=t, title=f"topic {t}")
    r3 = tmp_path / "r3.run"  # d3 d1 d5 d2 d6 d4 for both topics
    r3.write_text("".join(f"{t} Q0 t{t}d{d} {r} {100 - r} r3\n"
                          for t in ("1", "2") for r, d in enumerate((3, 1, 5, 2, 6, 4), 1)))
    call_command("import_run", str(r3), "--topic-set", "ts", "--tag", "r3")
    pool = make_pool(tmp_path, docs=6, name="w")
    docs = pool_docids_by_topic(pool)
    rel = {"1": {"t1d3", "t1d6"}, "2": {"t2d1", "t2d5"}}
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"{t} 0 {d} {int(d in rel[t])}\n" for t in docs for d in docs[t]))
    call_command("import_judgments", str(qrels), "--format", "adhoc", "--name", "web2011")
    res = simulate("pool", 100, "--tau")
    tau = res["tau"]
    assert [row["judged"] for row in tau] == sorted({max(1, round(s * 12)) for s in (
        0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)})
    assert tau[-1]["AP"] == {"tau_b": 1.0, "tau_ap": 1.0}
    assert tau[-1]["nDCG@20"]["tau_b"] == 1.0
    # a checkpoint by hand: the first 4 judgments of the shared budget (topic 1, 2, 1, 2)
    runs = stored_runs(topic_set="ts", tags=["r1", "r2", "r3"])
    runset = measures.RunSet.from_rankings(runs)
    spec = measures.parse_measures("AP")
    first = {"1": {docs["1"][0]: int(docs["1"][0] in rel["1"]), docs["1"][1]: int(docs["1"][1] in rel["1"])},
             "2": {docs["2"][0]: int(docs["2"][0] in rel["2"]), docs["2"][1]: int(docs["2"][1] in rel["2"])}}
    full = {t: {d: 1 for d in rel[t]} for t in rel}

    def means(q):
        r = measures.evaluate_runs(runset, measures.Qrels("adhoc", q), spec, complete=True)
        return {tag: v["mean"]["AP"] for tag, v in r.items()}

    want = correlations(means(full), means(first))
    row = next(r for r in tau if r["judged"] == 4)
    assert row["AP"] == {"tau_b": want["tau_b"], "tau_ap": want["tau_ap"]}
    from pooling.models import PoolRun

    PoolRun.objects.filter(pool=pool).exclude(run__tag="r1").delete()
    with pytest.raises(CommandError, match="built from 1 system run.*two or more systems"):
        simulate("pool", 100, "--tau")


def test_simulate_judging_with_learned_orders(tmp_path):
    """Runs r1 (d1..d8) and r2 (d8..d1) per topic; d8 and d7 relevant. Hedge judges d1 or
    d8 first (they tie at rank 1); either way the weights then favour r2, so both
    relevant documents are among the first three of every topic."""
    from .conftest import make_pool

    make_pool(tmp_path, docs=8, name="w")
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"{t} 0 t{t}d{d} {int(d >= 7)}\n"
                             for t in ("1", "2") for d in range(1, 9)))
    call_command("import_judgments", str(qrels), "--format", "adhoc", "--name", "web2011")
    res = simulate("hedge", 3, "--per-topic")
    assert (res["judged"], res["relevant_found"]) == (6, 4)
    for order in ("hedge", "al-rank"):
        res = simulate(order, 100)
        assert (res["judged"], res["relevant_found"], res["pool_size"]) == (16, 4, 16)
    # the pool was built from imported runs: no collection, no text to learn from
    with pytest.raises(CommandError, match="the text orders need the documents' text"):
        simulate("cal-text", 10)
