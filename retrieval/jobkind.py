"""Retrieval's kind of job for the ledger (jobs.registry): a chunk of a run is the unit,
and the `jobs` command lists runs with their chunks."""
from __future__ import annotations

from jobs.registry import JobKind, lease_text


def _lines(r: dict) -> list[str]:
    what = " ".join(x for x in (r["topic_set"], r["collection"], r["model"] or r["tag"],
                                r["source"]) if x)
    c = r["chunks"]
    chunks = (f", chunks {c.get('done', 0)}/{sum(c.values())} done"
              + (f", {c['failed']} failed" if c.get("failed") else "")) if c else ""
    out = [f"run {r['id']}: {r['state']} {r['done']}/{r['total']} queries{chunks} ({what})"]
    out += [f"  chunk {lease['chunk']} attempt {lease['attempt']}: "
            f"{lease_text(lease['holder'], lease['expires'])}" for lease in r["leases"]]
    if r["error"]:
        out.append(f"  error: {r['error']}")
    return out


def kind() -> JobKind:
    from .models import RunChunk
    from .selectors import run_job_list
    from .services import chunks_reconciled

    return JobKind(
        name="chunk", plural="chunks", model=RunChunk,
        task="retrieval.tasks.chunk_retrieve_task",
        listing_key="runs", listing=run_job_list,
        json_fields=("id", "topic_set", "collection", "model", "source", "state", "done",
                     "total", "error"),
        lines=_lines, reconciled=chunks_reconciled)
