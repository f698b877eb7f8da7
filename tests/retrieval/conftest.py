"""Fixtures for retrieval tests: a CACM index built once per session (no database)."""
from pathlib import Path

import pytest

from retrieval import anserini
from retrieval.collections_io import read_collection, write_json_collection


@pytest.fixture(scope="session")
def cacm_dir(shared_data) -> Path:
    d = shared_data / "small-corpora" / "cacm"
    if not (d / "cacm.all").is_file():
        pytest.skip(f"CACM not found in {d}")
    return d


@pytest.fixture(scope="session")
def cacm_queries(cacm_dir) -> dict[str, str]:
    """CACM's 64 queries: id -> text of the .W field (a tiny SMART reader)."""
    queries, qid, field = {}, None, None
    for line in (cacm_dir / "query.text").read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I "):
            qid, field = line[3:].strip(), None
            queries[qid] = ""
        elif line[:2] in (".W", ".A", ".N", ".T", ".B") and len(line.rstrip()) == 2:
            field = line[1]
        elif qid is not None and field == "W":
            queries[qid] = " ".join((queries[qid] + " " + line).split())
    return queries


@pytest.fixture(scope="session")
def cacm_index(cacm_dir, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("cacm")
    write_json_collection(read_collection(cacm_dir / "cacm.all", "smart"), work / "json")
    anserini.index_build(work / "json", work / "index")
    return work / "index"


@pytest.fixture(autouse=True)
def _fresh_vocabulary_cache():
    """Tests roll back the database, which a process-wide id cache would outlive."""
    from retrieval.services import vocabulary_cache_clear

    vocabulary_cache_clear()
    yield
    vocabulary_cache_clear()


@pytest.fixture
def cacm_titles(transactional_db, settings, cacm_index, cacm_queries):
    """A CACM collection row over the session's index and 24 of its queries as titles
    (6 chunks of 4), for tests with real worker processes on PostgreSQL."""
    from retrieval.models import Collection
    from tests.workers import require_postgresql
    from topics.models import Topic, TopicSet

    require_postgresql()
    settings.RETRIEVAL_CHUNK_SIZE = 4
    Collection.objects.create(name="cacm", format="smart", source_path="cacm.all",
                              index_path=str(cacm_index), doc_count=3204, status="ready")
    ts = TopicSet.objects.create(name="cacm")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=q, title=t)
                               for q, t in list(cacm_queries.items())[:24]])
