"""Summary statistics of qrels: the judgments that count in a judgment set (an imported
qrels file is one)."""
import json

from django.core.management.base import BaseCommand, CommandError

from judging import selectors


class Command(BaseCommand):
    help = "Topics, intents, judged and relevant documents per topic, and grade counts."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        try:
            stats = selectors.qrels_summary(selectors.qrels_get(o["name"]))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if o["json"]:
            self.stdout.write(json.dumps(stats))
            return
        for key, value in stats.items():
            self.stdout.write(f"{key}: {value}")
