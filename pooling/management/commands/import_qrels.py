"""Import a TREC qrels file (ad hoc or diversity)."""
from django.core.management.base import BaseCommand, CommandError

from pooling import services


class Command(BaseCommand):
    help = (
        "Import relevance judgments: adhoc 'topic iter docid rel' or diversity "
        "'topic subtopic docid rel' (.gz accepted). All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=["adhoc", "diversity"])
        parser.add_argument("--name", required=True)

    def handle(self, *args, **o):
        try:
            qrels = services.qrels_import(o["path"], format=o["format"], name=o["name"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {qrels.judgments_count} judgments as qrels {qrels.name!r}")
