"""Reads of pools and imported qrels, for views, commands and other apps."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable, Iterator

import numpy as np

from retrieval.selectors import docid_order, docid_strings, ranking_records

from . import pools as pool_maths

from .models import Pool, PoolTopic, Qrels, QrelsJudgment

ID_DTYPE = np.dtype("<i4")
WEIGHT_DTYPE = np.dtype("<f8")
COUNT_DTYPE = np.dtype("<i4")

SOURCE_KINDS = {
    Pool.SOURCES_USERS: ("user",),
    Pool.SOURCES_SYSTEMS: ("system",),
    Pool.SOURCES_COMBINED: ("user", "system"),
}


@dataclass(frozen=True)
class PooledDocument:
    """One pooled document of a topic, in priority order (``rank`` 1 is judged first).

    ``min_rank`` is the shallowest (1-based) rank at which any contributing ranking placed
    it; ``users`` counts the people whose queries retrieved it, ``systems`` the system runs.
    """

    topic_id: str
    rank: int
    docid: str
    weight: float
    min_rank: int
    users: int
    systems: int


@dataclass(frozen=True)
class TopicArrays:
    """The packed arrays of one pool topic, decoded (docids are vocabulary ids)."""

    topic_id: str
    docids: np.ndarray
    weights: np.ndarray
    min_rank: np.ndarray
    users: np.ndarray
    systems: np.ndarray


def pool_list(topic_set_name: str | None = None):
    qs = Pool.objects.select_related("topic_set", "model")
    if topic_set_name is not None:
        qs = qs.filter(topic_set__name=topic_set_name)
    return qs


def pool_get(ref) -> Pool:
    """A pool by name, or by id when no pool has that name (one query)."""
    from django.db.models import Q

    ref_s = str(ref)
    cond = Q(name=ref_s) | Q(pk=int(ref_s)) if ref_s.isdigit() else Q(name=ref_s)
    pools = list(Pool.objects.select_related("topic_set", "model").filter(cond)[:2])
    pools.sort(key=lambda p: p.name != ref_s)  # a name match wins over an id match
    if not pools:
        raise ValueError(f"no pool {ref_s!r} (give a pool id or name)")
    return pools[0]


def pool_sizes(pool: Pool) -> dict[str, int]:
    """Documents per topic, by topic id (one query; no arrays are read)."""
    return dict(
        PoolTopic.objects.filter(pool=pool).order_by("topic_id").values_list("topic_id", "size")
    )


def pool_topic_arrays(pool: Pool, topic_ids: Iterable[str] | None = None) -> Iterator[TopicArrays]:
    """The decoded arrays of each topic of a pool, by topic id."""
    qs = PoolTopic.objects.filter(pool=pool)
    if topic_ids is not None:
        qs = qs.filter(topic_id__in=[str(t) for t in topic_ids])
    rows = qs.order_by("topic_id").values_list(
        "topic_id", "docids", "weights", "min_rank", "users", "systems"
    )
    for topic_id, d, w, m, u, s in rows.iterator(chunk_size=50):
        yield TopicArrays(
            topic_id=topic_id,
            docids=np.frombuffer(bytes(d), dtype=ID_DTYPE),
            weights=np.frombuffer(bytes(w), dtype=WEIGHT_DTYPE),
            min_rank=np.frombuffer(bytes(m), dtype=COUNT_DTYPE),
            users=np.frombuffer(bytes(u), dtype=COUNT_DTYPE),
            systems=np.frombuffer(bytes(s), dtype=COUNT_DTYPE),
        )


STRINGS_BATCH = 200_000  # docids resolved to strings together (several small topics)


def _topics_with_strings(pool: Pool, topic_ids=None) -> Iterator[tuple[TopicArrays, dict]]:
    """Topic arrays with their docid strings, resolving several small topics at once."""
    batch: list[TopicArrays] = []
    size = 0

    def flush():
        ids = np.concatenate([t.docids for t in batch]) if batch else np.zeros(0, ID_DTYPE)
        strings = docid_strings(ids) if len(ids) else {}
        for t in batch:
            yield t, strings

    for t in pool_topic_arrays(pool, topic_ids):
        batch.append(t)
        size += len(t.docids)
        if size >= STRINGS_BATCH:
            yield from flush()
            batch, size = [], 0
    yield from flush()


def pool_documents(pool: Pool, topic_ids: Iterable[str] | None = None) -> Iterator[PooledDocument]:
    """Every pooled document, topic by topic (topic id order), in priority order.

    Queries: one for the pool's topic rows (per 50 topics) plus one per 5,000 docids.
    """
    for t, strings in _topics_with_strings(pool, topic_ids):
        for i in range(len(t.docids)):
            yield PooledDocument(
                topic_id=t.topic_id,
                rank=i + 1,
                docid=strings[int(t.docids[i])],
                weight=float(t.weights[i]),
                min_rank=int(t.min_rank[i]),
                users=int(t.users[i]),
                systems=int(t.systems[i]),
            )


def pool_docids_by_topic(pool: Pool) -> dict[str, list[str]]:
    """Docid strings of each topic of a pool, in priority order."""
    return {
        t.topic_id: [strings[int(i)] for i in t.docids]
        for t, strings in _topics_with_strings(pool)
    }


def qrels_list():
    return Qrels.objects.all()


def qrels_get(name: str) -> Qrels:
    try:
        return Qrels.objects.get(name=name)
    except Qrels.DoesNotExist:
        known = ", ".join(Qrels.objects.values_list("name", flat=True)) or "none"
        raise ValueError(f"no qrels named {name!r} (known: {known})") from None


def qrels_judgments(qrels: Qrels, topic_ids: Iterable[str] | None = None):
    """Tuples (topic_id, intent_id, docid, grade) in file order, streamed."""
    qs = QrelsJudgment.objects.filter(qrels=qrels)
    if topic_ids is not None:
        qs = qs.filter(topic_id__in=[str(t) for t in topic_ids])
    return (
        qs.order_by("id")
        .values_list("topic_id", "intent_id", "docid", "grade")
        .iterator(chunk_size=5000)
    )


# --- docid remapping -------------------------------------------------------------------


LOOKUP_MAX_SPAN = 1 << 26  # id spans up to this use a lookup table (8 bytes per id)


@dataclass(frozen=True)
class DocidRemap:
    """Vocabulary ids <-> dense ids in docid string order.

    ``vocab`` holds the distinct vocabulary ids in numeric order; ``vocab_of_dense[k]``
    the vocabulary id whose string is the k-th smallest. When the ids fill enough of
    their span (the usual case: a collection's ids are allocated together) a lookup table
    over the span maps ids to dense ids; otherwise a binary search over ``vocab`` does.
    The strings themselves are read only when asked for (``strings``).
    """

    vocab: np.ndarray
    vocab_of_dense: np.ndarray
    lo: int
    table: np.ndarray | None  # dense id of ``lo + i`` (-1: not in the vocabulary)
    dense_of: np.ndarray | None  # dense id of each ``vocab`` entry, when no table

    @classmethod
    def from_arrays(cls, arrays: Iterable[np.ndarray]) -> "DocidRemap":
        arrays = [np.asarray(a, dtype=np.int64) for a in arrays]
        arrays = [a for a in arrays if a.size]
        if not arrays:
            empty = np.zeros(0, np.int64)
            return cls(vocab=empty, vocab_of_dense=empty, lo=0, table=None, dense_of=empty)
        lo = min(int(a.min()) for a in arrays)
        span = max(int(a.max()) for a in arrays) - lo + 1
        use_table = span <= LOOKUP_MAX_SPAN and span <= 4 * sum(a.size for a in arrays) + (1 << 20)
        if use_table:  # distinct ids by marking them: no sort of every ranked entry
            seen = np.zeros(span, dtype=bool)
            for a in arrays:
                seen[a - lo] = True
            vocab = np.flatnonzero(seen) + lo
        else:
            vocab = np.unique(np.concatenate(arrays))
        vocab_of_dense = docid_order(vocab)
        dense = np.arange(len(vocab), dtype=np.int64)
        table = dense_of = None
        if use_table:
            table = np.full(span, -1, dtype=np.int64)
            table[vocab_of_dense - lo] = dense
        else:
            dense_of = np.empty(len(vocab), dtype=np.int64)
            dense_of[np.searchsorted(vocab, vocab_of_dense)] = dense
        return cls(vocab=vocab, vocab_of_dense=vocab_of_dense, lo=lo, table=table,
                   dense_of=dense_of)

    @cached_property
    def strings(self) -> dict[int, str]:
        """``{vocabulary id: docid string}`` of the whole vocabulary."""
        return docid_strings(self.vocab) if len(self.vocab) else {}

    def to_dense(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if not ids.size:
            return np.zeros(0, np.int64)
        if self.table is not None:
            offset = ids - self.lo
            if offset.min() < 0 or offset.max() >= self.table.size:
                raise ValueError("docid id outside the remapped vocabulary")
            dense = self.table[offset]
            if dense.min() < 0:
                raise ValueError("docid id outside the remapped vocabulary")
            return dense
        pos = np.searchsorted(self.vocab, ids)
        if pos.max() >= len(self.vocab) or (self.vocab[pos] != ids).any():
            raise ValueError("docid id outside the remapped vocabulary")
        return self.dense_of[pos]

    def to_vocab(self, dense: np.ndarray) -> np.ndarray:
        return self.vocab_of_dense[np.asarray(dense, dtype=np.int64)]

    def string_of_dense(self, dense: int) -> str:
        return self.strings[int(self.vocab_of_dense[int(dense)])]


def ranking_contributions(
    topic_set_name: str,
    sources: str,
    *,
    model_name: str | None = None,
    topic_ids: Iterable[str] | None = None,
    on_topic: Callable[[int], None] | None = None,
    depth: int | None = None,
):
    """Stored rankings of a topic set as remapped contributions.

    Returns ``(records, contributions, remap)``: the retrieval records (labels, users),
    the parallel :class:`pooling.pools.Contribution` list with dense docids, and the remap.
    With ``depth`` the contributions (and the remap) hold only each ranking's top
    ``depth``, all a depth-``depth`` pool reads; the records keep their whole rankings.
    """
    records = []
    last_topic = None
    topics_seen = 0
    for rec in ranking_records(
        topic_set_name, sources=SOURCE_KINDS[sources], model_name=model_name, topic_ids=topic_ids
    ):
        if rec.topic_id != last_topic:
            last_topic = rec.topic_id
            topics_seen += 1
            if on_topic is not None:
                on_topic(topics_seen)
        records.append(rec)
    remap = DocidRemap.from_arrays(r.docids[:depth] for r in records)
    contributions = [
        pool_maths.Contribution(
            topic_id=r.topic_id,
            source=r.source,
            weight=int(r.weight) if r.source == "user" else 1,
            docids=remap.to_dense(r.docids[:depth]),
        )
        for r in records
    ]
    return records, contributions, remap


# --- analyses ----------------------------------------------------------------------------


def pool_size_summary(pool: Pool) -> dict:
    """``{"pool", "topics", "mean_size", "sizes": {topic: n}}`` (one query)."""
    sizes = pool_sizes(pool)
    return {
        "pool": pool.name or pool.id,
        "topics": len(sizes),
        "mean_size": (sum(sizes.values()) / len(sizes)) if sizes else 0.0,
        "sizes": sizes,
    }


def _contributors(records, contributions, sources: str) -> list[tuple[str, list[int]]]:
    """Contributors of one topic in id order: (worker id or run tag, contribution indices).

    A user variant counts once for every person who typed it: its ``users`` (worker ids),
    or, when an imported variant names none, ``weight`` anonymous people labelled after it.
    A worker who typed several variants contributes all of their rankings at once.
    """
    by: dict[str, list[int]] = {}
    for i, (rec, c) in enumerate(zip(records, contributions)):
        if sources == "users":
            people = list(rec.users) or [f"{rec.label}#{k}" for k in range(1, c.weight + 1)]
        else:
            people = [rec.label or f"run-{rec.run_id}"]
        for person in people:
            by.setdefault(person, []).append(i)
    return sorted(by.items())


def _growth_by_contributor(contribs, groups: list[list[int]], depth: int) -> np.ndarray:
    """Pool size after each contributor (groups of contribution indices, in order)."""
    from . import growth

    order = [i for g in groups for i in g]
    sizes = growth.pool_growth(contribs, order, depth)
    ends = np.cumsum([len(g) for g in groups]) - 1
    return sizes[ends].astype(np.float64)


def pool_growth_analysis(
    topic_set_name: str,
    *,
    sources: str,
    depths: Iterable[int] = (10, 100),
    model_name: str | None = None,
    orders: int = 10,
    seed: int = 0,
) -> dict:
    """Pool growth as users (or systems) are added, per depth, averaged over topics.

    For every topic, contributors (people by worker id, or system runs by run tag) are
    added in id order (``ordered``) and in ``orders`` random orders drawn from
    ``numpy.random.default_rng(seed)`` (``random``: the mean). ``curves[depth]["n"]`` is the
    number of contributors and each curve the mean pool size over the topics that have at
    least that many (``topics``). ``fit[depth]`` is the power law size ≈ c·depth·n^x
    fitted to the random-order curve (:func:`pooling.growth.loglog_fit`).
    """
    from . import growth

    if sources not in (Pool.SOURCES_USERS, Pool.SOURCES_SYSTEMS):
        raise ValueError(f"growth is measured for users or systems, not {sources!r}")
    depths = sorted({int(d) for d in depths})
    if not depths or depths[0] < 1:
        raise ValueError("give at least one depth, each at least 1")
    if orders < 1:
        raise ValueError("orders must be at least 1")
    records, contribs, _ = ranking_contributions(topic_set_name, sources, model_name=model_name)
    if not records:
        raise ValueError(
            f"topic set {topic_set_name!r} has no stored {sources} rankings"
            + (f" of model {model_name!r}" if model_name else "")
        )
    by_topic: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        by_topic.setdefault(rec.topic_id, []).append(i)
    rng = np.random.default_rng(seed)
    sums = {d: {"ordered": [], "random": []} for d in depths}
    for topic_id in sorted(by_topic):
        idx = by_topic[topic_id]
        t_records = [records[i] for i in idx]
        t_contribs = [contribs[i] for i in idx]
        groups = [g for _, g in _contributors(t_records, t_contribs, sources)]
        perms = [rng.permutation(len(groups)) for _ in range(orders)]
        for d in depths:
            sums[d]["ordered"].append(_growth_by_contributor(t_contribs, groups, d))
            sums[d]["random"].append(
                np.mean(
                    [_growth_by_contributor(t_contribs, [groups[j] for j in perm], d)
                     for perm in perms],
                    axis=0,
                )
            )
    curves, fits = {}, {}
    for d in depths:
        longest = max((len(c) for c in sums[d]["ordered"]), default=0)
        n = list(range(1, longest + 1))
        curve = {"n": n, "topics": [], "ordered": [], "random": []}
        for k in range(longest):
            ordered = [c[k] for c in sums[d]["ordered"] if len(c) > k]
            rand = [c[k] for c in sums[d]["random"] if len(c) > k]
            curve["topics"].append(len(ordered))
            curve["ordered"].append(float(np.mean(ordered)))
            curve["random"].append(float(np.mean(rand)))
        curves[d] = curve
        try:
            c, x = growth.loglog_fit(np.array(n), np.array(curve["random"]), d)
            fits[d] = {"c": c, "x": x}
        except ValueError:
            fits[d] = {"c": None, "x": None}
    return {
        "topic_set": topic_set_name,
        "sources": sources,
        "model": model_name,
        "orders": orders,
        "seed": seed,
        "topics": len(by_topic),
        "curves": curves,
        "fit": fits,
    }


def qrels_records(qrels: Qrels, topic_ids: Iterable[str] | None = None):
    """The judgments as :mod:`pooling.qrelsio` records (``AdhocQrel`` or ``DiversityQrel``)."""
    from . import qrelsio

    make = qrelsio.AdhocQrel if qrels.format == Qrels.FORMAT_ADHOC else qrelsio.DiversityQrel
    for topic_id, intent_id, docid, grade in qrels_judgments(qrels, topic_ids):
        yield make(topic_id, intent_id, docid, grade)


def qrels_summary(qrels: Qrels) -> dict:
    """``{"topics", "intents_per_topic", "judged_per_topic", "relevant_per_topic",
    "grades"}`` as defined by :func:`pooling.coverage.qrels_stats`."""
    from . import coverage

    return coverage.qrels_stats(qrels_records(qrels))


def pool_coverage(pool: Pool, qrels: Qrels) -> dict:
    """Coverage of a pool by qrels: ``{"rows": [per topic], "mean": {...}}`` with the
    columns of :func:`pooling.coverage.coverage` (size, relevant, nonrelevant, unjudged and
    their percentages of the pool size). Only judgments of the pool's topics are read."""
    from . import coverage

    docs = pool_docids_by_topic(pool)
    rows = coverage.coverage(docs, qrels_records(qrels, topic_ids=list(docs)))
    return {"rows": rows[:-1], "mean": rows[-1]}


def pool_rank_weight_points(pool: Pool, qrels: Qrels | None = None, limit: int | None = None):
    """One point per pooled document: shallowest rank, aggregate weight, and (given qrels)
    whether it is judged and relevant. ``limit`` keeps an evenly spaced subset, in order."""
    judged: dict[str, dict[str, bool]] = {}
    if qrels is not None:
        topics = list(pool_sizes(pool))
        for rec in qrels_records(qrels, topic_ids=topics):
            rel = judged.setdefault(rec.topic_id, {})
            rel[rec.docid] = rel.get(rec.docid, False) or rec.rel > 0
    points = []
    for d in pool_documents(pool):
        t = judged.get(d.topic_id, {})
        points.append({
            "topic": d.topic_id, "docid": d.docid, "min_rank": d.min_rank, "weight": d.weight,
            "users": d.users, "systems": d.systems,
            "judged": d.docid in t, "relevant": t.get(d.docid, False),
        })
    if limit is not None and len(points) > limit:
        step = len(points) / limit
        points = [points[int(i * step)] for i in range(limit)]
    return points


def _title_run(topic_set_name: str, model_name: str | None):
    """The newest finished title-query retrieval run of a topic set (of a model)."""
    from retrieval.selectors import run_list

    qs = run_list(topic_set_name).filter(kind="retrieval", source="titles", status="done")
    if model_name:
        qs = qs.filter(model__name=model_name)
    run = qs.order_by("-created", "-id").first()
    if run is None:
        raise ValueError(
            f"topic set {topic_set_name!r} has no finished title-query run"
            + (f" of model {model_name!r}" if model_name else "")
            + "; retrieve the titles first, or compare all pairs (reference pairs)"
        )
    return run


def _pairs(n: int, max_pairs: int, rng) -> list[tuple[int, int]]:
    """All pairs i < j of n items, or a seeded sample of ``max_pairs`` of them."""
    total = n * (n - 1) // 2
    if total <= max_pairs:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = set()
    while len(chosen) < max_pairs:
        i, j = sorted(rng.choice(n, size=2, replace=False).tolist())
        chosen.add((i, j))
    return sorted(chosen)


@dataclass(frozen=True)
class _Ranked:
    label: str
    docids: np.ndarray  # dense ids in docid string order
    scores: np.ndarray

    @property
    def tied(self) -> bool:
        return bool(self.scores.size > 1 and (self.scores[1:] == self.scores[:-1]).any())


def _rbo_rows(topic_id: str, pairs: list[tuple[_Ranked, _Ranked]], p: float, *,
              reference_first: bool = False) -> list[dict]:
    """RBO of each pair ``(x, y)``, as rows ``{topic, a, b, min, res, ext}`` with ``a`` = x
    and ``b`` = y, or the other way round with ``reference_first`` (x is a reference).

    Pairs without tied scores go through :func:`pooling.rbo.rbo_batch` grouped by their
    first ranking (classic RBO, to ~1e-12 of :func:`pooling.rbo.rbo`); pairs with ties
    through :func:`pooling.rbo.rbo` with the scores (RBO^a).
    """
    from . import rbo as rbo_maths

    rows: list[dict | None] = [None] * len(pairs)
    batches: dict[int, list[int]] = {}
    firsts: dict[int, _Ranked] = {}
    for k, (x, y) in enumerate(pairs):
        if x.tied or y.tied or not x.docids.size or not y.docids.size:
            res = rbo_maths.rbo(x.docids, y.docids, p, a_scores=x.scores, b_scores=y.scores)
            rows[k] = _rbo_row(topic_id, x.label, y.label, res.min, res.res, res.ext,
                               reference_first)
        else:
            batches.setdefault(id(x), []).append(k)
            firsts[id(x)] = x
    for key, ks in batches.items():
        x = firsts[key]
        res = rbo_maths.rbo_batch(x.docids, [pairs[k][1].docids for k in ks], p)
        for n, k in enumerate(ks):
            rows[k] = _rbo_row(topic_id, x.label, pairs[k][1].label,
                               res.min[n], res.res[n], res.ext[n], reference_first)
    return rows  # type: ignore[return-value]


def _rbo_row(topic_id, a, b, rmin, rres, rext, swap=False) -> dict:
    if swap:
        a, b = b, a
    return {"topic": topic_id, "a": a, "b": b,
            "min": float(rmin), "res": float(rres), "ext": float(rext)}


def rbo_analysis(
    topic_set_name: str,
    *,
    p: float = 0.9,
    reference: str = "titles",
    model_name: str | None = None,
    max_pairs: int = 2000,
    seed: int = 0,
) -> dict:
    """Rank-biased overlap of user-variant rankings and of system-run rankings, per topic.

    ``reference="titles"``: every user ranking against the title-query ranking of its
    topic (the newest finished title run, of ``model_name`` if given; user rankings of the
    same model and collection). ``reference="pairs"``: every pair of user rankings of a
    topic. System runs are always compared pairwise. At most ``max_pairs`` pairs per topic
    and group (a sample seeded by ``seed`` beyond that). Scores are passed on, so tied
    scores are ties (RBO^a, :func:`pooling.rbo.rbo`). ``mann_whitney`` tests the one-sided
    hypothesis that user RBO_ext values are smaller than system ones.
    """
    from retrieval.selectors import run_rankings

    from . import stats

    if reference not in ("titles", "pairs"):
        raise ValueError(f"reference must be titles or pairs, not {reference!r}")
    if not 0.0 < float(p) < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, not {p}")
    title_run = None
    refs: dict[str, tuple[list[str], list[float]]] = {}
    user_model, user_collection = model_name, None
    if reference == "titles":
        title_run = _title_run(topic_set_name, model_name)
        user_model = title_run.model.name if title_run.model else model_name
        user_collection = title_run.collection.name if title_run.collection else None
        refs = {qid: (docids, scores) for qid, docids, scores in run_rankings(title_run)}
    records = list(ranking_records(topic_set_name, sources=("user",), model_name=user_model,
                                   collection_name=user_collection))
    records += list(ranking_records(topic_set_name, sources=("system",)))
    # dense ids in docid string order over the stored rankings and the reference rankings
    remap = DocidRemap.from_arrays([r.docids for r in records])
    extra = sorted({d for docs, _ in refs.values() for d in docs} - set(remap.strings.values()))
    if extra:
        names = sorted(list(remap.strings.values()) + extra)
        pos = {d: i for i, d in enumerate(names)}
        to_global = np.array([pos[remap.string_of_dense(k)] for k in range(len(remap.vocab))],
                             dtype=np.int64)
    else:
        pos = {remap.string_of_dense(k): k for k in range(len(remap.vocab))}
        to_global = np.arange(len(remap.vocab), dtype=np.int64)
    by_topic: dict[str, dict[str, list]] = {}
    for r in records:
        dense = to_global[remap.to_dense(r.docids)] if len(r.docids) else np.zeros(0, np.int64)
        by_topic.setdefault(r.topic_id, {"user": [], "system": []})[r.source].append(
            _Ranked(r.label, dense, np.asarray(r.scores, dtype=np.float64)))
    rng = np.random.default_rng(seed)
    out: dict[str, list] = {"user": [], "system": []}

    for topic_id in sorted(by_topic):
        users = by_topic[topic_id]["user"]
        if reference == "titles":
            if topic_id in refs and users:
                ref_docs, ref_scores = refs[topic_id]
                ref = _Ranked("title", np.array([pos[d] for d in ref_docs], dtype=np.int64),
                              np.asarray(ref_scores, dtype=np.float64))
                out["user"] += _rbo_rows(topic_id, [(ref, u) for u in users[:max_pairs]], p,
                                         reference_first=True)
        else:
            out["user"] += _rbo_rows(
                topic_id, [(users[i], users[j]) for i, j in _pairs(len(users), max_pairs, rng)], p)
        systems = by_topic[topic_id]["system"]
        out["system"] += _rbo_rows(
            topic_id, [(systems[i], systems[j]) for i, j in _pairs(len(systems), max_pairs, rng)],
            p)

    def summary(rows):
        ext = np.array([r["ext"] for r in rows], dtype=np.float64)
        return {
            "pairs": int(ext.size),
            "mean": float(ext.mean()) if ext.size else None,
            "median": float(np.median(ext)) if ext.size else None,
        }

    mw = None
    if out["user"] and out["system"]:
        res = stats.mann_whitney_less([r["ext"] for r in out["user"]],
                                      [r["ext"] for r in out["system"]])
        mw = {"u": res.statistic, "p_value": res.pvalue, "n_user": res.n_x,
              "n_system": res.n_y, "alternative": "user RBO < system RBO"}
    return {
        "topic_set": topic_set_name,
        "p": float(p),
        "reference": reference,
        "reference_run": title_run.id if title_run else None,
        "user": out["user"],
        "system": out["system"],
        "summary": {"user": summary(out["user"]), "system": summary(out["system"])},
        "mann_whitney": mw,
    }
