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
