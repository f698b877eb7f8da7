"""User query variability in effectiveness: the spread over variants next to the spread over systems."""
import json

from django.core.management.base import BaseCommand, CommandError

from common.figures import csv_text
from common.fileio import atomic_output
from common.manifest_command import ManifestMixin, add_out_argument
from evaluation.measures.runs import ORDERS
from evaluation.variability import per_topic_rows, variability


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.4f}"


class Command(ManifestMixin, BaseCommand):
    manifest_side_outputs = ("csv",)

    help = ("Score every stored variant ranking and system run of a topic set with one measure and "
            "the same judgments; per topic, the spread over user variants next to the spread over "
            "systems; and the REML variance components (system, topic, topic x system, variant "
            "within topic) of the variants' scores under every retrieval model.")

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--judgments", metavar="NAME", help="a stored judgment set (majority labels)")
        source.add_argument("--qrels", metavar="NAME", help="imported qrels (import_qrels)")
        parser.add_argument("--measure", required=True, help="one measure, e.g. nDCG@10, AP, alpha_nDCG@20")
        parser.add_argument("--model", help="the retrieval model of the variant rankings (needed when "
                                            "the variants were run through more than one)")
        parser.add_argument("--order", choices=ORDERS, default="trec_eval",
                            help="tie order, as for evaluate (default trec_eval)")
        parser.add_argument("--no-decomposition", action="store_true", help="skip the mixed models")
        parser.add_argument("--csv", metavar="PATH", help="write the per-topic spreads as CSV "
                                                          "(not covered by --manifest)")
        parser.add_argument("--json", action="store_true")
        add_out_argument(parser)

    def handle(self, *args, **o):
        try:
            result = variability(o["topic_set"], measure=o["measure"], judgments=o["judgments"],
                                 qrels=o["qrels"], model=o["model"], order=o["order"],
                                 decompose=not o["no_decomposition"])
            if o["csv"]:
                with atomic_output(o["csv"], newline="") as fh:
                    fh.write(csv_text(per_topic_rows(result)))
        except (ValueError, OSError) as exc:  # OutputError is a ValueError
            raise CommandError(str(exc)) from None
        self.output_write(o["out"], json.dumps(result) + "\n" if o["json"] else _text(result))


def _text(result: dict) -> str:
    lines = [f"{result['measure']} on {result['qrels']}: variants of {result['model']}, "
             f"{len(result['systems'])} system run(s)",
             "topic\tvariants\tsd\tiqr\tsystems\tsd\tiqr"]
    for t in result["per_topic"]:
        v, s = t["variants"], t["systems"]
        lines.append(f"{t['topic']}\t{v['n']}\t{_fmt(v['sd'])}\t{_fmt(v['iqr'])}\t"
                     f"{s['n']}\t{_fmt(s['sd'])}\t{_fmt(s['iqr'])}")
    ov = result["overall"]
    lines.append(f"mean sd: variants {_fmt(ov['mean_sd_variants'])}, systems "
                 f"{_fmt(ov['mean_sd_systems'])}; variants wider on "
                 f"{ov['topics_variants_wider']} of {ov['topics_compared']} topics")
    d = result["decomposition"]
    if d:
        lines.append("components\t" + "\t".join(f"{k} {v:.6f}" for k, v in d["components"].items()))
    elif result["decomposition_note"]:
        lines.append(f"no decomposition: {result['decomposition_note']}")
    return "".join(line + "\n" for line in lines)
