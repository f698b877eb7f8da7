"""Collections: a collection file indexed with Anserini and registered, all or nothing;
deleting one with its index."""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from django.conf import settings
from django.db import transaction

from common import fileio
from common.fileio import clean_name

from .. import anserini
from ..collections_io import read_collection, write_json_collection
from ..models import Collection
from .errors import RetrievalError
from .vocabulary import docids_ensure

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


IMPORT_TEMP_PREFIX = ".import-"


class ImportInterrupted(Exception):
    """The process was asked to stop (SIGTERM, SIGHUP) while importing."""


@contextlib.contextmanager
def _stop_signals_raise():
    """While the block runs, SIGTERM and SIGHUP raise :class:`ImportInterrupted` and SIGINT
    raises KeyboardInterrupt, so clean-up code runs however the import is stopped (only
    possible in the main thread). The JVM must already be running: it replaces the
    handlers of these signals when it starts. Afterwards SIGINT keeps Python's handler and
    the others get their previous Python handler, or the default (terminate)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise ImportInterrupted(f"interrupted by {signal.Signals(signum).name}; nothing was imported")

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _import_temp_dirs_stale_remove(index_root: Path) -> list[Path]:
    """Remove the temporary directories of imports whose process is gone.

    Each import holds an exclusive ``flock`` on ``<temp dir>/lock`` while it runs; the
    kernel releases it when the process ends, however it ends (``kill -9`` included), so a
    lock that can be taken marks a directory left behind. A directory without a lock file
    is removed once it is a minute old (it lost the race between creating the directory
    and the lock).
    """
    removed = []
    for d in index_root.glob(f"{IMPORT_TEMP_PREFIX}*"):
        if not d.is_dir():
            continue
        lock = d / "lock"
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            try:
                stale = time.time() - d.stat().st_mtime > 60
            except OSError:
                continue
        except OSError:
            continue
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                stale = True
            except OSError:
                stale = False
            finally:
                os.close(fd)
        if stale:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
            log.info("removed %s, left by an interrupted collection import", d)
    return removed


def collection_import(name: str, path: str | Path, fmt: str, *,
                      progress: Progress | None = None, encoding: str = "utf-8",
                      skip_empty: bool = False,
                      before_commit: Callable[[Collection], None] | None = None) -> Collection:
    """Index a collection file and register it as collection ``name``.

    All or nothing: on any error -- and when interrupted by Ctrl-C, SIGTERM or SIGHUP --
    no Collection row, no docids and no index directory remain; the work happens in a
    hidden ``INDEX_ROOT/.import-*`` directory, and those left by a killed process are
    removed by the next import. The index lives in ``INDEX_ROOT/<name>-<checksum prefix>``.

    A document with nothing to index is an error naming it (Anserini would silently leave
    it out); ``skip_empty`` leaves such documents out instead and says which. Any other
    document missing from the built index is an error naming it.

    ``before_commit(collection)``, when given, is called inside the transaction that
    registers the collection: a caller commits its own mark with it, or raises to roll the
    import back (the index directory is removed).
    """
    say = progress or (lambda msg: None)
    try:
        name = clean_name(name, "collection name")
        path = fileio.require_file(path)
    except ValueError as exc:
        raise RetrievalError(str(exc)) from None
    if Collection.objects.filter(name=name).exists():
        raise RetrievalError(f"a collection named {name!r} already exists; choose another name")
    checksum = fileio.file_sha256(path)
    say(f"sha256 {checksum}")
    index_root = Path(settings.INDEX_ROOT)
    index_root.mkdir(parents=True, exist_ok=True)
    _import_temp_dirs_stale_remove(index_root)
    final_dir = index_root / f"{name}-{checksum[:12]}"
    if final_dir.exists():
        raise RetrievalError(f"{final_dir} already exists; remove it or choose another name")
    anserini.configure(settings.ANSERINI_JAVA_HOME)
    anserini.index_prepare()
    with _stop_signals_raise():
        work = Path(tempfile.mkdtemp(prefix=IMPORT_TEMP_PREFIX, dir=index_root))
        lock_fd = None
        try:
            lock_fd = os.open(work / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            collection = _collection_index(name, path, fmt, encoding, skip_empty, checksum,
                                           work, final_dir, say, before_commit)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            if lock_fd is not None:
                os.close(lock_fd)
    say(f"collection {name!r} ready: {collection.doc_count} documents in {final_dir}")
    return collection


def _collection_index(name, path: Path, fmt, encoding, skip_empty, checksum, work: Path,
                      final_dir: Path, say, before_commit=None) -> Collection:
    docids: list[str] = []
    skipped: list[str] = []

    def documents():
        for doc in read_collection(path, fmt, encoding=encoding, allow_empty=skip_empty):
            if not doc.contents.strip():
                skipped.append(doc.docid)
                continue
            docids.append(doc.docid)
            yield doc

    n = write_json_collection(documents(), work / "json",
                              progress=lambda k: say(f"read {k} documents"))
    if skipped:
        say(f"left out {len(skipped)} empty document(s): {_some(skipped)}")
    if n == 0:
        raise RetrievalError(f"{path}: no documents found (is the format {fmt!r} right?)")
    say(f"read {n} documents; indexing")
    indexed = anserini.index_build(work / "json", work / "index")
    if indexed != n:
        missing = anserini.index_missing_docids(work / "index", docids)
        raise RetrievalError(
            f"{path}: read {n} documents but Anserini indexed {indexed}; not indexed: "
            f"{_some(missing)}")
    say(f"indexed {indexed} documents")
    (work / "index").rename(final_dir)
    try:
        with transaction.atomic():
            collection = Collection.objects.create(
                name=name, format=fmt, source_path=str(path.resolve()),
                index_path=str(final_dir), doc_count=n,
                anserini_version=anserini.anserini_version(),
                analyzer=anserini.analyzer_description(), checksum=checksum,
                status="ready",
            )
            docids_ensure(docids)
            if before_commit is not None:
                before_commit(collection)
    except BaseException:
        shutil.rmtree(final_dir, ignore_errors=True)
        raise
    return collection


def _some(items: list[str], limit: int = 10) -> str:
    shown = ", ".join(fileio.quote(x, 60) for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def collection_delete(collection: Collection) -> None:
    """Remove a collection, its runs and rankings, and its index directory."""
    index_path = collection.index_path
    with transaction.atomic():
        collection.delete()
    if index_path:
        shutil.rmtree(index_path, ignore_errors=True)
