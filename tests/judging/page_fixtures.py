"""A tiny indexed collection of web pages (HTML) for the pool of ``conftest.make_pool``,
and helpers for page tests: tasks, assessors, a published crowd task."""
from __future__ import annotations

import json

import pytest

DANGER = "<img src=x onerror=alert(1)>"


def page_html(topic: str, d: int) -> str:
    return (f"<html><head><title>Page {d} on topic {topic}</title>"
            "<script>document.title='owned'</script><style>p{color:red}</style></head>"
            f"<body><h1>Heading {d}</h1><p>This page talks about the topic at length, "
            f"document {d}.</p><p>Escaped markup: {DANGER.replace('<', '&lt;')}</p>"
            "<p><b>Bold</b> &amp; plain.</p></body></html>")


@pytest.fixture(scope="session")
def pages_index(tmp_path_factory):
    """An Anserini index of t{topic}d{n} pages, topics 1 and 2, n = 1..6 (built once)."""
    from retrieval import anserini
    from retrieval.collections_io import read_collection, write_json_collection

    work = tmp_path_factory.mktemp("judging-pages")
    src = work / "pages.jsonl"
    src.write_text("".join(json.dumps({"id": f"t{t}d{d}", "contents": page_html(t, d)}) + "\n"
                           for t in ("1", "2") for d in range(1, 7)), encoding="utf-8")
    write_json_collection(read_collection(src, "jsonl"), work / "json")
    anserini.index_build(work / "json", work / "index")
    return work / "index"


def use_pages(task, pages_index):
    """Point the task at the page collection (a Collection row over the built index)."""
    from judging import services
    from retrieval.models import Collection

    Collection.objects.get_or_create(name="pages", defaults={
        "format": "jsonl", "source_path": "pages.jsonl", "index_path": str(pages_index),
        "doc_count": 12, "status": "ready"})
    return services.judging_task_collection_set(task, "pages")
