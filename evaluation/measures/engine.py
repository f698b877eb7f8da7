"""Measure names, and the evaluation of a :class:`RunSet` against qrels. No Django here.

Names follow ir_measures where it has one (``AP``, ``nDCG@20``, ``P@10``, ``R@100``, ``RR``,
``Rprec``, ``ERR@20``, ``RBP(p=0.8)``, with ``rel=N`` for the relevance level of the binary
measures, e.g. ``AP(rel=2)``), ndeval's diversity measures (``alpha_nDCG@k``, ``ERR_IA@k``,
``nERR_IA@k``, ``alpha_DCG@k``, ``NRBP``, ``nNRBP``, ``AP_IA``, ``P_IA@k``, ``StRecall@k``)
and NTCIREVAL's (``D-nDCG@k``, ``D#-nDCG@k``, ``I-rec@k``). ``RBP(p=…)`` also reports its
residual as ``RBP_resid(p=…)``. RBP is graded, as trec_eval's ``rbp`` (gain = grade ÷ the
topic's highest grade when that exceeds 1); ``RBP(p=…,rel=N)`` is binary, as ir_measures
names it (gain 1 for a grade of N or more, else 0).

Which topics: those of the qrels that the run has (trec_eval's default), or with
``complete`` every qrels topic, a topic the run lacks scoring 0 on every measure (trec_eval
``-c``). Topics of the run that the qrels lack are ignored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import adhoc, diversity, ntcir
from .runs import NONPOOL, PAD, PAD_CODE, UNJUDGED, EvaluationInputError, Qrels, RunSet, topic_sort_key

__all__ = ["MeasureSpec", "parse_measures", "check_measures", "evaluate_runs", "MEASURES"]

# name -> (family, cutoff: "required" | "optional" | "none", allowed parameters)
MEASURES = {
    "AP": ("adhoc", "none", {"rel"}),
    "nDCG": ("adhoc", "optional", set()),
    "P": ("adhoc", "required", {"rel"}),
    "R": ("adhoc", "required", {"rel"}),
    "RR": ("adhoc", "none", {"rel"}),
    "Rprec": ("adhoc", "none", {"rel"}),
    "ERR": ("adhoc", "required", set()),
    "RBP": ("adhoc", "none", {"p", "rel"}),
    "alpha_nDCG": ("ndeval", "required", set()),
    "alpha_DCG": ("ndeval", "required", set()),
    "ERR_IA": ("ndeval", "required", set()),
    "nERR_IA": ("ndeval", "required", set()),
    "NRBP": ("ndeval", "none", set()),
    "nNRBP": ("ndeval", "none", set()),
    "AP_IA": ("ndeval", "none", set()),
    "P_IA": ("ndeval", "required", set()),
    "StRecall": ("ndeval", "required", set()),
    "D-nDCG": ("ntcir", "required", set()),
    "D#-nDCG": ("ntcir", "required", set()),
    "I-rec": ("ntcir", "required", set()),
}

BLOCK = 1 << 20  # ranked entries evaluated together

#: The deepest cutoff a measure may ask for (``P@1000000`` is the largest run depth anyone
#: stores; a longer number is a mistake, not a measure).
MAX_CUTOFF = 1_000_000
#: The highest grade ``rel=`` may name.
MAX_REL = 1_000

_NAME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z_#-]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>\d+))?$")


@dataclass(frozen=True)
class MeasureSpec:
    name: str
    family: str
    cutoff: int | None
    rel: int = 1
    p: float = 0.8
    binary: bool = False  # RBP only: rel=N given, binary gains

    @property
    def key(self) -> str:
        params = ""
        if self.name == "RBP":
            params = f"(p={self.p:g},rel={self.rel})" if self.binary else f"(p={self.p:g})"
        elif self.rel != 1:
            params = f"(rel={self.rel})"
        return f"{self.name}{params}" + (f"@{self.cutoff}" if self.cutoff is not None else "")

    @property
    def keys(self) -> list[str]:
        if self.name == "RBP":
            return [self.key, self.key.replace("RBP(", "RBP_resid(", 1)]
        return [self.key]

    @property
    def convention(self) -> str | None:
        """How the measure treats grades where tools differ (RBP only), for printing."""
        if self.name != "RBP":
            return None
        if self.binary:
            return f"{self.key}: binary gain, 1 for a grade of {self.rel} or more"
        return (f"{self.key}: graded gain, grade / the topic's highest grade when above 1 "
                "(trec_eval's rbp); RBP(p=…,rel=1) is the binary form")


def parse_measures(text: str | list[str]) -> list[MeasureSpec]:
    """Parse ``"AP nDCG@20 RBP(p=0.8)"`` (or a list of names) into specs, in order, once each."""
    names = text.split() if isinstance(text, str) else [w for t in text for w in t.split()]
    if not names:
        raise EvaluationInputError("--measures", None, "give at least one measure")
    out: list[MeasureSpec] = []
    for word in names:
        m = _NAME.match(word)
        if not m or m.group("name") not in MEASURES:
            known = " ".join(MEASURES)
            raise EvaluationInputError("--measures", None, f"unknown measure {word!r}; known: {known}")
        name = m.group("name")
        family, cut, allowed = MEASURES[name]
        k = m.group("k")
        if cut == "required" and k is None:
            raise EvaluationInputError("--measures", None, f"{name} needs a cutoff, e.g. {name}@10")
        if cut == "none" and k is not None:
            raise EvaluationInputError("--measures", None, f"{name} takes no cutoff (got {word!r})")
        if k is not None and int(k) < 1:
            raise EvaluationInputError("--measures", None, f"cutoff of {word!r} must be at least 1")
        if k is not None and (len(k) > 7 or int(k) > MAX_CUTOFF):
            raise EvaluationInputError("--measures", None,
                                       f"cutoff of {word[:40]!r} is too large (at most {MAX_CUTOFF})")
        kw = {}
        for part in filter(None, (s.strip() for s in (m.group("params") or "").split(","))):
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in allowed:
                raise EvaluationInputError("--measures", None, f"{name} has no parameter {key!r} (in {word!r})")
            try:
                if key == "rel":
                    kw["rel"] = int(value) if len(value.strip()) <= 7 else 0
                    if not 1 <= kw["rel"] <= MAX_REL:
                        raise ValueError
                else:
                    kw["p"] = float(value)
                    if not 0.0 < kw["p"] < 1.0:
                        raise ValueError
            except ValueError:
                want = f"a whole number from 1 to {MAX_REL}" if key == "rel" else "a number strictly between 0 and 1"
                raise EvaluationInputError("--measures", None, f"{key} in {word!r} must be {want}") from None
        if name == "RBP" and "rel" in kw:
            kw["binary"] = True
        spec = MeasureSpec(name, family, int(k) if k is not None else None, **kw)
        if spec not in out:
            out.append(spec)
    return out


# --------------------------------------------------------------------------- evaluation


def _lookup(vocab: dict[str, int] | None, docids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the docids the runs retrieved, and which of ``docids`` those are."""
    if vocab is None or not docids:
        return np.zeros(0, dtype=np.int64), np.zeros(len(docids), dtype=bool)
    found = np.fromiter((vocab.get(d, -1) for d in docids), dtype=np.int64, count=len(docids))
    hit = found >= 0
    return found[hit], hit


def _adhoc_values(codes, vocabs, qrels: Qrels, topics, specs) -> dict[str, np.ndarray]:
    n_runs, depth = codes.shape[0], codes.shape[-1]
    grades = np.full((n_runs, len(topics), depth), PAD, dtype=np.int16)
    levels = sorted({s.rel for s in specs})
    num_rel = {lv: np.zeros(len(topics), dtype=np.int64) for lv in levels}
    positives = []
    max_grade = np.zeros(len(topics))
    for j, t in enumerate(topics):
        judged = qrels.judgments[t]
        docids = list(judged)
        g = np.fromiter(judged.values(), dtype=np.int64, count=len(judged))
        for lv in levels:
            num_rel[lv][j] = np.count_nonzero(g >= lv)
        positives.append(np.sort(g[g > 0])[::-1])
        max_grade[j] = g[g >= 0].max() if (g >= 0).any() else 0
        vocab = vocabs[j]
        if vocab is None:
            continue
        table = np.full(len(vocab) + 1, NONPOOL, dtype=np.int16)
        table[-1] = PAD  # code -1, past the end of a ranking
        pos, hit = _lookup(vocab, docids)
        table[pos] = np.where(g[hit] < 0, UNJUDGED, g[hit])
        grades[:, j, :] = table[codes[:, j, :]]
    ideal = np.zeros((len(topics), max((len(p) for p in positives), default=0)), dtype=np.int64)
    for j, p in enumerate(positives):
        ideal[j, : len(p)] = p
    out: dict[str, np.ndarray] = {}
    hits = {lv: adhoc.relevant_hits(grades, lv) for lv in levels if any(
        s.rel == lv and s.name in ("AP", "RR", "Rprec") for s in specs)}
    if 1 not in hits and any(s.name == "nDCG" and s.cutoff is None for s in specs):
        hits[1] = adhoc.relevant_hits(grades, 1)
    for s in specs:
        if s.name == "AP":
            out[s.key] = adhoc.average_precision(grades, num_rel[s.rel], s.rel, hits=hits[s.rel])
        elif s.name == "P":
            out[s.key] = adhoc.precision(grades, s.cutoff, s.rel)
        elif s.name == "R":
            out[s.key] = adhoc.recall(grades, num_rel[s.rel], s.cutoff, s.rel)
        elif s.name == "RR":
            out[s.key] = adhoc.reciprocal_rank(grades, s.rel, hits=hits[s.rel])
        elif s.name == "Rprec":
            out[s.key] = adhoc.r_precision(grades, num_rel[s.rel], s.rel, hits=hits[s.rel])
        elif s.name == "nDCG":
            out[s.key] = adhoc.ndcg(grades, ideal, s.cutoff, hits=hits.get(1) if s.cutoff is None else None)
        elif s.name == "ERR":
            top = int(ideal.max()) if ideal.size else 0
            if top > 4:
                raise EvaluationInputError(
                    qrels.source, None, f"ERR (as gdeval) allows grades up to 4; the qrels have {top}"
                )
            out[s.key] = adhoc.err(grades, s.cutoff)
        elif s.name == "RBP":
            value, resid = adhoc.rbp(grades, s.p, max_grade, rel=s.rel if s.binary else None)
            out[s.keys[0]], out[s.keys[1]] = value, resid
    return out


def _intents(judged: dict) -> list[str]:
    return sorted(judged, key=topic_sort_key)


def _diversity_values(codes, vocabs, qrels: Qrels, topics, specs, probabilities) -> dict[str, np.ndarray]:
    n_runs = codes.shape[0]
    out = {k: np.zeros((n_runs, len(topics))) for s in specs for k in s.keys}
    want_ndeval = any(s.family == "ndeval" for s in specs)
    want_ntcir = any(s.family == "ntcir" for s in specs)
    for j, t in enumerate(topics):
        per_intent = qrels.judgments[t]
        intents = _intents(per_intent)
        docids = sorted({d for docs in per_intent.values() for d in docs})
        row = {d: i for i, d in enumerate(docids)}
        grades = np.zeros((len(docids), len(intents)), dtype=np.int64)
        for c, it in enumerate(intents):
            for d, g in per_intent[it].items():
                grades[row[d], c] = g
        vocab = vocabs[j]
        table = np.full((0 if vocab is None else len(vocab)) + 1, -1, dtype=np.int64)
        pos, hit = _lookup(vocab, docids)
        table[pos] = np.nonzero(hit)[0]
        idx = table[codes[:, j, :]]  # (runs, depth): row of the judged document, -1 otherwise
        judged_here = idx >= 0
        safe = np.where(judged_here, idx, 0)
        binary = grades > 0
        run_rel = binary[safe] & judged_here[..., None]  # (runs, depth, intents)
        if want_ndeval:
            n_intents = int(np.count_nonzero(binary.any(axis=0)))
            n_rel_intent = binary.sum(axis=0)
            ideal = diversity.ideal_gains(binary, np.asarray(docids, dtype=str))
            gains = diversity.alpha_gains(run_rel)
            for s in specs:
                k = s.cutoff
                if s.name == "alpha_nDCG":
                    v = diversity.alpha_ndcg(gains, ideal, k)
                elif s.name == "alpha_DCG":
                    v = diversity.alpha_dcg(gains, n_intents, k)
                elif s.name == "ERR_IA":
                    v = diversity.err_ia(gains, n_intents, k)
                elif s.name == "nERR_IA":
                    v = diversity.nerr_ia(gains, ideal, k)
                elif s.name == "NRBP":
                    v = diversity.nrbp(gains, n_intents)
                elif s.name == "nNRBP":
                    v = diversity.nnrbp(gains, ideal, n_intents)
                elif s.name == "AP_IA":
                    v = diversity.ap_ia(run_rel, n_rel_intent)
                elif s.name == "P_IA":
                    v = diversity.precision_ia(run_rel, n_intents, k)
                elif s.name == "StRecall":
                    v = diversity.subtopic_recall(run_rel, n_intents, k)
                else:
                    continue
                out[s.key][:, j] = v
        if want_ntcir:
            relevant_intents = binary.any(axis=0)
            probs = _probabilities(t, intents, relevant_intents, probabilities, qrels)
            gg_docs = ntcir.global_gains(grades, probs)
            gg_run = np.where(judged_here, gg_docs[safe], 0.0)
            run_rel_i = run_rel[..., relevant_intents]
            for s in specs:
                if s.family != "ntcir":
                    continue
                k = s.cutoff
                i_rec = ntcir.intent_recall(run_rel_i, k)
                d_n = ntcir.d_ndcg(gg_run, gg_docs, k)
                if s.name == "I-rec":
                    out[s.key][:, j] = i_rec
                elif s.name == "D-nDCG":
                    out[s.key][:, j] = d_n
                else:
                    out[s.key][:, j] = ntcir.d_sharp_ndcg(i_rec, d_n)
    return out


def _probabilities(topic, intents, relevant, given, qrels) -> np.ndarray:
    if given is None:
        n = int(relevant.sum())
        return np.where(relevant, 1.0 / n if n else 0.0, 0.0)
    if topic not in given:
        raise EvaluationInputError(
            "--intent-probabilities", None, f"topic {topic!r} of {qrels.source} has no intent probabilities"
        )
    probs = given[topic]
    missing = [it for it, r in zip(intents, relevant) if r and it not in probs]
    if missing:
        raise EvaluationInputError(
            "--intent-probabilities", None,
            f"topic {topic!r}: intent(s) {', '.join(map(repr, missing))} have relevant documents "
            "but no probability",
        )
    return np.array([probs.get(it, 0.0) for it in intents])


def check_measures(specs: list[MeasureSpec], qrels_kind: str, probabilities_given: bool = False) -> None:
    """Refuse measures the qrels cannot serve: ad hoc measures need ad hoc qrels, ndeval and
    NTCIREVAL measures diversity qrels; intent probabilities serve only NTCIREVAL's."""
    families = {s.family for s in specs}
    if "adhoc" in families and qrels_kind != "adhoc":
        names = " ".join(s.key for s in specs if s.family == "adhoc")
        raise EvaluationInputError("--measures", None, f"{names} need ad hoc qrels (--qrels-format adhoc)")
    if families & {"ndeval", "ntcir"} and qrels_kind != "diversity":
        names = " ".join(s.key for s in specs if s.family != "adhoc")
        raise EvaluationInputError("--measures", None, f"{names} need diversity qrels (--qrels-format diversity)")
    if probabilities_given and "ntcir" not in families:
        raise EvaluationInputError(
            "--intent-probabilities", None, "only D-nDCG, D#-nDCG and I-rec use intent probabilities"
        )


def evaluate_runs(
    runset: RunSet,
    qrels: Qrels,
    specs: list[MeasureSpec],
    order: str = "trec_eval",
    complete: bool = False,
    intent_probabilities: dict[str, dict[str, float]] | None = None,
) -> dict:
    """Evaluate every run; returns ``{tag: {"mean": {measure: value}, "per_topic": {topic:
    {measure: value}}}}`` with topics in :func:`topic_sort_key` order."""
    check_measures(specs, qrels.kind, intent_probabilities is not None)
    families = {s.family for s in specs}
    topics = qrels.topics
    index = {t: i for i, t in enumerate(runset.topics)}
    n_runs, depth = runset.codes.shape[0], runset.codes.shape[-1]
    has = np.zeros((n_runs, len(topics)), dtype=bool)
    for j, t in enumerate(topics):
        if t in index:
            has[:, j] = runset.lengths[:, index[t]] > 0
    mask = np.ones_like(has) if complete else has
    keys = [k for s in specs for k in s.keys]
    values = {k: np.zeros((n_runs, len(topics))) for k in keys}
    # a block of topics at a time keeps every temporary array small (about BLOCK entries)
    block = max(1, BLOCK // max(1, n_runs * depth))
    for start in range(0, len(topics), block):
        names = topics[start:start + block]
        positions = [index.get(t) for t in names]
        present = [p for p in positions if p is not None]
        ordered = runset.ordered_codes(order, present) if present else None
        vocabs = [None if p is None else runset.vocab_index[p] for p in positions]
        if len(present) == len(names):
            codes = ordered
        else:  # topics no run has: empty rankings
            codes = np.full((n_runs, len(names), depth), PAD_CODE, dtype=np.int32)
            if present:
                codes[:, [j for j, p in enumerate(positions) if p is not None], :] = ordered
        part: dict[str, np.ndarray] = {}
        if "adhoc" in families:
            part.update(_adhoc_values(codes, vocabs, qrels, names, [s for s in specs if s.family == "adhoc"]))
        if families & {"ndeval", "ntcir"}:
            part.update(_diversity_values(
                codes, vocabs, qrels, names, [s for s in specs if s.family != "adhoc"], intent_probabilities
            ))
        for key, v in part.items():
            values[key][:, start:start + len(names)] = v
    result = {}
    for r, tag in enumerate(runset.tags):
        chosen = np.nonzero(mask[r])[0]
        if not len(chosen):
            raise EvaluationInputError(runset.sources[r], None, f"no topic of run {tag!r} is in the qrels")
        mean = {k: float(values[k][r, chosen].mean()) for k in keys}
        columns = [values[k][r, chosen].tolist() for k in keys]
        per_topic = {topics[j]: dict(zip(keys, row)) for j, row in zip(chosen.tolist(), zip(*columns))}
        result[tag] = {"mean": mean, "per_topic": per_topic}
    return result
