"""Analyses over stored data: label tables read through the judging app's selectors,
or from files, handed to the plain modules (agreement, intents, ranking, variance).

Reads go through ``judging.selectors`` only; nothing here writes.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from common import fileio
from common.naturalsort import natural_key
from evaluation import agreement

LABEL_FORMATS = ("tsv", "trec-rf10")


def labels_from_file(path: str, fmt: str = "tsv") -> pd.DataFrame:
    """A label table from ``PATH``: ``tsv`` (topic intent docid assessor grade) or
    ``trec-rf10`` (the TREC 2010 Relevance Feedback crowd file)."""
    if not Path(path).is_file():
        raise ValueError(f"{path}: no such file")
    if fmt == "tsv":
        return agreement.read_labels_tsv(path)
    if fmt == "trec-rf10":
        return agreement.read_trec_rf10_crowd(path)
    raise ValueError(f"unknown labels format {fmt!r} ({', '.join(LABEL_FORMATS)})")


def labels_from_judgments(name: str) -> pd.DataFrame:
    """A label table of the labels that count in the stored judgment set ``name``
    (``judging.selectors.current_labels``); a label without an intent gets intent ``0``."""
    from judging import selectors as judging

    labels = judging.current_labels(judging.judgment_set_get(name))
    if not labels:
        raise ValueError(f"judgment set {name!r} has no labels")
    return agreement.label_table(
        (t, i or agreement.CROWD_INTENT, d, a, g) for (t, i, d), rows in labels.items() for a, g in rows)


def topic_set_topics(name: str) -> list[str]:
    """Topic ids of a stored topic set, in natural order."""
    from topics.selectors import topic_list, topic_set_get

    topic_set_get(name)  # a ValueError naming the known sets
    topics = [t.topic_id for t in topic_list(name)]
    if not topics:
        raise ValueError(f"topic set {name!r} has no topics")
    return topics


def labels_load(judgments: str | None, labels: str | None, fmt: str = "tsv",
                ignore_grades: tuple = ()) -> pd.DataFrame:
    """Exactly one of a stored judgment set and a file; labels with a grade in
    ``ignore_grades`` are read as missing."""
    if bool(judgments) == bool(labels):
        raise ValueError("give either a stored judgment set (--judgments) or a file (--labels)")
    table = labels_from_judgments(judgments) if judgments else labels_from_file(labels, fmt)
    if ignore_grades:
        table = table[~table["grade"].isin(ignore_grades)].reset_index(drop=True)
        if table.empty:
            raise ValueError("no labels left once the ignored grades are dropped")
    return table


def agreement_report(labels: pd.DataFrame, intent: str | None = None, relevant_from: int = 1,
                     coherence_alpha: float = 0.5, min_shared: int = 2) -> dict:
    """Agreement summary of a label table, optionally restricted to one intent id."""
    if intent is not None:
        labels = labels[labels["intent"] == str(intent)]
        if labels.empty:
            raise ValueError(f"no labels for intent {intent}")
    return agreement.agreement_summary(labels, relevant_from=relevant_from,
                                       coherence_alpha=coherence_alpha, min_shared=min_shared)


def _read_runs_and_qrels(run_paths, qrels_path, measure):
    from evaluation import measures

    specs = measures.parse_measures(measure)
    if len(specs) != 1 or specs[0].qrels_kind != "adhoc" or len(specs[0].keys) != 1:
        raise ValueError(f"--measure needs one ad hoc measure (e.g. nDCG@10, AP), not {measure!r}")
    return specs, measures.read_runs(run_paths), measures.read_qrels(qrels_path, "diversity")


def _relevant_intents(judgments: dict) -> dict:
    """{topic: {intent: docs}} keeping intents with a relevant document (grade > 0)."""
    out: dict = {}
    for topic, intents in judgments.items():
        for intent, docs in intents.items():
            if any(g > 0 for g in docs.values()):
                out.setdefault(topic, {})[intent] = docs
    return out


def _score_intents(runset, judgments: dict, specs, order: str, source: str) -> pd.DataFrame:
    """Every run scored on every (topic, intent) of ``judgments`` taken as ad hoc qrels."""
    from evaluation import measures
    from evaluation.variance import intent_scores_frame

    key = specs[0].keys[0]
    by_intent: dict = {}
    for topic, intents in judgments.items():
        for intent, docs in intents.items():
            by_intent.setdefault(intent, {})[topic] = docs
    if not by_intent:
        raise ValueError(f"{source}: no intent has a relevant document")
    rows = []
    for intent, adhoc_judgments in sorted(by_intent.items()):
        adhoc = measures.Qrels("adhoc", adhoc_judgments, f"{source} intent {intent}")
        result = measures.evaluate_runs(runset, adhoc, specs, order=order, complete=True)
        for tag, run in result.items():
            for topic, values in run["per_topic"].items():
                rows.append((tag, topic, intent, values[key]))
    return intent_scores_frame(rows)


def intent_scores_from_runs(run_paths: list[str], qrels_path: str, measure: str,
                            order: str = "trec_eval") -> pd.DataFrame:
    """Per-intent scores (system, query, intent, score): each intent's judgments of the
    diversity qrels taken as ad hoc qrels and every run scored with the ad hoc
    ``measure`` (evaluation.measures, trec_eval's conventions; a topic a run lacks scores
    0, as trec_eval -c). Intents without a relevant document (grade > 0) are left out,
    as ndeval and NTCIREVAL count intents."""
    specs, runset, qrels = _read_runs_and_qrels(run_paths, qrels_path, measure)
    return _score_intents(runset, _relevant_intents(qrels.judgments), specs, order, str(qrels_path))


def merged_intent_taus(run_paths: list[str], qrels_path: str, measure: str,
                       fractions=(0.2, 0.4, 0.6, 0.8), repeats: int = 20, seed: int = 0,
                       order: str = "trec_eval") -> list[dict]:
    """Kendall's τ_b between the system ordering on every intent and on collections whose
    intents are merged: each topic's M intents (those with a relevant document) are split
    at random into max(1, round(f·M)) groups and each group becomes one intent whose
    grade for a document is the largest grade any intent of the group gave it. The
    ordering is the mean over queries of the mean over their intents. Seeded; compare
    with :func:`evaluation.variance.subsample_taus`' removed intents, which keeps the same
    numbers of intents."""
    specs, runset, qrels = _read_runs_and_qrels(run_paths, qrels_path, measure)
    return _merged_taus(runset, _relevant_intents(qrels.judgments), specs, str(qrels_path), fractions,
                        repeats, seed, order)


def merged_intent_taus_stored(topic_set: str, tags: list[str], qrels, measure: str,
                              fractions=(0.2, 0.4, 0.6, 0.8), repeats: int = 20, seed: int = 0,
                              order: str = "trec_eval") -> list[dict]:
    """:func:`merged_intent_taus` of stored runs (by tag) with diversity ``qrels`` (an
    :class:`evaluation.measures.Qrels`): the same draws, so the same numbers as the
    files of those runs and qrels."""
    specs, runset = _stored_specs_and_runs(topic_set, tags, qrels, measure)
    return _merged_taus(runset, _relevant_intents(qrels.judgments), specs, qrels.source, fractions,
                        repeats, seed, order)


def _merged_taus(runset, judgments: dict, specs, source: str, fractions, repeats: int, seed: int,
                 order: str) -> list[dict]:
    import numpy as np

    from evaluation.ranking import kendall_tau_b
    from evaluation.variance import _ordering

    full = _ordering(_score_intents(runset, judgments, specs, order, source))
    rng = np.random.default_rng(seed)
    rows = []
    for fraction in fractions:
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction {fraction} is not in (0, 1]")
        taus = []
        for _ in range(repeats):
            merged: dict = {}
            for topic in sorted(judgments, key=natural_key):
                intents = sorted(judgments[topic], key=natural_key)
                k = max(1, round(fraction * len(intents)))
                # a random split into k non-empty groups: shuffle, then cut at k−1 places
                shuffled = list(rng.permutation(intents))
                cuts = (sorted(rng.choice(np.arange(1, len(intents)), size=k - 1, replace=False))
                        if k > 1 else [])
                groups = np.split(np.array(shuffled, dtype=object), cuts)
                for g, members in enumerate(groups, 1):
                    docs: dict = {}
                    for intent in members:
                        for d, grade in judgments[topic][intent].items():
                            docs[d] = max(grade, docs.get(d, grade))
                    merged.setdefault(topic, {})[f"m{g}"] = docs
            ordering = _ordering(_score_intents(runset, merged, specs, order, source))
            taus.append(kendall_tau_b(full.to_numpy(), ordering.reindex(full.index).to_numpy()))
        v = np.array([t for t in taus if t is not None], dtype=float)
        rows.append({"fraction": fraction, "kind": "merged", "repeats": repeats, "mean": float(v.mean()),
                     "sd": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                     "min": float(v.min()), "max": float(v.max())})
    return rows


def intent_scores_from_stored(topic_set: str, tags: list[str], qrels, measure: str,
                              order: str = "trec_eval") -> pd.DataFrame:
    """Per-intent scores (system, query, intent, score) of stored runs (by tag) with
    diversity ``qrels`` (an :class:`evaluation.measures.Qrels`), as
    :func:`intent_scores_from_runs` computes them from files."""
    specs, runset = _stored_specs_and_runs(topic_set, tags, qrels, measure)
    return _score_intents(runset, _relevant_intents(qrels.judgments), specs, order, qrels.source)


def _stored_specs_and_runs(topic_set: str, tags: list[str], qrels, measure: str):
    from evaluation import measures
    from evaluation.selectors import stored_runs

    specs = measures.parse_measures(measure)
    if len(specs) != 1 or specs[0].qrels_kind != "adhoc" or len(specs[0].keys) != 1:
        raise ValueError(f"--measure needs one ad hoc measure (e.g. nDCG@10, AP), not {measure!r}")
    if qrels.kind != "diversity":
        raise ValueError(f"{qrels.source}: per-intent scores need diversity qrels (topic intent docid grade)")
    try:
        runset = measures.RunSet.from_rankings(stored_runs(topic_set=topic_set, tags=tags))
    except fileio.InputError as exc:
        raise ValueError(str(exc)) from None
    return specs, runset
