"""python manage.py export_run --topic-set T (--collection C --model M [--source S] | --tag TAG)
--out PATH"""
from django.core.management.base import BaseCommand, CommandError

from common.fileio import atomic_output
from common.manifest_command import ManifestMixin
from common.trec import write_run
from retrieval.selectors import run_find, run_rankings


class Command(ManifestMixin, BaseCommand):
    help = (
        "Write a run in TREC format. Query ids: the topic id for title, description and "
        "system runs; '<topic id>:<variant label>' for variant runs (one line group per "
        "distinct variant). Without --tag, the newest finished run of that collection and "
        "model (and --source) is written. The file appears only once complete."
    )

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--collection")
        parser.add_argument("--model")
        parser.add_argument("--source", choices=["titles", "descriptions", "variants"])
        parser.add_argument("--tag")
        parser.add_argument("--out", required=True)

    def handle(self, *args, topic_set, collection, model, source, tag, out, **options):
        try:
            run = run_find(topic_set_name=topic_set, collection_name=collection,
                           model_name=model, source=source, tag=tag)
            run_tag = run.tag or f"{run.model.name}-{run.source}"
            with atomic_output(out) as f:
                n = write_run(f, run_rankings(run), run_tag)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"run {run.id}: {n} lines written to {out}")
