"""Every export command with --manifest: verify_manifest reproduces the output (exit 0);
after the stored data (or an input file) changes it fails, naming the difference."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from judging.models import Label
from judging.services import judgments_import
from pooling.models import PoolTopic
from pooling.services import pool_build, pool_create
from retrieval.models import RunQuery
from retrieval.services import system_run_import
from tests.common.manifest_checks import fails as _fails, verify as _verify
from topics.models import QueryVariant, Topic, TopicSet

pytestmark = pytest.mark.django_db

RUN_A = "".join(f"{t} Q0 d{d} {r} {10 - r}.5 sysA\n"
                for t in ("1", "2") for r, d in enumerate((1, 2, 3, 4), 1))
RUN_B = "".join(f"{t} Q0 d{d} {r} {10 - r}.25 sysB\n"
                for t in ("1", "2") for r, d in enumerate((3, 5, 6), 1))


@pytest.fixture
def stored(tmp_path):
    ts = TopicSet.objects.create(name="m")
    for tid in ("1", "2"):
        t = Topic.objects.create(topic_set=ts, topic_id=tid, title=f"title {tid}")
        for w, raw in enumerate(("solar power", "solar energy cost"), 1):
            QueryVariant.objects.create(topic=t, raw=raw, normalised=raw, worker_id=f"w{w}",
                                        count=1, source=QueryVariant.SOURCE_IMPORT)
    for name, text in (("a.run", RUN_A), ("b.run", RUN_B)):
        (tmp_path / name).write_text(text)
        system_run_import(tmp_path / name, topic_set_name="m")
    pool = pool_create(topic_set_name="m", sources="systems", depth=3, name="p")
    pool_build(pool.id)
    (tmp_path / "j.qrels").write_text("1 0 d1 1\n1 0 d3 0\n2 0 d2 2\n")
    judgments_import(tmp_path / "j.qrels", format="adhoc", name="j", topic_set_name="m")
    return tmp_path


def _export(command, *args, out):
    call_command(command, *args, "--out", str(out), "--manifest", stdout=io.StringIO(),
                 stderr=io.StringIO())
    m = out.with_name(out.name + ".manifest.json")
    data = json.loads(m.read_text())
    assert data["command"] == command and data["output"]["path"] == str(out)
    assert data["environment"]["python"] and data["environment"]["project_version"]
    assert "OK" in _verify(m)
    return m


def test_export_variants(stored):
    m = _export("export_variants", "--topic-set", "m", "--format", "tsv", out=stored / "v.tsv")
    QueryVariant.objects.filter(raw="solar power").update(raw="wind power",
                                                          normalised="wind power")
    msg = _fails(m)
    assert "output sha256 differs" in msg and "first difference: line" in msg
    assert "wind power" in msg


def test_export_run(stored):
    m = _export("export_run", "--topic-set", "m", "--tag", "sysA", out=stored / "a.out")
    RunQuery.objects.filter(run__tag="sysA", topic__topic_id="2").delete()
    msg = _fails(m)
    assert "line 5: only the recorded output has it ('2 Q0 d1 1" in msg


def test_export_pool_and_pool_analysis(stored):
    m = _export("export_pool", "p", "--format", "txt", out=stored / "pool.txt")
    a = _export("pool_analysis", "sizes", "p", out=stored / "sizes.csv")
    assert json.loads(a.read_text())["argv"][:2] == ["sizes", "p"]
    PoolTopic.objects.filter(pool__name="p", topic_id="2").delete()
    assert "first difference: line" in _fails(m)
    msg = _fails(a)
    assert "line 3: '2,5' recorded, 'mean,5.0' now" in msg


def test_pool_analysis_growth_records_its_seed(stored):
    a = _export("pool_analysis", "growth", "--topic-set", "m", "--sources", "systems",
                "--depths", "1", "3", "--orders", "3", "--seed", "7", out=stored / "g.json")
    data = json.loads(a.read_text())
    assert data["seeds"] == {"seed": 7}
    assert data["parameters"]["depths"] == [1, 3]


def test_export_qrels(stored):
    m = _export("export_qrels", "--judgments", "j", "--format", "adhoc", out=stored / "j.out")
    Label.objects.filter(docid="d3").update(grade=1)
    msg = _fails(m)
    assert "line 2: '1 0 d3 0' recorded, '1 0 d3 1' now" in msg


def test_pseudo_qrels_names_a_changed_input(stored):
    (stored / "topics.tsv").write_text("1\tsolar\n")
    (stored / "subtopics.tsv").write_text("1\ta\tsolar cost\n")
    (stored / "pool.txt").write_text("1 d1\n1 d2\n")
    docs = stored / "docs.jsonl"
    docs.write_text('{"id": "d1", "contents": "cost cost"}\n{"id": "d2", "contents": "none"}\n')
    m = _export("pseudo_qrels", "--topics", str(stored / "topics.tsv"), "--subtopics",
                str(stored / "subtopics.tsv"), "--pool", str(stored / "pool.txt"),
                "--docs", str(docs), out=stored / "pseudo.qrels")
    assert str(docs) in json.loads(m.read_text())["inputs"]
    docs.write_text('{"id": "d1", "contents": "none"}\n{"id": "d2", "contents": "cost"}\n')
    msg = _fails(m)
    assert f"input {docs} changed" in msg and "output sha256 differs" in msg


def test_manifest_needs_a_file(stored):
    with pytest.raises(CommandError, match="--manifest needs an output file"):
        call_command("export_pool", "p", "--out", "-", "--manifest", stdout=io.StringIO())
    with pytest.raises(CommandError, match="--manifest needs an output file"):
        call_command("pool_analysis", "sizes", "p", "--manifest", stdout=io.StringIO())


def test_an_edited_output_file_is_named(stored):
    out = stored / "a.out"
    m = _export("export_run", "--topic-set", "m", "--tag", "sysA", out=out)
    out.write_text(out.read_text().replace("d1", "dX"))
    assert f"the output file {out} changed" in _fails(m)


def test_relative_paths_are_relative_to_where_the_export_ran(stored, monkeypatch):
    monkeypatch.chdir(stored)
    (stored / "t.tsv").write_text("1\tsolar\n")
    (stored / "s.tsv").write_text("1\ta\tsolar cost\n")
    (stored / "pl.txt").write_text("1 d1\n")
    (stored / "d.jsonl").write_text('{"id": "d1", "contents": "cost"}\n')
    call_command("pseudo_qrels", "--topics", "t.tsv", "--subtopics", "s.tsv", "--pool", "pl.txt",
                 "--docs", "d.jsonl", "--out", "rel.qrels", "--manifest",
                 stdout=io.StringIO(), stderr=io.StringIO())
    assert set(json.loads((stored / "rel.qrels.manifest.json").read_text())["inputs"]) == {
        "t.tsv", "s.tsv", "pl.txt", "d.jsonl"}
    monkeypatch.chdir(stored.parent)
    assert "OK" in _verify(stored / "rel.qrels.manifest.json")
