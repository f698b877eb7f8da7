"""python manage.py create_judging_task --pool P --name N --mode M [...]"""
from django.core.management.base import BaseCommand, CommandError

from judging import services
from judging.models import JudgingTask
from pooling.selectors import pool_get


class Command(BaseCommand):
    help = (
        "Create a judging task over a pool: one item per pooled document, K slots each. "
        "Assessors get leased batches of one topic at a time in the task's order. In sample "
        "mode the items are a stratified random sample of each topic's pool (--strata, "
        "--sample-budget, --seed), judged against the topic statement in a random order, "
        "from which evaluate --estimator estimates the measures."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name or id")
        parser.add_argument("--name", required=True)
        parser.add_argument("--mode", required=True, choices=[m for m, _ in JudgingTask.MODE_CHOICES])
        parser.add_argument("--scale", default="trec-web",
                            choices=[*services.SCALES, "custom"])
        parser.add_argument("--grades", default=None,
                            help="custom scale: value:label:key,… e.g. '0:no:n,1:yes:y'")
        parser.add_argument("--redundancy", type=int, default=None,
                            help="K assessors per item (default 1; not in user mode, where every "
                                 "writer of a topic judges its documents)")
        parser.add_argument("--order", default="pool",
                            choices=[o for o, _ in JudgingTask.ORDER_CHOICES])
        parser.add_argument("--batch", type=int, default=10)
        parser.add_argument("--lease-minutes", type=int, default=30)
        parser.add_argument("--assessors", default="", help="comma-separated; empty = open")
        parser.add_argument("--per-topic", type=int, default=None,
                            help="only each topic's first N documents (required in user mode)")
        parser.add_argument("--stop", default="",
                            help="stop a topic when the rule fires: recall:TARGET:CONFIDENCE "
                                 "(e.g. recall:0.9:0.95) or knee; default: judge everything")
        parser.add_argument("--strata", default=None,
                            help="sample mode: depth:CUT,CUT,… by the shallowest rank (default "
                                 "depth:10,20,50) or rbp:H (H strata of equal RBP prior weight)")
        parser.add_argument("--sample-budget", default=None,
                            help="sample mode: documents per topic (e.g. 60) or a share of each "
                                 "topic's pool (e.g. 20%%)")
        parser.add_argument("--seed", type=int, default=0, help="sample mode: the draw's seed")

    def handle(self, *args, **o):
        try:
            pool = pool_get(o["pool"])
            task = services.judging_task_create(
                pool=pool, name=o["name"], mode=o["mode"], scale=o["scale"],
                custom_grades=o["grades"], redundancy=o["redundancy"], order=o["order"],
                batch=o["batch"], lease_minutes=o["lease_minutes"],
                assessors=o["assessors"].split(","), per_topic=o["per_topic"],
                stop_rule=o["stop"], sample_strata=o["strata"],
                sample_budget=o["sample_budget"], sample_seed=o["seed"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"task {task.name!r}: {task.items_count} items × {task.redundancy} "
            f"({task.mode} mode, {task.order} order)")
