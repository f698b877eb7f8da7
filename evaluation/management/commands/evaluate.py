"""Evaluate TREC runs against qrels with the measures of trec_eval, gdeval, ndeval and NTCIREVAL,
or estimate them from a judged sample (--estimator)."""
import json

from django.core.management.base import BaseCommand, CommandError

from common.fileio import InputError
from common.manifest_command import ManifestMixin, add_out_argument
from evaluation import estimators, selectors
from evaluation.measures import (RunSet, evaluate_runs, parse_measures,
                                 read_intent_probabilities, read_qrels, read_runs)
from evaluation.measures.engine import check_measures
from evaluation.measures.registry import measure_names
from evaluation.measures.runs import ORDERS, read_run_rankings
from judging.prels import read_prels


class Command(ManifestMixin, BaseCommand):
    help = ("Score run files with ad hoc (" + measure_names("adhoc") + "), ndeval diversity ("
            + measure_names("ndeval") + ") and NTCIREVAL (" + measure_names("ntcir") + ") measures; "
            "any other measure ir_measures computes here (e.g. Judged@10, infAP, Bpref, SetF) goes "
            "through ir_measures, and a note after the values says so. With --estimator, the "
            "measures (AP, nDCG, nDCG@k, P@k) are estimated from a judged sample — a sampled "
            "judgment set (--judgments) or a TREC prels file (--prels) — with 95% intervals: "
            "infap (Yilmaz & Aslam's infAP, one stratum), xinf (xinfAP and infNDCG as TREC's "
            "sample_eval.pl computes them) or statap (statAP as statAP_MQ_eval_v3.pl).")

    def add_arguments(self, parser):
        parser.add_argument("--run", action="append", default=[], metavar="PATH",
                            help="a TREC run file (topic Q0 docid rank score tag); repeat for more runs")
        parser.add_argument("--topic-set", help="evaluate stored runs of this topic set")
        parser.add_argument("--tag", action="append", default=[],
                            help="a stored run by tag (repeatable; with --topic-set)")
        parser.add_argument("--collection", help="with --model: the newest finished stored run")
        parser.add_argument("--model")
        qrels = parser.add_mutually_exclusive_group(required=True)
        qrels.add_argument("--qrels", metavar="PATH", help="a qrels file")
        qrels.add_argument("--judgments", metavar="NAME",
                           help="a stored judgment set (labels combined by majority)")
        qrels.add_argument("--prels", metavar="PATH",
                           help="with --estimator: a sampled judgment file (--prels-format)")
        parser.add_argument("--estimator", choices=estimators.ESTIMATORS,
                            help="estimate the measures from a judged sample (a sampled judgment "
                                 "set or --prels), each with a 95%% interval")
        parser.add_argument("--prels-format", choices=("sample-eval", "prels"), default="sample-eval",
                            help="sample-eval: sample_eval.pl's 'topic 0 docid stratum grade', every "
                                 "pooled document (-1: not judged); prels: statAP's 'topic docid "
                                 "grade method probability', the judged documents")
        parser.add_argument("--qrels-format", choices=("adhoc", "diversity"), default="adhoc",
                            help="adhoc: topic iteration docid grade; diversity: topic intent docid grade "
                                 "(for --judgments: which labels to use)")
        parser.add_argument("--adhoc-intent", metavar="I",
                            help="with --judgments and adhoc qrels: one intent's labels instead "
                                 "of those made for the topic as a whole (NIST's qrels.adhoc.txt "
                                 "is intent 1)")
        parser.add_argument("--measures", required=True,
                            help='space-separated names, e.g. "AP nDCG@20 P@10 RBP(p=0.8)"')
        parser.add_argument("--order", choices=ORDERS, default="trec_eval",
                            help="trec_eval (default): score descending, ties by docid descending; "
                                 "rank: the rank column, as ndeval and NTCIREVAL read runs")
        parser.add_argument("--complete", action="store_true",
                            help="average over every qrels topic, missing ones scoring 0 (trec_eval -c)")
        parser.add_argument("--intent-probabilities", metavar="PATH",
                            help="topic intent probability lines for the D-measures "
                                 "(default: uniform over the intents with a relevant document)")
        parser.add_argument("--per-topic", action="store_true", help="also print every topic's values")
        parser.add_argument("--json", action="store_true",
                            help='print {"runs": {TAG: {"mean": {…}, "per_topic": {TOPIC: {…}}}}}')
        add_out_argument(parser)

    def handle(self, *args, **o):
        if o["estimator"] or o["prels"]:
            return self._estimate(o)
        try:
            specs = parse_measures(o["measures"])
            if o["adhoc_intent"] is not None and (o["qrels"] or o["qrels_format"] != "adhoc"):
                raise InputError("--adhoc-intent", None,
                                 "is only for --judgments with adhoc qrels (--qrels-format adhoc)")
            if o["qrels"]:
                qrels = read_qrels(o["qrels"], o["qrels_format"])
            else:
                qrels = selectors.judgment_set_qrels(o["judgments"], o["qrels_format"],
                                                     adhoc_intent=o["adhoc_intent"])
            check_measures(specs, qrels.kind, bool(o["intent_probabilities"]))
            probs = read_intent_probabilities(o["intent_probabilities"]) if o["intent_probabilities"] else None
            runs = read_runs(o["run"]) if o["run"] and not (
                o["topic_set"] or o["tag"] or o["collection"] or o["model"]) else (
                RunSet.from_rankings(self._runs(o)))
            result = evaluate_runs(runs, qrels, specs, order=o["order"], complete=o["complete"],
                                   intent_probabilities=probs)
        except InputError as exc:
            raise CommandError(str(exc)) from None
        self.output_write(o["out"], self._report(result, specs, o))

    def _estimate(self, o) -> None:
        try:
            if not o["estimator"]:
                raise InputError("--prels", None, "a prels file is read by an estimator: give "
                                 f"--estimator ({', '.join(estimators.ESTIMATORS)})")
            if o["qrels"]:
                raise InputError("--qrels", None, "an estimator reads a sample: give a sampled "
                                 "judgment set (--judgments) or a prels file (--prels)")
            for option in ("adhoc_intent", "intent_probabilities"):
                if o[option]:
                    raise InputError(f"--{option.replace('_', '-')}", None,
                                     "is not for estimates from a sample")
            measures = estimators.parse_estimated_measures(o["measures"])
            samples = (read_prels(o["prels"], o["prels_format"]) if o["prels"]
                       else selectors.judgment_set_sampled_sample(o["judgments"]))
            runs = [(tag, estimators.run_rankings(per, o["order"])) for tag, _, per in self._runs(o)]
            result = estimators.estimate_runs(runs, samples, measures, o["estimator"])
        except InputError as exc:
            raise CommandError(str(exc)) from None
        names = estimators.estimated_names(o["estimator"], measures)
        self.output_write(o["out"], self._estimate_report(result, measures, names, o))

    @staticmethod
    def _estimate_report(result: dict, measures, names: dict, o) -> str:
        note = (f"{o['estimator']}: " + ", ".join(f"{k} is {v}" for k, v in names.items())
                + "; 95% intervals from the stratified jackknife, spanning the estimate and its "
                "bias-corrected value (evaluation.estimators)")
        if o["json"]:
            return json.dumps({"runs": result, "estimator": o["estimator"], "estimated_as": names,
                               "confidence": 0.95, "conventions": [note]}) + "\n"
        keys = [m.key for m in measures]
        width = max(len(k) for k in keys)
        lines = []

        def line(tag, key, topic, v):
            lines.append(f"{tag}\t{key:<{width}}\t{topic}\t{v['estimate']:.4f}\t"
                         f"[{v['low']:.4f}, {v['high']:.4f}]")

        for tag, r in result.items():
            if o["per_topic"]:
                for topic, values in r["per_topic"].items():
                    for k in keys:
                        line(tag, k, topic, values[k])
            for k in keys:
                line(tag, k, "all", r["mean"][k])
        lines.append(f"# {note}")
        return "".join(x + "\n" for x in lines)

    @staticmethod
    def _report(result: dict, specs, o) -> str:
        notes = [s.convention for s in specs if s.convention]
        if o["json"]:
            out = {"runs": result}
            if notes:
                out["conventions"] = notes
            return json.dumps(out) + "\n"
        keys = [k for s in specs for k in s.keys]
        width = max(len(k) for k in keys)
        lines = []
        for tag, r in result.items():
            if o["per_topic"]:
                for topic, values in r["per_topic"].items():
                    for k in keys:
                        lines.append(f"{tag}\t{k:<{width}}\t{topic}\t{values[k]:.4f}")
            for k in keys:
                lines.append(f"{tag}\t{k:<{width}}\tall\t{r['mean'][k]:.4f}")
        lines += [f"# {note}" for note in notes]
        return "".join(line + "\n" for line in lines)

    @staticmethod
    def _runs(o) -> list[tuple[str, str, dict]]:
        if (o["tag"] or o["collection"] or o["model"]) and not o["topic_set"]:
            raise InputError("--tag/--collection/--model", None, "stored runs need --topic-set")
        if not o["run"] and not o["topic_set"]:
            raise InputError("--run", None, "give run files (--run) or stored runs (--topic-set)")
        runs = []
        for path in o["run"]:
            tag, per = read_run_rankings(path)
            runs.append((tag, str(path), per))
        if o["topic_set"]:
            runs += selectors.stored_runs(topic_set=o["topic_set"], tags=o["tag"],
                                                   collection=o["collection"], model=o["model"])
        return runs
