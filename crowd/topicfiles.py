"""Reading topic files into plain records. No Django here.

Four layouts are read; each reader returns a list of :class:`TopicRecord` in file order,
and every error is a :class:`ParseError` naming the file and the line.

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
    becomes :attr:`TopicRecord.kind`, stored as the topic's ``kind``.

Files ending in ``.gz`` (or starting with the gzip magic bytes) are decompressed. Text is
UTF-8.
"""
from __future__ import annotations

import csv
import gzip
import re
import xml.parsers.expat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

TOPIC_FORMATS = ("tsv", "smart", "trec", "webxml")


class ParseError(ValueError):
    """A file could not be read; the message names the file and the line."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source = source
        self.line = line
        self.reason = message
        where = f"{source}, line {line}" if line is not None else source
        super().__init__(f"{where}: {message}")


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


def open_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the newline removed; ``.gz`` is decompressed.

    A line that is not UTF-8 raises :class:`ParseError` naming that line.
    """
    path = Path(path)
    with _open_binary(path) as fh:
        for number, raw in enumerate(fh, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ParseError(str(path), number, f"not UTF-8 ({exc.reason})") from None
            yield number, text.rstrip("\r\n")


def read_bytes(path: str | Path) -> bytes:
    with _open_binary(Path(path)) as fh:
        return fh.read()


def _open_binary(path: Path):
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as exc:
        raise ParseError(str(path), None, f"cannot open ({exc.strerror})") from None
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def plain_name(path: str | Path) -> str:
    """The file name without a trailing ``.gz``, lower-cased (for extension checks)."""
    name = Path(path).name.lower()
    return name[:-3] if name.endswith(".gz") else name


def _clean(text: str) -> str:
    return " ".join(text.split())


# --- readers -----------------------------------------------------------------------


def read_topics(path: str | Path, fmt: str, *, ids: str = "given") -> list[TopicRecord]:
    """Read a topic file in one of :data:`TOPIC_FORMATS`.

    ``ids`` is ``"given"`` (the file's own ids) or ``"position"`` (1, 2, ... in file
    order; for files whose judgments number topics by position).
    """
    if fmt not in TOPIC_FORMATS:
        raise ValueError(f"unknown topic format {fmt!r}; expected one of {TOPIC_FORMATS}")
    if ids not in ("given", "position"):
        raise ValueError(f"ids must be 'given' or 'position', not {ids!r}")
    source = str(path)
    if fmt == "webxml":
        records = parse_webxml(read_bytes(path), source)
    else:
        lines = open_lines(path)
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
        raise ParseError(source, None, f"no topics found (format {fmt})")
    return records


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
            raise ParseError(
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
                raise ParseError(source, number, f"bad CSV row ({exc})") from None
        yield number, [c.strip() for c in cells]


def parse_tsv(
    lines: Iterable[tuple[int, str]], source: str, *, delimiter: str | None = None
) -> list[TopicRecord]:
    """``id, statement[, title]`` rows; see the module docstring."""
    order: list[str] = []
    first_line: dict[str, int] = {}
    titles: dict[str, str] = {}
    statements: dict[str, list[str]] = {}
    first_row = True
    for number, cells in split_rows(lines, source, delimiter):
        if first_row:
            first_row = False
            if cells[0].lower() in _HEADER_IDS:
                continue
        if len(cells) < 2 or len(cells) > 3:
            raise ParseError(
                source,
                number,
                f"expected 2 or 3 columns (id, statement, title), found {len(cells)}",
            )
        topic_id, statement = cells[0], cells[1]
        title = cells[2] if len(cells) == 3 else ""
        if not topic_id:
            raise ParseError(source, number, "empty topic id")
        if not statement:
            raise ParseError(source, number, f"empty statement for topic {topic_id!r}")
        if topic_id not in first_line:
            order.append(topic_id)
            first_line[topic_id] = number
            titles[topic_id] = title
            statements[topic_id] = []
        elif title and titles[topic_id] and title != titles[topic_id]:
            raise ParseError(
                source,
                number,
                f"topic {topic_id!r} has title {title!r} here but {titles[topic_id]!r} "
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
    records: list[TopicRecord] = []
    current: dict | None = None
    fieldname: str | None = None

    def finish() -> None:
        if current is None:
            return
        text = _clean(" ".join(current["W"]))
        if not text:
            raise ParseError(source, current["line"], f"query {current['id']!r} has no .W text")
        records.append(
            TopicRecord(
                topic_id=current["id"],
                title=_clean(" ".join(current["T"])) or text,
                description=text,
                statements=(text,),
                source=source,
                line=current["line"],
            )
        )

    for number, text in lines:
        match = _SMART_FIELD.match(text.rstrip())
        if match:
            tag, rest = match.group(1), (match.group(2) or "").strip()
            if tag == "I":
                finish()
                if not rest or len(rest.split()) != 1:
                    raise ParseError(source, number, f"'.I' needs one id, found {text.strip()!r}")
                current = {"id": rest, "line": number, "W": [], "T": []}
                fieldname = None
                continue
            if current is None:
                raise ParseError(source, number, f"field .{tag} before the first .I")
            fieldname = tag
            if rest and tag in ("W", "T"):
                current[tag].append(rest)
            continue
        if not text.strip():
            continue
        if current is None:
            raise ParseError(source, number, "text before the first .I")
        if fieldname is None:
            raise ParseError(source, number, f"text after .I {current['id']} outside a field")
        if fieldname in ("W", "T"):
            current[fieldname].append(text)
    finish()
    _check_unique(records, source)
    return records


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
    records: list[TopicRecord] = []
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
                    records.append(_trec_record(block, source, block_line))
                    block = None
                continue
            raise ParseError(source, number, f"expected <top>, found {stripped[:40]!r}")
        if stripped.lower().startswith("<top>"):
            raise ParseError(source, number, f"<top> inside the topic opened on line {block_line}")
        if stripped.lower().endswith("</top>"):
            block.append((number, text[: text.lower().rfind("</top>")]))
            records.append(_trec_record(block, source, block_line))
            block = None
            continue
        block.append((number, text))
    if block is not None:
        raise ParseError(source, block_line, "<top> is never closed with </top>")
    _check_unique(records, source)
    return records


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
                    raise ParseError(
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
        raise ParseError(source, seen_line.get("num", block_line), "topic without a <num>")
    if len(values["num"].split()) != 1:
        raise ParseError(source, seen_line["num"], f"<num> is not one id: {values['num']!r}")
    statement = "\n\n".join(v for v in (values["desc"], values["narr"]) if v)
    return TopicRecord(
        topic_id=values["num"],
        title=values["title"],
        description=values["desc"],
        narrative=values["narr"],
        statements=(statement,) if statement else (),
        source=source,
        line=block_line,
    )


def parse_webxml(data: bytes, source: str) -> list[TopicRecord]:
    """TREC Web track topics with subtopics; see the module docstring."""
    parser = xml.parsers.expat.ParserCreate()
    # Never read anything outside the file (external DTDs or entities).
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.ExternalEntityRefHandler = lambda *args: 0
    records: list[TopicRecord] = []
    state: dict = {"topic": None, "text": None}

    def start(name, attrs):
        line = parser.CurrentLineNumber
        if name == "topic":
            if state["topic"] is not None:
                raise ParseError(source, line, "<topic> inside another <topic>")
            number = (attrs.get("number") or "").strip()
            if not number:
                raise ParseError(source, line, "<topic> without a number attribute")
            state["topic"] = {
                "id": number,
                "kind": (attrs.get("type") or "").strip(),
                "line": line,
                "query": None,
                "description": None,
                "subtopics": [],
            }
        elif name in ("query", "description", "subtopic"):
            topic = state["topic"]
            if topic is None:
                raise ParseError(source, line, f"<{name}> outside a <topic>")
            if name == "subtopic":
                number = (attrs.get("number") or "").strip()
                if not number:
                    raise ParseError(source, line, "<subtopic> without a number attribute")
                if any(s[0] == number for s in topic["subtopics"]):
                    raise ParseError(
                        source, line, f"subtopic {number} repeated in topic {topic['id']}"
                    )
                topic["subtopics"].append([number, (attrs.get("type") or "").strip(), ""])
            state["text"] = (name, [])

    def data_handler(text):
        if state["text"] is not None:
            state["text"][1].append(text)

    def end(name):
        line = parser.CurrentLineNumber
        topic = state["topic"]
        if name in ("query", "description", "subtopic") and state["text"] is not None:
            value = _clean("".join(state["text"][1]))
            state["text"] = None
            if name == "subtopic":
                topic["subtopics"][-1][2] = value
            else:
                topic[name] = value
        elif name == "topic":
            if not topic["query"]:
                raise ParseError(source, line, f"topic {topic['id']} has no <query>")
            description = topic["description"] or ""
            records.append(
                TopicRecord(
                    topic_id=topic["id"],
                    title=topic["query"],
                    description=description,
                    statements=(description,) if description else (),
                    intents=tuple(
                        IntentRecord(intent_id=n, kind=k, description=d)
                        for n, k, d in topic["subtopics"]
                    ),
                    kind=topic["kind"],
                    source=source,
                    line=topic["line"],
                )
            )
            state["topic"] = None

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = data_handler
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise ParseError(
            source, exc.lineno, f"malformed XML ({xml.parsers.expat.ErrorString(exc.code)})"
        ) from None
    _check_unique(records, source)
    return records
