"""`manage.py demo` without --from: Cranfield through the real ir_datasets code, offline.

ir_datasets keeps the archive it downloads at ``$IR_DATASETS_HOME/cranfield/cran.tar.gz``
and uses that file when it exists (its md5 is checked only while downloading). The tests
put Cranfield's original archive from ../shared/data/small-corpora/cranfield there — the
same bytes ir_datasets would download: its md5 is the ``expected_md5`` ir_datasets
records for that URL, which the first test checks against ir_datasets' own download table
— so ir_datasets extracts, parses and caches the collection itself and no download is
attempted (the network guard in conftest refuses any remote connection). With an empty
home the same code tries to download, is refused, and the demo says to pass --from.

ir_datasets reads IR_DATASETS_HOME when it is imported, so each test imports it afresh
with its own home (the modules imported before are put back afterwards).
"""
import hashlib
import io
import json
import pkgutil
import shutil
import sys

import pytest
from django.core.management import CommandError, call_command

from common.trec import read_qrels
from projects import demo
from topics.topicfiles import read_topics

pytest.importorskip("ir_datasets")


@pytest.fixture
def irds_home(tmp_path, monkeypatch):
    """An empty ir_datasets home, and ir_datasets to be imported afresh under it."""
    home = tmp_path / "ir_datasets"
    home.mkdir()
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    monkeypatch.setenv("IR_DATASETS_TMP", str(tmp_path / "irds-tmp"))
    for name in [m for m in sys.modules if m == "ir_datasets" or m.startswith("ir_datasets.")]:
        monkeypatch.delitem(sys.modules, name)
    return home


@pytest.fixture
def cranfield(shared_data):
    d = shared_data / "small-corpora" / "cranfield"
    if not (d / "cran.tar.gz").is_file():
        pytest.skip(f"{d}/cran.tar.gz not found")
    return d


def _download_entry() -> dict:
    return json.loads(pkgutil.get_data("ir_datasets", "etc/downloads.json"))["cranfield"]["main"]


def test_the_shared_archive_is_the_one_ir_datasets_downloads(cranfield):
    entry = _download_entry()
    assert entry["cache_path"] == "cran.tar.gz"
    digest = hashlib.md5((cranfield / "cran.tar.gz").read_bytes()).hexdigest()
    assert digest == entry["expected_md5"]


def test_fetch_reads_cranfield_through_ir_datasets_from_its_cache(irds_home, cranfield, tmp_path):
    (irds_home / "cranfield").mkdir()
    shutil.copyfile(cranfield / "cran.tar.gz", irds_home / "cranfield" / "cran.tar.gz")
    work = tmp_path / "work"
    work.mkdir()

    src = demo.source_fetch(work)

    # ir_datasets itself extracted the archive into its cache: its code path ran
    assert (irds_home / "cranfield" / "docs.txt").is_file()
    assert (irds_home / "cranfield" / "qrels.txt").read_bytes() == (cranfield / "cranqrel").read_bytes()

    docs = src.docs.read_text().split(".I ")[1:]
    assert len(docs) == 1400
    assert docs[470] == "471\n.T\n\n.W\n\n" and src.skip_empty  # Cranfield's empty documents
    assert docs[0].startswith("1\n.T\nexperimental investigation of the aerodynamics of a\nwing in a slipstream .")
    topics = read_topics(src.topics, "smart")
    assert len(topics) == 225  # ir_datasets numbers Cranfield's queries 1..225, as its qrels do
    assert topics[0].topic_id == "1"
    assert topics[0].statements[0].startswith("what similarity laws must be obeyed when")
    assert topics[-1].topic_id == "225"

    raw = [line.split() for line in (cranfield / "cranqrel").read_text().splitlines() if line.strip()]
    rows = read_qrels(src.qrels, "adhoc")
    assert len(rows) == len(raw) == 1837
    grades = {(r.topic_id, r.docid): r.rel for _, r in rows}
    for qid, docid, code in raw:  # codes 1 (complete answer) .. 4 relevant, -1 not
        assert grades[(qid, docid)] == (1 if int(code) > 0 else 0)
    assert sum(grades.values()) == 1837 - 225


def test_the_demo_command_without_from_uses_the_cache(irds_home, cranfield, db):
    """The command's own path: fetch through ir_datasets, then the demo's argument checks
    (``--workers 0``) stop it before any indexing; the fetched files were read."""
    (irds_home / "cranfield").mkdir()
    shutil.copyfile(cranfield / "cran.tar.gz", irds_home / "cranfield" / "cran.tar.gz")
    with pytest.raises(CommandError, match="workers must be between 1 and 99"):
        call_command("demo", "--no-worker", "--workers", "0", stdout=io.StringIO())
    assert (irds_home / "cranfield" / "queries.txt").is_file()


def test_without_the_archive_the_download_is_refused_and_the_demo_names_from(irds_home, tmp_path):
    with pytest.raises(demo.DemoError, match=r"could not fetch cranfield with ir_datasets "
                                             r"\(.*NetworkAccessError.*pass --from DIR"):
        demo.source_fetch(tmp_path)
    assert not (irds_home / "cranfield" / "cran.tar.gz").exists()
