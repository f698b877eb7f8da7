"""Judging orders that learn from the judgments so far. Plain Python (numpy, scikit-learn);
no Django.

Items and contributing rankings are as in :mod:`judging.priority`: items are a topic's
pooled documents by 0-based pool position, and each contributing ranking is the array of
item positions one ranking gives, best first, cut at the pool depth. Every order here is a
generator of items with the protocol of :func:`judging.priority.adaptive_order`: items in
``known`` (item -> relevant) are never yielded and are the training data; a caller that
records a yielded item's relevance in ``known`` before resuming gets the sequential policy
(that is how a simulation runs). Every order is deterministic (a seeded generator where
randomness is called for), so the order is a function of the judgments.

``hedge``
    Aslam, Pavlu & Savell (2003), "A unified model for metasearch, pooling, and system
    evaluation" (CIKM 2003). Every contributing ranking s is an expert with weight w_s,
    initially uniform. A document d at rank r (1-based) of a ranking of N documents has
    the rank-based value ``v_s(d) = ½ · ln(N / r)`` (0 for a document the ranking does not
    hold); this is the paper's rank-based loss as we read it (it tracks the
    average-precision weight of rank r, about ½ · (1 + H_N − H_r)); the paper's full text
    was not at hand to check the constant and the treatment of unretrieved documents. The next document is the unjudged one of largest weighted
    mixture ``Σ_s w_s · v_s(d) / Σ_s w_s`` (ties to the earlier pool position). Judging d
    costs expert s the loss ``−v_s(d)`` if d is relevant and ``+v_s(d)`` if not, and the
    weights are updated multiplicatively, ``w_s ← w_s · β^loss`` with β = :data:`HEDGE_BETA`.
    The losses add up, so the weights are ``β^(Σ losses)`` whatever the order in which
    the judgments arrived: the next document is a function of the set of judgments, which
    makes the order cheap to compute for a live queue (:func:`hedge_next`). N is the
    length of the longest contributing ranking of the topic (the pool depth, unless every
    ranking is shorter). β = 0.1 was fixed before any simulation, not tuned.
``al-rank``
    Active learning over rank features: a logistic regression of P(relevant | rank
    features of the document) (:func:`rank_features`: its RBP weights (p = 0.8) and
    reciprocal ranks in the contributing rankings — mean and largest —, the share and
    number of rankings that hold it, and the shares of the user and of the system
    rankings that hold it). Two models are combined by averaging their probabilities: one
    pooled across topics on those features (:class:`PooledModel`, refitted each time the
    judgments of all topics grew by 10%), and one within the topic on the same features
    plus the document's RBP weight in each ranking of the topic (refitted at every
    batch, once the topic has both a relevant and a non-relevant judgment). Before either
    model can be fitted, documents go by the rank fusion prior (mean RBP weight). Batches
    start at one document and grow by ⌈b/10⌉ (as in AutoTAR); every
    :data:`EXPLORE_EVERY`-th document of a batch is instead the best remaining document
    by the fusion prior (exploration: evidence from documents the fitted model would not
    choose). A live queue's fit (:func:`learned_ranking`) scores with the same two models.
``cal-text``
    Continuous active learning over document text — Cormack & Grossman's AutoTAR
    ("Autonomy and reliability of continuous active learning for technology-assisted
    review", 2015; the baseline model implementation of the TREC Total Recall track and
    of HiCAL, Abualsaud et al. SIGIR 2018): tf-idf vectors (sublinear tf) of the topic's
    pooled documents, a logistic regression retrained at every batch on the judged
    documents, the topic statement as a relevant pseudo-document (the seed), and
    :data:`CAL_NEGATIVES` documents drawn at random from the unjudged ones presumed
    non-relevant for that fit only (AutoTAR's "random negatives"); batches of one growing
    by ⌈b/10⌉, the next batch being the unjudged documents of highest score.
``cal``
    ``cal-text`` with the rank features of ``al-rank`` (scaled to [0, 1]) appended to
    each document's tf-idf vector; the statement pseudo-document gets the largest value
    of each rank feature over the topic's documents (it stands for a document every
    ranking put first).

Ties between equal scores go to the earlier pool position.
"""
from __future__ import annotations

import math
from typing import Iterator, Mapping, MutableMapping, Sequence

import numpy as np

__all__ = [
    "CAL_NEGATIVES",
    "EXPLORE_EVERY",
    "HEDGE_BETA",
    "HedgeReplay",
    "LEARNED_ORDERS",
    "PooledModel",
    "RANK_FEATURES",
    "RBP_P",
    "REFIT_ORDERS",
    "TEXT_ORDERS",
    "hedge_next",
    "hedge_scores",
    "hedge_values",
    "learned_order",
    "learned_ranking",
    "rank_features",
]

LEARNED_ORDERS = ("hedge", "al-rank", "cal-text", "cal")
TEXT_ORDERS = ("cal-text", "cal")
#: the learned orders whose model a live queue refits in the background
#: (:func:`learned_ranking`); hedge needs no fit (:class:`HedgeReplay`)
REFIT_ORDERS = ("al-rank", "cal-text", "cal")

#: Hedge's β (Aslam, Pavlu & Savell 2003)
HEDGE_BETA = 0.1
#: persistence of the RBP weights among the rank features
RBP_P = 0.8
#: every this many documents of an ``al-rank`` batch, one by the fusion prior
EXPLORE_EVERY = 10
#: random unjudged documents presumed non-relevant in each CAL fit (AutoTAR uses 100)
CAL_NEGATIVES = 100
#: a regularisation strength for every logistic regression here (scikit-learn's default)
C = 1.0


# --- hedge -----------------------------------------------------------------------------------


def hedge_values(rankings: Sequence[Sequence[int]], n_items: int) -> np.ndarray:
    """``V[s, item] = ½ · ln(N / r)`` for the item at rank r of ranking s (0 elsewhere),
    N the longest ranking's length."""
    depth = max((len(r) for r in rankings), default=0)
    values = np.zeros((len(rankings), n_items))
    for s, ranking in enumerate(rankings):
        ranking = np.asarray(ranking, dtype=np.int64)
        values[s, ranking] = 0.5 * np.log(depth / np.arange(1, len(ranking) + 1))
    return values


def hedge_scores(values: np.ndarray, known: Mapping[int, bool],
                 beta: float = HEDGE_BETA) -> np.ndarray:
    """The mixture score of every item after the judgments ``known``: the weights are
    ``β^(Σ losses)``, normalised (computed in log space)."""
    if values.shape[0] == 0:
        return np.zeros(values.shape[1])
    items = np.fromiter(known.keys(), dtype=np.int64, count=len(known))
    rel = np.fromiter((bool(v) for v in known.values()), dtype=bool, count=len(known))
    sign = np.where(rel, -1.0, 1.0)
    loss = (values[:, items] * sign).sum(axis=1) if len(items) else np.zeros(len(values))
    logw = loss * math.log(beta)
    w = np.exp(logw - logw.max())
    return (w / w.sum()) @ values


def _best(scores: np.ndarray, open_: np.ndarray) -> int:
    """The open item of largest score, ties to the earlier position; -1 if none."""
    if not open_.any():
        return -1
    masked = np.where(open_, scores, -np.inf)
    return int(np.argmax(masked))  # argmax takes the first of equal maxima


def hedge_next(rankings: Sequence[Sequence[int]], n_items: int, known: Mapping[int, bool],
               exclude=(), beta: float = HEDGE_BETA) -> int:
    """The item Hedge judges next after ``known`` (not in ``exclude``), -1 if none."""
    scores = hedge_scores(hedge_values(rankings, n_items), known, beta)
    open_ = np.ones(n_items, dtype=bool)
    open_[list(known)] = False
    open_[list(exclude)] = False
    return _best(scores, open_)


class HedgeReplay:
    """Hedge for a live queue: the values are computed once per topic, and each call
    orders the items not in ``known`` by the mixture under the weights of the judgments
    ``known`` (items being judged give no feedback). Nothing is refitted: the weights are
    a closed form of the judgments (β to the summed losses), one matrix-vector product
    per call, so the assessor's request computes them directly. The interface is
    :class:`judging.priority.AdaptiveReplay`'s."""

    def __init__(self, rankings: Sequence[Sequence[int]], n_items: int):
        self.values = hedge_values(rankings, n_items)
        self.n_items = n_items
        self.full_replays = 1

    def items(self, known: Mapping[int, bool], changed=None) -> Iterator[int]:
        scores = hedge_scores(self.values, known)
        open_ = np.ones(self.n_items, dtype=bool)
        open_[list(known)] = False
        return (int(i) for i in _ranked(scores, open_))


def _hedge(rankings, n_items, known) -> Iterator[int]:
    values = hedge_values(rankings, n_items)
    open_ = np.ones(n_items, dtype=bool)
    for item in known:
        open_[item] = False
    log_beta = math.log(HEDGE_BETA)
    logw = np.zeros(len(rankings))
    for item, rel in known.items():
        logw += (-1.0 if rel else 1.0) * values[:, item] * log_beta
    while True:
        w = np.exp(logw - logw.max()) if len(logw) else logw
        scores = (w / w.sum()) @ values if len(logw) else np.zeros(n_items)
        item = _best(scores, open_)
        if item < 0:
            return
        open_[item] = False
        yield item
        rel = known.get(item)
        if rel is not None:
            logw += (-1.0 if rel else 1.0) * values[:, item] * log_beta


# --- rank features ---------------------------------------------------------------------------

#: the names of :func:`rank_features`' columns
RANK_FEATURES = ("rbp_mean", "rbp_max", "rr_mean", "rr_max", "share", "log_count",
                 "user_share", "system_share")


def rank_features(rankings: Sequence[Sequence[int]], n_items: int,
                  sources: Sequence[str] | None = None, p: float = RBP_P
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(pooled, per_ranking)``: the item × :data:`RANK_FEATURES` matrix, comparable
    across topics, and the item × ranking matrix of RBP weights ``(1 − p) · p^(r − 1)``
    (rank r, 1-based; 0 where the ranking does not hold the item). ``sources`` names
    each ranking "user" or "system" (default: all system)."""
    n_rank = len(rankings)
    sources = list(sources) if sources is not None else ["system"] * n_rank
    if len(sources) != n_rank:
        raise ValueError(f"{len(sources)} sources for {n_rank} rankings")
    rbp = np.zeros((n_items, n_rank))
    rr = np.zeros((n_items, n_rank))
    for s, ranking in enumerate(rankings):
        ranking = np.asarray(ranking, dtype=np.int64)
        ranks = np.arange(1, len(ranking) + 1)
        rbp[ranking, s] = (1 - p) * p ** (ranks - 1)
        rr[ranking, s] = 1.0 / ranks
    held = rr > 0
    count = held.sum(axis=1)
    user = np.array([x == "user" for x in sources], dtype=bool)
    n_user, n_sys = int(user.sum()), int((~user).sum())
    denom = max(n_rank, 1)
    pooled = np.column_stack([
        rbp.sum(axis=1) / denom / (1 - p),  # scaled so that rank 1 everywhere is 1
        rbp.max(axis=1, initial=0.0) / (1 - p),
        rr.sum(axis=1) / denom,
        rr.max(axis=1, initial=0.0),
        count / denom,
        np.log1p(count) / math.log1p(denom),
        held[:, user].sum(axis=1) / n_user if n_user else np.zeros(n_items),
        held[:, ~user].sum(axis=1) / n_sys if n_sys else np.zeros(n_items),
    ])
    return pooled, rbp / (1 - p)


def _fit(X, y):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, max_iter=1000)
    model.fit(X, y)
    return model


class PooledModel:
    """One logistic regression over :data:`RANK_FEATURES` shared by the topics of a pool:
    each topic adds its judged documents' features; the model is refitted when the
    judgments grew by 10% since the last fit (and both classes are present)."""

    def __init__(self):
        self.rows: list[np.ndarray] = []
        self.labels: list[int] = []
        self.model = None
        self._fitted_at = 0
        self.fits = 0

    def add(self, features: np.ndarray, relevant: bool) -> None:
        self.rows.append(features)
        self.labels.append(int(bool(relevant)))

    def add_judged(self, features: np.ndarray, known: Mapping[int, bool | None]) -> None:
        """Add a topic's judged items (those of ``known`` not None), in item order;
        ``features`` is the topic's item × :data:`RANK_FEATURES` matrix
        (:func:`rank_features`' first)."""
        for item in sorted(known):
            if known[item] is not None:
                self.add(features[item], known[item])

    def current(self):
        n = len(self.labels)
        if n and n >= max(self._fitted_at * 1.1, self._fitted_at + 1) and 0 < sum(self.labels) < n:
            self.model = _fit(np.vstack(self.rows), np.asarray(self.labels))
            self._fitted_at = n
            self.fits += 1
        return self.model


def _batch_sizes() -> Iterator[int]:
    b = 1
    while True:
        yield b
        b += math.ceil(b / 10)


def _ranked(scores: np.ndarray, open_: np.ndarray) -> np.ndarray:
    """Open items by (-score, position)."""
    items = np.flatnonzero(open_)
    return items[np.lexsort((items, -scores[items]))]


def _al_rank_scores(pooled, topic_X, known: Mapping[int, bool], judged: Sequence[int],
                    pooled_model: PooledModel | None) -> np.ndarray:
    """The mean probability of the models that can be fitted (the pooled one, the
    topic's own once ``judged`` holds both classes), else the fusion prior."""
    probs = []
    model = pooled_model.current() if pooled_model is not None else None
    if model is not None:
        probs.append(model.predict_proba(pooled)[:, 1])
    labels = [int(bool(known[i])) for i in judged]
    if 0 < sum(labels) < len(labels):
        probs.append(_fit(topic_X[list(judged)], np.asarray(labels)).predict_proba(topic_X)[:, 1])
    return np.mean(probs, axis=0) if probs else pooled[:, 0]


def _explored(scores: np.ndarray, prior: np.ndarray, open_: np.ndarray, size: int,
              taken: int) -> list[int]:
    """Up to ``size`` open items by ``scores``, every :data:`EXPLORE_EVERY`-th document
    overall (``taken`` were chosen before) by ``prior`` instead."""
    by_model = list(_ranked(scores, open_))
    by_prior = list(_ranked(prior, open_))
    batch: list[int] = []
    chosen: set[int] = set()
    while len(batch) < size and (by_model or by_prior):
        taken_next = taken + len(batch) + 1
        source = by_prior if taken_next % EXPLORE_EVERY == 0 else by_model
        while source and source[0] in chosen:
            source.pop(0)
        if not source:
            source = by_model if source is by_prior else by_prior
            while source and source[0] in chosen:
                source.pop(0)
            if not source:
                break
        item = int(source.pop(0))
        chosen.add(item)
        batch.append(item)
    return batch


def _al_rank(rankings, n_items, known, sources, pooled_model: PooledModel | None
             ) -> Iterator[int]:
    pooled, per_ranking = rank_features(rankings, n_items, sources)
    topic_X = np.hstack([pooled, per_ranking])
    prior = pooled[:, 0]
    pooled_model = PooledModel() if pooled_model is None else pooled_model
    open_ = np.ones(n_items, dtype=bool)
    for item, rel in known.items():
        open_[item] = False
        pooled_model.add(pooled[item], rel)
    taken = 0
    for size in _batch_sizes():
        if not open_.any():
            return
        judged = [i for i in known if not open_[i]]
        scores = _al_rank_scores(pooled, topic_X, known, judged, pooled_model)
        batch = _explored(scores, prior, open_, size, taken)
        for item in batch:
            open_[item] = False
            taken += 1
            yield item
            rel = known.get(item)
            if rel is not None:
                pooled_model.add(pooled[item], rel)


# --- continuous active learning over text ---------------------------------------------------


def _text_matrix(texts: Sequence[str], statement: str):
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    try:
        matrix = vectorizer.fit_transform(list(texts) + [statement])
    except ValueError:  # nothing but stop words
        raise ValueError("the documents and the statement have no words to learn from") from None
    return matrix[:-1], matrix[-1]


def _cal_docs(rankings, n_items, texts, statement, sources, with_ranks: bool):
    """The documents' vectors and the statement's (the seed), rank features appended
    for ``cal``."""
    from scipy import sparse

    if texts is None or len(texts) != n_items:
        raise ValueError("continuous active learning over text needs every pooled "
                         "document's text")
    docs, seed_doc = _text_matrix(texts, statement or "")
    if with_ranks:
        pooled, _ = rank_features(rankings, n_items, sources)
        top = pooled.max(axis=0, keepdims=True) if n_items else np.zeros((1, pooled.shape[1]))
        docs = sparse.hstack([docs, sparse.csr_matrix(pooled)]).tocsr()
        seed_doc = sparse.hstack([seed_doc, sparse.csr_matrix(top)]).tocsr()
    return docs, seed_doc


def _cal_scores(docs, seed_doc, known: Mapping[int, bool], judged: Sequence[int],
                open_: np.ndarray, rng) -> np.ndarray:
    """One AutoTAR fit: the seed, the judged documents and random unjudged ones presumed
    non-relevant; the decision value of every document (similarity to the seed while
    there is nothing to contrast)."""
    from scipy import sparse

    unjudged = np.flatnonzero(open_)
    negatives = rng.choice(unjudged, size=min(CAL_NEGATIVES, len(unjudged)), replace=False)
    X = sparse.vstack([seed_doc, docs[list(judged)], docs[negatives]]).tocsr()
    y = np.concatenate([[1], [int(bool(known[i])) for i in judged],
                        np.zeros(len(negatives), dtype=int)])
    if y.min() == y.max():  # only the seed and nothing to contrast: score by similarity
        return np.asarray((docs @ seed_doc.T).todense()).ravel()
    return _fit(X, y).decision_function(docs)


def _cal(rankings, n_items, known, texts, statement, sources, with_ranks: bool,
         seed: int) -> Iterator[int]:
    docs, seed_doc = _cal_docs(rankings, n_items, texts, statement, sources, with_ranks)
    rng = np.random.default_rng(seed)
    open_ = np.ones(n_items, dtype=bool)
    for item in known:
        open_[item] = False
    for size in _batch_sizes():
        if not open_.any():
            return
        judged = [i for i in range(n_items) if not open_[i] and known.get(i) is not None]
        scores = _cal_scores(docs, seed_doc, known, judged, open_, rng)
        batch = _ranked(scores, open_)[:size]
        for item in batch:
            item = int(item)
            open_[item] = False
            yield item


def learned_order(
    order: str,
    rankings: Sequence[Sequence[int]],
    n_items: int,
    known: MutableMapping[int, bool],
    *,
    sources: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
    statement: str = "",
    pooled: PooledModel | None = None,
    seed: int = 0,
) -> Iterator[int]:
    """Items not in ``known`` in the order ``order`` (:data:`LEARNED_ORDERS`), learning
    from the judgments in ``known`` (read again after each item is yielded). ``sources``:
    "user"/"system" per ranking; ``texts`` and ``statement``: each item's text and the
    topic statement (``cal-text``, ``cal``); ``pooled``: the model shared by the topics
    (``al-rank``; a topic of its own when None); ``seed``: the random negatives of CAL."""
    if order == "hedge":
        return _hedge(rankings, n_items, known)
    if order == "al-rank":
        return _al_rank(rankings, n_items, known, sources, pooled)
    if order in TEXT_ORDERS:
        return _cal(rankings, n_items, known, texts, statement, sources, order == "cal",
                    seed)
    raise ValueError(f"learned order must be one of {', '.join(LEARNED_ORDERS)}, not {order!r}")


def learned_ranking(
    order: str,
    rankings: Sequence[Sequence[int]],
    n_items: int,
    known: Mapping[int, bool],
    *,
    sources: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
    statement: str = "",
    pooled: PooledModel | None = None,
    seed: int = 0,
) -> np.ndarray:
    """One fit of ``order`` (:data:`REFIT_ORDERS`) on the judgments ``known``, as a
    ranking of every item (0-based positions, best first) for a live queue, which hands
    items out from it until the next fit: the items not in ``known`` by the fitted
    model's score (``al-rank``: every :data:`EXPLORE_EVERY`-th by the fusion prior,
    counting the judged items as taken), then the items in ``known`` by the same scores
    (a task with K > 1 may still owe them judgments).

    It is the first batch of :func:`learned_order` drawn out to the whole topic: for
    ``al-rank`` the same scores (:func:`_al_rank_scores`), the mean of the model pooled
    across topics and the topic's own. ``pooled`` holds the other topics' judged items
    (:meth:`PooledModel.add_judged`); this topic's are added to it (to a model of this
    topic alone when None, as :func:`learned_order` does), so pass a fresh model per
    call. The text orders have no pooled model (nor does the simulation give them one)
    and ignore it."""
    if order not in REFIT_ORDERS:
        raise ValueError(f"a refitted order must be one of {', '.join(REFIT_ORDERS)}, "
                         f"not {order!r}")
    open_ = np.ones(n_items, dtype=bool)
    for item in known:
        open_[item] = False
    judged = [i for i in sorted(known) if known[i] is not None]
    if order == "al-rank":
        features, per_ranking = rank_features(rankings, n_items, sources)
        shared = PooledModel() if pooled is None else pooled
        shared.add_judged(features, known)
        scores = _al_rank_scores(features, np.hstack([features, per_ranking]), known,
                                 judged, shared)
        first = _explored(scores, features[:, 0], open_, int(open_.sum()), len(known))
    else:
        docs, seed_doc = _cal_docs(rankings, n_items, texts, statement, sources,
                                   order == "cal")
        scores = (_cal_scores(docs, seed_doc, known, judged, open_,
                              np.random.default_rng(seed))
                  if open_.any() else np.zeros(n_items))
        first = list(_ranked(scores, open_))
    rest = _ranked(scores, ~open_) if n_items else np.zeros(0, np.int64)
    return np.concatenate([np.asarray(first, dtype=np.int64), rest]).astype(np.int64)
