"""Build a pool from the stored rankings of a topic set."""
import json

from django.core.management.base import BaseCommand, CommandError

from pooling import selectors, services


class Command(BaseCommand):
    help = (
        "Build a depth-d or RBP-prioritised pool from user variants, system runs or both. "
        "Runs in this process unless --async queues it for a Celery worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True)
        parser.add_argument("--sources", required=True, choices=["users", "systems", "combined"])
        parser.add_argument("--depth", default=None, type=int,
                            help="each ranking's top depth (required with --strategy depth; "
                                 "rbp defaults to the depth of the stored rankings)")
        parser.add_argument("--model", default=None,
                            help="the model of the user rankings (required when more than one "
                                 "model has user rankings)")
        parser.add_argument("--collection", default=None,
                            help="the collection of the user rankings (required when more "
                                 "than one has them)")
        parser.add_argument("--strategy", default="depth", choices=["depth", "rbp"],
                            help="judging order: depth = shallowest rank, then weight; "
                                 "rbp = RBP weight (a --budget cuts either order)")
        parser.add_argument("--p", default=0.95, type=float, help="RBP persistence")
        parser.add_argument("--budget", default=None, type=int, help="documents to judge")
        parser.add_argument("--budget-scope", default="topic", choices=["topic", "global"])
        parser.add_argument("--name", default=None, help="a unique name for the pool")
        parser.add_argument("--json", action="store_true", help="print a JSON summary")
        parser.add_argument("--async", dest="run_async", action="store_true",
                            help="queue the build for a Celery worker and return")

    def handle(self, *args, **o):
        try:
            pool = services.pool_create(
                topic_set_name=o["topic_set"],
                sources=o["sources"],
                depth=o["depth"],
                strategy=o["strategy"],
                p=o["p"],
                budget=o["budget"],
                budget_scope=o["budget_scope"],
                model_name=o["model"],
                collection_name=o["collection"],
                name=o["name"],
                enqueue=o["run_async"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        ref = pool.name or pool.id
        if o["run_async"]:
            if o["json"]:
                self.stdout.write(json.dumps({"pool": ref, "status": pool.status,
                                              "runs": selectors.pool_run_list(pool)}))
            else:
                self.stdout.write(f"pool {pool.label} queued (id {pool.id})")
            return
        try:
            pool = services.pool_build(pool.id)
        except ValueError as exc:
            raise CommandError(f"pool {pool.label} failed: {exc}") from None
        sizes = selectors.pool_sizes(pool)
        mean = sum(sizes.values()) / len(sizes) if sizes else 0.0
        if o["json"]:
            self.stdout.write(json.dumps(
                {"pool": ref, "topics": len(sizes), "mean_size": mean, "sizes": sizes,
                 "runs": selectors.pool_run_list(pool)}
            ))
        else:
            self.stdout.write(
                f"pool {pool.label} (id {pool.id}): {len(sizes)} topics, "
                f"{pool.documents_count} documents, mean {mean:.1f} per topic"
            )
