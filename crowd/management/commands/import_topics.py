"""python manage.py import_topics PATH --format {tsv,smart,trec,webxml} --topic-set NAME"""
from django.core.management.base import BaseCommand, CommandError

from crowd.services import ImportRejected, topics_import
from crowd.topicfiles import TOPIC_FORMATS, ParseError, iter_topics


class Command(BaseCommand):
    help = (
        "Import topics (title, description, narrative, statements, intents) into a topic "
        "set, all or nothing. Formats: tsv (id, statement[, title]; comma-separated for "
        ".csv), smart (.I/.W query files), trec (<top> blocks; statement = description "
        "then narrative), webxml (TREC Web track topics with subtopics as intents). "
        ".gz files are read directly."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=TOPIC_FORMATS, dest="fmt")
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--encoding", default="utf-8",
                            help="text encoding of the file (default utf-8; e.g. latin-1); "
                            "webxml files declare their own")
        parser.add_argument(
            "--ids",
            choices=["given", "position"],
            default="given",
            help="topic ids as written in the file (default) or 1, 2, ... by position "
            "(for judgments that number topics by position, e.g. Cranfield's cranqrel)",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="overwrite topics already in the set (fields, statements and intents; "
            "their query variants are kept); without it such ids are an error",
        )

    def handle(self, *args, path, fmt, topic_set, encoding, ids, replace, **options):
        try:
            records = iter_topics(path, fmt, ids=ids, encoding=encoding)
            result = topics_import(topic_set, records, replace=replace, merge_rows=fmt == "tsv")
        except (ParseError, ImportRejected) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{topic_set}: {result['created']} topic(s) created, "
            f"{result['replaced']} replaced from {path}"
        )
