"""python manage.py run_retrieval --topic-set T --collection C --model M [--depth 1000]
[--source {titles,descriptions,variants}] [--wait]"""
import time

from django.core.management.base import BaseCommand, CommandError

from retrieval.selectors import run_get
from retrieval.services import RetrievalError, run_create


class Command(BaseCommand):
    help = (
        "Queue a retrieval run: one query per topic title, description or distinct user "
        "variant. Rankings already retrieved with the same collection, model, depth and "
        "query are reused. Celery workers do the searching; --wait shows progress."
    )

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--collection", required=True)
        parser.add_argument("--model", required=True)
        parser.add_argument("--depth", type=int, default=1000)
        parser.add_argument("--source", choices=["titles", "descriptions", "variants"],
                            default="titles")
        parser.add_argument("--wait", action="store_true",
                            help="poll and print progress until the run is done or failed")
        parser.add_argument("--timeout", type=float, default=3600,
                            help="seconds --wait waits at most (default 3600)")

    def handle(self, *args, topic_set, collection, model, depth, source, wait, timeout,
               **options):
        try:
            run = run_create(topic_set_name=topic_set, collection_name=collection,
                             model_name=model, depth=depth, source=source)
        except (RetrievalError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"run {run.id}: {run.total} queries, {run.completed} already retrieved, "
            f"{run.tasks_total} task(s) queued"
        )
        if not wait:
            return
        deadline = time.monotonic() + timeout
        last = None
        while True:
            run = run_get(run.id)
            line = (f"run {run.id}: {run.status} {run.completed}/{run.total} queries, "
                    f"tasks {run.tasks_done}/{run.tasks_total} done, {run.tasks_failed} failed")
            if line != last:
                self.stdout.write(line)
                last = line
            if run.status == "done":
                return
            if run.status == "failed":
                raise CommandError(f"run {run.id} failed: {run.error}")
            if time.monotonic() > deadline:
                raise CommandError(f"run {run.id} not done after {timeout:.0f} s; is a worker "
                                   "running? (celery -A config worker)")
            time.sleep(0.5)
