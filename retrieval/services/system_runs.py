"""System runs: a TREC run file stored as a run of a topic set, all or nothing."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from django.db import transaction
from django.utils import timezone

from common.fileio import clean_id
from common.trec import read_run

from ..models import Ranking, Run, RunQuery
from ..rankings import pack
from .errors import RetrievalError
from .vocabulary import docids_ensure


def system_run_import(path: str | Path, *, topic_set_name: str, tag: str | None = None,
                      encoding: str = "utf-8",
                      before_commit: Callable[[Run], None] | None = None) -> Run:
    """Import a TREC run file as a system run of a topic set; all or nothing.

    One RunQuery + Ranking per topic (label = the tag), ordered by (-score, docid). Every
    topic id of the file must be a topic of the set. ``before_commit(run)``, when given,
    is called inside the import's transaction after the last write (a caller's own mark
    commits with the run, or it raises to roll the import back).
    """
    from topics.selectors import topic_list, topic_set_get

    try:
        topic_set = topic_set_get(topic_set_name)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    topics = {t.topic_id: t for t in topic_list(topic_set_name)}
    file_tag, rankings = read_run(path, topic_ids=topics, encoding=encoding)
    try:
        tag = clean_id(tag or file_tag, "run tag", max_chars=Run._meta.get_field("tag").max_length)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    if Run.objects.filter(topic_set=topic_set, kind=Run.KIND_SYSTEM, tag=tag).exists():
        raise RetrievalError(f"topic set {topic_set_name!r} already has a system run tagged {tag!r}")
    with transaction.atomic():
        ids = docids_ensure({d for docids, _ in rankings.values() for d in docids})
        run = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=topic_set, source="system",
                                 tag=tag, depth=max(len(d) for d, _ in rankings.values()),
                                 status="done", total=len(rankings), completed=len(rankings),
                                 finished=timezone.now())
        for qid in sorted(rankings):
            docids, scores = rankings[qid]
            d, s = pack([ids[x] for x in docids], scores)
            ranking = Ranking.objects.create(key=None, docids=d, scores=s, length=len(docids),
                                             depth=len(docids))
            RunQuery.objects.create(run=run, topic=topics[qid], label=tag, ranking=ranking)
        if before_commit is not None:
            before_commit(run)
    return run
