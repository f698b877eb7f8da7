"""Variance components of per-intent scores, the query/intent allocation and subsampling."""
import json

from django.core.management.base import BaseCommand, CommandError

from common.fileio import atomic_output
from common.manifest_command import ManifestMixin, add_out_argument
from evaluation import analysis, variance
from evaluation.measures.runs import ORDERS


class Command(ManifestMixin, BaseCommand):
    manifest_side_outputs = ("save_scores",)

    help = ("REML variance components (statsmodels MixedLM) of 'system query intent score' "
            "scores (a header row naming the columns is read): model1 score ~ system + (1|query) on per-query means, model2 adds "
            "(1|query:system), model3 adds (1|query:intent); with --budget, the variance of "
            "the mean for every N queries x M intents = budget; with --subsample, Kendall's "
            "tau of collections with fewer queries or fewer intents (removed, and with --run merged).")

    def add_arguments(self, parser):
        parser.add_argument("--scores", help="a 'system query intent score' file")
        parser.add_argument("--run", action="append", default=[],
                            help="a TREC run (repeatable), scored per intent with --qrels")
        parser.add_argument("--qrels", help="diversity qrels (topic intent docid grade)")
        parser.add_argument("--measure", help="the ad hoc measure computed per intent (e.g. nDCG@10)")
        parser.add_argument("--order", choices=ORDERS, default="trec_eval",
                            help="ranking of each run with --run: trec_eval sorts by score, ties "
                                 "by docid descending (trec_eval's convention); rank keeps the "
                                 "file's rank column (default trec_eval)")
        parser.add_argument("--budget", type=int,
                            help="judged (query, intent) pairs N*M for the allocation table")
        parser.add_argument("--max-intents", type=int, help="largest M in the allocation table")
        parser.add_argument("--subsample", action="store_true",
                            help="tau between the full and subsampled collections")
        parser.add_argument("--fractions", default="0.2,0.4,0.6,0.8")
        parser.add_argument("--repeats", type=int, default=100)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--save-scores", metavar="PATH",
                            help="write the per-intent scores as 'system query intent score' "
                                 "(not covered by --manifest)")
        parser.add_argument("--json", action="store_true")
        add_out_argument(parser)

    def handle(self, *args, **o):
        try:
            scores = self._scores(o)
            result = variance.fit_models(scores, full=bool(o["budget"]))
            if o["budget"]:
                result["allocation"] = variance.allocation_table(result["full"], o["budget"],
                                                                 o["max_intents"])
            if o["subsample"]:
                fractions = [float(f) for f in o["fractions"].split(",") if f.strip()]
                result["subsample"] = variance.subsample_taus(scores, fractions, o["repeats"], o["seed"])
                if o["run"]:
                    result["subsample"] += analysis.merged_intent_taus(
                        o["run"], o["qrels"], o["measure"], fractions, o["repeats"], o["seed"],
                        order=o["order"])
            if o["save_scores"]:
                with atomic_output(o["save_scores"], newline="") as fh:
                    for r in scores.itertuples():
                        fh.write(f"{r.system}\t{r.query}\t{r.intent}\t{r.score!r}\n")
        except (ValueError, OSError) as exc:  # OutputError is a ValueError
            raise CommandError(str(exc)) from None
        self.output_write(o["out"], json.dumps(result) + "\n" if o["json"] else _text(result))

    def _scores(self, o):
        if o["scores"]:
            if o["run"] or o["qrels"]:
                raise ValueError("give either --scores or --run/--qrels/--measure")
            return variance.read_intent_scores(o["scores"])
        if not (o["run"] and o["qrels"] and o["measure"]):
            raise ValueError("give --scores PATH, or --run PATH… --qrels PATH --measure M")
        return analysis.intent_scores_from_runs(o["run"], o["qrels"], o["measure"],
                                                order=o["order"])


def _text(result: dict) -> str:
    lines = [model + "\t" + "\t".join(f"{k} {v:.6f}" for k, v in result[model].items())
             for model in ("model1", "model2", "model3", "full") if model in result]
    for row in result.get("allocation", []):
        lines.append(f"N {row['queries']}\tM {row['intents']}\tvar_mean {row['var_mean']:.6g}\t"
                     f"var_difference {row['var_difference']:.6g}")
    for row in result.get("subsample", []):
        lines.append(f"{row['kind']}\t{row['fraction']}\ttau mean {row['mean']:.4f}\t"
                     f"sd {row['sd']:.4f}")
    return "".join(line + "\n" for line in lines)
