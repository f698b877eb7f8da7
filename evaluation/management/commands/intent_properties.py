"""Coherence, distinctness, plausibility and completeness of a topic set's intents."""
import json

from django.core.management.base import BaseCommand, CommandError

from common.manifest_command import ManifestMixin, add_out_argument
from evaluation import analysis, intents


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


class Command(ManifestMixin, BaseCommand):
    help = ("Intent properties (Radlinski, Szummer & Craswell 2010): coherence, distinctness, "
            "plausibility and completeness, with curves over beta.")

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", help="only the topics of this stored topic set")
        parser.add_argument("--judgments", help="the stored judgment set of the intent judgments")
        parser.add_argument("--user-judgments", help="the stored judgment set of the users' own judgments")
        parser.add_argument("--labels", help="intent judgments as a file (topic intent docid assessor grade)")
        parser.add_argument("--user-labels", help="users' judgments as a file (the intent column is ignored)")
        parser.add_argument("--alpha", type=float, default=0.5)
        parser.add_argument("--beta", type=float, default=0.5)
        parser.add_argument("--similarity", choices=intents.SIMILARITIES, default="jaccard")
        parser.add_argument("--relevant-from", type=int, default=1)
        parser.add_argument("--consensus", type=float, default=0.5,
                            help="share of an intent's assessors that must find a document "
                                 "relevant for it to be in the intent's relevant set (0.5)")
        parser.add_argument("--json", action="store_true")
        add_out_argument(parser)

    def handle(self, *args, **o):
        try:
            labels = analysis.labels_load(o["judgments"], o["labels"])
            users = None
            if o["user_judgments"] or o["user_labels"]:
                users = analysis.labels_load(o["user_judgments"], o["user_labels"])
            topics = analysis.topic_set_topics(o["topic_set"]) if o["topic_set"] else None
            result = intents.intent_properties(
                labels, users, alpha=o["alpha"], beta=o["beta"], kind=o["similarity"],
                relevant_from=o["relevant_from"], consensus=o["consensus"], topics=topics)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.output_write(o["out"], json.dumps(result) + "\n" if o["json"] else _text(result))


def _text(result: dict) -> str:
    ov = result["overall"]
    lines = [f"topics {ov['topics']}  intents {ov['intents']}  "
             f"coherent {ov['coherent_intents']}  "
             f"distinct topics {ov['distinct_topics']}"
             + (f"  plausible {ov['plausible_intents']}  mean completeness "
                f"{_fmt(ov['mean_completeness'])}" if "plausible_intents" in ov else "")]
    for topic, entry in result["per_topic"].items():
        for intent, e in entry["intents"].items():
            lines.append(f"{topic}\t{intent}\tcoherence {_fmt(e['coherence'])}\t"
                         f"plausibility {_fmt(e.get('plausibility'))}")
        lines.append(f"{topic}\tdistinctness {_fmt(entry['distinctness']['min'])}\t"
                     f"completeness {_fmt(entry.get('completeness'))}")
    return "".join(line + "\n" for line in lines)
