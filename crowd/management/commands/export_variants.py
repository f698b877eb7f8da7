"""python manage.py export_variants --topic-set NAME --format {tsv,csv,json,queries} --out PATH"""
import json

from django.core.management.base import BaseCommand, CommandError

from common.fileio import OutputError, atomic_output
from common.manifest_command import ManifestMixin
from crowd.models import TopicSet
from crowd.selectors import VARIANT_EXPORT_FIELDS as COLUMNS  # a study export adds "simulated"
from crowd.selectors import variant_groups, variant_list_by_topic
from common.spreadsheet import spreadsheet_writer


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
            self._write(self.stdout, topic_set, fmt)
            return
        try:
            with atomic_output(out, newline="") as fh:
                n = self._write(fh, topic_set, fmt)
        except OutputError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror}") from None
        self.stderr.write(f"{n} line(s) written to {out}")

    def _write(self, fh, topic_set, fmt) -> int:
        if fmt == "queries":
            groups = variant_groups(topic_set)
            for g in groups:
                fh.write(f"{g.topic_id}/{g.label}\t{g.normalised}\n")
            return len(groups)
        rows = [
            [
                v.topic.topic_id,
                v.variant_id,
                v.worker_id,
                v.raw,
                v.normalised,
                v.count,
                v.estimate,
                v.uncorrected,
            ]
            for v in variant_list_by_topic(topic_set)
        ]
        if fmt == "json":
            records = [dict(zip(COLUMNS, r)) for r in rows]
            fh.write(json.dumps(records, ensure_ascii=False, indent=1) + "\n")
        elif fmt == "csv":
            writer = spreadsheet_writer(fh, COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        else:
            fh.write("\t".join(COLUMNS) + "\n")
            for r in rows:
                fh.write("\t".join(_one_line(c) for c in r) + "\n")
        return len(rows)


_BREAKS = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


def _one_line(value) -> str:
    return str(value).translate(_BREAKS)
