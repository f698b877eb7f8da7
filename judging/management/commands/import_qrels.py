"""Import a TREC qrels file (ad hoc or diversity), or the qrels of an ir_datasets dataset, as
a judgment set (qrels are a judgment set read from a file)."""
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common import irdatasets
from common.trec import ID_MAPS, QRELS_FORMATS

from judging import services


class Command(BaseCommand):
    help = (
        "Import relevance judgments: adhoc 'topic iter docid rel' or diversity "
        "'topic subtopic docid rel' (.gz accepted). All or nothing: a malformed line, a "
        "second grade for the same judgment, or a file in another format (e.g. SMART "
        "'query docid 0 0') is an error naming the line(s). --ir-datasets ID reads the "
        "qrels of an ir_datasets dataset from its local cache instead of a file. The "
        "judgments become a judgment set of that name, one label per line by the assessor "
        "'qrels'."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?")
        parser.add_argument("--format", choices=QRELS_FORMATS, default=None,
                            help="needed with PATH: adhoc, diversity, smart ('query docid …', "
                                 "each listed pair relevant: CACM's qrels.text, CISI/ADI .REL) "
                                 "or cranqrel (Cranfield's 'query docid code', graded 5 - "
                                 "code); ir_datasets qrels are adhoc")
        parser.add_argument("--ir-datasets", metavar="ID", dest="irds",
                            help="an ir_datasets dataset id (e.g. cranfield) instead of PATH")
        parser.add_argument("--name", required=True,
                            help="at most 100 characters, no spaces, '/' or '..'")
        parser.add_argument("--topic-set", dest="topic_set", default=None,
                            help="check that every topic id is a topic of this set (default: the "
                                 "one topic set holding every topic of the file, if any; when "
                                 "several do, none, with a warning naming them)")
        parser.add_argument("--id-map", dest="id_map", choices=ID_MAPS, default=None,
                            help="strip-zeros: write all-digit topic ids without leading "
                            "zeros ('01' -> '1', as CACM's qrels need)")
        parser.add_argument("--encoding", default="utf-8",
                            help="text encoding of the file (default utf-8; e.g. latin-1)")

    def handle(self, *args, **o):
        if bool(o["path"]) == bool(o["irds"]):
            raise CommandError("give a qrels file (PATH --format F) or --ir-datasets ID")
        if o["path"] and not o["format"]:
            raise CommandError("--format is needed with a qrels file")
        try:
            if o["irds"]:
                with tempfile.TemporaryDirectory(prefix="irds-qrels-") as tmp:
                    path = Path(tmp) / f"{o['irds'].replace('/', '_')}.qrels"
                    with open(path, "w", encoding="utf-8") as fh:
                        for topic, iteration, docid, grade in irdatasets.qrels(o["irds"]):
                            fh.write(f"{topic} {iteration} {docid} {grade}\n")
                    qrels = services.qrels_import(
                        path, format="adhoc", name=o["name"], topic_set_name=o["topic_set"],
                        id_map=o["id_map"])
            else:
                qrels = services.qrels_import(
                    o["path"], format=o["format"], name=o["name"],
                    topic_set_name=o["topic_set"], id_map=o["id_map"], encoding=o["encoding"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {qrels.labels_count} judgments as qrels {qrels.name!r}")
        warning = services.topic_set_ambiguity(qrels, "qrels")
        if warning:
            self.stderr.write(self.style.WARNING(warning))
