"""python manage.py demo [--from PATH] [--name demo] [--no-worker]"""
import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from projects import demo


class Command(BaseCommand):
    help = (
        "Build a small test collection end to end with SIMULATED people: index CACM, import "
        "its topics (statements) and qrels, fill a study with simulated workers (ids sim-01…), "
        "retrieve titles and variants with BM25 and SDM through the Celery worker, keep the "
        "title runs as system runs, build user/system/combined pools, create a judging task, "
        "judge part of it from CACM's qrels as the simulated assessor sim-assessor, evaluate "
        "(AP, P@10, nDCG@10) and print the pages to open. "
        "Simulated queries: the statement's content words (stopwords, one-letter words and "
        "repeats dropped), 2-5 of them kept at random, shuffled half of the time; seeded by "
        "--seed, the worker and the topic (a refused answer is retried with the next attempt "
        "number). Worker: by default the demo starts its own `celery -A config worker` on "
        "the configured broker and stops it at the end; with --no-worker it relies on one "
        "already running (bin/serve runs one). Without --from, Cranfield is fetched with "
        "ir_datasets (installed, and online unless its cache under IR_DATASETS_HOME already "
        "holds cranfield/cran.tar.gz)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="source", metavar="PATH",
                            help="a folder with CACM's cacm.all, query.text and cacm.qrels "
                                 "(or qrels.text)")
        parser.add_argument("--name", default="demo",
                            help="name of the collection, topic set, pools and task (default demo)")
        parser.add_argument("--topics", type=int, default=10,
                            help="topics with judgments to use (default 10)")
        parser.add_argument("--workers", type=int, default=5,
                            help="simulated workers, each answering every topic (default 5)")
        parser.add_argument("--depth", type=int, default=100, help="retrieval depth (default 100)")
        parser.add_argument("--pool-depth", type=int, default=10, help="pool depth (default 10)")
        parser.add_argument("--judge-fraction", type=float, default=0.5,
                            help="share of every topic's documents the simulated assessor "
                                 "judges (default 0.5)")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--no-worker", action="store_true",
                            help="do not start a Celery worker: one is already running")
        parser.add_argument("--timeout", type=float, default=600,
                            help="seconds to wait for retrieval (default 600)")
        parser.add_argument("--base-url",
                            default=f"http://127.0.0.1:{os.environ.get('PORT') or '8000'}",
                            help="where the web server runs, for the printed addresses "
                                 "(default http://127.0.0.1:$PORT, PORT as bin/serve reads it, "
                                 "else 8000)")

    def handle(self, *args, **o):
        worker = None
        try:
            with tempfile.TemporaryDirectory(prefix="demo-fetch-") as tmp:
                src = (demo.source_from_dir(o["source"]) if o["source"]
                       else demo.source_fetch(Path(tmp)))
                if not o["no_worker"]:
                    self.stdout.write("starting a Celery worker for the demo "
                                      "(stopped at the end; --no-worker to use yours)")
                    worker = demo.worker_start()
                result = demo.demo_run(
                    src, name=o["name"], topics=o["topics"], workers=o["workers"],
                    depth=o["depth"], pool_depth=o["pool_depth"],
                    judge_fraction=o["judge_fraction"], seed=o["seed"],
                    base_url=o["base_url"], worker=worker, timeout=o["timeout"],
                    progress=self.stdout.write)
        except (demo.DemoError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            if worker is not None:
                demo.worker_stop(worker)
        self.stdout.write("done. Open (signed in as staff):")
        for label, url in result.urls:
            self.stdout.write(f"  {label}: {url}")
