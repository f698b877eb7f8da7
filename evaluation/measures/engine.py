"""Measure names, and the evaluation of a :class:`RunSet` against qrels. No Django here.

Names follow ir_measures where it has one (``AP``, ``nDCG@20``, ``P@10``, ``R@100``, ``RR``,
``Rprec``, ``ERR@20``, ``RBP(p=0.8)``, with ``rel=N`` for the relevance level of the binary
measures, e.g. ``AP(rel=2)``), ndeval's diversity measures (``alpha_nDCG@k``, ``ERR_IA@k``,
``nERR_IA@k``, ``alpha_DCG@k``, ``NRBP``, ``nNRBP``, ``AP_IA``, ``P_IA@k``, ``StRecall@k``)
and NTCIREVAL's (``D-nDCG@k``, ``D#-nDCG@k``, ``I-rec@k``). ``RBP(p=…)`` also reports its
residual as ``RBP_resid(p=…)``. RBP is graded, as trec_eval's ``rbp`` (gain = grade ÷ the
topic's highest grade when that exceeds 1); ``RBP(p=…,rel=N)`` is binary, as ir_measures
names it (gain 1 for a grade of N or more, else 0). Each is declared once in
:mod:`.registry`, which is all this module reads to parse and compute them; a name it lacks
goes to ir_measures (:mod:`.fallback`).

Which topics: those of the qrels that the run has (trec_eval's default), or with
``complete`` every qrels topic, a topic the run lacks scoring 0 on every measure (trec_eval
``-c``). Topics of the run that the qrels lack are ignored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from common.fileio import InputError

from . import adhoc, diversity, fallback, ntcir
from .registry import FAMILY_QRELS, MAX_CUTOFF, MAX_REL, REGISTRY, Measure
from .runs import NONPOOL, PAD, PAD_CODE, UNJUDGED, Qrels, RunSet, natural_key

__all__ = ["MeasureSpec", "parse_measures", "check_measures", "evaluate_runs", "REGISTRY", "MAX_CUTOFF",
           "MAX_REL"]

BLOCK = 1 << 20  # ranked entries evaluated together

_NAME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z_#-]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>\d+))?$")


@dataclass(frozen=True)
class MeasureSpec:
    """One measure as asked for: its name, cutoff and every parameter's value (defaults
    filled in), with the declaration it came from."""

    name: str
    family: str
    cutoff: int | None
    params: tuple[tuple[str, object], ...] = ()
    measure: Measure | None = field(default=None, repr=False, compare=False)

    def get(self, name: str):
        """The value of parameter ``name`` (its default when not given)."""
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(f"{self.name} has no parameter {name!r}")

    @property
    def key(self) -> str:
        written = [self.measure.param(k).written(v) for k, v in self.params] if self.measure else []
        written = [w for w in written if w]
        params = f"({','.join(written)})" if written else ""
        return f"{self.name}{params}" + (f"@{self.cutoff}" if self.cutoff is not None else "")

    @property
    def keys(self) -> list[str]:
        """The names of the values this measure reports (RBP also reports its residual)."""
        key = self.key
        also = self.measure.also if self.measure else ()
        return [key] + [alt + key[len(self.name):] for alt in also]

    @property
    def qrels_kind(self) -> str:
        """The qrels the measure reads: ``adhoc`` or ``diversity``."""
        return FAMILY_QRELS[self.family]

    @property
    def convention(self) -> str | None:
        """How the measure treats grades where tools differ (RBP), for printing."""
        if self.measure is None or self.measure.convention is None:
            return None
        return self.measure.convention(self)


def _native(word: str) -> bool:
    try:
        parse_spec(word, fall_back=False)
    except InputError:
        return False
    return True


def parse_spec(word: str, fall_back: bool = True) -> MeasureSpec:
    """One measure from its name, e.g. ``AP(rel=2)``, ``nDCG@20``, ``RBP(p=0.9)``.

    A registered name follows its declaration. Any other name goes to ir_measures
    (:mod:`.fallback`) when ``fall_back``: ``Judged@10``, ``infAP``, ``Bpref``, ``SetF``; so
    does a registered name with a parameter it does not declare but ir_measures computes
    (``AP(judged_only=True)``). A registered name's cutoff rules are its own (``AP@10`` is
    refused)."""
    m = _NAME.match(word)
    if not m or m.group("name") not in REGISTRY:
        known = " ".join(REGISTRY)
        if not fall_back:
            raise InputError("--measures", None, f"unknown measure {word!r}; known: {known}")
        try:
            measure = fallback.resolve(word, _native)
        except InputError as exc:
            raise InputError(
                "--measures", None, f"unknown measure {word!r}; known: {known}; {exc.reason}"
            ) from None
        return MeasureSpec(measure.name, measure.family, None, (), measure)
    name = m.group("name")
    measure = REGISTRY[name]
    k = m.group("k")
    if measure.cutoff == "required" and k is None:
        raise InputError("--measures", None, f"{name} needs a cutoff, e.g. {name}@10")
    if measure.cutoff == "none" and k is not None:
        raise InputError("--measures", None, f"{name} takes no cutoff (got {word!r})")
    if k is not None and (len(k) > 7 or int(k) > MAX_CUTOFF):
        raise InputError("--measures", None,
                                   f"cutoff of {word[:40]!r} is too large (at most {MAX_CUTOFF})")
    if k is not None and int(k) < 1:
        raise InputError("--measures", None, f"cutoff of {word!r} must be at least 1")
    given = {}
    for part in filter(None, (s.strip() for s in (m.group("params") or "").split(","))):
        key, _, value = part.partition("=")
        key = key.strip()
        param = measure.param(key)
        if param is None:
            error = InputError("--measures", None, f"{name} has no parameter {key!r} (in {word!r})")
            if not fall_back:
                raise error
            try:  # a variant ir_measures computes, e.g. AP(judged_only=True)
                other = fallback.resolve(word, _native)
            except InputError:
                raise error from None
            return MeasureSpec(other.name, other.family, None, (), other)
        given[key] = param.parse(value, word)
    params = tuple((p.name, given.get(p.name, p.default)) for p in measure.params)
    return MeasureSpec(name, measure.family, int(k) if k is not None else None, params, measure)


def parse_measures(text: str | list[str]) -> list[MeasureSpec]:
    """Parse ``"AP nDCG@20 RBP(p=0.8)"`` (or a list of names) into specs, in order, once each."""
    names = text.split() if isinstance(text, str) else [w for t in text for w in t.split()]
    if not names:
        raise InputError("--measures", None, "give at least one measure")
    out: list[MeasureSpec] = []
    for word in names:
        spec = parse_spec(word)
        if spec not in out:
            out.append(spec)
    return out


# --------------------------------------------------------------------------- evaluation


def _lookup(vocab: np.ndarray | None, docids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the docids the runs retrieved, and which of ``docids`` those are; ``vocab``
    is the topic's sorted docids, so a docid's code is where it sits in them."""
    if vocab is None or not docids or not len(vocab):
        return np.zeros(0, dtype=np.int64), np.zeros(len(docids), dtype=bool)
    wanted = np.array(docids, dtype=str)
    at = np.searchsorted(vocab, wanted)
    hit = vocab[np.minimum(at, len(vocab) - 1)] == wanted
    return at[hit], hit


class AdhocInput:
    """What the ad hoc measures read: ``grades`` of every ranking ``(runs, topics, depth)``,
    each topic's relevant grades best first (``ideal``) and highest grade (``max_grade``);
    the number of relevant documents and the relevant hits per level, computed once each."""

    def __init__(self, grades, judged: list[np.ndarray], ideal, max_grade, qrels: Qrels):
        self.grades, self.ideal, self.max_grade, self.qrels = grades, ideal, max_grade, qrels
        self._judged = judged
        self._num_rel: dict[int, np.ndarray] = {}
        self._hits: dict[int, np.ndarray] = {}

    @property
    def top_grade(self) -> int:
        return int(self.ideal.max()) if self.ideal.size else 0

    def num_rel(self, level: int) -> np.ndarray:
        if level not in self._num_rel:
            self._num_rel[level] = np.array([np.count_nonzero(g >= level) for g in self._judged], dtype=np.int64)
        return self._num_rel[level]

    def hits(self, level: int) -> np.ndarray:
        if level not in self._hits:
            self._hits[level] = adhoc.relevant_hits(self.grades, level)
        return self._hits[level]


def _store(out: dict, spec: MeasureSpec, value, where=...) -> None:
    values = value if isinstance(value, tuple) else (value,)
    for key, v in zip(spec.keys, values, strict=True):
        if where is ...:
            out[key] = v
        else:
            out[key][where] = v


def _adhoc_values(codes, vocabs, qrels: Qrels, topics, specs) -> dict[str, np.ndarray]:
    n_runs, depth = codes.shape[0], codes.shape[-1]
    grades = np.full((n_runs, len(topics), depth), PAD, dtype=np.int16)
    judged_grades = []
    positives = []
    max_grade = np.zeros(len(topics))
    for j, t in enumerate(topics):
        judged = qrels.judgments[t]
        docids = list(judged)
        g = np.fromiter(judged.values(), dtype=np.int64, count=len(judged))
        judged_grades.append(g)
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
    x = AdhocInput(grades, judged_grades, ideal, max_grade, qrels)
    out: dict[str, np.ndarray] = {}
    for s in specs:
        _store(out, s, s.measure.compute(x, s))
    return out


def _intents(judged: dict) -> list[str]:
    return sorted(judged, key=natural_key)


class NdevalInput:
    """One topic, as ndeval's measures read it: which intents each ranked document is
    relevant to (``run_rel``, ``(runs, depth, intents)``), the alpha gains, the ideal gains,
    the number of intents with a relevant document and relevant documents per intent."""

    def __init__(self, run_rel, binary, docids):
        self.run_rel = run_rel
        self.n_intents = int(np.count_nonzero(binary.any(axis=0)))
        self.n_rel_intent = binary.sum(axis=0)
        self.ideal = diversity.ideal_gains(binary, np.asarray(docids, dtype=str))
        self.gains = diversity.alpha_gains(run_rel)


class NtcirInput:
    """One topic, as NTCIREVAL's measures read it: global gains of the ranked and of every
    judged document, and relevance to the intents that have a relevant document."""

    def __init__(self, run_rel_i, gg_run, gg_docs):
        self.run_rel_i, self.gg_run, self.gg_docs = run_rel_i, gg_run, gg_docs
        self._i_rec: dict[int, np.ndarray] = {}
        self._d_n: dict[int, np.ndarray] = {}

    def intent_recall(self, k: int) -> np.ndarray:
        if k not in self._i_rec:
            self._i_rec[k] = ntcir.intent_recall(self.run_rel_i, k)
        return self._i_rec[k]

    def d_ndcg(self, k: int) -> np.ndarray:
        if k not in self._d_n:
            self._d_n[k] = ntcir.d_ndcg(self.gg_run, self.gg_docs, k)
        return self._d_n[k]


def _diversity_values(codes, vocabs, qrels: Qrels, topics, specs, probabilities) -> dict[str, np.ndarray]:
    n_runs = codes.shape[0]
    out = {k: np.zeros((n_runs, len(topics))) for s in specs for k in s.keys}
    by_family = {f: [s for s in specs if s.family == f] for f in ("ndeval", "ntcir")}
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
        if by_family["ndeval"]:
            x = NdevalInput(run_rel, binary, docids)
            for s in by_family["ndeval"]:
                _store(out, s, s.measure.compute(x, s), (slice(None), j))
        if by_family["ntcir"]:
            relevant_intents = binary.any(axis=0)
            probs = _probabilities(t, intents, relevant_intents, probabilities, qrels)
            gg_docs = ntcir.global_gains(grades, probs)
            x = NtcirInput(run_rel[..., relevant_intents], np.where(judged_here, gg_docs[safe], 0.0), gg_docs)
            for s in by_family["ntcir"]:
                _store(out, s, s.measure.compute(x, s), (slice(None), j))
    return out


def _probabilities(topic, intents, relevant, given, qrels) -> np.ndarray:
    if given is None:
        n = int(relevant.sum())
        return np.where(relevant, 1.0 / n if n else 0.0, 0.0)
    if topic not in given:
        raise InputError(
            "--intent-probabilities", None, f"topic {topic!r} of {qrels.source} has no intent probabilities"
        )
    probs = given[topic]
    missing = [it for it, r in zip(intents, relevant) if r and it not in probs]
    if missing:
        raise InputError(
            "--intent-probabilities", None,
            f"topic {topic!r}: intent(s) {', '.join(map(repr, missing))} have relevant documents "
            "but no probability",
        )
    return np.array([probs.get(it, 0.0) for it in intents])


def check_measures(specs: list[MeasureSpec], qrels_kind: str, probabilities_given: bool = False) -> None:
    """Refuse measures the qrels cannot serve: ad hoc measures need ad hoc qrels, ndeval and
    NTCIREVAL measures diversity qrels; intent probabilities serve only NTCIREVAL's."""
    for kind, option in (("adhoc", "ad hoc qrels (--qrels-format adhoc)"),
                         ("diversity", "diversity qrels (--qrels-format diversity)")):
        wrong = [s.key for s in specs if s.qrels_kind == kind]
        if wrong and qrels_kind != kind:
            raise InputError("--measures", None, f"{' '.join(wrong)} need {option}")
    if probabilities_given and not any(s.family == "ntcir" for s in specs):
        raise InputError(
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
    {measure: value}}}}`` with topics in natural order (:func:`natural_key`)."""
    check_measures(specs, qrels.kind, intent_probabilities is not None)
    families = {s.family for s in specs}
    topics = qrels.topics
    external = [s for s in specs if s.family == fallback.FAMILY]
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
        vocabs = [None if p is None else runset.vocab[p] for p in positions]
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
                codes, vocabs, qrels, names, [s for s in specs if s.family in ("ndeval", "ntcir")],
                intent_probabilities,
            ))
        for key, v in part.items():
            values[key][:, start:start + len(names)] = v
    if external:
        values.update(fallback.evaluate(runset, qrels, external, topics))
    result = {}
    for r, tag in enumerate(runset.tags):
        chosen = np.nonzero(mask[r])[0]
        if not len(chosen):
            raise InputError(runset.sources[r], None, f"no topic of run {tag!r} is in the qrels")
        mean = {k: float(values[k][r, chosen].mean()) for k in keys}
        for s in external:
            mean[s.key] = fallback.aggregate(s, values[s.key][r, chosen].tolist())
        columns = [values[k][r, chosen].tolist() for k in keys]
        per_topic = {topics[j]: dict(zip(keys, row)) for j, row in zip(chosen.tolist(), zip(*columns))}
        result[tag] = {"mean": mean, "per_topic": per_topic}
    return result
