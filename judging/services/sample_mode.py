"""The ``sample`` mode of a judging task: draw each topic's sample of the pool and keep the
design beside the task's judgment set.

The queue is untouched: a sampled task's items are the drawn documents only, numbered in
the random order the design gives them (:mod:`judging.sampling`), so the pool order the
queue hands items out in is that random order, and a sample judged in part is still a
random sample of each stratum. What the estimators need besides the labels — every
pooled document's stratum and the strata's sizes — is kept in
:class:`~judging.models.SampleUnit` rows of the judgment set.
"""
from __future__ import annotations

from .. import sampling
from ..models import JudgmentSet, SampleDesign, SampleUnit
from .imports import rows_insert


def sample_draw(pool, *, strata: str | None, budget: str | int, seed: int = 0
                ) -> tuple[dict[str, list[sampling.SampleUnit]], sampling.StrataSpec,
                           sampling.Budget]:
    """Every topic's sample of a finished pool: ``{topic: units in pool order}``, with
    the parsed strata and budget (``ValueError`` naming a bad one)."""
    from pooling.selectors import pool_documents

    spec = sampling.parse_strata(strata)
    plan = sampling.parse_budget(budget)
    if int(seed) < 0:
        raise ValueError("the seed must be 0 or more")
    by_topic: dict[str, tuple[list, list, list]] = {}
    for d in pool_documents(pool):
        docs, ranks, weights = by_topic.setdefault(d.topic_id, ([], [], []))
        docs.append(d.docid)
        ranks.append(d.min_rank)
        weights.append(d.weight)
    return ({topic: sampling.draw_topic(topic, docs, ranks, weights, spec=spec, budget=plan,
                                        seed=int(seed))
             for topic, (docs, ranks, weights) in by_topic.items()}, spec, plan)


def drawn_in_order(units: list[sampling.SampleUnit]) -> list[str]:
    """The drawn documents of a topic in their judging order."""
    return [u.docid for u in sorted((u for u in units if u.drawn), key=lambda u: u.order)]


def sample_design_save(jset: JudgmentSet, units: dict[str, list[sampling.SampleUnit]],
                       spec: sampling.StrataSpec, budget: sampling.Budget, seed: int) -> None:
    """Keep the design and every pooled document's place in it (inside the caller's
    transaction)."""
    SampleDesign.objects.create(judgment_set=jset, strata=str(spec), budget=str(budget),
                                seed=int(seed))
    rows_insert(SampleUnit, ("judgment_set", "topic_id", "docid", "position", "stratum",
                             "stratum_size", "drawn_in_stratum", "probability", "drawn"), (
        (jset.pk, topic, u.docid, pos, u.stratum, u.stratum_size, u.drawn_in_stratum,
         u.probability, u.drawn)
        for topic, topic_units in units.items() for pos, u in enumerate(topic_units, 1)))
