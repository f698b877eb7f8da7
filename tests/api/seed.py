"""A small seeded dataset for the API tests, made through the apps' services: topic set
``UQV`` (topics UQV100.001 and UQV100.002, two intents each, statements, query
variants), collection ``c1`` (ready), system runs ``r1``/``r2``, pool ``p`` (built),
judging task ``jt`` (topic mode), judgment set ``nist`` and qrels ``q`` (imported)."""
from __future__ import annotations

TOPICS = ("UQV100.001", "UQV100.002")
DOCS = 6


def seed(tmp_path) -> dict:
    from judging.services import judging_task_create, judgments_import, qrels_import
    from pooling.services import pool_build, pool_create
    from retrieval.models import Collection
    from retrieval.services import system_run_import
    from topics.models import QueryVariant, Topic
    from topics.services import topics_import
    from topics.topicfiles import IntentRecord, TopicRecord

    topics_import("UQV", [
        TopicRecord(topic_id=t, title=f"title {t}", description=f"description {t}",
                    statements=(f"statement {t}",),
                    intents=tuple(IntentRecord(intent_id=i, description=f"intent {i}")
                                  for i in ("1", "2")))
        for t in TOPICS])
    for n, topic in enumerate(Topic.objects.filter(topic_set__name="UQV").order_by("topic_id")):
        for w, text in enumerate(("cheap flights", "Cheap flights to Paris")):
            QueryVariant.objects.create(topic=topic, raw=text, normalised=text.lower(),
                                        worker_id=f"w{n}{w}", count=1 + w)
    Collection.objects.create(name="c1", format="jsonl", source_path="c1.jsonl", status="ready",
                              doc_count=DOCS)
    for tag, order in (("r1", range(1, DOCS + 1)), ("r2", range(DOCS, 0, -1))):
        f = tmp_path / f"{tag}.run"
        f.write_text("".join(f"{t} Q0 {t}-d{d} {r} {100 - r} {tag}\n"
                             for t in TOPICS for r, d in enumerate(order, 1)))
        system_run_import(f, topic_set_name="UQV", tag=tag)
    pool = pool_create(topic_set_name="UQV", sources="systems", depth=DOCS, name="p")
    pool_build(pool.id)
    pool.refresh_from_db()
    judging_task_create(pool=pool, name="jt", mode="topic")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{t} 0 {t}-d{d} {int(d <= 2)}\n" for t in TOPICS for d in range(1, DOCS + 1)))
    judgments_import(qrels, format="adhoc", name="nist", topic_set_name="UQV")
    qrels_import(qrels, format="adhoc", name="q", topic_set_name="UQV")
    return {"pool": pool}


def users():
    """A staff account, an assessor (not staff) and their tokens."""
    from django.contrib.auth.models import User

    from common.api import api_token_issue

    User.objects.create_user("organiser", password="x", is_staff=True)
    User.objects.create_user("assessor", password="x")
    return {"staff": api_token_issue("organiser"), "plain": api_token_issue("assessor")}
