"""Reading topic files into plain records. No Django here.

Four layouts are read; each reader returns a list of :class:`TopicRecord` in file order,
and every error is a :class:`InputError` naming the file and the line.

``tsv``
    One row per statement: ``id<TAB>statement[<TAB>title]`` (or comma-separated; the
    delimiter follows the extension ``.tsv``/``.txt`` -> tab, ``.csv`` -> comma, otherwise
    the first line decides). A header row is optional and recognised by its first cell
    (``id``, ``topic``, ``topic_id``, ``qid``). Several rows with the same id give that
    topic several statements, in file order; their titles must agree (an empty title
    agrees with anything).
``smart``
    SMART tagged query files (CACM ``query.text``, ``cran.qry``, ``CISI.QRY``, ``MED.QRY``):
    ``.I id`` opens a record, ``.W`` is the query text, ``.T`` an optional title; other
    fields (``.A``, ``.B``, ``.N``, ...) are ignored. The topic id is the ``.I`` token
    exactly as written (``001`` stays ``001``). With ``ids="position"`` topics are
    numbered ``1, 2, ...`` in file order instead, as Cranfield's ``cranqrel`` numbers them.
    The ``.W`` text is the description and the one statement; it is also the title (the
    query) when the record has no ``.T``, so a title run retrieves SMART queries as is.
``trec``
    TREC ``<top>`` blocks with ``<num>``, ``<title>``, ``<desc>``, ``<narr>``; closing tags
    are optional and the labels ``Number:``, ``Topic:``, ``Description:``, ``Narrative:``
    are stripped. Whitespace inside a field collapses to single spaces. The statement
    shown to workers is the description followed by the narrative, as one text separated
    by a blank line (the narrative alone says what is relevant but not what is wanted;
    the description alone leaves out the boundaries). A topic with neither gets no
    statement.
``webxml``
    TREC Web track topics (``full-topics.xml``): ``<topic number=...>`` with ``<query>``
    (the title), ``<description>`` (description and the one statement) and
    ``<subtopic number=... type=...>`` (intents; ``kind`` is the subtopic type,
    ``nav``/``inf``). The topic-level ``type`` attribute (``faceted``/``ambiguous``)
    becomes :attr:`TopicRecord.kind`, stored as the topic's ``kind``. Parsed with
    ElementTree over defusedxml: entity declarations and external references are refused.

Files are read through :mod:`common.fileio`: gzip is decompressed, text is decoded strictly
(UTF-8 unless ``encoding=`` says otherwise), lines are bounded in length. Topic and intent
ids pass the one id check of every importer (:func:`common.fileio.clean_id`: NFC, at most
100 characters, no whitespace, control, zero-width or bidirectional characters); titles,
descriptions, narratives and statements are at most :data:`MAX_TEXT_CHARS` characters.
"""
from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import defusedxml.ElementTree as DET
from defusedxml import DefusedXmlException

from common import fileio
from common.fileio import InputError, plain_name, quote

TOPIC_FORMATS = ("tsv", "smart", "trec", "webxml")


MAX_ID_CHARS = 100  # topic and intent ids (the database columns)
MAX_TEXT_CHARS = 20_000  # one title, description, narrative or statement


@dataclass(frozen=True)
class IntentRecord:
    intent_id: str
    description: str = ""
    kind: str = ""


@dataclass(frozen=True)
class TopicRecord:
    topic_id: str
    title: str = ""
    description: str = ""
    narrative: str = ""
    statements: tuple[str, ...] = ()
    intents: tuple[IntentRecord, ...] = ()
    kind: str = ""
    source: str = ""
    line: int = 0


# --- file access -------------------------------------------------------------------


def open_lines(path: str | Path, encoding: str = "utf-8", progress=None
               ) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` (see :func:`common.fileio.open_lines`); errors are
    :class:`InputError`."""
    return fileio.open_lines(path, encoding=encoding, progress=progress)


def topic_id_check(value: str, source: str, line: int | None, what: str = "topic id") -> str:
    """The id in NFC, or :class:`InputError` naming the place (see the module docstring)."""
    return fileio.checked_id(value, what, source, line, max_chars=MAX_ID_CHARS)


def text_check(value: str, what: str, source: str, line: int | None) -> str:
    if len(value) > MAX_TEXT_CHARS:
        raise InputError(source, line, f"{what} is {len(value)} characters "
                                       f"(at most {MAX_TEXT_CHARS}): {quote(value, 60)}")
    return value


def _clean(text: str) -> str:
    return " ".join(text.split())


# --- readers -----------------------------------------------------------------------


def read_topics(path: str | Path, fmt: str, *, ids: str = "given",
                encoding: str = "utf-8") -> list[TopicRecord]:
    """Read a topic file in one of :data:`TOPIC_FORMATS`.

    ``ids`` is ``"given"`` (the file's own ids) or ``"position"`` (1, 2, ... in file
    order; for files whose judgments number topics by position). ``encoding`` is the text
    encoding of line-based formats (XML files declare their own).
    """
    if fmt not in TOPIC_FORMATS:
        raise ValueError(f"unknown topic format {fmt!r}; expected one of {TOPIC_FORMATS}")
    if ids not in ("given", "position"):
        raise ValueError(f"ids must be 'given' or 'position', not {ids!r}")
    source = str(path)
    if fmt == "webxml":
        records = parse_webxml(fileio.read_bytes(path), source)
    else:
        lines = open_lines(path, encoding)
        if fmt == "tsv":
            records = parse_tsv(lines, source, delimiter=_delimiter_for(path))
        elif fmt == "smart":
            records = parse_smart(lines, source)
        else:
            records = parse_trec(lines, source)
    if ids == "position":
        records = [
            TopicRecord(**{**_as_dict(r), "topic_id": str(n)}) for n, r in enumerate(records, 1)
        ]
    if not records:
        raise InputError(source, None, f"no topics found (format {fmt})")
    return records


def iter_topics(path: str | Path, fmt: str, *, ids: str = "given", encoding: str = "utf-8",
                progress=None) -> Iterator[TopicRecord]:
    """The records of a topic file one at a time, in file order, for imports of any size
    (:func:`topics.services.topics_import` writes them in batches).

    Unlike :func:`read_topics` nothing is held for the whole file: a ``tsv`` file gives
    one record per row (rows of one id are merged by the import, which also finds ids
    repeated in other formats). ``progress(fraction)`` hears how much of the file has been
    read. XML files and ``ids="position"`` are read whole first (their records need the
    whole file); every error is the same :class:`InputError` as :func:`read_topics` gives.
    """
    if fmt not in TOPIC_FORMATS:
        raise ValueError(f"unknown topic format {fmt!r}; expected one of {TOPIC_FORMATS}")
    if fmt == "webxml" or ids == "position":
        yield from read_topics(path, fmt, ids=ids, encoding=encoding)
        return
    if ids != "given":
        raise ValueError(f"ids must be 'given' or 'position', not {ids!r}")
    source = str(path)
    lines = open_lines(path, encoding, progress)
    if fmt == "tsv":
        records = tsv_rows(lines, source, delimiter=_delimiter_for(path))
    elif fmt == "smart":
        records = smart_records(lines, source)
    else:
        records = trec_records(lines, source)
    empty = True
    for record in records:
        empty = False
        yield record
    if empty:
        raise InputError(source, None, f"no topics found (format {fmt})")


def _as_dict(record: TopicRecord) -> dict:
    return {f: getattr(record, f) for f in record.__dataclass_fields__}


def _delimiter_for(path: str | Path) -> str | None:
    name = plain_name(path)
    if name.endswith(".csv"):
        return ","
    if name.endswith((".tsv", ".txt", ".tab")):
        return "\t"
    return None


def _check_unique(records: list[TopicRecord], source: str) -> None:
    seen: dict[str, int] = {}
    for r in records:
        if r.topic_id in seen:
            raise InputError(
                source,
                r.line,
                f"topic id {r.topic_id!r} repeated (first on line {seen[r.topic_id]})",
            )
        seen[r.topic_id] = r.line


_HEADER_IDS = {"id", "topic", "topic_id", "topicid", "qid", "query_id", "number"}


def split_rows(
    lines: Iterable[tuple[int, str]], source: str, delimiter: str | None
) -> Iterator[tuple[int, list[str]]]:
    """Split numbered lines into cells; blank lines and ``#`` comments are skipped.

    Tab-separated rows are split literally (quotes are text); comma-separated rows follow
    CSV quoting. With ``delimiter=None`` the first non-blank line decides: a tab means tab.
    """
    for number, text in lines:
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if delimiter is None:
            delimiter = "\t" if "\t" in text else ","
        if delimiter == "\t":
            cells = text.split("\t")
        else:
            try:
                cells = next(csv.reader([text], delimiter=delimiter, strict=True))
            except csv.Error as exc:
                raise InputError(source, number, f"bad CSV row ({exc})") from None
        yield number, [c.strip() for c in cells]


def tsv_rows(
    lines: Iterable[tuple[int, str]], source: str, *, delimiter: str | None = None
) -> Iterator[TopicRecord]:
    """Each ``id, statement[, title]`` row as a record with one statement, checked."""
    first_row = True
    for number, cells in split_rows(lines, source, delimiter):
        if first_row:
            first_row = False
            if cells[0].lower() in _HEADER_IDS:
                continue
        if len(cells) < 2 or len(cells) > 3:
            raise InputError(
                source,
                number,
                f"expected 2 or 3 columns (id, statement, title), found {len(cells)}",
            )
        topic_id, statement = cells[0], cells[1]
        title = cells[2] if len(cells) == 3 else ""
        topic_id = topic_id_check(topic_id, source, number)
        if not statement:
            raise InputError(source, number, f"empty statement for topic {topic_id!r}")
        text_check(statement, "the statement", source, number)
        text_check(title, "the title", source, number)
        yield TopicRecord(topic_id=topic_id, title=title, statements=(statement,),
                          source=source, line=number)


def parse_tsv(
    lines: Iterable[tuple[int, str]], source: str, *, delimiter: str | None = None
) -> list[TopicRecord]:
    """``id, statement[, title]`` rows; see the module docstring."""
    order: list[str] = []
    first_line: dict[str, int] = {}
    titles: dict[str, str] = {}
    statements: dict[str, list[str]] = {}
    for row in tsv_rows(lines, source, delimiter=delimiter):
        topic_id, title, statement, number = row.topic_id, row.title, row.statements[0], row.line
        if topic_id not in first_line:
            order.append(topic_id)
            first_line[topic_id] = number
            titles[topic_id] = title
            statements[topic_id] = []
        elif title and titles[topic_id] and title != titles[topic_id]:
            raise InputError(
                source,
                number,
                f"topic {topic_id!r} has title {quote(title, 80)} here but "
                f"{quote(titles[topic_id], 80)} "
                f"on line {first_line[topic_id]}",
            )
        elif title:
            titles[topic_id] = title
        statements[topic_id].append(statement)
    return [
        TopicRecord(
            topic_id=t,
            title=titles[t],
            statements=tuple(statements[t]),
            source=source,
            line=first_line[t],
        )
        for t in order
    ]


_SMART_FIELD = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


def parse_smart(lines: Iterable[tuple[int, str]], source: str) -> list[TopicRecord]:
    """SMART tagged query records; see the module docstring."""
    records = list(smart_records(lines, source))
    _check_unique(records, source)
    return records


def smart_records(lines: Iterable[tuple[int, str]], source: str) -> Iterator[TopicRecord]:
    """:func:`parse_smart` one record at a time (repeated ids are not looked for)."""
    current: dict | None = None
    fieldname: str | None = None

    def finish() -> TopicRecord | None:
        if current is None:
            return None
        text = _clean(" ".join(current["W"]))
        if not text:
            raise InputError(source, current["line"], f"query {current['id']!r} has no .W text")
        text_check(text, "the .W text", source, current["line"])
        title = text_check(_clean(" ".join(current["T"])), "the .T title", source,
                           current["line"])
        return TopicRecord(
            topic_id=current["id"],
            title=title or text,
            description=text,
            statements=(text,),
            source=source,
            line=current["line"],
        )

    for number, text in lines:
        match = _SMART_FIELD.match(text.rstrip())
        if match:
            tag, rest = match.group(1), (match.group(2) or "").strip()
            if tag == "I":
                done = finish()
                if done is not None:
                    yield done
                if not rest or len(rest.split()) != 1:
                    raise InputError(source, number,
                                     f"'.I' needs one id, found {quote(text.strip(), 80)}")
                current = {"id": topic_id_check(rest, source, number), "line": number,
                           "W": [], "T": []}
                fieldname = None
                continue
            if current is None:
                raise InputError(source, number, f"field .{tag} before the first .I")
            fieldname = tag
            if rest and tag in ("W", "T"):
                current[tag].append(rest)
            continue
        if not text.strip():
            continue
        if current is None:
            raise InputError(source, number, "text before the first .I")
        if fieldname is None:
            raise InputError(source, number, f"text after .I {current['id']} outside a field")
        if fieldname in ("W", "T"):
            current[fieldname].append(text)
    done = finish()
    if done is not None:
        yield done


_TREC_TAG = re.compile(r"<(/?)([A-Za-z]+)>")
_TREC_FIELDS = {"num", "title", "desc", "narr"}
_TREC_LABELS = {
    "num": re.compile(r"^\s*Number\s*:", re.I),
    "title": re.compile(r"^\s*Topic\s*:", re.I),
    "desc": re.compile(r"^\s*Description\s*:", re.I),
    "narr": re.compile(r"^\s*Narrative\s*:", re.I),
}


def parse_trec(lines: Iterable[tuple[int, str]], source: str) -> list[TopicRecord]:
    """TREC ``<top>`` topics; see the module docstring."""
    records = list(trec_records(lines, source))
    _check_unique(records, source)
    return records


def trec_records(lines: Iterable[tuple[int, str]], source: str) -> Iterator[TopicRecord]:
    """:func:`parse_trec` one record at a time (repeated ids are not looked for)."""
    block: list[tuple[int, str]] | None = None
    block_line = 0
    for number, text in lines:
        stripped = text.strip()
        if block is None:
            if not stripped:
                continue
            if stripped.lower().startswith("<top>"):
                block, block_line = [], number
                rest = stripped[5:]
                if rest.strip():
                    block.append((number, rest))
                if rest.rstrip().lower().endswith("</top>"):
                    yield _trec_record(block, source, block_line)
                    block = None
                continue
            raise InputError(source, number, f"expected <top>, found {quote(stripped, 40)}")
        if stripped.lower().startswith("<top>"):
            raise InputError(source, number, f"<top> inside the topic opened on line {block_line}")
        if stripped.lower().endswith("</top>"):
            block.append((number, text[: text.lower().rfind("</top>")]))
            yield _trec_record(block, source, block_line)
            block = None
            continue
        block.append((number, text))
    if block is not None:
        raise InputError(source, block_line, "<top> is never closed with </top>")


def _trec_record(block: list[tuple[int, str]], source: str, block_line: int) -> TopicRecord:
    fields: dict[str, list[str]] = {}
    seen_line: dict[str, int] = {}
    current: str | None = None
    for number, text in block:
        pos = 0
        for match in _TREC_TAG.finditer(text):
            if current is not None:
                fields[current].append(text[pos : match.start()])
            closing, tag = match.group(1), match.group(2).lower()
            pos = match.end()
            if closing:
                current = None
                continue
            if tag in _TREC_FIELDS:
                if tag in seen_line:
                    raise InputError(
                        source, number, f"<{tag}> repeated (first on line {seen_line[tag]})"
                    )
                seen_line[tag] = number
                fields[tag] = []
                current = tag
            else:
                current = None  # fields we do not keep (<smry>, <con>, ...)
        if current is not None:
            fields[current].append(text[pos:])
    values = {}
    for tag in _TREC_FIELDS:
        value = _clean(" ".join(fields.get(tag, [])))
        values[tag] = _clean(_TREC_LABELS[tag].sub("", value, count=1))
    if not values["num"]:
        raise InputError(source, seen_line.get("num", block_line), "topic without a <num>")
    if len(values["num"].split()) != 1:
        raise InputError(source, seen_line["num"], f"<num> is not one id: {quote(values['num'])}")
    topic_id = topic_id_check(values["num"], source, seen_line["num"])
    for tag, what in (("title", "<title>"), ("desc", "<desc>"), ("narr", "<narr>")):
        text_check(values[tag], what, source, seen_line.get(tag, block_line))
    statement = "\n\n".join(v for v in (values["desc"], values["narr"]) if v)
    return TopicRecord(
        topic_id=topic_id,
        title=values["title"],
        description=values["desc"],
        narrative=values["narr"],
        statements=(statement,) if statement else (),
        source=source,
        line=block_line,
    )


class _LineTreeBuilder(ET.TreeBuilder):
    """A tree builder that remembers the line on which each element starts."""

    def __init__(self):
        super().__init__()
        self.parser = None
        self.lines: dict[int, int] = {}

    def start(self, tag, attrs):
        element = super().start(tag, attrs)
        self.lines[id(element)] = self.parser.parser.CurrentLineNumber
        return element


def _text(element) -> str:
    return _clean("".join(element.itertext())) if element is not None else ""


def parse_webxml(data: bytes, source: str) -> list[TopicRecord]:
    """TREC Web track topics with subtopics; see the module docstring.

    Parsed with ElementTree over defusedxml: DTDs may appear, but entity declarations and
    external references are refused, so nothing outside the file is read.
    """
    builder = _LineTreeBuilder()
    parser = DET.DefusedXMLParser(target=builder)
    builder.parser = parser
    try:
        parser.feed(data)
        root = parser.close()
    except ET.ParseError as exc:
        raise InputError(source, exc.position[0], f"malformed XML ({str(exc).split(':')[0]})") \
            from None
    except DefusedXmlException as exc:
        raise InputError(source, getattr(exc, "lineno", None),
                         f"refused XML ({type(exc).__name__}: entities and external "
                         "references are not allowed)") from None

    def line(element) -> int:
        return builder.lines[id(element)]

    inside = {id(e) for topic in root.iter("topic") for e in topic.iter()}
    for element in root.iter():
        if element.tag in ("query", "description", "subtopic") and id(element) not in inside:
            raise InputError(source, line(element), f"<{element.tag}> outside a <topic>")
    records: list[TopicRecord] = []
    for topic in root.iter("topic"):
        where = line(topic)
        if topic.find(".//topic") is not None:
            raise InputError(source, line(topic.find(".//topic")),
                             "<topic> inside another <topic>")
        number = (topic.get("number") or "").strip()
        if not number:
            raise InputError(source, where, "<topic> without a number attribute")
        number = topic_id_check(number, source, where)
        query = _text(topic.find("query"))
        if not query:
            raise InputError(source, where, f"topic {number} has no <query>")
        description = _text(topic.find("description"))
        text_check(query, "<query>", source, where)
        text_check(description, "<description>", source, where)
        intents: list[IntentRecord] = []
        for sub in topic.iter("subtopic"):
            sub_number = (sub.get("number") or "").strip()
            if not sub_number:
                raise InputError(source, line(sub), "<subtopic> without a number attribute")
            sub_number = topic_id_check(sub_number, source, line(sub), "subtopic number")
            if any(i.intent_id == sub_number for i in intents):
                raise InputError(source, line(sub), f"subtopic {sub_number} repeated in topic "
                                                    f"{number}")
            intents.append(IntentRecord(
                intent_id=sub_number, kind=(sub.get("type") or "").strip(),
                description=text_check(_text(sub), "<subtopic>", source, line(sub))))
        records.append(TopicRecord(
            topic_id=number, title=query, description=description,
            statements=(description,) if description else (), intents=tuple(intents),
            kind=(topic.get("type") or "").strip(), source=source, line=where,
        ))
    _check_unique(records, source)
    return records
