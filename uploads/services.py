"""Imports of uploaded files: one dispatch for the pages and the background task, through
each app's own import service (the same ones the management commands call).

A small file is imported in the request (:func:`file_import`); a large one is recorded as
an :class:`Upload` row first and imported by a Celery worker under a lease
(:func:`upload_create`, :func:`upload_run`). Either way the import is all or nothing and
an error names the uploaded file and its line. A gzip file that would expand past
``MAX_DECOMPRESSED_BYTES`` or more than ``MAX_EXPANSION_RATIO`` times is refused by
:func:`common.fileio.gzip_check` before a row is parsed or a transaction opened: when an
upload is recorded (in the request) and again before each import (in the request or the
worker).
"""
from __future__ import annotations

import logging
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction
from django.utils import timezone

from common import fileio
from jobs import leases, registry

from .models import Upload

log = logging.getLogger(__name__)

#: Files larger than this are imported by a worker, with a progress page.
DEFAULT_TASK_BYTES = 5 * 1024 * 1024


def task_threshold() -> int:
    return int(getattr(settings, "UPLOAD_TASK_BYTES", DEFAULT_TASK_BYTES))


def safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name) or "upload"


def _import(kind: str, path: Path, params: dict, say=None, before_commit=None,
            progress=None) -> dict:
    """Import ``path`` as ``kind``; returns a short summary for the page. ``say(message)``
    hears the steps of a long import (a collection's indexing), ``progress(fraction)`` how
    much of the file a streaming import has read; ``before_commit(summary)`` is called
    with the summary inside the import's own transaction, after its last write (an upload
    commits its done mark there, or raises to roll the import back)."""
    def hook(summarise):
        if before_commit is None:
            return None
        return lambda value: before_commit(summarise(value))

    fileio.gzip_check(path)  # a gzip bomb is refused before any row is parsed
    if kind == "topics":
        from topics.services import topics_import
        from topics.topicfiles import iter_topics

        def summarise(r):
            return {"topic_set": params["topic_set"],
                    "message": f"{params['topic_set']}: {r['created']} topic(s) created, "
                               f"{r['replaced']} replaced"}

        return summarise(topics_import(params["topic_set"], iter_topics(
            path, params["format"], ids=params.get("ids", "given"),
            encoding=params.get("encoding", "utf-8"), progress=progress),
            replace=params.get("replace", False), merge_rows=params["format"] == "tsv",
            before_commit=hook(summarise)))
    if kind == "variants":
        from topics.services import variants_import
        from topics.variantfiles import iter_variants

        def summarise(r):
            return {"topic_set": params["topic_set"],
                    "message": f"{params['topic_set']}: {r['variants']} variant(s) imported"}

        return summarise(variants_import(params["topic_set"], iter_variants(
            path, params["format"], encoding=params.get("encoding", "utf-8"),
            progress=progress),
            create_topics=params.get("create_topics", False), replace=params.get("replace", False),
            before_commit=hook(summarise)))
    if kind == "run":
        from retrieval.services import system_run_import

        def summarise(run):
            return {"topic_set": params["topic_set"], "run": run.pk,
                    "message": f"run {run.id} ({run.tag}): {run.total} topics imported"}

        return summarise(system_run_import(path, topic_set_name=params["topic_set"],
                                           tag=params.get("tag") or None,
                                           encoding=params.get("encoding", "utf-8"),
                                           before_commit=hook(summarise)))
    if kind == "qrels":
        from judging.services import qrels_import

        def summarise(qrels):
            return {"topic_set": params.get("topic_set") or "", "qrels": qrels.name,
                    "message": f"imported {qrels.labels_count} judgments as qrels "
                               f"{qrels.name!r}"}

        return summarise(qrels_import(path, format=params["format"], name=params["name"],
                                      topic_set_name=params.get("topic_set") or None,
                                      id_map=params.get("id_map") or None,
                                      encoding=params.get("encoding", "utf-8"),
                                      before_commit=hook(summarise)))
    if kind == "collection":
        from retrieval.services import collection_import

        def summarise(collection):
            return {"collection": collection.name,
                    "message": f"collection {collection.name!r}: {collection.doc_count} "
                               "documents indexed"}

        return summarise(collection_import(params["name"], path, params["format"], progress=say,
                                           encoding=params.get("encoding", "utf-8"),
                                           skip_empty=params.get("skip_empty", False),
                                           before_commit=hook(summarise)))
    raise ValueError(f"unknown upload kind {kind!r}")


class _ProgressWriter:
    """``progress(fraction)`` for an import under a lease: records the fraction on the
    upload row at most every ``every`` seconds through a database connection of its own,
    so the progress page sees it while the import's own transaction is still open (the
    imported rows and the done mark commit together at the end). On SQLite, where a
    second writer waits for the first, progress is not written until the end."""

    def __init__(self, upload_id: int, holder: str, *, every: float = 1.0):
        self.upload_id, self.holder, self.every = upload_id, holder, every
        self._at = 0.0
        self._conn = None

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self._at < self.every or connection.vendor == "sqlite":
            return
        self._at = now
        if self._conn is None:
            self._conn = connections.create_connection(DEFAULT_DB_ALIAS)
        try:
            with self._conn.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {Upload._meta.db_table} SET progress = %s "
                    "WHERE id = %s AND holder = %s",
                    [round(min(max(fraction, 0.0), 0.99), 4), self.upload_id, self.holder])
        except DatabaseError:  # progress is a courtesy; the import goes on
            pass

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _named_errors(path: Path, fn):
    """Call ``fn()``; a ValueError's message names the file, not the folder it waits in."""
    try:
        return fn()
    except ValueError as exc:
        raise ValueError(str(exc).replace(str(path.parent) + "/", "")) from None


def file_import(kind: str, upload, params: dict) -> dict:
    """Import a small uploaded file in the request, from a private temporary folder."""
    name = safe_filename(upload.name)
    with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
        path = Path(tmp) / name
        with open(path, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        return _named_errors(path, lambda: _import(kind, path, params))


def _upload_dir() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def upload_create(kind: str, upload, params: dict, *, created_by: str = "") -> Upload:
    """Keep the file, record the upload (queued), and wake a worker once that is committed."""
    if kind not in dict(Upload.KIND_CHOICES):
        raise ValueError(f"unknown upload kind {kind!r}")
    name = safe_filename(upload.name)
    folder = _upload_dir() / uuid.uuid4().hex
    folder.mkdir(parents=True)
    path = folder / name
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    try:
        _named_errors(path, lambda: fileio.gzip_check(path))
        with transaction.atomic():
            row = Upload.objects.create(kind=kind, params=params, filename=name, path=str(path),
                                        size=path.stat().st_size, created_by=created_by,
                                        woken=timezone.now())
            transaction.on_commit(lambda: registry.wake("upload", row.pk))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return row


class LeaseLost(Exception):
    """The upload's lease was taken over before its import could commit: the import is
    rolled back and left to the claim that holds it now."""


def upload_run(upload_id: int, *, retry_on: tuple[type[BaseException], ...] = ()) -> Upload:
    """Import a recorded upload under its lease. Idempotent: a finished, failed or held
    upload is returned untouched. An import error fails the upload with the message
    (naming the file and line); the imported data is all or nothing, as in the request.

    Exactly once: the imported rows and the upload's done mark commit in one transaction
    (the import service's, through its ``before_commit`` hook), and only while this claim
    still holds the lease (the upload row is locked and checked there). A worker that dies
    before that commit leaves nothing imported; one whose lease was taken over rolls its
    import back and leaves the upload to the claim that holds it.
    """
    holder = leases.claim(Upload, upload_id)
    row = Upload.objects.get(pk=upload_id)
    if holder is None:
        return row
    path = Path(row.path)

    def done(summary: dict) -> None:
        if not leases.held(Upload, row.pk, holder):
            raise LeaseLost(f"upload {row.pk}: the lease of {holder} (attempt "
                            f"{holder.attempt}) was taken over before the import committed")
        Upload.objects.filter(pk=row.pk).update(
            status=leases.DONE, progress=1.0, result=summary, finished=timezone.now(),
            holder="", lease_expires=None, error="")

    try:
        with leases.renewing(Upload, row.pk, holder):
            def say(message: str) -> None:  # this attempt's steps, up to its last one
                Upload.objects.filter(pk=row.pk, attempts=holder.attempt).update(
                    note=str(message)[:2000])

            progress = _ProgressWriter(row.pk, str(holder))
            try:
                _named_errors(path, lambda: _import(row.kind, path, row.params, say, done,
                                                    progress))
            finally:
                progress.close()
    except LeaseLost as exc:
        log.warning("%s; import rolled back", exc)
    except BaseException as exc:
        retry = isinstance(exc, retry_on)
        message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        if leases.release(Upload, row.pk, holder, message, retry=retry) and not retry:
            Upload.objects.filter(pk=row.pk).update(finished=timezone.now())
        if not isinstance(exc, ValueError) or retry:
            raise
    finally:
        row.refresh_from_db()
        if row.status in (leases.DONE, leases.FAILED):
            shutil.rmtree(path.parent, ignore_errors=True)
    return row


def upload_fail(upload_id: int, message: str) -> None:
    if leases.fail_waiting(Upload, upload_id, message):
        Upload.objects.filter(pk=upload_id).update(finished=timezone.now())


def uploads_reconciled(result: leases.Reconciled) -> None:
    """After a reconciliation of the uploads: an import it failed gets its finish time."""
    if result.failed:
        Upload.objects.filter(pk__in=result.failed).update(finished=timezone.now())
