"""Judgment sets and their export: the labels that count, qrels lines in the adhoc,
diversity and ndeval formats, the raw history, relevance by topic; and the judgments as
the plain qrels records the pooling analyses take (imported qrels are judgment sets)."""
from __future__ import annotations

from collections import defaultdict
from datetime import timezone as dt_timezone
from typing import Iterable, Iterator

from django.db.models import Exists, OuterRef

from common import trec
from pooling import coverage
from topics import selectors as topics_selectors

from .. import aggregate as agg
from ..labelfiles import QrelsLine
from ..models import NO_INTENT, QRELS_ASSESSOR, JudgmentSet, Label

EXPORT_FORMATS = ("adhoc", "diversity", "ndeval", "raw", "prels", "sample-eval")
#: the exports of a sampled judgment set only (:mod:`.samples`)
SAMPLE_FORMATS = ("prels", "sample-eval")


def task_export_formats(mode: str) -> tuple[str, ...]:
    """The exports a judging task of this mode can give: per-intent labels (intent mode)
    make diversity and ndeval qrels, labels against the topic (topic and user modes) adhoc
    qrels, a sample (sample mode) also TREC's prels and sample_eval qrels; raw labels
    always."""
    if mode == "intent":
        return ("diversity", "ndeval", "raw")
    if mode == "sample":
        return ("adhoc", "prels", "sample-eval", "raw")
    return ("adhoc", "raw")



def judgment_set_list(topic_set=None):
    """Every judgment set, or with ``topic_set`` (a :class:`topics.models.TopicSet`) only
    those that judge that topic set."""
    sets = JudgmentSet.objects.all()
    return sets if topic_set is None else sets.filter(topic_set=topic_set)


def judgment_set_get(name: str) -> JudgmentSet:
    try:
        return JudgmentSet.objects.get(name=name)
    except JudgmentSet.DoesNotExist:
        known = ", ".join(JudgmentSet.objects.values_list("name", flat=True)[:20]) or "none"
        raise ValueError(f"no judgment set named {name!r} (known: {known})") from None


def judgment_set_topic_set_candidates(jset: JudgmentSet) -> list:
    """The topic sets that hold every topic ``jset`` judges, by name (the rule an import
    without ``--topic-set`` follows): when there are several the import chose none, and
    ``jset`` is offered on no topic set's menus."""
    ids = (Label.objects.filter(judgment_set=jset).order_by().values_list("topic_id", flat=True)
           .distinct())
    return topics_selectors.topic_sets_holding(set(ids))


def qrels_file_sets():
    """The judgment sets read from a qrels file by ``import_qrels`` (imported, every label
    by :data:`~judging.models.QRELS_ASSESSOR`): other people's judgments, which a release
    leaves out (cite their source)."""
    others = Label.objects.filter(judgment_set=OuterRef("pk")).exclude(assessor=QRELS_ASSESSOR)
    return JudgmentSet.objects.filter(source=JudgmentSet.SOURCE_IMPORT).exclude(Exists(others))


def qrels_get(name: str) -> JudgmentSet:
    """The judgment set named by a ``--qrels``/``--name`` option or a qrels page: as
    :func:`judgment_set_get`, the error saying "qrels"."""
    try:
        return JudgmentSet.objects.get(name=name)
    except JudgmentSet.DoesNotExist:
        known = ", ".join(JudgmentSet.objects.values_list("name", flat=True)[:20]) or "none"
        raise ValueError(f"no qrels named {name!r} (known judgment sets: {known})") from None


def current_labels(jset: JudgmentSet, topic_ids: Iterable[str] | None = None
                   ) -> dict[tuple[str, str, str], list[tuple[str, int]]]:
    """``{(topic, intent, docid): [(assessor, grade), …]}`` of the labels that count, keys
    in the order of their earliest stored label that counts (file order for imports);
    with ``topic_ids`` only those topics'."""
    out: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    rows = Label.objects.filter(judgment_set=jset, current=True, grade__isnull=False)
    wanted = None if topic_ids is None else {str(t) for t in topic_ids}
    if wanted is not None and len(wanted) <= 1000:  # else filtered here: bounded parameters
        rows, wanted = rows.filter(topic_id__in=sorted(wanted)), None
    rows = rows.order_by("id").values_list("topic_id", "intent_id", "docid", "assessor", "grade")
    for t, i, d, a, g in rows.iterator(chunk_size=10000):
        if wanted is not None and t not in wanted:
            continue
        out.setdefault((t, i, d), []).append((a, g))
    return out


def qrels_lines(jset: JudgmentSet, fmt: str, *, aggregate: str = "majority",
                adhoc_intent: str | None = None) -> list[QrelsLine]:
    """The qrels of a judgment set, one line per (topic, intent, docid) in the order of
    :func:`current_labels`, the K labels combined by ``aggregate`` (:mod:`judging.aggregate`).

    ``diversity``: ``topic intent docid grade`` for the labels made per intent.
    ``ndeval``: the same with negative grades (junk) as 0 and dropping every (topic,
    intent) with no grade above 0 — how NIST made ``qrels-for-ndeval.txt``.
    ``adhoc``: ``topic 0 docid grade`` from the labels made against the topic as a whole,
    or with ``adhoc_intent`` from that intent's labels (NIST's ``qrels.adhoc.txt`` is
    intent 1 of ``qrels.diversity.txt``).
    """
    if fmt not in ("adhoc", "diversity", "ndeval"):
        raise ValueError(f"qrels format must be adhoc, diversity or ndeval, not {fmt!r}")
    agg.check_rule(aggregate)
    if adhoc_intent is not None and fmt != "adhoc":
        raise ValueError("--adhoc-intent is only for --format adhoc")
    labels = current_labels(jset)
    if fmt == "adhoc":
        want = NO_INTENT if adhoc_intent in (None, "0", "") else str(adhoc_intent)
        labels = {k: v for k, v in labels.items() if k[1] == want}
        if not labels:
            raise ValueError(
                f"judgment set {jset.name!r} has no labels "
                + ("for the topic as a whole; give --adhoc-intent I" if want == NO_INTENT
                   else f"for intent {want!r}"))
    else:
        labels = {k: v for k, v in labels.items() if k[1] != NO_INTENT}
        if not labels:
            raise ValueError(f"judgment set {jset.name!r} has no per-intent labels; "
                             "export it as adhoc")
    grades = agg.aggregate(labels, aggregate)
    lines = []
    for (t, i, d), g in grades.items():
        if fmt == "adhoc":
            lines.append(QrelsLine(t, "0", d, g))
        elif fmt == "ndeval":
            lines.append(QrelsLine(t, i, d, max(g, 0)))
        else:
            lines.append(QrelsLine(t, i, d, g))
    if fmt == "ndeval":
        relevant = {(line.topic_id, line.second) for line in lines if line.grade > 0}
        lines = [line for line in lines if (line.topic_id, line.second) in relevant]
    return lines


def raw_rows(jset: JudgmentSet) -> Iterator[tuple]:
    """Every label with its history, in the order stored (columns of
    :data:`judging.labelfiles.RAW_COLUMNS`)."""
    rows = (Label.objects.filter(judgment_set=jset).order_by("id").values_list(
        "topic_id", "intent_id", "docid", "assessor", "grade", "seconds", "created",
        "revision", "current", "cannot_judge", "simulated"))
    for t, i, d, a, g, s, c, r, cur, cj, sim in rows.iterator(chunk_size=10000):
        yield (t, i or "0", d, a, g, s, c.astimezone(dt_timezone.utc).isoformat(), r,
               int(cur), " ".join(cj.split()), int(sim))


def relevance_by_topic(jset: JudgmentSet) -> dict[str, set[str]]:
    """``{topic: {docid, …}}`` of documents relevant to the topic: some intent (or the
    topic itself) has an aggregated (majority) grade above 0."""
    out: dict[str, set[str]] = defaultdict(set)
    for (t, _i, d), g in agg.aggregate(current_labels(jset), "majority").items():
        if g > 0:
            out[t].add(d)
    return out


def qrels_records(jset: JudgmentSet, topic_ids: Iterable[str] | None = None
                  ) -> list[trec.AdhocQrel | trec.DiversityQrel]:
    """The judgments as :mod:`common.trec` records, the plain input of the pooling
    analyses: one per (topic, intent, docid) in the order of :func:`current_labels`, the
    labels combined by majority (an imported qrels file has one label per line, so its
    records are its lines). A label against the topic as a whole is an ``AdhocQrel``
    (iteration "0"), a label per intent a ``DiversityQrel``."""
    out = []
    for (t, i, d), g in agg.aggregate(current_labels(jset, topic_ids), "majority").items():
        out.append(trec.AdhocQrel(t, "0", d, g) if i == NO_INTENT
                   else trec.DiversityQrel(t, i, d, g))
    return out


def qrels_summary(jset: JudgmentSet) -> dict:
    """``{"topics", "intents_per_topic", "judged_per_topic", "judged_nonjunk_per_topic",
    "relevant_per_topic", "grades"}`` as defined by :func:`pooling.coverage.qrels_stats`."""
    return coverage.qrels_stats(qrels_records(jset))
