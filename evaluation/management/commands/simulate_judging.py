"""python manage.py simulate_judging --pool P --qrels N --order O --budget B [--per-topic]
[--stop RULE] [--tau]

It lives in evaluation because --tau scores the pool's systems (evaluation may use
judging; judging may not use evaluation)."""
import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.selectors import stored_runs
from evaluation.judged_enough import MEASURES, tau_curve
from common.fileio import InputError
from judging.analysis import ORDERS, judging_simulation, stop_simulation
from judging.selectors import judgment_set_get, relevance_by_topic
from pooling.selectors import pool_get


class Command(BaseCommand):
    help = (
        "Simulate judging a pool in an order with an existing judgment set as the assessor "
        "(relevant: some intent graded above 0; unjudged: non-relevant) and report how many "
        "relevant documents the budget finds. Without --per-topic the budget is shared, one "
        "judgment per topic in turn."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name or id")
        parser.add_argument("--qrels", required=True, help="judgment set name")
        parser.add_argument("--order", required=True, choices=ORDERS)
        parser.add_argument("--budget", required=True, type=int)
        parser.add_argument("--per-topic", action="store_true")
        parser.add_argument("--seed", type=int, default=0,
                            help="draws the random negatives of cal-text and cal; recorded "
                                 "in the output (every order is deterministic for a seed)")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--stop", default=None, metavar="RULE",
                            help="also report where a stopping rule stops, for shared and "
                                 "per-topic budgets: recall:TARGET:CONFIDENCE or knee")
        parser.add_argument("--stop-every", type=int, default=10,
                            help="try the stopping rule after every N judgments of a topic")
        parser.add_argument("--tau", action="store_true",
                            help="also compare the system ordering (the pool's system runs; "
                                 "MAP and nDCG@20, unjudged = non-relevant) under the "
                                 "judgments so far with the ordering under the full judgment "
                                 "set: Kendall's tau_b and tau_ap at 1, 2, 5, 10, 20, … 100%% "
                                 "of the simulated judgments")

    def handle(self, *args, **o):
        try:
            log: list | None = [] if o["tau"] else None
            result = judging_simulation(
                pool_get(o["pool"]), judgment_set_get(o["qrels"]), order=o["order"],
                budget=o["budget"], per_topic=o["per_topic"], seed=o["seed"], judged_log=log)
            tau = self._tau(o, log) if o["tau"] else None
            stop = (stop_simulation(
                pool_get(o["pool"]), judgment_set_get(o["qrels"]), order=o["order"],
                budget=o["budget"], rule=o["stop"], every=o["stop_every"])
                if o["stop"] else None)
        except (ValueError, InputError) as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            out = {k: result[k] for k in ("order", "budget", "per_topic", "judged",
                                          "relevant_found", "pool_size", "relevant_in_pool",
                                          "judgments_for_recall", "curve")}
            if stop is not None:
                out["stop"] = stop
            if tau is not None:
                out["tau"] = tau
            self.stdout.write(json.dumps(out))
        else:
            self.stdout.write(f"{result['order']}: {result['relevant_found']} relevant in "
                              f"{result['judged']} judgments (pool {result['pool_size']}, "
                              f"{result['relevant_in_pool']} relevant)")
            for share, n in result["judgments_for_recall"].items():
                reached = ("not within the budget" if n is None else
                           f"{n} judgments ({n / result['pool_size']:.1%} of the pool)")
                self.stdout.write(f"  {float(share):.0%} of the relevant: {reached}")
            if stop is not None:
                for mode in ("shared", "per_topic"):
                    m = stop[mode]
                    recall = "—" if m["recall"] is None else f"{m['recall']:.3f}"
                    self.stdout.write(
                        f"{stop['rule']} ({mode.replace('_', '-')} budget): stopped "
                        f"{m['stopped']} of {m['topics']} topics, "
                        f"{m['stopped_before_target']} before recall {stop['target']:g}; "
                        f"{m['judged']} judgments ({m['pool_share']:.1%} of the pool), "
                        f"recall {recall}")
            if tau is not None:
                self.stdout.write("tau with the full judgments (tau_b / tau_ap):")
                for row in tau:
                    self.stdout.write(f"  {row['judged']} judgments: " + ", ".join(
                        f"{m} {_num(row[m]['tau_b'])} / {_num(row[m]['tau_ap'])}"
                        for m in MEASURES))

    @staticmethod
    def _tau(o, log) -> list[dict]:
        pool = pool_get(o["pool"])
        tags = sorted(r.tag for r in pool.runs.all() if r.kind == "system" and r.tag)
        if len(tags) < 2:
            raise ValueError(f"pool {pool.label} was built from {len(tags)} system run(s): "
                             "--tau compares the orderings of two or more systems")
        runs = stored_runs(topic_set=pool.topic_set.name, tags=tags)
        return tau_curve(runs, relevance_by_topic(judgment_set_get(o["qrels"])), log)


def _num(value) -> str:
    return "—" if value is None else f"{value:.3f}"
