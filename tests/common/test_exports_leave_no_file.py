"""A failed export leaves no empty or partial output file, and an existing file intact
(export_variants, export_run, export_pool and pool_analysis write beside the target and
rename)."""
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from topics.models import TopicSet


def _fails_after_one(first):
    def gen(*args, **kwargs):
        yield first
        raise ValueError("lost the database half-way")
    return gen


def _assert_untouched(tmp_path, out, before):
    if before is None:
        assert not out.exists()
    else:
        assert out.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ([out.name] if before else [])


@pytest.mark.parametrize("before", [None, "previous export\n"])
@pytest.mark.django_db
def test_export_variants(tmp_path, monkeypatch, before):
    from topics import selectors as export_variants  # the command writes through it

    TopicSet.objects.create(name="s")
    out = tmp_path / "v.tsv"
    if before:
        out.write_text(before)

    def boom(*args, **kwargs):
        raise ValueError("lost the database half-way")

    monkeypatch.setattr(export_variants, "variant_list_by_topic", boom)
    with pytest.raises(Exception, match="half-way"):
        call_command("export_variants", "--topic-set", "s", "--format", "tsv", "--out", str(out),
                     stderr=StringIO())
    _assert_untouched(tmp_path, out, before)


@pytest.mark.parametrize("before", [None, "previous export\n"])
def test_export_run(tmp_path, monkeypatch, before):
    from retrieval.management.commands import export_run

    out = tmp_path / "run.txt"
    if before:
        out.write_text(before)
    monkeypatch.setattr(export_run, "run_find", lambda **kw: SimpleNamespace(id=1, tag="t"))
    monkeypatch.setattr(export_run, "run_rankings",
                        _fails_after_one(("1", ["d1", "d2"], [2.0, 1.0])))
    with pytest.raises(Exception, match="half-way"):
        call_command("export_run", "--topic-set", "s", "--tag", "t", "--out", str(out))
    _assert_untouched(tmp_path, out, before)


@pytest.mark.parametrize("fmt", ["txt", "csv", "trec"])
def test_export_pool(tmp_path, monkeypatch, fmt):
    from pooling import selectors

    out = tmp_path / f"pool.{fmt}"
    pool = SimpleNamespace(status="done", STATUS_DONE="done", label="p")
    doc = SimpleNamespace(topic_id="1", docid="d", weight=0.5, min_rank=1, users=2, systems=0,
                          rank=1)
    monkeypatch.setattr(selectors, "pool_get", lambda ref: pool)
    monkeypatch.setattr(selectors, "pool_documents", _fails_after_one(doc))
    with pytest.raises(Exception, match="half-way"):
        call_command("export_pool", "p", "--out", str(out), "--format", fmt, stderr=StringIO())
    _assert_untouched(tmp_path, out, None)
    monkeypatch.setattr(selectors, "pool_documents", lambda pool: iter([doc]))
    call_command("export_pool", "p", "--out", str(out), "--format", fmt, stderr=StringIO())
    assert out.read_text().count("\n") == (2 if fmt == "csv" else 1)


def test_export_to_an_over_long_name_is_a_message(tmp_path, monkeypatch):
    from django.core.management.base import CommandError

    from pooling import selectors

    pool = SimpleNamespace(status="done", STATUS_DONE="done", label="p")
    monkeypatch.setattr(selectors, "pool_get", lambda ref: pool)
    monkeypatch.setattr(selectors, "pool_documents", lambda pool: iter([]))
    with pytest.raises(CommandError, match="File name too long") as info:
        call_command("export_pool", "p", "--out", str(tmp_path / ("n" * 300)))
    assert len(str(info.value)) < 300
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_pool_analysis(tmp_path, monkeypatch, suffix):
    from judging.management.commands import pool_analysis

    monkeypatch.setattr(pool_analysis.Command, "_sizes",
                        lambda self, o: ({"sizes": {"1": 3}}, ["topic", "size"], [["1", 3]]))

    def half(obj, fh, **kwargs):
        fh.write('{"sizes": ')
        raise ValueError("lost the database half-way")

    class HalfWriter:
        def __init__(self, fh, fieldnames=None):
            self.fh = fh

        def writerow(self, row):
            self.fh.write("topic,size\n")

        def writerows(self, rows):
            raise ValueError("lost the database half-way")

    monkeypatch.setattr(pool_analysis.json, "dump", half)
    monkeypatch.setattr(pool_analysis, "spreadsheet_writer", HalfWriter)
    out = tmp_path / f"sizes{suffix}"
    with pytest.raises(Exception, match="half-way"):
        call_command("pool_analysis", "sizes", "p", "--out", str(out), stderr=StringIO())
    _assert_untouched(tmp_path, out, None)
