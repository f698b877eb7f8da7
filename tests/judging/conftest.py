"""A small pool over two topics with two intents each, built from two system runs."""
from __future__ import annotations

import pytest
from django.core.management import call_command


def make_pool(tmp_path, *, topics=("1", "2"), docs=6, name="p", intents=("1", "2")):
    """Topic set ``ts``; runs ``r1`` (d1..dN) and ``r2`` (dN..d1) per topic; a depth-N
    pool from the systems named ``name``. Returns the pool."""
    from pooling.selectors import pool_get
    from topics.models import Intent, Topic, TopicSet

    ts, _ = TopicSet.objects.get_or_create(name="ts")
    for t in topics:
        topic, _ = Topic.objects.get_or_create(topic_set=ts, topic_id=t, defaults={
            "title": f"topic {t}", "description": f"statement {t}"})
        for i in intents:
            Intent.objects.get_or_create(topic=topic, intent_id=i)
    for tag, order in (("r1", range(1, docs + 1)), ("r2", range(docs, 0, -1))):
        f = tmp_path / f"{tag}.run"
        f.write_text("".join(f"{t} Q0 t{t}d{d} {r} {100 - r} {tag}\n"
                             for t in topics for r, d in enumerate(order, 1)))
        call_command("import_run", str(f), "--topic-set", "ts", "--tag", tag)
    call_command("build_pool", "--topic-set", "ts", "--sources", "systems", "--depth",
                 str(docs), "--name", name)
    return pool_get(name)


@pytest.fixture
def small_pool(tmp_path, db):
    return make_pool(tmp_path)
