"""import_collection: documents Anserini would drop, names, encodings, and the clean-up of
its temporary index when it fails or is stopped (Ctrl-C, SIGTERM, kill -9) -- the last with
real processes."""
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from retrieval import anserini
from retrieval.models import Collection, Docid

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def index_root(settings, tmp_path):
    settings.INDEX_ROOT = tmp_path / "indexes"
    return settings.INDEX_ROOT


def _jsonl(path: Path, docs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": d, "contents": c}) + "\n" for d, c in docs),
                    encoding="utf-8")
    return path


def _import(*args) -> str:
    out = io.StringIO()
    call_command("import_collection", *map(str, args), stdout=out)
    return out.getvalue()


def test_anserini_leaves_out_empty_documents_and_the_count_shows_it(tmp_path):
    """The drop itself, in the real indexer: an empty document is not in the index."""
    json_dir = tmp_path / "json"
    json_dir.mkdir()
    _jsonl(json_dir / "part-00000.jsonl", [("a", "alpha"), ("e", ""), ("b", "beta")])
    indexed = anserini.index_build(json_dir, tmp_path / "index")
    assert indexed == 2
    assert anserini.index_missing_docids(tmp_path / "index", ["a", "e", "b"]) == ["e"]


@pytest.mark.django_db
def test_an_empty_document_is_an_error_naming_it(index_root, tmp_path):
    src = _jsonl(tmp_path / "c.jsonl", [("a", "alpha"), ("e", "  "), ("b", "beta")])
    with pytest.raises(CommandError, match=r"c\.jsonl, line 2: document 'e' has no text"):
        _import("c", src, "--format", "jsonl")
    assert not Collection.objects.exists() and not Docid.objects.filter(docid="a").exists()
    assert not index_root.exists() or list(index_root.iterdir()) == []


@pytest.mark.django_db
def test_skip_empty_leaves_them_out_and_says_which(index_root, tmp_path):
    src = _jsonl(tmp_path / "c.jsonl", [("a", "alpha"), ("e", ""), ("b", "beta")])
    out = _import("c", src, "--format", "jsonl", "--skip-empty")
    assert "left out 1 empty document(s): 'e'" in out
    c = Collection.objects.get(name="c")
    assert c.doc_count == 2 == anserini.index_doc_count(c.index_path)
    assert not Docid.objects.filter(docid="e").exists()


@pytest.mark.django_db
def test_cranfield_has_two_empty_documents(index_root, shared_data):
    """cran.all.1400 documents 471 and 995 have no text: refused, or left out by name."""
    path = shared_data / "small-corpora" / "cranfield" / "cran.all.1400"
    with pytest.raises(CommandError, match=r"line 13470: document '471' has no text"):
        _import("cran", path, "--format", "smart")
    out = _import("cran", path, "--format", "smart", "--skip-empty")
    assert "left out 2 empty document(s): '471', '995'" in out
    assert Collection.objects.get(name="cran").doc_count == 1398


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["", "a/b", "..", ".", "a b", "x" * 101, "zero\u200bwidth"])
def test_names_that_break_pages_or_paths_are_refused(index_root, tmp_path, name):
    src = _jsonl(tmp_path / "c.jsonl", [("a", "alpha")])
    with pytest.raises(CommandError, match="collection name"):
        _import(name, src, "--format", "jsonl")
    assert not Collection.objects.exists()


@pytest.mark.django_db
def test_latin1_collection_needs_its_encoding(index_root, tmp_path):
    src = tmp_path / "c.trec"
    src.write_bytes("<DOC>\n<DOCNO>d1</DOCNO>\ncaf\u00e9 cr\u00e8me\n</DOC>\n".encode("latin-1"))
    with pytest.raises(CommandError, match=r"c\.trec, line 3: not valid utf-8 .*--encoding"):
        _import("c", src, "--format", "trec")
    _import("c", src, "--format", "trec", "--encoding", "latin-1")
    raw = anserini.doc_raw(Collection.objects.get(name="c").index_path, "d1")
    assert "caf\u00e9 cr\u00e8me" in raw


@pytest.mark.django_db
def test_over_long_file_name_is_an_error_not_a_traceback(index_root, tmp_path):
    with pytest.raises(CommandError, match=r"cannot open \(File name too long\)"):
        _import("c", tmp_path / ("x" * 300 + ".jsonl"), "--format", "jsonl")


# --- stopping an import: real processes -----------------------------------------------------


def _env(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "INDEX_ROOT")}
    env.update(DEBUG="1", DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1")
    return env


def _manage(env, *args, **kwargs):
    return subprocess.Popen([sys.executable, "manage.py", *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _stop_while_indexing(env, path, sig) -> tuple[int, str, list[str]]:
    """Start an import, send ``sig`` once it says it is indexing, return (rc, stderr, temp
    dirs seen while it was indexing)."""
    p = _manage(env, "import_collection", "cacm", path, "--format", "smart")
    seen = []
    deadline = time.monotonic() + 120
    for line in p.stdout:
        if "indexing" in line:
            seen = [d.name for d in (Path(env["DATA_DIR"]) / "indexes").glob(".import-*")]
            p.send_signal(sig)
            break
        assert time.monotonic() < deadline
    _, err = p.communicate(timeout=120)
    return p.returncode, err, seen


def _collections(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "db.sqlite3") as db:
        return db.execute("select count(*) from retrieval_collection").fetchone()[0]


@pytest.mark.slow
def test_stopped_imports_leave_no_temporary_index(tmp_path, cacm_dir):
    data = tmp_path / "data"
    env = _env(data)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=120)
    indexes = data / "indexes"
    cacm = cacm_dir / "cacm.all"

    for sig in (signal.SIGTERM, signal.SIGINT):
        rc, err, seen = _stop_while_indexing(env, cacm, sig)
        assert seen, "the import works in a hidden temporary directory"
        assert rc != 0 and "nothing was imported" in err, err
        assert "Traceback" not in err
        assert list(indexes.iterdir()) == [], f"{sig.name} left {list(indexes.iterdir())}"
        assert _collections(data) == 0

    # kill -9 cannot be caught: the directory stays, and the next import removes it.
    rc, _, seen = _stop_while_indexing(env, cacm, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    assert [d.name for d in indexes.glob(".import-*")] == seen
    small = _jsonl(tmp_path / "small.jsonl", [("a", "alpha"), ("b", "beta")])
    p = _manage(env, "import_collection", "small", small, "--format", "jsonl")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert list(indexes.glob(".import-*")) == []
    assert [c for c in indexes.iterdir()] == [indexes / f"small-{_checksum_prefix(small)}"]
    assert _collections(data) == 1


def _checksum_prefix(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
