"""Topic and variant imports through the services and the management commands."""
import csv
import io
import json
import re
from collections import defaultdict

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from topics.models import Intent, QueryVariant, Statement, Topic, TopicSet
from topics.normalise import normalise_query
from topics.selectors import variant_groups, variant_label, variant_list, variant_stats
from topics.services import ImportRejected, topics_import, variants_import
from topics.topicfiles import read_topics
from topics.variantfiles import VariantRecord, read_variants

pytestmark = pytest.mark.django_db

ROBUST = "query-variants/robust04-uqv"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def insert_batches(model, rows, batch_size):
    """INSERT statements bulk_create needs on this database (SQLite caps parameters)."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    per_batch = min(batch_size, connection.ops.bulk_batch_size(fields, [None] * rows))
    return -(-rows // per_batch)


def table_sizes():
    return {
        model.__name__: model.objects.count()
        for model in (TopicSet, Topic, Statement, Intent, QueryVariant)
    }


# --- topics -----------------------------------------------------------------------


def test_import_topics_tsv_then_clash_then_replace(tmp_path):
    path = write(
        tmp_path, "t.tsv", "id\tstatement\ttitle\nA.1\tfirst\tone\nA.1\tsecond\t\nA.2\tother\n"
    )
    assert "2 topic(s) created" in run("import_topics", path, "--format", "tsv", "--topic-set", "s")
    topic = Topic.objects.get(topic_set__name="s", topic_id="A.1")
    assert topic.title == "one"
    assert list(topic.statements.values_list("position", "text")) == [(0, "first"), (1, "second")]

    before = table_sizes()
    with pytest.raises(CommandError, match=r"2 topic\(s\) already in set 's': A\.1, A\.2"):
        run("import_topics", path, "--format", "tsv", "--topic-set", "s")
    assert table_sizes() == before

    variants_import("s", read_variants(write(tmp_path, "v.tsv", "A.1\tkept query\n"), "tsv"))
    new = write(tmp_path, "t2.tsv", "A.1\tonly one now\tnew title\nA.3\tthird\n")
    out = run("import_topics", new, "--format", "tsv", "--topic-set", "s", "--replace")
    assert "1 topic(s) created, 1 replaced" in out
    topic.refresh_from_db()
    assert topic.title == "new title"
    assert list(topic.statements.values_list("text", flat=True)) == ["only one now"]
    assert list(topic.variants.values_list("raw", flat=True)) == ["kept query"]
    assert Topic.objects.filter(topic_set__name="s").count() == 3


def test_malformed_topic_file_names_file_and_line_and_writes_nothing(tmp_path):
    path = write(tmp_path, "bad.qry", ".I 1\n.W\nfine\n.I 2\n.W\nalso fine\n.I 1\n.W\nagain\n")
    before = table_sizes()
    with pytest.raises(CommandError) as info:
        run("import_topics", path, "--format", "smart", "--topic-set", "x")
    assert f"{path}, line 7:" in str(info.value)
    assert table_sizes() == before


def test_topics_import_is_all_or_nothing_when_a_write_fails(tmp_path, monkeypatch):
    records = read_topics(write(tmp_path, "t.tsv", "1\tone\n2\ttwo\n"), "tsv")

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    # the topics are written by then: the last write of the batch fails
    monkeypatch.setattr("topics.services._statements_insert", boom)
    before = table_sizes()
    with pytest.raises(RuntimeError):
        topics_import("fresh", records)
    assert table_sizes() == before


def test_cacm_queries_import(shared_data):
    path = shared_data / "small-corpora/cacm/query.text"
    run("import_topics", str(path), "--format", "smart", "--topic-set", "cacm")
    topics = Topic.objects.filter(topic_set__name="cacm")
    assert topics.count() == 64
    assert Statement.objects.filter(topic__topic_set__name="cacm").count() == 64
    assert set(topics.values_list("topic_id", flat=True)) == {str(n) for n in range(1, 65)}


def test_cranfield_ids_by_position(shared_data):
    path = shared_data / "small-corpora/cranfield/cran.qry"
    run("import_topics", str(path), "--format", "smart", "--topic-set", "cran", "--ids", "position")
    ids = set(Topic.objects.filter(topic_set__name="cran").values_list("topic_id", flat=True))
    assert ids == {str(n) for n in range(1, 226)}


def test_web_2011_topics_with_subtopics(shared_data, django_assert_max_num_queries):
    path = shared_data / "trec-web-diversity/2011/full-topics.xml"
    text = path.read_text()
    expected = {
        m.group(1): m.group(2).count("<subtopic ")
        for m in re.finditer(r'<topic number="(\d+)"(.*?)</topic>', text, flags=re.S)
    }
    records = read_topics(path, "webxml")
    with django_assert_max_num_queries(12):
        topics_import("web2011", records)
    topics = Topic.objects.filter(topic_set__name="web2011")
    assert topics.count() == 50
    got = defaultdict(int)
    intents = Intent.objects.filter(topic__in=topics)
    for topic_id in intents.values_list("topic__topic_id", flat=True):
        got[topic_id] += 1
    assert dict(got) == expected
    assert sum(expected.values()) == 168
    t101 = topics.get(topic_id="101")
    assert t101.title == "ritz carlton lake las vegas"
    assert list(t101.intents.values_list("intent_id", "kind")) == [
        ("1", "inf"), ("2", "nav"), ("3", "nav"), ("4", "inf"),
    ]
    assert list(t101.statements.values_list("text", flat=True)) == [t101.description]
    # the topic-level type, read from the file independently of the reader
    types = dict(re.findall(r'<topic number="(\d+)"[^>]*type="(\w+)"', text))
    assert dict(topics.values_list("topic_id", "kind")) == types
    assert sorted(types.values()).count("faceted") == 41 and len(types) == 50


# --- variants ---------------------------------------------------------------------


def robust_expected(path):
    """variant_stats computed straight from the file, without the project's readers."""
    raw = defaultdict(int)
    distinct = defaultdict(set)
    workers = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            vid, query = line.rstrip("\n").split(";", 1)
            topic, user, _seq = vid.split("-")
            raw[topic] += 1
            distinct[topic].add(normalise_query(query))
            workers.add((topic, user))
    counts = list(raw.values())
    return {
        "topics": len(raw),
        "raw_variants": sum(counts),
        "unique_variants": sum(len(v) for v in distinct.values()),
        "workers": len(workers),
        "per_topic": {"min": min(counts), "mean": sum(counts) / len(counts), "max": max(counts)},
    }


def test_robust04_topics_and_variations(shared_data, django_assert_max_num_queries):
    topics_path = shared_data / ROBUST / "topics.robust04.txt"
    variants_path = shared_data / ROBUST / "ecir2022-uqv-sim/robust-uqv.txt"
    run("import_topics", str(topics_path), "--format", "trec", "--topic-set", "robust04")
    assert Topic.objects.filter(topic_set__name="robust04").count() == 250

    records = read_variants(variants_path, "robust04-uqv")
    # savepoint, set, release; per batch of 1000 records its topics and its inserts (one of
    # 1000 on PostgreSQL): the count grows with batches, memory stays at one batch
    inserts = sum(insert_batches(QueryVariant, n, 1000) for n in (1000, 1000, 1000, 151))
    with django_assert_max_num_queries(3 + 4 + inserts):
        result = variants_import("robust04", records, batch_size=1000)
    assert result == {"variants": 3151, "topics_created": 0, "replaced": 0, "corrected": 0}

    expected = robust_expected(variants_path)
    assert expected["raw_variants"] == 3151
    assert expected["topics"] == 250
    assert expected["unique_variants"] == 3045
    assert (expected["per_topic"]["min"], expected["per_topic"]["max"]) == (8, 52)
    assert expected["per_topic"]["mean"] == pytest.approx(12.604)
    assert expected["workers"] == 1589

    stats = variant_stats("robust04")
    assert stats == expected
    printed = json.loads(run("variant_stats", "--topic-set", "robust04", "--json"))
    assert printed == json.loads(json.dumps(expected))

    first = QueryVariant.objects.get(topic__topic_set__name="robust04", variant_id="301-4-2")
    assert (first.topic.topic_id, first.worker_id, first.count) == ("301", "301-4", 1)
    assert first.raw == "international drug trades crime group in south america"
    assert first.normalised == normalise_query(first.raw)

    # statements stay as imported beside the variants
    t301 = Topic.objects.get(topic_set__name="robust04", topic_id="301")
    assert t301.statements.get().text == t301.description + "\n\n" + t301.narrative

    # re-importing with replace does not double the counts
    run("import_variants", str(variants_path), "--format", "robust04-uqv",
        "--topic-set", "robust04", "--replace")
    assert variant_stats("robust04") == expected


def test_robust04_variations_create_topics(shared_data):
    path = shared_data / ROBUST / "ecir2022-uqv-sim/robust-uqv.txt"
    with pytest.raises(CommandError) as info:
        run("import_variants", str(path), "--format", "robust04-uqv", "--topic-set", "r")
    assert "does not exist" in str(info.value)
    TopicSet.objects.create(name="r")
    Topic.objects.create(topic_set=TopicSet.objects.get(name="r"), topic_id="301")
    before = table_sizes()
    with pytest.raises(CommandError) as info:
        run("import_variants", str(path), "--format", "robust04-uqv", "--topic-set", "r")
    message = str(info.value)
    assert "249 topic(s) not in set 'r'" in message
    listed = re.search(r"not in set 'r': ([^(]*) \(", message).group(1).split(", ")
    assert listed == [str(n) for n in list(range(302, 451)) + list(range(601, 701))]
    assert f"(first: {path}, line 17: topic 302;" in message
    assert table_sizes() == before

    out = run("import_variants", str(path), "--format", "robust04-uqv", "--topic-set", "r",
              "--create-topics")
    assert "3151 variant(s) imported, 249 topic(s) created" in out
    assert variant_stats("r") == robust_expected(path)
    created = Topic.objects.get(topic_set__name="r", topic_id="450")
    assert (created.title, created.description, created.statements.count()) == ("", "", 0)


UQV = (
    "a|UQV100.001|W1|2|x|3\tcats  and Dogs\n"
    "b|UQV100.001|W2|5|1\tCats and dogs!\n"
    "c|UQV100.001|W2|5|1\tbirds\n"
    "d|UQV100.002|W1|10|2\tbirds\n"
)


def test_uqv100_counts_groups_and_stats(tmp_path):
    path = write(tmp_path, "uqv.txt", UQV)
    run("import_variants", path, "--format", "uqv100", "--topic-set", "u", "--create-topics")
    stored = list(variant_list("u").values_list("variant_id", "worker_id", "estimate", "count"))
    assert stored == [
        ("a", "W1", "2", 3), ("b", "W2", "5", 1), ("c", "W2", "5", 1), ("d", "W1", "10", 2)
    ]
    groups = variant_groups("u")
    got = [(g.topic_id, g.normalised, g.count, g.worker_ids, g.first_variant_id) for g in groups]
    assert got == [
        ("UQV100.001", "cats and dogs", 4, ("W1", "W2"), "a"),
        ("UQV100.001", "birds", 1, ("W2",), "c"),
        ("UQV100.002", "birds", 2, ("W1",), "d"),
    ]
    assert variant_stats("u") == {
        "topics": 2,
        "raw_variants": 7,
        "unique_variants": 3,
        "workers": 2,
        "per_topic": {"min": 2, "mean": 3.5, "max": 5},
    }


def test_malformed_variant_file_names_file_and_line_and_writes_nothing(tmp_path):
    path = write(tmp_path, "uqv.txt", UQV + "e|UQV100.003|W1|1|zero?\tfish\n")
    with pytest.raises(CommandError) as info:
        run("import_variants", path, "--format", "uqv100", "--topic-set", "u", "--create-topics")
    assert f"{path}, line 5:" in str(info.value)
    assert table_sizes() == dict.fromkeys(table_sizes(), 0)


def test_variant_import_is_all_or_nothing_when_a_write_fails(tmp_path, monkeypatch):
    records = read_variants(write(tmp_path, "uqv.txt", UQV), "uqv100")

    def boom(*args, **kwargs):
        raise RuntimeError("connection lost")

    monkeypatch.setattr(QueryVariant.objects, "bulk_create", boom)
    with pytest.raises(RuntimeError):
        variants_import("u", records, create_topics=True)
    assert table_sizes() == dict.fromkeys(table_sizes(), 0)


def test_service_rejects_overlong_fields_with_line(tmp_path):
    # The reader refuses such ids itself; the service checks records from any source.
    records = [VariantRecord(topic_id="1", raw="ok", worker_id="w", source="v.tsv", line=1),
               VariantRecord(topic_id="1", raw="ok", worker_id="w" * 300, source="v.tsv", line=2)]
    with pytest.raises(ImportRejected, match=r"v\.tsv, line 2: the worker id is 300 characters"):
        variants_import("v", records, create_topics=True)
    assert not TopicSet.objects.exists()


def test_many_variants_in_few_queries(tmp_path, django_assert_max_num_queries):
    lines = [
        f"T{t}\tquery {t} number {i}\tw{i % 37}\t{1 + i % 3}"
        for t in range(40)
        for i in range(100)
    ]
    records = read_variants(write(tmp_path, "v.tsv", "\n".join(lines) + "\n"), "tsv")
    # savepoint, set lookup + create, release; per batch of 1000 (10 new topics each): its
    # topics lookup, topic insert, the set's topic count and the variant inserts
    with django_assert_max_num_queries(
        4 + 4 * (2 + insert_batches(Topic, 10, 500) + insert_batches(QueryVariant, 1000, 1000))
    ):
        result = variants_import("many", records, create_topics=True, batch_size=1000)
    assert result["variants"] == 4000 and result["topics_created"] == 40
    assert QueryVariant.objects.count() == 4000
    with django_assert_max_num_queries(5):  # aggregates in the database, none per topic
        stats = variant_stats("many")
    assert stats["raw_variants"] == sum(1 + i % 3 for _ in range(40) for i in range(100))
    with django_assert_max_num_queries(1):
        assert len(variant_groups("many")) == 4000


# --- export -----------------------------------------------------------------------


def test_export_formats(tmp_path):
    run("import_variants", write(tmp_path, "uqv.txt", UQV), "--format", "uqv100",
        "--topic-set", "u", "--create-topics")
    columns = ["topic", "variant_id", "worker", "raw", "normalised", "count", "estimate",
               "uncorrected"]
    first = ["UQV100.001", "a", "W1", "cats  and Dogs", "cats and dogs", "3", "2", ""]

    out = tmp_path / "v.tsv"
    run("export_variants", "--topic-set", "u", "--format", "tsv", "--out", str(out))
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0] == columns and rows[1] == first and len(rows) == 5

    out = tmp_path / "v.csv"
    run("export_variants", "--topic-set", "u", "--format", "csv", "--out", str(out))
    rows = list(csv.reader(out.open()))
    assert rows[0] == columns and rows[1] == first and len(rows) == 5

    out = tmp_path / "v.json"
    run("export_variants", "--topic-set", "u", "--format", "json", "--out", str(out))
    data = json.loads(out.read_text())
    assert data[0] == dict(zip(columns, first[:5] + [3, "2", ""])) and len(data) == 4

    out = tmp_path / "q.tsv"
    run("export_variants", "--topic-set", "u", "--format", "queries", "--out", str(out))
    lines = out.read_text().splitlines()
    assert lines == [
        f"UQV100.001/{variant_label('cats and dogs')}\tcats and dogs",
        f"UQV100.001/{variant_label('birds')}\tbirds",
        f"UQV100.002/{variant_label('birds')}\tbirds",
    ]
    # labels depend on the text only: more variants never relabel existing queries
    more = write(tmp_path, "more.tsv", "UQV100.001\tfish\tW9\t9\n")
    variants_import("u", read_variants(more, "tsv"))
    again = run("export_variants", "--topic-set", "u", "--format", "queries", "--out", "-")
    assert set(lines) < set(again.splitlines())
    assert again.splitlines()[0] == f"UQV100.001/{variant_label('fish')}\tfish"


def test_export_unknown_set_fails():
    with pytest.raises(CommandError, match="does not exist"):
        run("export_variants", "--topic-set", "nope", "--format", "tsv", "--out", "-")
    with pytest.raises(CommandError, match="does not exist"):
        run("variant_stats", "--topic-set", "nope", "--json")


# --- optional spell-correction on real variants ---------------------------------------


def _edits1(a: str, b: str) -> bool:
    """True when b is one insertion, deletion, substitution or adjacent swap from a."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return (a[i + 1:] == b[i + 1:] or a[i + 1:] == b[i:] or a[i:] == b[i + 1:]
            or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1]))


def test_robust04_variations_with_spell_correction(shared_data):
    topics_path = shared_data / ROBUST / "topics.robust04.txt"
    variants_path = shared_data / ROBUST / "ecir2022-uqv-sim/robust-uqv.txt"
    run("import_topics", str(topics_path), "--format", "trec", "--topic-set", "r04")
    out = run("import_variants", str(variants_path), "--format", "robust04-uqv",
              "--topic-set", "r04", "--spell-correct")
    corrected = QueryVariant.objects.filter(topic__topic_set__name="r04").exclude(uncorrected="")
    n = corrected.count()
    assert f"; {n} spell-corrected" in out and 0 < n < 3151 * 0.05
    for v in corrected:
        # provenance: raw -> normalised before correction -> corrected, word for word
        assert v.uncorrected == normalise_query(v.raw) != v.normalised
        before, after = v.uncorrected.split(), v.normalised.split()
        assert len(before) == len(after)
        for b, a in zip(before, after):
            assert a == b or (_edits1(b, a) and len(b) >= 4 and b.isalpha()), (b, a)
        # corrected only towards words the topic's texts or other answers use
        words = " ".join([v.topic.title, v.topic.description, v.topic.narrative] + list(
            QueryVariant.objects.filter(topic=v.topic).exclude(pk=v.pk)
            .values_list("normalised", flat=True)))
        assert set(after) - set(before) <= set(normalise_query(words).split())
    # every answer is kept; correction can only merge distinct texts
    stats = variant_stats("r04")
    assert stats["raw_variants"] == 3151 and stats["unique_variants"] <= 3045


def test_imports_read_other_encodings_only_when_told(tmp_path):
    topics = tmp_path / "t.tsv"
    topics.write_bytes("T1\tcaf\u00e9 prices\n".encode("latin-1"))
    with pytest.raises(CommandError, match=r"t\.tsv, line 1: not valid utf-8 .*--encoding"):
        run("import_topics", str(topics), "--format", "tsv", "--topic-set", "enc")
    run("import_topics", str(topics), "--format", "tsv", "--topic-set", "enc", "--encoding", "latin-1")
    assert Statement.objects.get().text == "caf\u00e9 prices"
    variants = tmp_path / "v.tsv"
    variants.write_bytes("T1\tcaf\u00e9\tw1\n".encode("cp1252"))
    with pytest.raises(CommandError, match=r"v\.tsv, line 1: not valid utf-8"):
        run("import_variants", str(variants), "--format", "tsv", "--topic-set", "enc")
    assert not QueryVariant.objects.exists()
    run("import_variants", str(variants), "--format", "tsv", "--topic-set", "enc", "--encoding",
        "cp1252")
    assert QueryVariant.objects.get().raw == "caf\u00e9"


def test_import_errors_are_messages_not_tracebacks(tmp_path):
    with pytest.raises(CommandError, match="File name too long"):
        run("import_topics", str(tmp_path / ("t" * 300)), "--format", "tsv", "--topic-set", "x")
    bad = tmp_path / "t.tsv.gz"
    bad.write_text("T1\tstatement\n")
    with pytest.raises(CommandError, match="not gzip data"):
        run("import_topics", str(bad), "--format", "tsv", "--topic-set", "x")
    huge = tmp_path / "v.tsv"
    huge.write_text("T1\tq\tw\t99999999999\n")
    with pytest.raises(CommandError, match=r"v\.tsv, line 1: count '99999999999' is too large"):
        run("import_variants", str(huge), "--format", "tsv", "--topic-set", "x", "--create-topics")
    assert not TopicSet.objects.exists()


def test_import_variants_normalisation_choices(tmp_path):
    """--normalise: punctuation (default) merges "What's the cost?" with "whats the cost";
    case keeps the apostrophe and question mark; none keeps each file text."""
    path = write(tmp_path, "v.tsv", "t1\tWhat's the COST?\nt1\twhats the cost\n"
                                    "t1\twhat's  the cost?\nt1\tWhat's the COST?\n")
    got = {}
    for mode in ("punctuation", "case", "none"):
        run("import_variants", path, "--format", "tsv", "--topic-set", mode, "--create-topics",
            "--normalise", mode)
        got[mode] = list(variant_list(mode).values_list("normalised", flat=True))
        assert list(variant_list(mode).values_list("raw", flat=True)) == [
            "What's the COST?", "whats the cost", "what's  the cost?", "What's the COST?"]
    assert got["punctuation"] == ["whats the cost"] * 4
    assert got["case"] == ["what's the cost?", "whats the cost", "what's the cost?",
                           "what's the cost?"]
    assert got["none"] == ["What's the COST?", "whats the cost", "what's  the cost?",
                           "What's the COST?"]
    assert [variant_stats(m)["unique_variants"] for m in got] == [1, 2, 3]
    with pytest.raises(CommandError, match="invalid choice: 'words'"):
        run("import_variants", path, "--format", "tsv", "--topic-set", "x", "--create-topics",
            "--normalise", "words")
    with pytest.raises(CommandError, match="spell correction works on normalised words"):
        run("import_variants", path, "--format", "tsv", "--topic-set", "x", "--create-topics",
            "--normalise", "none", "--spell-correct")
    assert normalise_query(" A\u00a0B ", "case") == "a b"  # NFKC: no-break space to space


@pytest.mark.parametrize("name", ["../etc", "a/b", "..", ".", "a\\b", "x\u202ey", "<b>x</b>",
                                  "two words"])
def test_a_new_topic_set_name_is_checked_as_the_pages_and_api_check_it(tmp_path, name):
    """The commands refused nothing that the web and the API refuse (bad-input.md says the
    rule holds everywhere): the import services check a name when they create a set."""
    topics = write(tmp_path, "t.tsv", "T1\tstatement\n")
    with pytest.raises(CommandError, match="topic set name"):
        run("import_topics", topics, "--topic-set", name, "--format", "tsv")
    variants = write(tmp_path, "v.tsv", "T1\tquery\n")
    with pytest.raises(CommandError, match="topic set name"):
        run("import_variants", variants, "--topic-set", name, "--format", "tsv",
            "--create-topics")
    assert not TopicSet.objects.exists()
    run("import_topics", topics, "--topic-set", "fine-name", "--format", "tsv")
    assert TopicSet.objects.get().name == "fine-name"
