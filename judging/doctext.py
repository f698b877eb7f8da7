"""A stored document as readable text, and query terms marked in it. Plain Python.

:func:`document_text` turns the raw text an index stores (HTML from the web, TREC SGML,
plain text) into a title and paragraphs with the standard library's HTML parser: tags are
dropped, character references decoded, the content of ``script``, ``style`` and the like
skipped, and block elements end a paragraph. Nothing of the markup survives as markup:
pages show the result as text (escaped by the template engine).

:func:`marked_segments` splits a paragraph into ``(text, is_term)`` pieces so a template
can wrap the query terms in ``<mark>`` while escaping every piece. Terms match whole
words, case-insensitively.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Iterable, NamedTuple

SKIPPED = frozenset({"script", "style", "noscript", "template", "iframe", "object", "svg",
                     "head"})
BLOCKS = frozenset({
    "p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "table", "h1", "h2", "h3", "h4",
    "h5", "h6", "section", "article", "header", "footer", "blockquote", "pre", "hr", "dd",
    "dt", "dl", "form", "body", "html", "doc", "text", "docno", "dochdr", "headline",
})
# ids and headers of TREC SGML that are not part of the document's text
HIDDEN = frozenset({"docno", "dochdr", "docoldno"})
WORD = re.compile(r"\w+", re.UNICODE)


class DocumentText(NamedTuple):
    title: str
    paragraphs: list[str]


class _TextParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.in_title = 0
        self.in_headline = 0
        self.title: list[str] = []
        self.headline: list[str] = []
        self.paragraphs: list[str] = []
        self.current: list[str] = []

    def _end_paragraph(self):
        text = " ".join("".join(self.current).split())
        if text:
            self.paragraphs.append(text)
        self.current = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED or tag in HIDDEN:
            self.skip += 1
        elif tag == "title":
            self.in_title += 1
        elif tag == "headline":
            self.in_headline += 1
        if tag in BLOCKS:
            self._end_paragraph()

    def handle_startendtag(self, tag, attrs):
        if tag in BLOCKS:
            self._end_paragraph()

    def handle_endtag(self, tag):
        if tag in SKIPPED or tag in HIDDEN:
            self.skip = max(0, self.skip - 1)
        elif tag == "title":
            self.in_title = max(0, self.in_title - 1)
        elif tag == "headline":
            self.in_headline = max(0, self.in_headline - 1)
        if tag in BLOCKS:
            self._end_paragraph()

    def handle_data(self, data):
        if self.in_title:  # inside <head>, which is otherwise skipped
            self.title.append(data)
            return
        if self.skip:
            return
        if self.in_headline:  # a headline is the title when there is none, and text
            self.headline.append(data)
        self.current.append(data)


def document_text(raw: str) -> DocumentText:
    """The title (``<title>``, else a TREC ``<HEADLINE>``; empty when there is neither)
    and the paragraphs of ``raw``."""
    parser = _TextParser()
    parser.feed(raw or "")
    parser.close()
    parser._end_paragraph()
    title = " ".join("".join(parser.title).split())
    return DocumentText(title or " ".join("".join(parser.headline).split()), parser.paragraphs)


def query_terms(texts: Iterable[str]) -> set[str]:
    """The distinct lower-cased words of the queries (words of one letter left out)."""
    return {w.casefold() for t in texts for w in WORD.findall(t or "") if len(w) > 1}


def marked_segments(text: str, terms: set[str]) -> list[tuple[str, bool]]:
    """``text`` cut into ``(piece, is_term)``; joining the pieces gives ``text`` back."""
    out: list[tuple[str, bool]] = []
    last = 0
    for m in WORD.finditer(text):
        if m.group().casefold() in terms:
            if m.start() > last:
                out.append((text[last:m.start()], False))
            out.append((m.group(), True))
            last = m.end()
    if last < len(text):
        out.append((text[last:], False))
    return out
