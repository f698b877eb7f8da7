"""Measures ``evaluate`` does not implement, computed through ir_measures. No Django here.

A name that is not in the registry (:mod:`.registry`) but that ir_measures parses, and that
one of its providers installed here computes, is evaluated by that provider on the same runs
and qrels: ``Judged@10`` (its ``judged`` provider), ``infAP``, ``Bpref``, ``SetF``,
``NumRel`` … (``pytrec_eval``). The provider is the first that ir_measures' own default
pipeline would use. Its convention is the provider's: it orders tied scores itself (so
``--order`` does not apply) and reads ad hoc qrels only. Each such measure carries a note
naming ir_measures and the provider, printed wherever the measure is.

Per topic, the values are the provider's. A qrels topic the run lacks gets the measure's
default (0), as ir_measures gives it; the value over topics is then ir_measures' aggregate
(a mean, a sum for counts like ``NumRel``) over the topics the engine chooses: those the run
has, or every qrels topic with ``complete``, which is what ir_measures itself averages.

A name ir_measures reads as a measure evaluated natively (``MAP`` is ``AP``) is refused with
the native name, so one measure is never computed two ways.
"""
from __future__ import annotations

from importlib import metadata

import numpy as np

from .registry import Measure
from common.fileio import InputError

from .runs import Qrels, RunSet

__all__ = ["resolve", "evaluate", "FAMILY"]

FAMILY = "ir_measures"

#: the package behind each ir_measures provider, for the note's version
_PACKAGES = {"pytrec_eval": "pytrec-eval-terrier", "gdeval": None, "judged": None, "compat": None,
             "accuracy": None, "msmarco": None, "runtime": None, "cwl_eval": "cwl-eval",
             "pyndeval": "pyndeval", "ranx": "ranx"}


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def _note(key: str, provider: str, summed: bool) -> str:
    package = _PACKAGES.get(provider)
    by = f"its {provider} provider" + (f" ({package} {_version(package)})" if package else "")
    return (f"{key}: not native; computed through ir_measures {_version('ir-measures')} by {by}, "
            "which orders tied scores itself (--order does not apply)"
            + ("; its 'all' value is the sum over topics, as in ir_measures" if summed else ""))


def aggregate(spec, values) -> float:
    """The value over topics as ir_measures aggregates the measure (a mean, or a sum for
    counts such as ``NumRel``)."""
    agg = spec.measure.external[0].aggregator()
    for v in values:
        agg.add(v)
    return float(agg.result())


def resolve(word: str, native) -> Measure:
    """The ir_measures measure named ``word``, as a :class:`Measure` of family ``ir_measures``
    whose ``external`` is ``(ir_measures measure, provider)``.

    ``native(name)`` says whether the engine computes ``name`` itself. Raises
    :class:`InputError` when ir_measures does not know the name, reads it as a
    native measure, or has no provider installed that computes it."""
    try:
        import ir_measures
    except ImportError:
        raise InputError("--measures", None, "ir_measures is not installed") from None
    try:
        measure = ir_measures.parse_measure(word)
        measure.validate_params()
    except NameError as exc:
        raise InputError("--measures", None, f"ir_measures does not know it either ({exc})") from None
    except Exception as exc:  # ir_measures raises ValueError, AssertionError, SyntaxError on parameters
        raise InputError("--measures", None, f"ir_measures cannot read it ({exc})") from None
    name = str(measure)
    if native(name):
        raise InputError(
            "--measures", None, f"ir_measures reads it as {name!r}, which evaluate computes itself: ask for {name}"
        )
    providers = [p for p in ir_measures.DefaultPipeline.providers if p.supports(measure)]
    usable = [p for p in providers if p.is_available()]
    if not usable:
        names = ", ".join(p.NAME for p in providers) or "none"
        raise InputError("--measures", None,
                                   f"ir_measures knows {name!r}, but no provider of it is installed here "
                                   f"(providers: {names})")
    provider = usable[0]
    summed = isinstance(measure.aggregator(), ir_measures.SumAgg)
    return Measure(name, FAMILY, "none", f"ir_measures {name} ({provider.NAME})", None,
                   convention=lambda s, p=provider.NAME: _note(s.key, p, summed), external=(measure, provider))


def evaluate(runset: RunSet, qrels: Qrels, specs, topics: list[str]) -> dict[str, np.ndarray]:
    """``{key: (runs, topics)}`` for ir_measures specs, one provider evaluator per provider."""
    if qrels.kind != "adhoc":
        raise InputError("--measures", None, "measures computed through ir_measures need ad hoc qrels")
    column = {t: j for j, t in enumerate(topics)}
    out = {s.key: np.zeros((len(runset.tags), len(topics))) for s in specs}
    by_provider: dict[str, list] = {}
    for s in specs:
        by_provider.setdefault(s.measure.external[1].NAME, []).append(s)
    for group in by_provider.values():
        provider = group[0].measure.external[1]
        wanted = {str(s.measure.external[0]): s.key for s in group}
        evaluator = provider.evaluator([s.measure.external[0] for s in group], qrels.judgments)
        for r in range(len(runset.tags)):
            run = {}
            for ti, t in enumerate(runset.topics):
                n = int(runset.lengths[r, ti])
                if n:
                    docs = runset.vocab[ti][runset.codes[r, ti, :n]].tolist()
                    run[t] = dict(zip(docs, runset.scores[r, ti, :n].tolist()))
            for metric in evaluator.iter_calc(run):
                j = column.get(metric.query_id)
                key = wanted.get(str(metric.measure))
                if j is not None and key is not None:
                    out[key][r, j] = metric.value
    return out
