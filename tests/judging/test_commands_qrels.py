"""import_qrels and qrels_stats on the TREC Web 2011 qrels, with expectations computed here
in plain Python from the file itself."""
from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.models import JudgmentSet, Label


def expected_stats(path) -> dict:
    topics, intents, judged, relevant = set(), defaultdict(set), defaultdict(set), defaultdict(set)
    nonjunk = defaultdict(set)
    grades = Counter()
    for line in open(path):
        if not line.strip():
            continue
        t, intent, d, rel = line.split()
        rel = int(rel)
        topics.add(t)
        grades[rel] += 1
        judged[t].add(d)  # junk (rel < 0) is judged: one definition, see pooling.coverage
        if rel >= 0:
            nonjunk[t].add(d)
        if rel > 0:
            relevant[t].add(d)
            intents[t].add(intent)
    n = len(topics)
    return {
        "topics": n,
        "intents_per_topic": sum(len(intents[t]) for t in topics) / n,
        "judged_per_topic": sum(len(judged[t]) for t in topics) / n,
        "judged_nonjunk_per_topic": sum(len(nonjunk[t]) for t in topics) / n,
        "relevant_per_topic": sum(len(relevant[t]) for t in topics) / n,
        "grades": {str(g): grades[g] for g in sorted(grades)},
    }


def stats_json(name: str) -> dict:
    out = StringIO()
    call_command("qrels_stats", "--name", name, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_web2011_diversity_qrels_import_and_stats(shared_data):
    path = shared_data / "trec-web-diversity" / "2011" / "qrels.diversity.txt"
    out = StringIO()
    call_command("import_qrels", str(path), "--format", "diversity", "--name", "web11-div",
                 stdout=out)
    lines = [ln for ln in open(path) if ln.strip()]
    assert f"imported {len(lines)} judgments" in out.getvalue()
    qrels = JudgmentSet.objects.get(name="web11-div")
    assert qrels.labels_count == len(lines) == Label.objects.count()
    assert len(qrels.checksum) == 64
    first = lines[0].split()
    j = Label.objects.order_by("id").first()
    assert [j.topic_id, j.intent_id, j.docid, j.grade] == first[:3] + [int(first[3])]

    got = stats_json("web11-div")
    want = expected_stats(path)
    assert got["topics"] == want["topics"] == 50
    assert got["grades"] == want["grades"]
    assert "-2" in got["grades"]  # junk judgments are kept and counted
    for key in ("intents_per_topic", "judged_per_topic", "judged_nonjunk_per_topic",
                "relevant_per_topic"):
        assert got[key] == pytest.approx(want[key]), key


@pytest.mark.django_db
def test_web2011_adhoc_qrels_stats(shared_data):
    path = shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"
    call_command("import_qrels", str(path), "--format", "adhoc", "--name", "web11",
                 stdout=StringIO())
    got = stats_json("web11")
    want = expected_stats(path)
    # ad hoc: every topic with a relevant document has exactly one "intent" (iteration 0)
    assert got == {**want, "intents_per_topic": pytest.approx(want["intents_per_topic"]),
                   "judged_per_topic": pytest.approx(want["judged_per_topic"]),
                   "judged_nonjunk_per_topic": pytest.approx(want["judged_nonjunk_per_topic"]),
                   "relevant_per_topic": pytest.approx(want["relevant_per_topic"])}


@pytest.mark.django_db
def test_malformed_qrels_name_file_and_line_and_import_nothing(tmp_path):
    good = "".join(f"7 0 doc-{i} {i % 3}\n" for i in range(6000))  # more than one batch
    bad = tmp_path / "bad.qrels"
    bad.write_text(good + "\n# a comment\n7 0 doc-x relevant\n")
    with pytest.raises(CommandError,
                       match=rf"{bad}, line 6003: relevance 'relevant' is not a whole"):
        call_command("import_qrels", str(bad), "--format", "adhoc", "--name", "bad")
    short = tmp_path / "short.qrels"
    short.write_text("7 1 doc-a 1\n7 doc-b 1\n")
    with pytest.raises(CommandError, match=rf"{short}, line 2: expected 4 fields, got 3"):
        call_command("import_qrels", str(short), "--format", "diversity", "--name", "short")
    assert JudgmentSet.objects.count() == 0 and Label.objects.count() == 0


@pytest.mark.django_db
def test_import_qrels_refuses_duplicate_names_and_missing_files(tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("1 0 d1 1\n")
    call_command("import_qrels", str(f), "--format", "adhoc", "--name", "q", stdout=StringIO())
    with pytest.raises(CommandError, match="already exist"):
        call_command("import_qrels", str(f), "--format", "adhoc", "--name", "q")
    with pytest.raises(CommandError, match="no such qrels file"):
        call_command("import_qrels", str(tmp_path / "nope"), "--format", "adhoc", "--name", "x")
    with pytest.raises(CommandError, match="no qrels named"):
        call_command("qrels_stats", "--name", "nope", "--json")
    assert JudgmentSet.objects.get().labels_count == 1


def _import(*args, **kwargs) -> str:
    out = StringIO()
    call_command("import_qrels", *map(str, args), stdout=out, **kwargs)
    return out.getvalue()


@pytest.mark.django_db
def test_cacm_smart_qrels_are_refused_and_trec_ones_map_to_query_ids(shared_data, tmp_path):
    cacm = shared_data / "small-corpora" / "cacm"
    with pytest.raises(CommandError, match=r"qrels\.text, line 1: .*looks like SMART qrels"):
        _import(cacm / "qrels.text", "--format", "adhoc", "--name", "cacm")
    assert not JudgmentSet.objects.exists() and not Label.objects.exists()

    call_command("import_topics", str(cacm / "query.text"), "--format", "smart",
                 "--topic-set", "cacm", stdout=StringIO())
    with pytest.raises(CommandError) as info:
        _import(cacm / "cacm.qrels", "--format", "adhoc", "--name", "cacm", "--topic-set", "cacm")
    message = str(info.value)
    assert "9 topic(s) not in topic set 'cacm': 01 (line 1), 02 (line 6)," in message
    assert "--id-map strip-zeros" in message
    assert not JudgmentSet.objects.exists()

    out = _import(cacm / "cacm.qrels", "--format", "adhoc", "--name", "cacm", "--topic-set",
                  "cacm", "--id-map", "strip-zeros")
    assert "imported 796 judgments" in out
    topics = set(Label.objects.values_list("topic_id", flat=True))
    assert len(topics) == 52 and "1" in topics and "01" not in topics


@pytest.mark.django_db
def test_second_grade_is_refused_naming_both_lines(tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("1 0 a 1\n1 0 b 0\n1 0 a 0\n")
    with pytest.raises(CommandError, match=r"q\.txt, line 3: second grade \(0\) for topic '1', "
                       r"document 'a', already graded 1 on line 1"):
        _import(f, "--format", "adhoc", "--name", "q")
    assert not JudgmentSet.objects.exists()


@pytest.mark.django_db
def test_unknown_topic_set_is_an_error(tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("1 0 a 1\n")
    with pytest.raises(CommandError, match="nope"):
        _import(f, "--format", "adhoc", "--name", "q", "--topic-set", "nope")


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["", "a/b", "..", ".", "has space", "x" * 101, "bidi\u202e"])
def test_names_that_break_pages_are_refused(tmp_path, name):
    f = tmp_path / "q.txt"
    f.write_text("1 0 a 1\n")
    with pytest.raises(CommandError, match="qrels name"):
        _import(f, "--format", "adhoc", "--name", name)
    assert not JudgmentSet.objects.exists()


@pytest.mark.django_db
def test_bad_files_are_errors_with_file_and_line_not_tracebacks(tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("t\u00e9 0 a 1\n".encode("latin-1"))
    with pytest.raises(CommandError, match=r"latin\.txt, line 1: not valid utf-8"):
        _import(latin, "--format", "adhoc", "--name", "l")
    _import(latin, "--format", "adhoc", "--name", "l", "--encoding", "latin-1")
    assert Label.objects.get().topic_id == "t\u00e9"

    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(gzip.compress(b"".join(b"1 0 d%d 1\n" % i for i in range(20000)))[:3000])
    with pytest.raises(CommandError, match=r"cut\.txt\.gz, line \d+: truncated or corrupt"):
        _import(cut, "--format", "adhoc", "--name", "cut")
    fake = tmp_path / "fake.gz"
    fake.write_text("1 0 a 1\n")
    with pytest.raises(CommandError, match="not gzip data"):
        _import(fake, "--format", "adhoc", "--name", "fake")
    with pytest.raises(CommandError, match="File name too long"):
        _import(tmp_path / ("q" * 300), "--format", "adhoc", "--name", "long")
    big = tmp_path / "big.txt"
    big.write_text("1 0 a 4294967296\n")
    with pytest.raises(CommandError,
                       match=r"big\.txt, line 1: relevance '4294967296' is too large"):
        _import(big, "--format", "adhoc", "--name", "big")
    assert JudgmentSet.objects.count() == 1


@pytest.mark.django_db
def test_import_smart_and_cranqrel_files(shared_data):
    small = shared_data / "small-corpora"
    call_command("import_qrels", str(small / "cacm" / "qrels.text"), "--format", "smart",
                 "--id-map", "strip-zeros", "--name", "cacm-smart", stdout=StringIO())
    q = JudgmentSet.objects.get(name="cacm-smart")
    lines = [ln for ln in open(small / "cacm" / "cacm.qrels") if ln.strip()]
    assert q.format == "adhoc" and q.labels_count == len(lines)
    call_command("import_qrels", str(small / "cranfield" / "cranqrel"), "--format", "cranqrel",
                 "--name", "cran", stdout=StringIO())
    cran = JudgmentSet.objects.get(name="cran")
    assert cran.format == "adhoc" and cran.labels_count == 1837
    assert set(Label.objects.filter(judgment_set=cran).values_list("grade", flat=True)) == {
        0, 1, 2, 3, 4}
    with pytest.raises(CommandError, match="--format smart"):
        call_command("import_qrels", str(small / "cacm" / "qrels.text"), "--format", "adhoc",
                     "--name", "x", stdout=StringIO())


@pytest.mark.django_db
def test_qrels_are_a_judgment_set_of_the_topic_set_given_or_found(tmp_path):
    from topics.services import topics_import
    from topics.topicfiles import TopicRecord

    topics_import("a", [TopicRecord("1", title="x"), TopicRecord("2", title="y")])
    topics_import("b", [TopicRecord("1", title="x")])
    f = tmp_path / "q.txt"
    f.write_text("1 0 d1 1\n2 0 d2 0\n")
    _import(f, "--format", "adhoc", "--name", "found")
    one = tmp_path / "one.txt"
    one.write_text("1 0 d1 1\n")
    _import(one, "--format", "adhoc", "--name", "either")  # both sets hold topic 1
    _import(one, "--format", "adhoc", "--name", "named", "--topic-set", "b")
    sets = {js.name: js for js in JudgmentSet.objects.select_related("topic_set")}
    assert sets["found"].topic_set.name == "a" and sets["either"].topic_set is None
    assert sets["named"].topic_set.name == "b"
    assert (sets["found"].source, sets["found"].format) == ("import", "adhoc")
    assert list(Label.objects.filter(judgment_set=sets["found"]).order_by("line").values_list(
        "topic_id", "intent_id", "docid", "assessor", "grade", "line")) == [
        ("1", "", "d1", "qrels", 1, 1), ("2", "", "d2", "qrels", 0, 2)]



@pytest.mark.django_db
def test_qrels_that_several_topic_sets_hold_are_imported_with_a_warning(tmp_path):
    """When several topic sets hold every topic the qrels get none (and appear on no
    project's menu): the import still works, and says so, naming the candidates and
    --topic-set; a set found or named is imported without a warning."""
    from topics.services import topics_import
    from topics.topicfiles import TopicRecord

    topics_import("a", [TopicRecord("1", title="x"), TopicRecord("2", title="y")])
    topics_import("b", [TopicRecord("1", title="x")])
    topics_import("c", [TopicRecord("3", title="z")])
    one = tmp_path / "one.txt"
    one.write_text("1 0 d1 1\n1 0 d2 0\n")

    def run(*args):
        out, err = StringIO(), StringIO()
        call_command("import_qrels", str(one), "--format", "adhoc", *args, stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()

    out, err = run("--name", "either")
    assert "imported 2 judgments as qrels 'either'" in out
    assert JudgmentSet.objects.get(name="either").topic_set is None
    assert "qrels 'either' has no topic set: topic sets 'a', 'b' each hold" in err
    assert "Pass --topic-set NAME" in err and "'c'" not in err
    assert run("--name", "named", "--topic-set", "b")[1] == ""
    both = tmp_path / "both.txt"
    both.write_text("1 0 d1 1\n2 0 d2 0\n")  # only "a" holds topic 2
    err = StringIO()
    call_command("import_qrels", str(both), "--format", "adhoc", "--name", "found",
                 stdout=StringIO(), stderr=err)
    assert err.getvalue() == "" and JudgmentSet.objects.get(name="found").topic_set.name == "a"
    nowhere = tmp_path / "nowhere.txt"
    nowhere.write_text("9 0 d1 1\n")  # no topic set holds topic 9: nothing to choose from
    err = StringIO()
    call_command("import_qrels", str(nowhere), "--format", "adhoc", "--name", "nowhere",
                 stdout=StringIO(), stderr=err)
    assert err.getvalue() == ""

@pytest.mark.django_db
def test_judgments_get_the_one_topic_set_that_holds_their_topics_or_a_warning(tmp_path):
    """import_judgments chooses its topic set as import_qrels does: the only topic set
    holding every topic; when several do, none, and the command says which and what to do."""
    from topics.services import topics_import
    from topics.topicfiles import TopicRecord

    topics_import("a", [TopicRecord("1", title="x"), TopicRecord("2", title="y")])
    topics_import("b", [TopicRecord("1", title="x")])
    labels = tmp_path / "labels.tsv"

    def run(text, name, *args):
        labels.write_text(text)
        err = StringIO()
        call_command("import_judgments", str(labels), "--format", "tsv", "--name", name, *args,
                     stdout=StringIO(), stderr=err)
        return JudgmentSet.objects.get(name=name).topic_set, err.getvalue()

    topic_set, err = run("1 0 d1 w1 1\n2 0 d2 w1 0\n", "found")  # only "a" holds topic 2
    assert topic_set.name == "a" and err == ""
    topic_set, err = run("1 0 d1 w1 1\n", "either")
    assert topic_set is None
    assert "judgment set 'either' has no topic set: topic sets 'a', 'b' each hold" in err
    assert "Pass --topic-set NAME" in err
    topic_set, err = run("1 0 d1 w1 1\n", "named", "--topic-set", "b")
    assert topic_set.name == "b" and err == ""
    topic_set, err = run("9 0 d1 w1 1\n", "nowhere")  # no topic set holds topic 9
    assert topic_set is None and err == ""
