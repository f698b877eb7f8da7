"""Pages for organisers (staff): collections, models and runs with progress; a run; a
document's raw text. Views call selectors and render; nothing is written here."""
from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from . import selectors


def index(request):
    return render(request, "retrieval/index.html", {
        "collections": selectors.collection_list(),
        "models": selectors.retrieval_model_list(),
        "runs": selectors.run_list()[:200],
    })


def run_detail(request, run_id: int):
    try:
        run = selectors.run_get(run_id)
    except ValueError:
        raise Http404(f"no run {run_id}") from None
    return render(request, "retrieval/run_detail.html", {
        "run": run,
        "chunks": selectors.run_chunk_list(run),
        "queries": selectors.run_query_list(run)[:2000],
    })


def document(request, collection: str, docid: str):
    try:
        c = selectors.collection_get(collection)
    except ValueError:
        raise Http404(f"no collection {collection}") from None
    raw = selectors.document_raw(c, docid) if c.status == "ready" else None
    if raw is None:
        raise Http404(f"no document {docid} in {collection}")
    return render(request, "retrieval/document.html",
                  {"collection": c, "docid": docid, "raw": raw})
