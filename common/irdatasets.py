"""Topics, qrels and documents of an ir_datasets dataset, read from its local cache. No
Django here, no app imports.

ir_datasets keeps each dataset's source files under ``$IR_DATASETS_HOME`` (default
``~/.ir_datasets``), in the folder and file names its ``etc/downloads.json`` lists, and
reads them from there; it downloads a file only when it is missing. Without that file and
without the network, the error here names the file ir_datasets needs, where it must lie
and where it comes from, so a user can place it by hand.

Records come out as plain tuples and dicts, in the dataset's own order, read one at a
time (memory does not grow with the dataset):

- queries: ``(query_id, fields)`` with the query's text fields by name (``text``,
  ``title``, ``description``, ``narrative``, … as the dataset names them);
- qrels: ``(query_id, iteration, doc_id, relevance)`` (iteration ``"0"`` when the dataset
  has none);
- documents: ``(doc_id, contents)``, the document's text fields joined by blank lines in
  the dataset's field order (title before text).
"""
from __future__ import annotations

import json
import os
import pkgutil
from pathlib import Path
from typing import Iterator

__all__ = ["IrDatasetsError", "load", "queries", "qrels", "documents", "needed_files"]


class IrDatasetsError(ValueError):
    """The dataset is unknown, lacks what was asked, or its files are not in the cache."""


def _module():
    try:
        import ir_datasets
    except ImportError:
        raise IrDatasetsError("the ir_datasets package is not installed (pip install "
                              "ir_datasets)") from None
    return ir_datasets


def home() -> Path:
    """Where ir_datasets keeps its files (``IR_DATASETS_HOME``, else ``~/.ir_datasets``)."""
    return Path(os.environ.get("IR_DATASETS_HOME") or Path.home() / ".ir_datasets")


def needed_files(dataset_id: str) -> list[str]:
    """``PATH (from URL)`` of every source file ir_datasets lists for the dataset's family
    (the first part of its id), for the error message when the cache lacks one."""
    try:
        table = json.loads(pkgutil.get_data("ir_datasets", "etc/downloads.json"))
    except (OSError, ValueError, ImportError):
        return []
    family = dataset_id.split("/", 1)[0]
    out = []

    def walk(node, prefix):
        if isinstance(node, dict) and "cache_path" in node:
            where = home() / family / node["cache_path"]
            out.append(f"{where} (from {node.get('url', 'a download ir_datasets describes')})")
            return
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}/{key}")

    walk(table.get(family, {}), family)
    return out


def load(dataset_id: str):
    """The ir_datasets dataset ``dataset_id`` (e.g. ``cranfield``, ``antique/test``)."""
    irds = _module()
    try:
        return irds.load(dataset_id)
    except KeyError:
        raise IrDatasetsError(f"ir_datasets has no dataset {dataset_id!r} (see "
                              "https://ir-datasets.com for the ids)") from None


def _reading(dataset_id: str, what: str, iterator):
    """Yield from ``iterator``; a failure to fetch or read names the files needed."""
    try:
        yield from iterator
    except IrDatasetsError:
        raise
    except Exception as exc:  # a download refused offline, a truncated archive, ...
        files = needed_files(dataset_id)
        where = ("; ir_datasets reads " + "; ".join(files)) if files else ""
        raise IrDatasetsError(
            f"ir_datasets could not read the {what} of {dataset_id!r} from its cache under "
            f"{home()} ({type(exc).__name__}: {exc}){where}. Place the file there (or set "
            "IR_DATASETS_HOME to the folder that holds it) and run the command again"
        ) from None


def _text_fields(record, skip: str) -> list[tuple[str, str]]:
    return [(name, value) for name, value in zip(record._fields, record)
            if name != skip and isinstance(value, str)]


def queries(dataset_id: str) -> Iterator[tuple[str, dict[str, str]]]:
    ds = load(dataset_id)
    _checked(ds, dataset_id, "queries")
    for q in _reading(dataset_id, "queries", ds.queries_iter()):
        yield str(q.query_id), dict(_text_fields(q, "query_id"))


def qrels(dataset_id: str) -> Iterator[tuple[str, str, str, int]]:
    ds = load(dataset_id)
    _checked(ds, dataset_id, "qrels")
    for r in _reading(dataset_id, "qrels", ds.qrels_iter()):
        yield str(r.query_id), str(getattr(r, "iteration", "0") or "0"), str(r.doc_id), int(r.relevance)


def documents(dataset_id: str) -> Iterator[tuple[str, str]]:
    ds = load(dataset_id)
    _checked(ds, dataset_id, "docs")
    for d in _reading(dataset_id, "documents", ds.docs_iter()):
        yield str(d.doc_id), "\n\n".join(v for _, v in _text_fields(d, "doc_id") if v.strip())


def _checked(ds, dataset_id: str, what: str) -> None:
    if not getattr(ds, f"has_{what}")():
        noun = {"docs": "documents"}.get(what, what)
        raise IrDatasetsError(f"ir_datasets dataset {dataset_id!r} has no {noun}")
