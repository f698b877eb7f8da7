"""python manage.py export_variants --topic-set NAME --format {tsv,csv,json,queries} --out PATH"""
from django.core.management.base import BaseCommand, CommandError

from common.fileio import OutputError, atomic_output
from common.manifest_command import ManifestMixin
from topics.models import TopicSet
from topics.selectors import variants_write


class Command(ManifestMixin, BaseCommand):
    help = (
        "Export the query variants of a topic set. tsv/csv/json: one row per stored "
        "answer with columns topic, variant_id, worker, raw, normalised, count, estimate, "
        "uncorrected (the normalised text before spell-correction, if any; tsv: tabs and "
        "newlines inside text become spaces, every other character is kept exactly; csv, for "
        "spreadsheets: a text cell starting with =, +, -, @, tab or CR is prefixed with an "
        "apostrophe so spreadsheets do not run it as a formula; json keeps every text "
        "exactly). queries: a query file for "
        "retrieval, one line per distinct normalised variant of a topic, "
        "'<topic>/<label><TAB><normalised query>', where label is 'v' + the first 10 hex "
        "digits of the SHA-1 of the normalised text, so a query keeps its id whatever else "
        "is added; lines by topic, most frequent first. --out - writes to standard output; a "
        "file appears only once complete."
    )

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument(
            "--format", required=True, choices=["tsv", "csv", "json", "queries"], dest="fmt"
        )
        parser.add_argument("--out", required=True, help="output file, or - for stdout")

    def handle(self, *args, topic_set, fmt, out, **options):
        if not TopicSet.objects.filter(name=topic_set).exists():
            raise CommandError(f"topic set {topic_set!r} does not exist")
        if out == "-":
            variants_write(self.stdout, topic_set, fmt)
            return
        try:
            with atomic_output(out, newline="") as fh:
                n = variants_write(fh, topic_set, fmt)
        except OutputError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror}") from None
        self.stderr.write(f"{n} line(s) written to {out}")
