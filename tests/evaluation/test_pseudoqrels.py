"""Pseudo-qrels from subtopic strings (Sakai, Dou & Clarke 2013) by hand."""
from __future__ import annotations

import json
import math
from io import StringIO

import pytest

from evaluation import pseudoqrels


def test_level_is_floor_ln_plus_one():
    assert [pseudoqrels.level(c) for c in (0, 1, 2, 3, 7, 8, 20, 21)] == [0, 1, 1, 2, 2, 3, 3, 4]
    for c in range(1, 200):
        assert pseudoqrels.level(c) == max(0, math.floor(math.log(c) + 1))


def test_reduced_subtopic_and_matches():
    assert pseudoqrels.reduced_subtopic("Harry Potter", "harry potter movies") == "movies"
    assert pseudoqrels.reduced_subtopic("harry potter", "cast of Harry-Potter films") == "cast of films"
    assert pseudoqrels.reduced_subtopic("potter", "pottery classes") == "pottery classes"  # whole words
    assert pseudoqrels.reduced_subtopic("jaguar", "Jaguar") == ""
    text = "Movies! The movies, moviesque and MOVIES."
    assert pseudoqrels.match_count("movies", text) == 3
    assert pseudoqrels.match_count("cast of films", "the cast of films and cast of  films") == 2


def test_pseudo_qrels_and_truncation():
    topics = {"1": "jaguar", "2": "apple"}
    subs = {"1": {"a": "jaguar car", "b": "jaguar animal", "c": "jaguar"}}
    docs = {"d1": "car car car jaguar", "d2": "animal", "d3": "nothing here"}
    qrels, notes = pseudoqrels.pseudo_qrels(topics, subs, {"1": ["d1", "d2", "d3", "d1"]}, docs.__getitem__)
    got = {(q.intent, q.docid): q.level for q in qrels}
    assert got == {("a", "d1"): 2, ("b", "d1"): 0, ("c", "d1"): 0,
                   ("a", "d2"): 0, ("b", "d2"): 1, ("c", "d2"): 0,
                   ("a", "d3"): 0, ("b", "d3"): 0, ("c", "d3"): 0}
    assert len(notes) == 1 and "intent c" in notes[0]
    keep = pseudoqrels.truncate_intents({"1": {"a": 0.2, "b": 0.5, "c": 0.2}, "2": {"x": 1.0}}, {"1": 2})
    assert keep == {"1": ["a", "b"]}  # b, then a before c on the tie


def test_pseudo_qrels_command(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    (tmp_path / "topics.tsv").write_text("1\tjaguar\n")
    (tmp_path / "subs.tsv").write_text("1\t1\tjaguar car\n1\t2\tjaguar animal\n1\t3\tjaguar speed\n")
    (tmp_path / "pool.txt").write_text("1 d1 0.5 1 2 0\n1 d2 0.25 2 1 0\n")
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "d1", "contents": "car car car"}) + "\n"
                                         + json.dumps({"id": "d2", "title": "Animal", "text": "speed"}) + "\n")
    (tmp_path / "probs.tsv").write_text("1 1 0.5\n1 2 0.3\n1 3 0.2\n")
    (tmp_path / "other.qrels").write_text("1 x d1 1\n1 y d2 2\n1 z d2 0\n")
    out_path = tmp_path / "pseudo.qrels"
    args = ["--topics", str(tmp_path / "topics.tsv"), "--subtopics", str(tmp_path / "subs.tsv"),
            "--pool", str(tmp_path / "pool.txt"), "--docs", str(tmp_path / "docs.jsonl"), "--out", str(out_path)]
    out = StringIO()
    call_command("pseudo_qrels", *args, stdout=out)
    lines = out_path.read_text().splitlines()
    assert lines == ["1 1 d1 2", "1 2 d1 0", "1 3 d1 0", "1 1 d2 0", "1 2 d2 1", "1 3 d2 1"]
    assert "wrote 6 pseudo-judgments (3 with a level above 0)" in out.getvalue()
    # truncated: the other set has 2 intents with a relevant document → keep intents 1 and 2
    call_command("pseudo_qrels", *args, "--probabilities", str(tmp_path / "probs.tsv"),
                 "--match-intents", str(tmp_path / "other.qrels"), stdout=StringIO())
    assert {ln.split()[1] for ln in out_path.read_text().splitlines()} == {"1", "2"}
    (tmp_path / "subs.tsv").write_text("1\t1\n")
    with pytest.raises(CommandError, match=r"subs.tsv, line 1: expected 3 tab-separated fields"):
        call_command("pseudo_qrels", *args, stdout=StringIO())


@pytest.mark.django_db
def test_pseudo_qrels_from_a_stored_pool(tmp_path, pages_index):
    """--stored-pool reads the pool's documents, the collection's stored text and the
    topic set's titles and intents, gives what the file route gives on the same texts, and
    --store keeps the result as a judgment set that evaluate reads."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from judging.doctext import document_text
    from judging.models import JudgmentSet
    from pooling.selectors import pool_docids_by_topic
    from retrieval.models import Collection
    from retrieval.selectors import document_raw
    from tests.judging.conftest import make_pool
    from topics.models import Intent

    pool = make_pool(tmp_path, docs=4)
    for t in ("1", "2"):
        Intent.objects.filter(topic__topic_id=t, intent_id="1").update(description=f"topic {t} page 3")
        Intent.objects.filter(topic__topic_id=t, intent_id="2").update(description=f"topic {t} heading 2")
    collection, _ = Collection.objects.get_or_create(name="pages", defaults={
        "format": "jsonl", "source_path": "pages.jsonl", "index_path": str(pages_index),
        "doc_count": 12, "status": "ready"})
    stored = tmp_path / "stored.qrels"
    out = StringIO()
    call_command("pseudo_qrels", "--stored-pool", "p", "--collection", "pages", "--out",
                 str(stored), "--store", "pseudo", stdout=out)
    assert "as judgment set pseudo" in out.getvalue()
    # the same through files: the pool's documents, their stored text, titles and intents
    docs = pool_docids_by_topic(pool)
    (tmp_path / "pool.txt").write_text("".join(f"{t} {d}\n" for t, ds in docs.items() for d in ds))
    with open(tmp_path / "docs.jsonl", "w") as fh:
        for d in sorted({d for ds in docs.values() for d in ds}):
            text = document_text(document_raw(collection, d))
            fh.write(json.dumps({"id": d, "contents": " ".join([text.title, *text.paragraphs])}) + "\n")
    (tmp_path / "topics.tsv").write_text("1\ttopic 1\n2\ttopic 2\n")
    (tmp_path / "subs.tsv").write_text("".join(f"{t}\t1\ttopic {t} page 3\n{t}\t2\ttopic {t} heading 2\n"
                                               for t in ("1", "2")))
    files = tmp_path / "files.qrels"
    call_command("pseudo_qrels", "--topics", str(tmp_path / "topics.tsv"), "--subtopics",
                 str(tmp_path / "subs.tsv"), "--pool", str(tmp_path / "pool.txt"), "--docs",
                 str(tmp_path / "docs.jsonl"), "--out", str(files), stdout=StringIO())
    assert stored.read_text() == files.read_text()
    levels = {tuple(line.split()[:3]): int(line.split()[3]) for line in stored.read_text().splitlines()}
    assert levels[("1", "1", "t1d3")] >= 1 and levels[("1", "2", "t1d2")] >= 1
    assert levels[("1", "1", "t1d1")] == 0
    jset = JudgmentSet.objects.get(name="pseudo")
    assert jset.labels.count() == len(levels)
    ev = StringIO()
    call_command("evaluate", "--topic-set", "ts", "--tag", "r1", "--judgments", "pseudo",
                 "--qrels-format", "diversity", "--measures", "alpha_nDCG@4", "--json", stdout=ev)
    assert json.loads(ev.getvalue())["runs"]["r1"]["mean"]["alpha_nDCG@4"] > 0
    with pytest.raises(CommandError, match="pool p has no collection"):
        call_command("pseudo_qrels", "--stored-pool", "p", "--out", str(stored))
    with pytest.raises(CommandError, match="give --out FILE, --store NAME or both"):
        call_command("pseudo_qrels", "--stored-pool", "p", "--collection", "pages")
    with pytest.raises(CommandError, match="--topics is needed"):
        call_command("pseudo_qrels", "--out", str(stored))
