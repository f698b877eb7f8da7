"""Topic and variant file readers: pure Python, no database."""
import gzip
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from common.fileio import InputError
from topics.normalise import normalise_query
from topics.topicfiles import parse_trec, read_topics
from topics.variantfiles import read_variants

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, name, text, *, gz=False):
    path = tmp_path / name
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def numbered(text):
    return list(enumerate(text.splitlines(), 1))


def test_pure_modules_import_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import sys\n"
        "import topics.topicfiles, topics.variantfiles\n"
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --- tsv topics -------------------------------------------------------------------


def test_tsv_topics_with_header_title_and_repeated_ids(tmp_path):
    path = write(
        tmp_path,
        "topics.tsv",
        "id\tstatement\ttitle\n"
        "UQV100.001\tYou want to know about \"cats\".\tcats\n"
        "\n"
        "UQV100.001\tA second backstory.\t\n"
        "UQV100.002\tDogs, please.\n",
    )
    records = read_topics(path, "tsv")
    assert [r.topic_id for r in records] == ["UQV100.001", "UQV100.002"]
    assert records[0].title == "cats"
    assert records[0].statements == ('You want to know about "cats".', "A second backstory.")
    assert records[1].statements == ("Dogs, please.",)
    assert records[1].line == 5


def test_csv_topics_follow_csv_quoting(tmp_path):
    path = write(tmp_path, "topics.csv", '7,"Hello, world",greeting\n8,plain\n', gz=False)
    records = read_topics(path, "tsv")
    assert [(r.topic_id, r.statements, r.title) for r in records] == [
        ("7", ("Hello, world",), "greeting"),
        ("8", ("plain",), ""),
    ]


def test_tsv_delimiter_is_sniffed_for_other_names_and_gz_is_read(tmp_path):
    path = write(tmp_path, "topics.dat.gz", "1\tone, with comma\n2\ttwo\n", gz=True)
    assert [r.statements for r in read_topics(path, "tsv")] == [("one, with comma",), ("two",)]


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("1\tok\n2\n", 2, "expected 2 or 3 columns"),
        ("1\tok\n\n\t statement\n", 3, "empty topic id"),
        ("1\tok\tA\n1\tmore\tB\n", 2, "title"),
        ("1\tok\n2\t\n", 2, "empty statement"),
    ],
)
def test_tsv_topic_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.tsv", text)
    with pytest.raises(InputError) as info:
        read_topics(path, "tsv")
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}, line {line}: ")
    assert fragment in str(info.value)


# --- SMART ------------------------------------------------------------------------

SMART = """.I 1
.T
Short title
.W
 first line
 second line
.N
 ignored note
.I 003
.W
third query
.A
Someone
"""


def test_smart_ids_titles_and_text(tmp_path):
    records = read_topics(write(tmp_path, "q.text", SMART), "smart")
    assert [r.topic_id for r in records] == ["1", "003"]
    assert records[0].title == "Short title"
    assert records[0].description == "first line second line"
    assert records[0].statements == ("first line second line",)
    assert records[1].statements == ("third query",)
    assert records[1].line == 9
    # Without a .T the query text is the title too: a title run retrieves the query.
    assert records[1].title == "third query"


def test_smart_ids_by_position(tmp_path):
    records = read_topics(write(tmp_path, "q.text", SMART), "smart", ids="position")
    assert [r.topic_id for r in records] == ["1", "2"]


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("stray\n.I 1\n.W\nx\n", 1, "before the first .I"),
        (".I 1\n.W\nx\n.I\n.W\ny\n", 4, "needs one id"),
        (".I 1\n.W\nx\n.I 2\n.N\nonly a note\n", 4, "no .W text"),
        (".I 1\n.W\nx\n.I 1\n.W\ny\n", 4, "repeated (first on line 1)"),
    ],
)
def test_smart_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.qry", text)
    with pytest.raises(InputError) as info:
        read_topics(path, "smart")
    assert (info.value.source, info.value.line) == (str(path), line)
    assert fragment in str(info.value)


def test_cacm_queries(shared_data):
    path = shared_data / "small-corpora/cacm/query.text"
    records = read_topics(path, "smart")
    assert len(records) == 64
    assert [r.topic_id for r in records] == [str(n) for n in range(1, 65)]
    assert records[0].statements[0].startswith("What articles exist which deal with TSS")


def test_cranfield_keeps_written_ids_or_numbers_by_position(shared_data):
    path = shared_data / "small-corpora/cranfield/cran.qry"
    given = read_topics(path, "smart")
    written = re.findall(r"^\.I\s+(\S+)", path.read_text(), flags=re.M)
    assert len(given) == 225 == len(written)
    assert [r.topic_id for r in given] == written
    assert written[-1] == "365"
    by_position = read_topics(path, "smart", ids="position")
    assert [r.topic_id for r in by_position] == [str(n) for n in range(1, 226)]
    assert [r.description for r in by_position] == [r.description for r in given]


@pytest.mark.parametrize(
    "name, count", [("cisi/CISI.QRY", 112), ("med/MED.QRY", 30), ("adi/ADI.QRY", 35)]
)
def test_other_smart_query_files(shared_data, name, count):
    records = read_topics(shared_data / "small-corpora" / name, "smart")
    assert len(records) == count
    assert all(r.statements and r.statements[0] for r in records)


# --- TREC -------------------------------------------------------------------------

TREC = """<top>

<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in
international criminal activity.

<narr> Narrative:
A relevant document must identify the organization.

</top>
<top>
<num>2</num><title>
SECOND TITLE
</title>
</top>
"""


def test_trec_topics_strip_labels_and_join_statement():
    first, second = parse_trec(numbered(TREC), "t.txt")
    assert first.topic_id == "301"
    assert first.title == "International Organized Crime"
    assert first.description == (
        "Identify organizations that participate in international criminal activity."
    )
    assert first.narrative == "A relevant document must identify the organization."
    assert first.statements == (first.description + "\n\n" + first.narrative,)
    assert (second.topic_id, second.title, second.statements) == ("2", "SECOND TITLE", ())
    assert second.line == 14


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("<top>\n<title> no number\n</top>\n", 1, "without a <num>"),
        ("<top>\n<num> Number: 1\n<title> x\n", 1, "never closed"),
        ("<top>\n<num> 1\n</top>\nrubbish\n", 4, "expected <top>"),
        ("<top>\n<num> 1\n</top>\n<top>\n<num> 1\n</top>\n", 4, "repeated"),
        ("<top>\n<num> 1\n<desc> a\n<desc> b\n</top>\n", 4, "<desc> repeated"),
        ("<top>\n<num> 1\n<top>\n", 3, "inside the topic"),
    ],
)
def test_trec_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.trec", text)
    with pytest.raises(InputError) as info:
        read_topics(path, "trec")
    assert (info.value.source, info.value.line) == (str(path), line)
    assert fragment in str(info.value)


def test_robust04_topics(shared_data):
    path = shared_data / "query-variants/robust04-uqv/topics.robust04.txt"
    records = read_topics(path, "trec")
    ids = [r.topic_id for r in records]
    assert ids == [str(n) for n in list(range(301, 451)) + list(range(601, 701))]
    first = records[0]
    assert first.title == "International Organized Crime"
    assert first.description.startswith("Identify organizations that participate")
    assert first.narrative.startswith("A relevant document must as a minimum")
    assert not any(
        label in r.description or label in r.narrative
        for r in records
        for label in ("Description:", "Narrative:")
    )
    assert all(len(r.statements) == 1 for r in records)


def test_vaswani_topics_with_closing_tags(shared_data):
    records = read_topics(shared_data / "small-corpora/vaswani-npl/query-text.trec", "trec")
    assert len(records) == 93
    assert records[0].title.startswith("MEASUREMENT OF DIELECTRIC CONSTANT")


# --- Web track XML ----------------------------------------------------------------

WEBXML = """<?xml version="1.0"?>
<webtrack2011>
<topic number="7" type="faceted">
  <query>ritz carlton</query>
  <description>
    Find the resort.
  </description>
  <subtopic number="1" type="inf">Find the resort.</subtopic>
  <subtopic number="2" type="nav">Book a room.</subtopic>
</topic>
</webtrack2011>
"""


def test_webxml_topic_with_intents(tmp_path):
    (record,) = read_topics(write(tmp_path, "w.xml", WEBXML), "webxml")
    assert (record.topic_id, record.title, record.description, record.kind) == (
        "7",
        "ritz carlton",
        "Find the resort.",
        "faceted",
    )
    assert record.statements == ("Find the resort.",)
    assert [(i.intent_id, i.kind, i.description) for i in record.intents] == [
        ("1", "inf", "Find the resort."),
        ("2", "nav", "Book a room."),
    ]
    assert record.line == 3


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        (WEBXML.replace("</query>", "</qery>"), 4, "malformed XML"),
        (WEBXML.replace(' number="7"', ""), 3, "without a number"),
        (WEBXML.replace('subtopic number="2"', 'subtopic number="1"'), 9, "repeated"),
        (WEBXML.replace("<query>ritz carlton</query>", ""), 3, "no <query>"),
    ],
)
def test_webxml_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, "bad.xml", text)
    with pytest.raises(InputError) as info:
        read_topics(path, "webxml")
    assert (info.value.source, info.value.line) == (str(path), line)
    assert fragment in str(info.value)


def test_web_2011_topics_and_subtopic_counts(shared_data):
    path = shared_data / "trec-web-diversity/2011/full-topics.xml"
    text = path.read_text()
    # Independent count: subtopic elements between one <topic number=...> and the next.
    expected = {
        m.group(1): m.group(2).count("<subtopic ")
        for m in re.finditer(r'<topic number="(\d+)"(.*?)</topic>', text, flags=re.S)
    }
    records = read_topics(path, "webxml")
    assert len(records) == 50 == len(expected)
    assert {r.topic_id: len(r.intents) for r in records} == expected
    assert sum(expected.values()) == 168
    assert {r.topic_id: len(r.intents) for r in records if r.topic_id in ("101", "107")} == {
        "101": 4,
        "107": 6,
    }
    # Subtopic types are kept as written; the 2011 file has two typos ("inv", "inav").
    kinds = Counter(re.findall(r'<subtopic number="\d+" type="(\w+)"', text))
    assert Counter(i.kind for r in records for i in r.intents) == kinds
    assert kinds["inv"] == 1 and kinds["inav"] == 1


# --- variant files ----------------------------------------------------------------

UQV = (
    "q1|UQV100.001|W1|2|x|3\tcats  and Dogs\n"
    "q2|UQV100.001|W2|5|1\tcats and dogs!\n"
    "UQV100.002|W1|10|extra|1\tbirds\n"
)


def test_uqv100_layout(tmp_path):
    records = read_variants(write(tmp_path, "uqv.tsv.gz", UQV, gz=True), "uqv100")
    got = [(r.topic_id, r.worker_id, r.estimate, r.count, r.variant_id, r.raw) for r in records]
    assert got == [
        ("UQV100.001", "W1", "2", 3, "q1", "cats  and Dogs"),
        ("UQV100.001", "W2", "5", 1, "q2", "cats and dogs!"),
        ("UQV100.002", "W1", "10", 1, "UQV100.002:3", "birds"),
    ]


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("q|UQV100.001|W|2|3 no tab", "no TAB"),
        ("q|TOPIC.1|W|2|3\tquery", "UQV100.<digits>"),
        ("q|UQV100.001|W|2\tquery", "topic|worker|estimate"),
        ("q|UQV100.001|W|2|three\tquery", "not a whole number"),
        ("q|UQV100.001|W|2|0\tquery", "not positive"),
        ("q|UQV100.001|W|2|1\t  ", "empty query"),
        ("q|UQV100.001|W|2|1\t?!", "no words"),
        ("q|UQV100.001||2|1\tquery", "empty worker"),
    ],
)
def test_uqv100_errors_name_file_and_line(tmp_path, line, fragment):
    path = write(tmp_path, "uqv.txt", UQV + line + "\n")
    with pytest.raises(InputError) as info:
        read_variants(path, "uqv100")
    assert (info.value.source, info.value.line) == (str(path), 4)
    assert fragment in str(info.value)


def test_robust04_uqv_layout(tmp_path):
    path = write(tmp_path, "r.txt", "301-1-1;crime groups\n301-1-2;crime; groups\n302-1-1;polio\n")
    records = read_variants(path, "robust04-uqv")
    assert [(r.topic_id, r.worker_id, r.variant_id, r.count, r.raw) for r in records] == [
        ("301", "301-1", "301-1-1", 1, "crime groups"),
        ("301", "301-1", "301-1-2", 1, "crime; groups"),
        ("302", "302-1", "302-1-1", 1, "polio"),
    ]


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("301-1-1;a\n301-1;b\n", 2, "topic-user-seq"),
        ("301-1-1;a\nno separator\n", 2, "expected"),
        ("301-1-1;a\n301-1-1;b\n", 2, "repeated (first on line 1)"),
    ],
)
def test_robust04_uqv_errors(tmp_path, text, line, fragment):
    path = write(tmp_path, "r.txt", text)
    with pytest.raises(InputError) as info:
        read_variants(path, "robust04-uqv")
    assert (info.value.source, info.value.line) == (str(path), line)
    assert fragment in str(info.value)


def test_tsv_variants(tmp_path):
    text = "topic\tquery\tworker\tcount\n1\tcats\tw1\t2\n1\tdogs\n2\tbirds\tw9\t\n"
    path = write(tmp_path, "v.tsv", text)
    records = read_variants(path, "tsv")
    assert [(r.topic_id, r.raw, r.worker_id, r.count) for r in records] == [
        ("1", "cats", "w1", 2),
        ("1", "dogs", "", 1),
        ("2", "birds", "w9", 1),
    ]
    with pytest.raises(InputError, match=r"v\.tsv, line 2: expected 2 to 4 columns"):
        read_variants(write(tmp_path, "v.tsv", "1\tcats\n1\n"), "tsv")


def test_robust04_variations_file(shared_data):
    path = shared_data / "query-variants/robust04-uqv/ecir2022-uqv-sim/robust-uqv.txt"
    records = read_variants(path, "robust04-uqv")
    assert len(records) == 3151
    assert len({r.topic_id for r in records}) == 250
    per_topic = Counter(r.topic_id for r in records)
    assert all(4 <= len({r.worker_id for r in records if r.topic_id == t}) <= 8 for t in per_topic)
    assert records[0].raw == "organizations international criminal activity"
    assert all(normalise_query(r.raw) for r in records)
