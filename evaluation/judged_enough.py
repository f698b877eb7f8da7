"""Judged enough for evaluation? The system ordering under partial judgments against the
ordering under the full judgments, as a simulated judging goes on.

A simulation (:func:`judging.analysis.judging_simulation`) logs every judgment in order.
At each checkpoint n the first n judgments are the qrels (judged relevant: grade 1;
judged non-relevant: grade 0; unjudged: non-relevant); the full qrels are the judgment
set's relevance (some intent graded above 0) over every document. The pool's system runs
are scored with each measure (MAP: ``AP``, and ``nDCG@20``, trec_eval's conventions, every
topic of the full qrels counting, a topic without judgments scoring 0) and the two
orderings compared with Kendall's τ_b and τ_ap (Yilmaz, Aslam & Robertson 2008; the full
qrels' ordering is the reference): :mod:`evaluation.ranking`.
"""
from __future__ import annotations

from common.naturalsort import natural_key
from evaluation import measures
from evaluation.ranking import correlations

MEASURES = ("AP", "nDCG@20")
#: shares of the simulated judgments at which the orderings are compared
CHECKPOINTS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _means(runset, qrels, specs) -> dict[str, dict[str, float]]:
    result = measures.evaluate_runs(runset, qrels, specs, complete=True)
    return {s.key: {tag: r["mean"][s.key] for tag, r in result.items()} for s in specs}


def tau_curve(runs: list[tuple[str, str, dict]], full: dict[str, set[str]],
              judged_log: list[tuple[str, str, bool]],
              checkpoints=CHECKPOINTS) -> list[dict]:
    """``[{"judged", "AP": {"tau_b", "tau_ap"}, "nDCG@20": {…}}, …]`` at each checkpoint
    share of ``judged_log`` (distinct judgment counts, ascending). ``runs`` are
    ``(tag, description, {topic: (docids, scores, ranks)})`` of two or more systems;
    ``full`` is ``{topic: relevant docids}``."""
    if len(runs) < 2:
        raise ValueError("the pool has fewer than two system runs: no ordering to compare")
    specs = measures.parse_measures(" ".join(MEASURES))
    runset = measures.RunSet.from_rankings(runs)
    topics = sorted(full, key=natural_key)
    reference = _means(runset, measures.Qrels("adhoc", {
        t: {d: 1 for d in full[t]} or {"": 0} for t in topics}), specs)
    total = len(judged_log)
    points = sorted({max(1, round(share * total)) for share in checkpoints if total})
    out = []
    partial: dict[str, dict[str, int]] = {t: {} for t in topics}
    done = 0
    for n in points:
        for t, d, rel in judged_log[done:n]:
            partial.setdefault(t, {})[d] = int(rel)
        done = n
        qrels = measures.Qrels("adhoc", {t: (docs or {"": 0}) for t, docs in partial.items()})
        now = _means(runset, qrels, specs)
        row: dict = {"judged": n}
        for s in specs:
            c = correlations(reference[s.key], now[s.key])
            row[s.key] = {"tau_b": c["tau_b"], "tau_ap": c["tau_ap"]}
        out.append(row)
    return out
