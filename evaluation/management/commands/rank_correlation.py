"""Agreement between the system orderings of two evaluations."""
import json

from django.core.management.base import BaseCommand, CommandError

from common.manifest_command import ManifestMixin, add_out_argument
from evaluation import ranking


class Command(ManifestMixin, BaseCommand):
    help = ("Kendall's tau_b, tau_ap (the first ordering is the reference) and the tie-aware "
            "tau_ap_a / tau_ap_b between two evaluations (evaluate --json outputs, or "
            "'system score' / 'system topic score' files); with --significance, a randomised "
            "Tukey HSD under each and the counts TR, PS, TR-PS, TR&PS, PS-TR; --measure-a and "
            "--measure-b compare two measures (AP against alpha_nDCG@20, say); with "
            "--intent-scores, per topic min/mean/max tau_b over every pair of its intents.")

    def add_arguments(self, parser):
        parser.add_argument("first", nargs="?", help="the reference evaluation")
        parser.add_argument("second", nargs="?", help="the evaluation compared with it")
        parser.add_argument("--measure", help="the measure to read from both evaluate --json outputs")
        parser.add_argument("--measure-a", metavar="MEASURE",
                            help="the measure of the first evaluation (e.g. AP), overriding --measure")
        parser.add_argument("--measure-b", metavar="MEASURE",
                            help="the measure of the second evaluation (e.g. alpha_nDCG@20), "
                                 "overriding --measure")
        parser.add_argument("--significance", action="store_true",
                            help="also compare significant differences (needs per-topic scores)")
        parser.add_argument("--trials", type=int, default=10_000, help="randomisation trials B (10,000)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
        parser.add_argument("--intent-scores", metavar="PATH",
                            help="a 'system query intent score' file: per-topic tau between intents")
        parser.add_argument("--json", action="store_true")
        add_out_argument(parser)

    def handle(self, *args, **o):
        try:
            result = self._compute(o)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        self.output_write(o["out"], json.dumps(result) + "\n" if o["json"] else _text(result))

    def _compute(self, o) -> dict:
        result: dict = {}
        if o["intent_scores"]:
            from evaluation.variance import read_intent_scores

            result["per_topic"] = ranking.intent_pair_taus(read_intent_scores(o["intent_scores"]))
        if o["first"] or o["second"]:
            if not (o["first"] and o["second"]):
                raise ValueError("give two evaluations to compare")
            a = ranking.read_scores(o["first"], o["measure_a"] or o["measure"])
            b = ranking.read_scores(o["second"], o["measure_b"] or o["measure"])
            result.update(ranking.correlations(ranking.system_means(a), ranking.system_means(b)))
            if o["significance"]:
                result["significance"] = ranking.significance_agreement(
                    ranking.topic_matrix(a, o["first"]), ranking.topic_matrix(b, o["second"]),
                    trials=o["trials"], seed=o["seed"], alpha=o["alpha"])
        elif o["measure_a"] or o["measure_b"]:
            raise ValueError("--measure-a and --measure-b need two evaluations")
        elif o["significance"]:
            raise ValueError("--significance needs two evaluations")
        if not result:
            raise ValueError("give two evaluations to compare, or --intent-scores PATH")
        return result


def _text(result: dict) -> str:
    lines = [f"{key}\t{result[key]}" for key in ("systems", "tau_b", "tau_ap", "tau_ap_a", "tau_ap_b")
             if key in result]
    if "significance" in result:
        s = result["significance"]
        lines.append("\t".join(f"{k} {s[k]}" for k in ("TR", "PS", "TR-PS", "TR&PS", "PS-TR")))
    for topic, t in result.get("per_topic", {}).items():
        lines.append(f"{topic}\tmin {t['min']:.4f}\tmean {t['mean']:.4f}\tmax {t['max']:.4f}")
    return "".join(line + "\n" for line in lines)
