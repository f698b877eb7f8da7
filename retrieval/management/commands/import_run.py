"""python manage.py import_run PATH --topic-set T [--tag TAG]"""
from django.core.management.base import BaseCommand, CommandError

from retrieval.services import RetrievalError, system_run_import
from common.fileio import InputError


class Command(BaseCommand):
    help = (
        "Import a TREC run (qid Q0 docid rank score tag) as a system run of a topic set. "
        "Rankings are stored ordered by (-score, docid). All or nothing. .gz accepted."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--tag", default=None, help="defaults to the file's run tag")
        parser.add_argument("--encoding", default="utf-8",
                            help="text encoding of the file (default utf-8; e.g. latin-1)")

    def handle(self, *args, path, topic_set, tag, encoding, **options):
        try:
            run = system_run_import(path, topic_set_name=topic_set, tag=tag, encoding=encoding)
        except (InputError, RetrievalError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"run {run.id} ({run.tag}): {run.total} topics imported")
