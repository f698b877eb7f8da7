"""Analyses over stored data: label tables read through the judging app's selectors,
or from files, handed to the plain modules (agreement, intents, ranking, variance).

Reads go through ``judging.selectors`` only; nothing here writes.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd

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


def labels_from_judgments(name: str, mode: str | None = None) -> pd.DataFrame:
    """A label table for the stored judgment set ``name`` (``mode`` ``"user"`` for the
    judgments users made of their own need), read through ``judging.selectors``."""
    try:
        selectors = importlib.import_module("judging.selectors")
    except ImportError:
        selectors = None
    reader = getattr(selectors, "judgment_labels", None) if selectors else None
    if reader is None:
        raise ValueError(
            "stored judgment sets cannot be read yet (judging.selectors.judgment_labels is "
            "missing); pass the labels as a file with --labels PATH")
    records = reader(name, mode=mode) if mode else reader(name)
    return agreement.label_table(records)


def labels_load(judgments: str | None, labels: str | None, fmt: str = "tsv",
                mode: str | None = None) -> pd.DataFrame:
    """Exactly one of a stored judgment set and a file."""
    if bool(judgments) == bool(labels):
        raise ValueError("give either a stored judgment set (--judgments) or a file (--labels)")
    if judgments:
        return labels_from_judgments(judgments, mode=mode)
    return labels_from_file(labels, fmt)


def agreement_report(labels: pd.DataFrame, intent: str | None = None, relevant_from: int = 1,
                     coherence_alpha: float = 0.5, min_shared: int = 2) -> dict:
    """Agreement summary of a label table, optionally restricted to one intent id."""
    if intent is not None:
        labels = labels[labels["intent"] == str(intent)]
        if labels.empty:
            raise ValueError(f"no labels for intent {intent}")
    return agreement.agreement_summary(labels, relevant_from=relevant_from,
                                       coherence_alpha=coherence_alpha, min_shared=min_shared)
