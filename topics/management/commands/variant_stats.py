"""python manage.py variant_stats --topic-set NAME [--json]"""
import json

from django.core.management.base import BaseCommand, CommandError

from topics.models import TopicSet
from topics.selectors import variant_stats


class Command(BaseCommand):
    help = (
        "Query-variant counts of a topic set: topics (all topics in the set); "
        "raw_variants (every answer including repeats = sum of counts); unique_variants "
        "(distinct normalised texts per topic, summed over topics); workers (distinct "
        "non-empty worker ids); per_topic min/mean/max of raw answers per topic, over all "
        "topics of the set (a topic without variants counts 0)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--json", action="store_true", help="print the numbers as JSON")

    def handle(self, *args, topic_set, **options):
        if not TopicSet.objects.filter(name=topic_set).exists():
            raise CommandError(f"topic set {topic_set!r} does not exist")
        stats = variant_stats(topic_set)
        if options["json"]:
            self.stdout.write(json.dumps(stats, sort_keys=True))
            return
        p = stats["per_topic"]
        self.stdout.write(
            f"topics           {stats['topics']}\n"
            f"raw variants     {stats['raw_variants']}  (answers incl. repeats)\n"
            f"unique variants  {stats['unique_variants']}  (distinct normalised, per topic)\n"
            f"workers          {stats['workers']}\n"
            f"answers/topic    min {p['min']}  mean {p['mean']:.2f}  max {p['max']}"
        )

