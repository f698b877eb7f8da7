"""python manage.py export_qrels --judgments N --format F [--aggregate A] --out PATH"""
from django.core.management.base import BaseCommand, CommandError

from common.fileio import atomic_output
from common.manifest_command import ManifestMixin
from judging import labelfiles, selectors


class Command(ManifestMixin, BaseCommand):
    help = (
        "Write a judgment set as qrels: diversity 'topic intent docid grade'; ndeval (junk "
        "as 0, intents with no relevant document dropped); adhoc 'topic 0 docid grade' (the "
        "topic-level labels, or one intent with --adhoc-intent); raw (every label with "
        "assessor, seconds, time and revision, tab separated); for a sampled set (a task in "
        "sample mode) also prels 'topic docid grade 1 probability' (statAP's, the judged "
        "documents) and sample-eval 'topic 0 docid stratum grade' (sample_eval.pl's, every "
        "pooled document, -1 = not judged). K labels are combined by --aggregate (majority, "
        "max, mean, median, assessor:NAME, dawid-skene)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--judgments", required=True, help="judgment set name")
        parser.add_argument("--format", required=True, choices=selectors.EXPORT_FORMATS)
        parser.add_argument("--aggregate", default="majority")
        parser.add_argument("--adhoc-intent", default=None)
        parser.add_argument("--out", required=True)

    def handle(self, *args, **o):
        try:
            jset = selectors.judgment_set_get(o["judgments"])
            if o["format"] == "raw":
                if o["adhoc_intent"] is not None or o["aggregate"] != "majority":
                    raise ValueError("raw lists every label: no --aggregate or --adhoc-intent")
                with atomic_output(o["out"]) as fh:
                    n = labelfiles.write_raw(fh, selectors.raw_rows(jset))
            elif o["format"] in selectors.SAMPLE_FORMATS:
                if o["adhoc_intent"] is not None:
                    raise ValueError("a sample is judged against the topic: no --adhoc-intent")
                with atomic_output(o["out"]) as fh:
                    n = selectors.sample_export_write(fh, jset, o["format"], o["aggregate"])
            else:
                lines = selectors.qrels_lines(jset, o["format"], aggregate=o["aggregate"],
                                              adhoc_intent=o["adhoc_intent"])
                with atomic_output(o["out"]) as fh:
                    n = labelfiles.write_qrels(fh, lines)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"wrote {n} lines to {o['out']}")
