"""Sampled judgment sets (tasks in ``sample`` mode): the sample as the estimators read it,
and the rows of its two TREC exports (:mod:`judging.prels`)."""
from __future__ import annotations

from typing import Iterator

from ..models import JudgmentSet, SampleDesign, SampleUnit
from ..prels import TopicSample, write_prels, write_sample_eval
from .qrels import qrels_lines


def judgment_set_sampled(jset: JudgmentSet) -> bool:
    return SampleUnit.objects.filter(judgment_set=jset).exists()


def sample_design_of(jset: JudgmentSet) -> SampleDesign | None:
    """How a sampled judgment set drew its sample; ``None`` for a set that is not a
    sample."""
    return SampleDesign.objects.filter(judgment_set=jset).first()


def _units(jset: JudgmentSet):
    if not judgment_set_sampled(jset):
        raise ValueError(f"judgment set {jset.name!r} is not a sample: its documents were not "
                         "drawn with known probabilities (judge a sample with a task in sample "
                         "mode, or evaluate it without --estimator)")
    return (SampleUnit.objects.filter(judgment_set=jset).order_by("topic_id", "position")
            .values_list("topic_id", "docid", "stratum").iterator(chunk_size=10000))


def _grades(jset: JudgmentSet, aggregate: str) -> dict[tuple[str, str], int]:
    """The judged documents' grades, labels combined by ``aggregate``; a negative grade
    (junk) is 0, not relevant."""
    try:
        lines = qrels_lines(jset, "adhoc", aggregate=aggregate)
    except ValueError:  # nothing judged yet
        lines = []
    return {(ln.topic_id, ln.docid): max(int(ln.grade), 0) for ln in lines}


def judgment_set_sample(jset: JudgmentSet, aggregate: str = "majority") -> dict[str, TopicSample]:
    """``{topic: TopicSample}``: every pooled document's stratum, the judged documents'
    grades and their inclusion probabilities — the judged share of their stratum (the
    design's drawn share once every drawn document is judged: a sample judged in part is,
    stratum by stratum, a random sample of the judged size, since items are judged in a
    random order)."""
    grades = _grades(jset, aggregate)
    out: dict[str, TopicSample] = {}
    for topic, docid, stratum in _units(jset):
        sample = out.setdefault(topic, TopicSample())
        sample.strata[docid] = str(stratum)
        g = grades.get((topic, docid))
        if g is not None:
            sample.grades[docid] = g
    for sample in out.values():
        size: dict[str, int] = {}
        judged: dict[str, int] = {}
        for doc, s in sample.strata.items():
            size[s] = size.get(s, 0) + 1
            judged[s] = judged.get(s, 0) + (doc in sample.grades)
        sample.probability = {d: judged[sample.strata[d]] / size[sample.strata[d]]
                              for d in sample.grades}
    return out


def sample_eval_rows(jset: JudgmentSet, aggregate: str = "majority"
                     ) -> Iterator[tuple[str, str, str, int | None]]:
    """``(topic, docid, stratum, grade or None)`` of every pooled document, in the pool's
    order (:func:`judging.prels.write_sample_eval`)."""
    grades = _grades(jset, aggregate)
    for topic, docid, stratum in _units(jset):
        yield topic, docid, str(stratum), grades.get((topic, docid))


def prels_rows(jset: JudgmentSet, aggregate: str = "majority"
               ) -> Iterator[tuple[str, str, int, float]]:
    """``(topic, docid, grade, probability)`` of every judged document
    (:func:`judging.prels.write_prels`), probabilities as :func:`judgment_set_sample`."""
    for topic, sample in judgment_set_sample(jset, aggregate).items():
        for docid, grade in sample.grades.items():
            yield topic, docid, grade, sample.probability[docid]


def sample_export_write(out, jset: JudgmentSet, fmt: str, aggregate: str = "majority") -> int:
    """Write a sampled judgment set as TREC's ``prels`` or ``sample-eval`` file
    (:mod:`judging.prels`); lines written."""
    if fmt == "prels":
        return write_prels(out, prels_rows(jset, aggregate))
    if fmt == "sample-eval":
        return write_sample_eval(out, sample_eval_rows(jset, aggregate))
    raise ValueError(f"a sample is exported as prels or sample-eval, not {fmt!r}")
