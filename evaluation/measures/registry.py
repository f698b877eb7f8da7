"""Every measure ``evaluate`` computes natively, declared once. No Django here.

As in ir_measures, a measure is a record: its name, the family that computes it (``adhoc``:
trec_eval and gdeval on ad hoc qrels; ``ndeval`` and ``ntcir``: the diversity tools on
per-intent qrels), whether it takes a cutoff, its parameters with their types, defaults and
checks, the reference tool whose convention it follows (the tool a test compares it with),
and the function that computes it. :func:`register` adds one; the engine parses names and
evaluates through :data:`REGISTRY` alone, so adding a measure touches this file only.

A compute function gets the family's prepared input (see the engine: ``adhoc`` gets the
grades of every ranking, ``(runs, topics, depth)``; ``ndeval`` and ``ntcir`` get one topic's
gains) and the parsed :class:`~evaluation.measures.engine.MeasureSpec`, and returns one
array of values, or one per key when the measure reports more than one (RBP and its
residual).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from . import adhoc, diversity, ntcir
from common.fileio import InputError

__all__ = ["Param", "Measure", "REGISTRY", "register", "FAMILY_QRELS", "measure_names", "MAX_CUTOFF",
           "MAX_REL"]

#: which qrels each family reads (``ir_measures``: measures computed through ir_measures,
#: see :mod:`.fallback`; they are never registered here)
FAMILY_QRELS = {"adhoc": "adhoc", "ndeval": "diversity", "ntcir": "diversity", "ir_measures": "adhoc"}


@dataclass(frozen=True)
class Param:
    """A parameter written ``name=value`` inside the measure's parentheses.

    ``shown``: ``"changed"`` writes it in the measure's key only when it differs from the
    default (``AP(rel=2)``, but ``AP`` for ``rel=1``); ``"always"`` writes it every time
    (``RBP(p=0.8)``). A default of ``None`` means "not given", and a given value is shown."""

    name: str
    type: type
    default: Any
    check: Callable[[Any], bool]
    want: str  # what the check accepts, for the error message
    help: str = ""
    shown: str = "changed"

    def parse(self, text: str, word: str):
        try:
            value = self.type(text) if len(text.strip()) <= 32 else None
        except ValueError:
            value = None
        if value is None or not self.check(value):
            raise InputError("--measures", None, f"{self.name} in {word[:60]!r} must be {self.want}")
        return value

    def written(self, value) -> str | None:
        """``name=value`` as the key writes it, or None when the key leaves it out."""
        if self.shown != "always" and value == self.default:
            return None
        return f"{self.name}={value:g}" if self.type is float else f"{self.name}={value}"


@dataclass(frozen=True)
class Measure:
    name: str
    family: str  # adhoc | ndeval | ntcir
    cutoff: str  # required | optional | none
    tool: str  # the reference tool and its name for the measure, whose convention this follows
    compute: Callable | None = field(repr=False, compare=False)
    params: tuple[Param, ...] = ()
    also: tuple[str, ...] = ()  # further values reported under these names (RBP_resid)
    convention: Callable | None = field(default=None, repr=False, compare=False)  # spec -> note
    doc: str = ""
    external: Any = field(default=None, repr=False, compare=False)  # ir_measures: (measure, provider)

    @property
    def qrels(self) -> str:
        return FAMILY_QRELS[self.family]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


REGISTRY: dict[str, Measure] = {}
CUTOFFS = {"required": "@k", "optional": "[@k]", "none": ""}  # how help texts write each rule


def register(measure: Measure) -> Measure:
    if measure.name in REGISTRY:
        raise ValueError(f"measure {measure.name!r} is registered twice")
    if measure.family not in ("adhoc", "ndeval", "ntcir") or measure.cutoff not in CUTOFFS:
        raise ValueError(f"measure {measure.name!r}: bad family {measure.family!r} or cutoff {measure.cutoff!r}")
    REGISTRY[measure.name] = measure
    return measure


def measure_names(family: str) -> str:
    """The registered measures of a family as a user writes them: ``AP, nDCG@k, P@k, …``."""
    def written(m: Measure) -> str:
        params = ",".join(f"{p.name}=…" for p in m.params if p.shown == "always")
        return m.name + (f"({params})" if params else "") + CUTOFFS[m.cutoff]
    return ", ".join(written(m) for m in REGISTRY.values() if m.family == family)


#: The deepest cutoff a measure may ask for (``P@1000000`` is the largest run depth anyone
#: stores; a longer number is a mistake, not a measure).
MAX_CUTOFF = 1_000_000
#: The highest grade ``rel=`` may name.
MAX_REL = 1_000

REL = Param("rel", int, 1, lambda v: 1 <= v <= MAX_REL, f"a whole number from 1 to {MAX_REL}",
            help="the lowest grade that counts as relevant")
P_PERSISTENCE = Param("p", float, 0.8, lambda v: 0.0 < v < 1.0, "a number strictly between 0 and 1",
                      help="the user's persistence", shown="always")
REL_BINARY = Param("rel", int, None, lambda v: 1 <= v <= MAX_REL,
                   f"a whole number from 1 to {MAX_REL}",
                   help="given: binary gains, 1 for a grade of rel or more; not given: graded gains")


# --------------------------------------------------------------------------- ad hoc


def _err(x, s):
    top = x.top_grade
    if top > 4:
        raise InputError(x.qrels.source, None,
                                   f"ERR (as gdeval) allows grades up to 4; the qrels have {top}")
    return adhoc.err(x.grades, s.cutoff)


def _rbp_convention(s) -> str:
    if s.get("rel") is not None:
        return f"{s.key}: binary gain, 1 for a grade of {s.get('rel')} or more"
    return (f"{s.key}: graded gain, grade / the topic's highest grade when above 1 "
            "(trec_eval's rbp); RBP(p=…,rel=1) is the binary form")


for _m in (
    Measure("AP", "adhoc", "none", "trec_eval map", (lambda x, s: adhoc.average_precision(
        x.grades, x.num_rel(s.get("rel")), s.get("rel"), hits=x.hits(s.get("rel")))), (REL,),
        doc="average precision"),
    Measure("nDCG", "adhoc", "optional", "trec_eval ndcg / ndcg_cut", (lambda x, s: adhoc.ndcg(
        x.grades, x.ideal, s.cutoff, hits=x.hits(1) if s.cutoff is None else None)),
        doc="normalised DCG, gain = grade, log2(rank + 1) discount"),
    Measure("P", "adhoc", "required", "trec_eval P", (lambda x, s: adhoc.precision(
        x.grades, s.cutoff, s.get("rel"))), (REL,), doc="precision at the cutoff"),
    Measure("R", "adhoc", "required", "trec_eval recall", (lambda x, s: adhoc.recall(
        x.grades, x.num_rel(s.get("rel")), s.cutoff, s.get("rel"))), (REL,), doc="recall at the cutoff"),
    Measure("RR", "adhoc", "none", "trec_eval recip_rank", (lambda x, s: adhoc.reciprocal_rank(
        x.grades, s.get("rel"), hits=x.hits(s.get("rel")))), (REL,), doc="reciprocal rank"),
    Measure("Rprec", "adhoc", "none", "trec_eval Rprec", (lambda x, s: adhoc.r_precision(
        x.grades, x.num_rel(s.get("rel")), s.get("rel"), hits=x.hits(s.get("rel")))), (REL,),
        doc="precision at R, the number of relevant documents"),
    Measure("ERR", "adhoc", "required", "gdeval err", _err, doc="expected reciprocal rank, grades up to 4"),
    Measure("RBP", "adhoc", "none", "trec_eval rbp (graded); ir_measures RBP(rel=N) (binary)",
            (lambda x, s: adhoc.rbp(x.grades, s.get("p"), x.max_grade, rel=s.get("rel"))),
            (P_PERSISTENCE, REL_BINARY), also=("RBP_resid",), convention=_rbp_convention,
            doc="rank-biased precision and its residual"),
):
    register(_m)


# --------------------------------------------------------------------------- ndeval

for _m in (
    Measure("alpha_nDCG", "ndeval", "required", "ndeval alpha-nDCG",
            lambda x, s: diversity.alpha_ndcg(x.gains, x.ideal, s.cutoff)),
    Measure("alpha_DCG", "ndeval", "required", "ndeval alpha-DCG",
            lambda x, s: diversity.alpha_dcg(x.gains, x.n_intents, s.cutoff)),
    Measure("ERR_IA", "ndeval", "required", "ndeval ERR-IA",
            lambda x, s: diversity.err_ia(x.gains, x.n_intents, s.cutoff)),
    Measure("nERR_IA", "ndeval", "required", "ndeval nERR-IA",
            lambda x, s: diversity.nerr_ia(x.gains, x.ideal, s.cutoff)),
    Measure("NRBP", "ndeval", "none", "ndeval NRBP", lambda x, s: diversity.nrbp(x.gains, x.n_intents)),
    Measure("nNRBP", "ndeval", "none", "ndeval nNRBP",
            lambda x, s: diversity.nnrbp(x.gains, x.ideal, x.n_intents)),
    Measure("AP_IA", "ndeval", "none", "ndeval MAP-IA", lambda x, s: diversity.ap_ia(x.run_rel, x.n_rel_intent)),
    Measure("P_IA", "ndeval", "required", "ndeval P-IA",
            lambda x, s: diversity.precision_ia(x.run_rel, x.n_intents, s.cutoff)),
    Measure("StRecall", "ndeval", "required", "ndeval strec",
            lambda x, s: diversity.subtopic_recall(x.run_rel, x.n_intents, s.cutoff)),
):
    register(_m)


# --------------------------------------------------------------------------- NTCIREVAL

for _m in (
    Measure("D-nDCG", "ntcir", "required", "NTCIREVAL D-nDCG", lambda x, s: x.d_ndcg(s.cutoff)),
    Measure("D#-nDCG", "ntcir", "required", "NTCIREVAL D#-nDCG",
            lambda x, s: ntcir.d_sharp_ndcg(x.intent_recall(s.cutoff), x.d_ndcg(s.cutoff))),
    Measure("I-rec", "ntcir", "required", "NTCIREVAL I-rec", lambda x, s: x.intent_recall(s.cutoff)),
):
    register(_m)

del _m
