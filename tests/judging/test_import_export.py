"""import_judgments and export_qrels: NIST's Web 2011 qrels round trip byte for byte, the
TREC 2010 relevance-feedback crowd file, all-or-nothing imports, aggregation."""
from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from judging.models import JudgmentSet, Label

pytestmark = pytest.mark.django_db

WEB2011 = "trec-web-diversity/2011"
RF10 = "inter-assessor/trec-rf10-crowd/trec-rf10-data.txt"


def _export(tmp_path, name, fmt, *extra):
    out = tmp_path / f"{name}.{fmt}.txt"
    call_command("export_qrels", "--judgments", name, "--format", fmt, *extra, "--out", str(out))
    return out.read_bytes()


def test_web2011_round_trip_reproduces_nist_files_byte_for_byte(shared_data, tmp_path):
    d = shared_data / WEB2011
    call_command("import_judgments", str(d / "qrels.diversity.txt"), "--format", "diversity",
                 "--name", "web2011")
    assert Label.objects.filter(judgment_set__name="web2011").count() == 64868
    assert _export(tmp_path, "web2011", "diversity") == (d / "qrels.diversity.txt").read_bytes()
    assert _export(tmp_path, "web2011", "ndeval") == (d / "qrels-for-ndeval.txt").read_bytes()
    assert (_export(tmp_path, "web2011", "adhoc", "--adhoc-intent", "1")
            == (d / "qrels.adhoc.txt").read_bytes())


def test_adhoc_import_exports_as_adhoc(shared_data, tmp_path):
    src = shared_data / WEB2011 / "qrels.adhoc.txt"
    call_command("import_judgments", str(src), "--format", "adhoc", "--name", "adhoc")
    assert _export(tmp_path, "adhoc", "adhoc") == src.read_bytes()
    with pytest.raises(CommandError, match="no per-intent labels"):
        _export(tmp_path, "adhoc", "diversity")


def _rf10_expected(path):
    """Per (topic, doc): each worker's last label (a repeated line is a later revision)."""
    last: dict[tuple, dict[str, int]] = defaultdict(dict)
    lines = 0
    with open(path) as fh:
        next(fh)
        for line in fh:
            t, w, d, _gold, label = line.rstrip("\n").split("\t")
            last[(t, d)][w] = int(label)
            lines += 1
    return lines, last


@pytest.mark.slow
def test_rf10_crowd_file_imports_with_revisions_and_aggregates(shared_data, tmp_path):
    path = shared_data / RF10
    call_command("import_judgments", str(path), "--format", "trec-rf10", "--name", "rf10")
    lines, last = _rf10_expected(path)
    jset = JudgmentSet.objects.get(name="rf10")
    assert jset.labels_count == lines == 98453
    assert Label.objects.filter(judgment_set=jset, current=True).count() == sum(
        len(v) for v in last.values())
    assert len({a for v in last.values() for a in v}) == 766
    out = _export(tmp_path, "rf10", "adhoc", "--aggregate", "majority").decode().splitlines()
    assert len(out) == len(last) == 20232
    got = {(t, d): int(g) for t, _, d, g in (x.split() for x in out)}
    for key, by_worker in last.items():
        counts = Counter(by_worker.values())
        top = max(counts.values())
        assert got[key] == max(g for g, c in counts.items() if c == top)
    # Dawid-Skene through crowd-kit gives one label per pair, each a label some worker gave
    ds = _export(tmp_path, "rf10", "adhoc", "--aggregate", "dawid-skene").decode().splitlines()
    assert len(ds) == 20232
    assert {x.split()[3] for x in ds} <= {"-2", "0", "1", "2"}


def test_rf10_gold_column(shared_data, tmp_path):
    path = shared_data / RF10
    call_command("import_judgments", str(path), "--format", "trec-rf10-gold", "--name", "gold")
    jset = JudgmentSet.objects.get(name="gold")
    assert jset.labels_count == 3277 + 1183  # NIST gold 0/1/2 and broken links (-2)
    assert set(Label.objects.filter(judgment_set=jset).values_list("assessor", flat=True)) == {
        "nist"}


def test_tsv_header_intent_none_and_revisions(tmp_path):
    f = tmp_path / "labels.tsv"
    f.write_text("topic\tintent\tdocid\tassessor\tgrade\n"
                 "1\t0\td1\tann\t1\n1\t\td2\tann\t0\n1\t2\td1\tbob\t2\n1\t0\td1\tann\t0\n")
    call_command("import_judgments", str(f), "--format", "tsv", "--name", "t")
    rows = list(Label.objects.filter(judgment_set__name="t").order_by("id").values_list(
        "intent_id", "docid", "assessor", "grade", "revision", "current", "line"))
    assert rows == [("", "d1", "ann", 1, 1, False, 2), ("", "d2", "ann", 0, 1, True, 3),
                    ("2", "d1", "bob", 2, 1, True, 4), ("", "d1", "ann", 0, 2, True, 5)]
    assert _export(tmp_path, "t", "adhoc").decode() == "1 0 d2 0\n1 0 d1 0\n"  # by current label
    raw = _export(tmp_path, "t", "raw").decode().splitlines()
    assert raw[0].split("\t")[:5] == ["topic", "intent", "docid", "assessor", "grade"]
    assert len(raw) == 5


@pytest.mark.parametrize("text, message", [
    ("1 1 d1 1\n1 1 d2 x\n", "line 2: grade 'x' is not a whole number"),
    ("1 1 d1 1\n1 1 d1 0\n",
     "line 2: topic 1 subtopic 1 document d1 judged twice (first on line 1)"),
    ("1 1 d1\n", "line 1: expected 4 fields"),
    ("1 0 d1 1\n", "line 1: a diversity qrels line needs a subtopic"),
    ("1 1 d\u200b1 1\n", "line 1: docid"),
])
def test_bad_lines_name_the_line_and_store_nothing(tmp_path, text, message):
    f = tmp_path / "q.txt"
    f.write_text(text)
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("import_judgments", str(f), "--format", "diversity", "--name", "bad")
    assert not JudgmentSet.objects.exists() and not Label.objects.exists()


def test_topic_set_check_and_duplicate_name(tmp_path):
    from topics.models import Intent, Topic, TopicSet

    ts = TopicSet.objects.create(name="ts")
    topic = Topic.objects.create(topic_set=ts, topic_id="1")
    Intent.objects.create(topic=topic, intent_id="1")
    f = tmp_path / "q.txt"
    f.write_text("1 1 d1 1\n1 2 d1 0\n")
    with pytest.raises(CommandError, match="line 2: topic '1' of topic set 'ts' has no intent '2'"):
        call_command("import_judgments", str(f), "--format", "diversity", "--name", "x",
                     "--topic-set", "ts")
    f.write_text("1 1 d1 1\n2 1 d1 0\n")
    with pytest.raises(CommandError, match="line 2: topic '2' is not in topic set 'ts'"):
        call_command("import_judgments", str(f), "--format", "diversity", "--name", "x",
                     "--topic-set", "ts")
    f.write_text("1 1 d1 1\n")
    call_command("import_judgments", str(f), "--format", "diversity", "--name", "x",
                 "--topic-set", "ts")
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_judgments", str(f), "--format", "diversity", "--name", "x")


def test_import_stores_labels_in_a_few_statements_not_one_per_batch_of_rows(
        tmp_path, django_assert_max_num_queries):
    """12,000 labels in at most ten queries on either database (the name check, finding
    the topic set and whether several hold the topics, the set, the labels, and the
    savepoint around them): PostgreSQL copies the labels, SQLite
    runs one prepared INSERT per 5,000. It inserted them 58 at a time through
    ``bulk_create`` (999 parameters a statement, each value compiled by the ORM: 207
    statements here, most of an import's time)."""
    f = tmp_path / "labels.tsv"
    f.write_text("".join(f"t{i % 7}\t{i % 3}\td{i // 2}\ta{i % 2}\t{i % 4}\n"
                         for i in range(12_000)) + "t0\t0\td0\ta0\t3\n")
    before = timezone.now()
    with django_assert_max_num_queries(10):
        call_command("import_judgments", str(f), "--format", "tsv", "--name", "many")
    jset = JudgmentSet.objects.get(name="many")
    labels = Label.objects.filter(judgment_set=jset).order_by("line")
    assert labels.count() == jset.labels_count == 12_001
    created = set(labels.values_list("created", flat=True))
    assert len(created) == 1 and before <= created.pop() <= timezone.now()
    assert list(labels.values_list("topic_id", "intent_id", "docid", "assessor", "grade",
                                   "revision", "current", "line")[:3]) == [
        ("t0", "", "d0", "a0", 0, 1, False, 1), ("t1", "1", "d0", "a1", 1, 1, True, 2),
        ("t2", "2", "d1", "a0", 2, 1, True, 3)]
    last = labels.last()
    assert (last.docid, last.grade, last.revision, last.current, last.line) == (
        "d0", 3, 2, True, 12_001)
