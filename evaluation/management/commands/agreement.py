"""Agreement between assessors, per intent, per topic and overall."""
import json

from django.core.management.base import BaseCommand, CommandError

from common.manifest_command import ManifestMixin, add_out_argument
from evaluation import analysis
from evaluation.agreement import LEVELS


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.4f}"


class Command(ManifestMixin, BaseCommand):
    help = ("Cohen's κ (pairs, unweighted and linear), Fleiss' κ, Krippendorff's α (nominal, "
            "ordinal, interval), Jaccard of relevant sets and α-coherence.")

    def add_arguments(self, parser):
        parser.add_argument("--judgments", help="a stored judgment set")
        parser.add_argument("--labels", help="a labels file instead of a stored judgment set")
        parser.add_argument("--format", choices=analysis.LABEL_FORMATS, default="tsv",
                            help="labels file format: tsv (topic intent docid assessor grade) "
                                 "or trec-rf10 (the TREC 2010 crowd file)")
        parser.add_argument("--ignore-grade", type=int, action="append", default=[],
                            help="read labels with this grade as missing (repeatable; e.g. -2, "
                                 "a broken link in the TREC 2010 crowd data, which --format "
                                 "trec-rf10 already drops)")
        parser.add_argument("--intent", help="only this intent id")
        parser.add_argument("--relevant-from", type=int, default=1,
                            help="the lowest grade that counts as relevant (default 1)")
        parser.add_argument("--coherence", type=float, default=0.5,
                            help="α of α-coherence: the least mean Jaccard similarity (default 0.5)")
        parser.add_argument("--min-shared", type=int, default=2,
                            help="pairs of assessors need this many shared items for Cohen's κ")
        parser.add_argument("--json", action="store_true")
        add_out_argument(parser)

    def handle(self, *args, **o):
        try:
            labels = analysis.labels_load(o["judgments"], o["labels"], o["format"], tuple(o["ignore_grade"]))
            summary = analysis.agreement_report(
                labels, intent=o["intent"], relevant_from=o["relevant_from"],
                coherence_alpha=o["coherence"], min_shared=o["min_shared"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.output_write(o["out"], json.dumps(summary) + "\n" if o["json"] else _text(summary))


def _text(summary: dict) -> str:
    s = summary["overall"]
    lines = [f"items {s['items']}  labels {s['labels']}  categories {summary['categories']}",
             f"Fleiss' kappa           {_fmt(s['fleiss_kappa'])}"]
    for level in LEVELS:
        lines.append(f"Krippendorff's alpha    {_fmt(s['krippendorff_alpha'][level])} ({level})")
    c = s["cohen_kappa"]
    lines.append(f"Cohen's kappa           {_fmt(c['unweighted'])} unweighted, "
                 f"{_fmt(c['linear'])} linear, mean of {c['pairs']} assessor pairs")
    lines.append(f"Jaccard (relevant sets) {_fmt(s['jaccard']['mean'])} "
                 f"(mean of {s['jaccard']['pairs']} pairs)")
    h = s["coherence"]
    lines.append(f"coherent intents        {h['coherent_intents']} of {h['intents']} "
                 f"at alpha {h['threshold']}")
    return "".join(line + "\n" for line in lines)
