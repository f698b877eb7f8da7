"""Reproduces the simulation tables of the judging guide (docs/organiser/judging.md): for
each order and data set, the stopping rules' outcome (with the 90%-by-hand share) and the
share of the pool judged at which Kendall's tau_b of the system ordering (MAP, nDCG@20)
first reaches 0.9 and 1 (``simulate_judging --tau``). Offline: everything is read from
../shared/data.

Data sets (built by ``--setup`` in the database the environment names; use a scratch one):

- Web 2011: pool ``w``, depth 100 over the six eval-oracles runs (system runs), judged by
  the per-intent qrels ``qrels.diversity.txt`` (judgment set ``web2011``);
- CACM: pool ``cacm-combined`` that ``demo --from …/cacm --name cacm --topics 52
  --workers 5 --depth 100 --pool-depth 100`` builds (BM25 and SDM title runs as systems,
  five simulated users' variants as user rankings), judged by ``cacm.qrels``
  (``cacm-qrels``). The text orders (cal-text, cal) run on CACM only;
- CACM, 4 runs: pool ``cacm4``, depth 1000 over four title runs (bm25, bm25-okapi, qld,
  sdm) retrieved from the demo's collection, exported and imported as system runs of the
  topic set ``cacm4`` (query.text), judged by ``cacm.qrels`` with the leading zeros of its
  topic ids dropped (``cacm4-qrels``). ``--setup`` starts a Celery worker of its own for
  the retrieval and stops it after. No collection: rank orders only.

Every cell is one ``simulate_judging --budget 100000 --stop RULE --json`` run (the first
rule's run also has ``--tau``), tried every 10 judgments, in a subprocess with a time limit
(--timeout, 15 min): a run over it is left out and shown as "—". Outputs are kept in
bench/out/judging_tables/ and reused when present (--fresh reruns).

Usage::

    export DATA_DIR=$(mktemp -d)        # a scratch SQLite database (unset DATABASE_URL)
    python manage.py migrate
    nice -n 10 python bench/judging_tables.py --setup
    nice -n 10 python bench/judging_tables.py [--data web2011|cacm|cacm-1000] [--orders hedge,al-rank]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path("../shared/data")
OUT = ROOT / "bench" / "out" / "judging_tables"
RULES = ("recall:0.9:0.95", "recall:0.9:0.5", "knee")
RANK_ORDERS = ("pool", "mtf", "bandit", "bandit-discounted", "hedge", "al-rank")
DATA = {  # key: (label, pool, judgment set, orders)
    "web2011": ("Web 2011", "w", "web2011", RANK_ORDERS),
    "cacm": ("CACM, combined", "cacm-combined", "cacm-qrels", RANK_ORDERS + ("cal-text", "cal")),
    "cacm-1000": ("CACM, 4 runs", "cacm4", "cacm4-qrels", RANK_ORDERS),
}
#: the four title runs of the depth-1000 CACM pool, retrieved from the collection the demo
#: indexed, exported and imported as system runs of a topic set of their own
CACM4_MODELS = ("bm25", "bm25-okapi", "qld", "sdm")
WEB = SHARED / "trec-web-diversity" / "2011"
SETUP = {
    "web2011": [
        ["import_topics", str(WEB / "full-topics.xml"), "--format", "webxml",
         "--topic-set", "web2011"],
        *[["import_run", str(SHARED / "eval-oracles" / "web2011" / "runs" / f"{r}.run"),
           "--topic-set", "web2011"]
          for r in ("fair", "good", "noisy", "partial", "tied", "weak")],
        ["build_pool", "--topic-set", "web2011", "--sources", "systems", "--depth", "100",
         "--name", "w"],
        ["import_judgments", str(WEB / "qrels.diversity.txt"), "--format", "diversity",
         "--name", "web2011"],
    ],
    "cacm": [
        ["demo", "--from", str(SHARED / "small-corpora" / "cacm"), "--name", "cacm",
         "--topics", "52", "--workers", "5", "--depth", "100", "--pool-depth", "100"],
    ],
    "cacm-1000": [  # after "cacm", with a Celery worker running (--setup starts one)
        *[["run_retrieval", "--topic-set", "cacm", "--collection", "cacm", "--model", m,
           "--depth", "1000", "--source", "titles", "--wait", "--timeout", "900"]
          for m in CACM4_MODELS],
        *[["export_run", "--topic-set", "cacm", "--collection", "cacm", "--model", m,
           "--source", "titles", "--out", str(OUT / f"cacm-{m}.run")] for m in CACM4_MODELS],
        ["import_topics", str(SHARED / "small-corpora" / "cacm" / "query.text"), "--format",
         "smart", "--topic-set", "cacm4"],
        *[["import_run", str(OUT / f"cacm-{m}.run"), "--topic-set", "cacm4", "--tag", m]
          for m in CACM4_MODELS],
        ["build_pool", "--topic-set", "cacm4", "--sources", "systems", "--depth", "1000",
         "--name", "cacm4"],
        ["import_qrels", str(SHARED / "small-corpora" / "cacm" / "cacm.qrels"), "--format",
         "adhoc", "--name", "cacm4-qrels", "--topic-set", "cacm4", "--id-map",
         "strip-zeros"],
    ],
}


def manage(args: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=timeout)


def simulate(key: str, order: str, rule: str, timeout: float, fresh: bool) -> dict | None:
    """One simulate_judging run, cached in OUT; None when it ran over the time limit."""
    _label, pool, qrels, _orders = DATA[key]
    path = OUT / f"{key}-{order}-{rule.replace(':', '_')}.json"
    if path.exists() and not fresh:
        return json.loads(path.read_text()) or None
    args = ["simulate_judging", "--pool", pool, "--qrels", qrels, "--order", order,
            "--budget", "100000", "--stop", rule, "--stop-every", "10", "--json"]
    if rule == RULES[0]:
        args.append("--tau")
    start = time.monotonic()
    try:
        out = json.loads(manage(args, timeout).stdout)
        out["seconds"] = round(time.monotonic() - start, 1)
    except subprocess.TimeoutExpired:
        out = {}
    print(f"{key} {order} {rule}: "
          + (f"{out['seconds']} s" if out else f"over {timeout:.0f} s, left out"),
          file=sys.stderr)
    path.write_text(json.dumps(out))
    return out or None


def by_hand(key: str, order: str, fresh: bool) -> float | None:
    """Share of the pool judged when each topic stops at exactly 90% of its relevant
    documents (hindsight): the topic streams of judging.analysis, read in-process."""
    path = OUT / f"{key}-{order}-by-hand.json"
    if path.exists() and not fresh:
        return json.loads(path.read_text())["share"]
    from judging.analysis import _pool_streams
    from judging.selectors import judgment_set_get
    from pooling.selectors import pool_get

    _label, pool, qrels, _orders = DATA[key]
    sizes: dict = {}
    streams = _pool_streams(pool_get(pool), judgment_set_get(qrels), order, sizes=sizes)
    judged = 0
    for t, stream in streams.items():
        need, found = math.ceil(0.9 * sizes[t][1]), 0
        for i, relevant in enumerate(stream if need else (), 1):
            found += bool(relevant)
            if found >= need:
                judged += i
                break
    share = judged / sum(n for n, _ in sizes.values())
    path.write_text(json.dumps({"judged": judged, "share": share}))
    return share


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if round(100 * x, 1) < 100 else "100%"


def stop_cell(run: dict | None, first_row: bool, first_col: bool) -> str:
    if run is None:
        return "—"
    m = run["stop"]["shared"]
    if m["stopped"] == 0:
        return "100%, never stops"
    short = f"{m['stopped_before_target']}"
    if run["stop"]["rule"] == "knee":
        short += f" ({m['stopped']} stopped)" if first_row else f" ({m['stopped']})"
    elif first_row and first_col:
        short += f" of {m['topics_with_relevant']}"
    return f"{_pct(m['pool_share'])}, {m['recall']:.3f}, {short}"


def tau_cell(run: dict | None, measure: str, level: float) -> str:
    """The share of the pool judged at which tau_b first reaches ``level``, and (in
    brackets, when later) the share from which it stays there, "not at 100%" when the
    whole pool orders the systems otherwise than the full judgment set (relevant
    documents outside the pool count for MAP's denominator)."""
    if run is None:
        return "—"
    size = run["pool_size"]
    reached = [r["AP" if measure == "MAP" else measure]["tau_b"] is not None
               and r["AP" if measure == "MAP" else measure]["tau_b"] >= level - 1e-9
               for r in run["tau"]]
    if not any(reached):
        last = run["tau"][-1]["AP" if measure == "MAP" else measure]["tau_b"]
        return "never" if last is None else f"never ({last:.2f} at 100%)"
    first, stays = reached.index(True), len(reached)
    while stays and reached[stays - 1]:
        stays -= 1
    cell = f"{100 * run['tau'][first]['judged'] / size:.0f}%"
    if stays == len(reached):
        cell += " (not at 100%)"
    elif stays != first:
        cell += f" ({100 * run['tau'][stays]['judged'] / size:.0f}%)"
    return cell


def tables(keys: list[str], orders: list[str] | None, timeout: float, fresh: bool) -> str:
    stop_rows, tau_rows, recall_rows = [], [], []
    for key in keys:
        label, _pool, _qrels, data_orders = DATA[key]
        for i, order in enumerate(o for o in data_orders if not orders or o in orders):
            runs = {rule: simulate(key, order, rule, timeout, fresh) for rule in RULES}
            hand = by_hand(key, order, fresh) if runs[RULES[0]] else None
            stop_rows.append([label, order, "—" if hand is None else _pct(hand)]
                             + [stop_cell(runs[rule], i == 0, j == 0)
                                for j, rule in enumerate(RULES)])
            tau_rows.append([label, order] + [tau_cell(runs[RULES[0]], m, lv)
                                              for m in ("MAP", "nDCG@20") for lv in (0.9, 1)])
            first = runs[RULES[0]]
            recall_rows.append([label, order] + (
                ["—"] * 3 if first is None else
                [_pct(first["judgments_for_recall"][s] / first["pool_size"])
                 for s in ("0.8", "0.9", "0.95")]))
    head = [
        (["data", "order", "90% by hand", *(f"`{r}`" for r in RULES)], stop_rows),
        (["data", "order", "MAP τ_b ≥ 0.9", "MAP τ_b = 1", "nDCG@20 τ_b ≥ 0.9",
          "nDCG@20 τ_b = 1"], tau_rows),
        (["data", "order", "80%", "90%", "95%"], recall_rows),
    ]
    text = []
    for cols, rows in head:
        text += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        text += ["| " + " | ".join(r) + " |" for r in rows] + [""]
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setup", action="store_true",
                        help="import the data sets and build the pools, then stop")
    parser.add_argument("--data", choices=sorted(DATA), action="append")
    parser.add_argument("--orders", default=None, help="comma-separated; default all")
    parser.add_argument("--timeout", type=float, default=15 * 60,
                        help="seconds one simulate_judging run may take (default 900)")
    parser.add_argument("--fresh", action="store_true", help="rerun cached outputs")
    a = parser.parse_args()
    keys = a.data or list(DATA)
    if a.setup:
        OUT.mkdir(parents=True, exist_ok=True)
        for key in keys:
            worker = (subprocess.Popen([sys.executable, "-m", "celery", "-A", "config",
                                        "worker", "--concurrency", "2", "-l", "warning"],
                                       cwd=ROOT) if key == "cacm-1000" else None)
            try:
                for args in SETUP[key]:
                    print(manage(args).stdout.strip().splitlines()[-1], file=sys.stderr)
            finally:
                if worker is not None:
                    worker.terminate()
                    worker.wait()
        return
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    import django

    django.setup()
    print(tables(keys, a.orders.split(",") if a.orders else None, a.timeout, a.fresh))


if __name__ == "__main__":
    main()
