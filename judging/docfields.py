"""A document laid out for reading on the judging page: title, labelled fields (authors,
source, keywords, …) and body paragraphs, and the topic's statement shown once. Plain
Python.

SMART tagged text (CACM, CISI, Cranfield, MED, ADI: ``.I id``, then field markers ``.T``
title, ``.A`` authors, ``.B`` source, ``.W`` abstract, …) is parsed into those fields;
bookkeeping fields (``.I``, ``.N``, ``.X`` citation triples) are left out. Every other
format goes through :func:`judging.doctext.document_text` (HTML, TREC SGML, plain text).
Pages show every piece as text (escaped by the template engine).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from .doctext import document_text

_SMART_MARK = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")
# SMART fields shown beside the title and body, in this order, with their labels
SMART_FIELDS = (("A", "Authors"), ("B", "Source"), ("K", "Keywords"), ("C", "Categories"))
SMART_HIDDEN = frozenset("INX")  # record id, bookkeeping, citation triples
SMART_TITLE, SMART_BODY = "T", "W"


class ReadableDocument(NamedTuple):
    title: str
    fields: list[tuple[str, str]]  # (label, text), in display order
    paragraphs: list[str]


def looks_smart(raw: str) -> bool:
    """Whether ``raw`` is one SMART record (its first line is ``.I id``)."""
    first = (raw or "").lstrip().split("\n", 1)[0].rstrip()
    m = _SMART_MARK.match(first)
    return bool(m) and m.group(1) == "I" and bool((m.group(2) or "").strip())


def _paragraphs(lines: list[str]) -> list[str]:
    """Lines joined into paragraphs; a blank line ends one."""
    out, current = [], []
    for line in lines + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            out.append(" ".join(" ".join(current).split()))
            current = []
    return out


def smart_document(raw: str) -> ReadableDocument:
    """The fields of one SMART record. Authors (one a line in ``.A``) are joined with
    "; "; a field given twice is joined in file order; unknown letters are shown under
    their marker (``.Z``) rather than lost."""
    fields: dict[str, list[str]] = {}
    order: list[str] = []
    current = None
    for line in (raw or "").splitlines():
        m = _SMART_MARK.match(line.rstrip())
        if m:
            current = m.group(1)
            if current not in fields:
                fields[current] = []
                order.append(current)
            if m.group(2) and current != "I":
                fields[current].append(m.group(2))
            continue
        if current is not None:
            fields[current].append(line)
    title = " ".join(" ".join(fields.get(SMART_TITLE, [])).split())
    shown = []
    labels = dict(SMART_FIELDS)
    known = [k for k, _ in SMART_FIELDS]
    for key in known + [k for k in order if k not in labels]:
        if key in SMART_HIDDEN or key in (SMART_TITLE, SMART_BODY) or key not in fields:
            continue
        lines = [x.strip() for x in fields[key] if x.strip()]
        if not lines:
            continue
        text = "; ".join(lines) if key == "A" else " ".join(" ".join(lines).split())
        shown.append((labels.get(key, f".{key}"), text))
    return ReadableDocument(title, shown, _paragraphs(fields.get(SMART_BODY, [])))


def readable_document(raw: str, fmt: str = "") -> ReadableDocument:
    """``raw`` as a title, fields and paragraphs: SMART records (``fmt == "smart"``, or no
    format given and text that starts with a ``.I`` record) field by field, anything else
    as text."""
    if fmt == "smart" or (not fmt and looks_smart(raw)):
        return smart_document(raw)
    text = document_text(raw)
    return ReadableDocument(text.title, [], text.paragraphs)


def _norm(text: str) -> str:
    return " ".join((text or "").split()).casefold()


def statement_shown(title: str, description: str, narrative: str,
                    statements: list[str]) -> dict:
    """What the judging page shows of a topic, each text once: ``{"title", "texts",
    "narrative"}``. The statements are the texts (the description when there are none);
    the title is left out when it repeats one of them (SMART topics have the query as
    title and statement), and so is the narrative; repeated statements are shown once."""
    texts, seen = [], set()
    for t in (statements or ([description] if description else [])):
        if t and _norm(t) not in seen:
            seen.add(_norm(t))
            texts.append(t)
    return {"title": "" if _norm(title) in seen else title,
            "texts": texts,
            "narrative": "" if _norm(narrative) in seen else narrative}
