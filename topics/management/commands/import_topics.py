"""python manage.py import_topics PATH --format {tsv,smart,trec,webxml} --topic-set NAME
python manage.py import_topics --ir-datasets ID --topic-set NAME"""
from django.core.management.base import BaseCommand, CommandError

from common import irdatasets
from common.fileio import InputError
from topics.services import ImportRejected, topics_import
from topics.topicfiles import (TOPIC_FORMATS, TopicRecord, iter_topics, text_check,
                              topic_id_check)


def irds_topics(dataset_id: str):
    """Topics of an ir_datasets dataset's queries: title (else the query text), description
    (else the text), narrative, and the statement the trec format gives (description, then
    narrative)."""
    source = f"ir_datasets:{dataset_id}"
    for n, (qid, f) in enumerate(irdatasets.queries(dataset_id), 1):
        text = f.get("text") or f.get("query") or ""
        title = f.get("title") or text
        description = f.get("description") or text
        narrative = f.get("narrative") or ""
        for value, what in ((title, "title"), (description, "description"),
                            (narrative, "narrative")):
            text_check(value, what, source, n)
        statement = "\n\n".join(v for v in (description, narrative) if v)
        yield TopicRecord(topic_id=topic_id_check(qid, source, n), title=title,
                          description=description, narrative=narrative,
                          statements=(statement,) if statement else (), source=source, line=n)


class Command(BaseCommand):
    help = (
        "Import topics (title, description, narrative, statements, intents) into a topic "
        "set, all or nothing. Formats: tsv (id, statement[, title]; comma-separated for "
        ".csv), smart (.I/.W query files), trec (<top> blocks; statement = description "
        "then narrative), webxml (TREC Web track topics with subtopics as intents). "
        ".gz files are read directly. --ir-datasets ID reads the queries of an ir_datasets "
        "dataset from its local cache instead of a file."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?")
        parser.add_argument("--format", choices=TOPIC_FORMATS, dest="fmt",
                            help="the file's format (needed with PATH)")
        parser.add_argument("--ir-datasets", metavar="ID", dest="irds",
                            help="an ir_datasets dataset id (e.g. cranfield) instead of PATH")
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

    def handle(self, *args, path, fmt, topic_set, encoding, ids, replace, irds, **options):
        if bool(path) == bool(irds):
            raise CommandError("give a topic file (PATH --format F) or --ir-datasets ID")
        if path and not fmt:
            raise CommandError("--format is needed with a topic file")
        try:
            if irds:
                records = irds_topics(irds)
                path = f"ir_datasets dataset {irds}"
            else:
                records = iter_topics(path, fmt, ids=ids, encoding=encoding)
            result = topics_import(topic_set, records, replace=replace, merge_rows=fmt == "tsv")
        except (InputError, ImportRejected, irdatasets.IrDatasetsError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{topic_set}: {result['created']} topic(s) created, "
            f"{result['replaced']} replaced from {path}"
        )
