"""python manage.py simulate_judging --pool P --qrels N --order O --budget B [--per-topic]
[--stop RULE]"""
import json

from django.core.management.base import BaseCommand, CommandError

from judging.analysis import ORDERS, judging_simulation, stop_simulation
from judging.selectors import judgment_set_get
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
                            help="recorded in the output (every order is deterministic)")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--stop", default=None, metavar="RULE",
                            help="also report where a stopping rule stops, for shared and "
                                 "per-topic budgets: recall:TARGET:CONFIDENCE or knee")
        parser.add_argument("--stop-every", type=int, default=10,
                            help="try the stopping rule after every N judgments of a topic")

    def handle(self, *args, **o):
        try:
            result = judging_simulation(
                pool_get(o["pool"]), judgment_set_get(o["qrels"]), order=o["order"],
                budget=o["budget"], per_topic=o["per_topic"], seed=o["seed"])
            stop = (stop_simulation(
                pool_get(o["pool"]), judgment_set_get(o["qrels"]), order=o["order"],
                budget=o["budget"], rule=o["stop"], every=o["stop_every"])
                if o["stop"] else None)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            out = {k: result[k] for k in ("order", "budget", "judged", "relevant_found",
                                          "curve")}
            if stop is not None:
                out["stop"] = stop
            self.stdout.write(json.dumps(out))
        else:
            self.stdout.write(f"{result['order']}: {result['relevant_found']} relevant in "
                              f"{result['judged']} judgments")
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
