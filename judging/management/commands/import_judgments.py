"""python manage.py import_judgments PATH --format F --name N [--topic-set T] [--assessor A]"""
from django.core.management.base import BaseCommand, CommandError

from judging import services
from judging.labelfiles import FORMATS


class Command(BaseCommand):
    help = (
        "Import judgments as a new judgment set. adhoc / diversity: TREC qrels by one "
        "assessor (--assessor, default nist); tsv: 'topic intent docid assessor grade' "
        "(optional header; intent 0 or empty = none); trec-rf10: the TREC 2010 relevance "
        "feedback crowd file 'topicID workerID docID gold label' (the crowd labels); "
        "trec-rf10-gold: its NIST gold column as one assessor. All or nothing; .gz accepted."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--name", required=True)
        parser.add_argument("--topic-set", default=None,
                            help="check every topic (and intent) against this topic set; without it, the "
                                 "one topic set holding every topic of the file, if any (a "
                                 "warning names the candidates when several do)")
        parser.add_argument("--assessor", default="nist")

    def handle(self, *args, **o):
        try:
            jset = services.judgments_import(
                o["path"], format=o["format"], name=o["name"], topic_set_name=o["topic_set"],
                assessor=o["assessor"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {jset.labels_count} labels as judgment set {jset.name!r}")
        warning = services.topic_set_ambiguity(jset)
        if warning:
            self.stderr.write(self.style.WARNING(warning))
