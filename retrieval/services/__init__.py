"""Writes of retrieval data. The function that writes owns the transaction.

- :func:`collection_import` reads a collection file, builds its Lucene index under
  ``settings.INDEX_ROOT`` and registers it; all or nothing.
- :func:`run_create` makes a retrieval run (one query per title, description or distinct
  user variant), reuses rankings already retrieved under the same key and records the
  rest as chunks (rows with a status and a lease) whose wake-up messages are sent on
  commit; :func:`chunk_retrieve` is what a worker does with one, and after each pass of
  the reconciler (:func:`jobs.services.reconcile_all`) :func:`chunks_reconciled` recounts
  the runs concerned and every unfinished one.
- :func:`system_run_import` stores an imported TREC run.

One module per job: :mod:`.indexing` (collections), :mod:`.vocabulary` (docid ids and
their per-process cache), :mod:`.runs` (retrieval runs and their chunks) and
:mod:`.system_runs` (imported TREC runs). The names below are the app's write interface;
import them from ``retrieval.services``.
"""
from .errors import RetrievalError
from .indexing import IMPORT_TEMP_PREFIX, ImportInterrupted, collection_delete, collection_import
from .runs import (
    chunk_fail,
    chunk_retrieve,
    chunks_reconciled,
    model_spec,
    ranking_key,
    retrieval_models_ensure_defaults,
    run_create,
)
from .system_runs import system_run_import
from .vocabulary import DOCID_ANALYZE_AFTER, docids_ensure, vocabulary_cache_clear

__all__ = [
    "DOCID_ANALYZE_AFTER", "IMPORT_TEMP_PREFIX", "ImportInterrupted", "RetrievalError",
    "chunk_fail", "chunk_retrieve", "chunks_reconciled", "collection_delete",
    "collection_import", "docids_ensure", "model_spec", "ranking_key",
    "retrieval_models_ensure_defaults", "run_create", "system_run_import",
    "vocabulary_cache_clear",
]
