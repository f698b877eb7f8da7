"""Effectiveness measures equal to trec_eval, gdeval, ndeval and NTCIREVAL. No Django here.

- :mod:`.runs` reads runs, qrels and intent probabilities into arrays;
- :mod:`.adhoc` (trec_eval, gdeval), :mod:`.diversity` (ndeval), :mod:`.ntcir` (NTCIREVAL)
  hold one plain function per measure, its formula and conventions in the docstring;
- :mod:`.registry` declares every measure once (name, family, cutoff, typed parameters, the
  reference tool it follows, the function that computes it);
- :mod:`.engine` parses measure names and evaluates a set of runs;
- :mod:`.fallback` computes through ir_measures the measures the registry lacks.
"""
from .engine import MeasureSpec, evaluate_runs, parse_measures
from .runs import Qrels, RunSet, read_intent_probabilities, read_qrels, read_runs

__all__ = [
    "MeasureSpec",
    "Qrels",
    "RunSet",
    "evaluate_runs",
    "parse_measures",
    "read_intent_probabilities",
    "read_qrels",
    "read_runs",
]
