"""python manage.py import_variants PATH --format {uqv100,robust04-uqv,tsv} --topic-set NAME"""
from django.core.management.base import BaseCommand, CommandError

from common.fileio import InputError
from topics.normalise import NORMALISATIONS
from topics.services import ImportRejected, variants_import
from topics.variantfiles import VARIANT_FORMATS, iter_variants


class Command(BaseCommand):
    help = (
        "Import query variants into a topic set, all or nothing; raw text, normalised "
        "text, worker ids, counts and estimates are kept. Formats: uqv100 "
        "(fields|...|UQV100.n|worker|estimate|...|count<TAB>query), robust04-uqv "
        "(topic-user-seq;query), tsv (topic, query[, worker[, count]]). .gz files are "
        "read directly. Topics missing from the set are an error listing all of them "
        "unless --create-topics."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=VARIANT_FORMATS, dest="fmt")
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--encoding", default="utf-8",
                            help="text encoding of the file (default utf-8; e.g. latin-1)")
        parser.add_argument(
            "--create-topics",
            action="store_true",
            help="create missing topics (id only), and the topic set if it does not exist",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="first delete the imported variants of the topics in the file "
            "(crowd-collected ones are kept), so re-importing does not double counts",
        )
        parser.add_argument(
            "--spell-correct",
            action="store_true",
            help="correct a word that is neither English nor the topic's towards a word "
            "one edit away that the topic's texts or two other answers use; the "
            "uncorrected text is kept",
        )
        parser.add_argument(
            "--normalise", choices=NORMALISATIONS, default="punctuation",
            help="the normalised text unique variants are counted by: punctuation (default: "
            "NFKC, lower case, apostrophes inside words dropped, other punctuation to "
            "spaces, single spaces), case (NFKC, lower case, single spaces), none (the "
            "file's own text)")
        parser.add_argument("--batch-size", type=int, default=2000)

    def handle(self, *args, path, fmt, topic_set, encoding, create_topics, replace, batch_size,
               spell_correct, normalise, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            records = iter_variants(path, fmt, encoding=encoding)
            result = variants_import(
                topic_set,
                records,
                create_topics=create_topics,
                replace=replace,
                batch_size=batch_size,
                spell_correct=spell_correct,
                normalise=normalise,
            )
        except (InputError, ImportRejected) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{topic_set}: {result['variants']} variant(s) imported, "
            f"{result['topics_created']} topic(s) created, {result['replaced']} replaced "
            f"from {path}"
            + (f"; {result['corrected']} spell-corrected" if spell_correct else "")
        )
