"""Hostile releases cost nothing: an archive is streamed (the manifest first, then only
the files it lists, each hashed while written, with caps on entries and sizes named in
the error), a folder is read without following links, release.json and the run files are
read as untrusted input, and a refusal leaves the database and the disk as they were.

Each bundle below is built by hand, most of them from a good release with one thing
changed; how little was read before a refusal is shown by what was written and by the
memory traced, not by a clock."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from projects import release
from projects.release import Limits, ReleaseError
from retrieval.models import Run
from topics.models import TopicSet

MiB = 1 << 20
TOP = "hostile"


@pytest.fixture(autouse=True)
def _work_folder(tmp_path, monkeypatch):
    """The import unpacks into a temporary folder: here, one that must be empty again
    after every test, refused or not."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    yield
    assert list(work.iterdir()) == []


def _records() -> dict:
    run = {"name": "sys", "kind": "system", "source": "system", "tag": "sys", "depth": 2,
           "collection": "", "model": "",
           "queries": [{"qid": "1", "topic_id": "1", "label": "sys", "query_text": "",
                        "weight": 1.0, "users": [], "note": "", "ranked": True,
                        "empty_reason": ""}],
           "rankings": lambda: iter([("1", ["d1", "d2"], [2.0, 1.0])])}
    return {"topic_set": TOP, "topics": [{"topic_id": "1", "title": "x", "description": "",
                                          "narrative": "", "kind": "", "statements": ["s"],
                                          "intents": []}],
            "variants": [], "studies": [], "collections": [], "models": [], "runs": [run],
            "pools": [], "judgment_sets": []}


def _files(tmp_path: Path) -> dict[str, bytes]:
    """The files of a good release, by path under the top folder (manifest included)."""
    folder = release.write_release(_records(), tmp_path / "good", licence="CC0-1.0")
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _manifest(files: dict[str, bytes]) -> bytes:
    return "".join(f"{hashlib.sha256(files[p]).hexdigest()}  {p}\n"
                   for p in sorted(files) if p != release.MANIFEST).encode()


def _entry(name: str, data: bytes | None = None, **fields) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    if data is None:
        info.type = tarfile.DIRTYPE
    else:
        info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data or b""


def _pack(path: Path, entries) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def _entries(files: dict[str, bytes], *, manifest_first: bool = True):
    """A top folder, then the manifest, then the other files."""
    out = [_entry(TOP)]
    names = sorted(files, key=lambda p: (p != release.MANIFEST, p)) if manifest_first \
        else sorted(files)
    out += [_entry(f"{TOP}/{p}", files[p]) for p in names]
    return out


def _stored() -> tuple[int, int]:
    return TopicSet.objects.count(), Run.objects.count()


def _refused(path: Path, match: str) -> str:
    """The command refuses ``path``, naming it; nothing is stored."""
    with pytest.raises(CommandError, match=match) as info:
        call_command("import_collection_bundle", str(path), stdout=io.StringIO())
    assert str(path) in str(info.value)
    assert _stored() == (0, 0)
    return str(info.value)


# --- a good release, and its digest ---------------------------------------------------------


@pytest.mark.django_db
def test_a_good_release_loads_and_its_published_digest_is_checked(tmp_path):
    files = _files(tmp_path)
    good = _pack(tmp_path / "good.tar.gz", _entries(files))
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    (tmp_path / "good.tar.gz.sha256").write_text(f"{digest}  good.tar.gz\n")
    with pytest.raises(CommandError, match=r"good\.tar\.gz: SHA-256 [0-9a-f]{64}, not the "
                                           r"published 0{64}"):
        call_command("import_collection_bundle", str(good), "--sha256", "0" * 64)
    assert _stored() == (0, 0)
    call_command("import_collection_bundle", str(good), "--sha256",
                 str(tmp_path / "good.tar.gz.sha256"), stdout=io.StringIO())
    assert _stored() == (1, 1)
    run = Run.objects.get()
    assert (run.tag, run.total) == ("sys", 1)


def test_export_prints_the_digest_to_publish(tmp_path, db):
    from topics.services import topics_import
    from topics.topicfiles import TopicRecord

    topics_import("pub", [TopicRecord(topic_id="1", title="x", statements=("s",))])
    out = io.StringIO()
    archive = tmp_path / "pub.tar.gz"
    call_command("export_collection", "--topic-set", "pub", "--out", str(archive),
                 "--licence", "CC0-1.0", stdout=out)
    assert f"SHA-256 {hashlib.sha256(archive.read_bytes()).hexdigest()}" in out.getvalue()


# --- archives -------------------------------------------------------------------------------


def _zeros_member(name: str, size: int, files: dict[str, bytes]) -> bytes:
    """A .tar.gz whose manifest lists ``name`` and whose ``name`` is ``size`` zero bytes,
    written as repeated gzip members (a few kB per GiB) without ever holding them."""
    def padded(data: bytes) -> bytes:
        return data + b"\0" * (-len(data) % 512)

    manifest = _manifest(dict(files, **{name: b""}))
    top, listed = _entry(TOP)[0], _entry(f"{TOP}/{release.MANIFEST}", manifest)[0]
    big = tarfile.TarInfo(f"{TOP}/{name}")
    big.size = size
    head = b"".join(i.tobuf(tarfile.PAX_FORMAT) for i in (top, listed)) + padded(manifest) + \
        big.tobuf(tarfile.PAX_FORMAT)
    mib = gzip.compress(b"\0" * MiB, compresslevel=9)
    return gzip.compress(head) + mib * (size // MiB) + gzip.compress(b"\0" * 1024)


@pytest.mark.django_db
def test_a_3_gib_member_is_refused_from_its_header(tmp_path):
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(_zeros_member("big.txt", 3 << 30, _files(tmp_path)))
    assert bomb.stat().st_size < 12 * MiB
    message = _refused(bomb, r"big\.txt is 3221225472 bytes \(at most 1073741824: "
                             r"RELEASE_MAX_MEMBER_BYTES\)")
    assert "bomb.tar.gz" in message


def test_a_bomb_under_the_member_cap_is_refused_by_its_ratio_in_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(_zeros_member("big.txt", 900 * MiB, _files(tmp_path)))
    into = tmp_path / "into"
    into.mkdir()
    tracemalloc.start()
    try:
        with pytest.raises(ReleaseError, match=r"bomb\.tar\.gz: the archive expands more than "
                                               r"100 times .*MAX_EXPANSION_RATIO"):
            release.unpack_archive(bomb, into)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    written = sum(p.stat().st_size for p in into.rglob("*") if p.is_file())
    assert written < 32 * MiB  # stopped in the first mebibytes of the 900
    assert peak < 16 * MiB


def test_a_large_member_is_hashed_while_written_in_bounded_memory(tmp_path):
    """A listed member whose digest is wrong is streamed to disk and refused at its end:
    never held whole (it was read whole to hash it, 3.37 GB for a 3 GiB member)."""
    files = _files(tmp_path)
    data = os.urandom(MiB) * 32  # 32 MiB, listed with the digest of other bytes
    listed = dict(files, **{"big.bin": b"other"})
    entries = [_entry(TOP), _entry(f"{TOP}/{release.MANIFEST}", _manifest(listed)),
               _entry(f"{TOP}/big.bin", data)]
    archive = _pack(tmp_path / "tampered.tar.gz", entries)
    into = tmp_path / "into"
    into.mkdir()
    tracemalloc.start()
    try:
        with pytest.raises(ReleaseError, match=r"tampered\.tar\.gz: hostile/big\.bin: SHA-256 "
                                               r"differs from MANIFEST\.sha256 line \d+"):
            release.unpack_archive(archive, into, Limits(ratio=10**6))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * MiB


@pytest.mark.django_db
def test_too_many_members(tmp_path, settings):
    settings.RELEASE_MAX_MEMBERS = 20
    files = _files(tmp_path)
    extra = {f"extra/{n}.txt": b"x" for n in range(30)}
    listed = dict(files, **extra)
    listed[release.MANIFEST] = _manifest(listed)
    _refused(_pack(tmp_path / "many.tar.gz", _entries(listed)),
             r"many\.tar\.gz: more than 20 entries \(RELEASE_MAX_MEMBERS\)")


@pytest.mark.django_db
def test_the_total_is_capped(tmp_path, settings):
    settings.RELEASE_MAX_BYTES = 64 << 10
    files = _files(tmp_path)
    listed = dict(files, **{f"part{n}.bin": os.urandom(20 << 10) for n in range(5)})
    listed[release.MANIFEST] = _manifest(listed)
    _refused(_pack(tmp_path / "total.tar.gz", _entries(listed)),
             r"total\.tar\.gz: more than 65536 bytes in all \(RELEASE_MAX_BYTES\)")


@pytest.mark.django_db
@pytest.mark.parametrize("entry, why", [
    (_entry(f"{TOP}/../../evil.txt", b"x"), "is not a plain file or folder inside the release"),
    (_entry("/tmp/evil.txt", b"x"), "is not a plain file or folder inside the release"),
    (_entry(f"{TOP}/link", b"", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
     "is not a plain file or folder"),
    (_entry(f"{TOP}/hard", b"", type=tarfile.LNKTYPE, linkname="/etc/passwd"),
     "is not a plain file or folder"),
    (_entry(f"{TOP}/fifo", b"", type=tarfile.FIFOTYPE), "is not a plain file or folder"),
    (_entry("elsewhere/x.txt", b"x"), "is outside the release folder"),
])
def test_traversal_links_and_strays_are_refused_and_nothing_lands_outside(tmp_path, entry, why):
    files = _files(tmp_path)
    before = sorted(p.name for p in tmp_path.parent.iterdir())
    archive = _pack(tmp_path / "stray.tar.gz", _entries(files) + [entry])
    _refused(archive, why)
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before
    assert not Path("/tmp/evil.txt").exists()


@pytest.mark.django_db
def test_an_unlisted_member_is_refused_before_a_byte_of_it_is_written(tmp_path):
    files = _files(tmp_path)
    archive = _pack(tmp_path / "unlisted.tar.gz",
                    _entries(files) + [_entry(f"{TOP}/zzz.bin", b"\1" * (8 * MiB))])
    _refused(archive, r"unlisted\.tar\.gz: hostile/zzz\.bin is not in MANIFEST\.sha256")
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(ReleaseError, match="is not in MANIFEST.sha256"):
        release.unpack_archive(archive, into)
    assert not (into / TOP / "zzz.bin").exists()


@pytest.mark.django_db
def test_a_tampered_member_with_a_stale_manifest(tmp_path):
    files = _files(tmp_path)
    files["topics.jsonl"] = files["topics.jsonl"].replace(b'"x"', b'"y"')
    _refused(_pack(tmp_path / "stale.tar.gz", _entries(files)),
             r"stale\.tar\.gz: hostile/topics\.jsonl: SHA-256 differs from MANIFEST\.sha256 "
             r"line \d+")


@pytest.mark.django_db
def test_a_manifest_after_the_files_is_found_first_and_only_listed_files_written(tmp_path):
    """Releases written before the manifest came first (it sorts after CITATION.cff and
    LICENSE.md) still load: a first pass reads as far as the manifest."""
    files = _files(tmp_path)
    _pack(tmp_path / "late.tar.gz", _entries(files, manifest_first=False))
    call_command("import_collection_bundle", str(tmp_path / "late.tar.gz"),
                 stdout=io.StringIO())
    assert _stored() == (1, 1)


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["twice", "file-then-folder", "folder-then-file",
                                  "two-runs-one-name"])
def test_clashing_names(tmp_path, case):
    files = _files(tmp_path)
    entries = _entries(files)
    if case == "twice":
        entries.append(_entry(f"{TOP}/topics.jsonl", files["topics.jsonl"]))
        why = "comes twice"
    elif case == "file-then-folder":
        files["runs2"] = b"x"
        files["runs2/inner.txt"] = b"y"
        files[release.MANIFEST] = _manifest(files)
        entries = _entries(files)
        why = "clashes with another entry"
    elif case == "folder-then-file":
        files["a/b"] = b"x"
        files["a"] = b"y"
        files[release.MANIFEST] = _manifest(files)
        entries = _entries({k: v for k, v in files.items() if k != "a"}) + [
            _entry(f"{TOP}/a", b"y")]
        why = "clashes with another entry"
    else:
        import json

        meta = json.loads(files["release.json"])
        meta["runs"].append(dict(meta["runs"][0]))
        files["release.json"] = json.dumps(meta).encode()
        files[release.MANIFEST] = _manifest(files)
        entries = _entries(files)
        why = r"release\.json: two runs are named 'sys'"
    _refused(_pack(tmp_path / "clash.tar.gz", entries), why)


def _rewritten(tmp_path, name: str, data: bytes) -> Path:
    files = _files(tmp_path)
    files[name] = data
    files[release.MANIFEST] = _manifest(files)
    return _pack(tmp_path / "edited.tar.gz", _entries(files))


@pytest.mark.django_db
def test_release_json_nested_deep_is_refused(tmp_path):
    deep = b'{"format": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _refused(_rewritten(tmp_path, "release.json", deep), r"release\.json: invalid JSON "
                                                          r"\(nested too deeply\)")


@pytest.mark.django_db
def test_a_number_too_long_is_refused_with_its_line(tmp_path):
    line = b'{"topic_id": "1", "title": "x", "description": "", "narrative": "", "kind": "", ' \
           b'"statements": ["s"], "intents": [], "n": ' + b"9" * 100_000 + b"}\n"
    _refused(_rewritten(tmp_path, "topics.jsonl", line),
             r"topics\.jsonl, line 1: invalid JSON \(a number of more than 4300 digits\)")


@pytest.mark.django_db
def test_release_json_naming_a_missing_run(tmp_path):
    import json

    files = _files(tmp_path)
    meta = json.loads(files["release.json"])
    meta["runs"][0]["name"] = "gone"
    files["release.json"] = json.dumps(meta).encode()
    files[release.MANIFEST] = _manifest(files)
    del files["runs/sys.run"]
    files[release.MANIFEST] = _manifest(files)
    _refused(_pack(tmp_path / "gone.tar.gz", _entries(files)),
             r"release\.json: names run 'gone', but runs/gone\.queries\.jsonl is not in the "
             r"release")


@pytest.mark.django_db
@pytest.mark.parametrize("line, why", [
    (b"1 Q0 d1 1 nan sys\n", r"sys\.run, line 1: score 'nan' is not finite"),
    (b"1 Q0 d1 1 inf sys\n", r"sys\.run, line 1: score 'inf' is not finite"),
    (b"1 Q0 d\xe2\x80\x8b1 1 2.0 sys\n", r"sys\.run, line 1: document id .* invisible format"),
    (b"1 Q0 d1 1 2.0 sys\n1 Q0 d2 3 1.0 sys\n", r"sys\.run:2: rank 3 out of order"),
    (b"1 Q0 d1 9223372036854775808 2.0 sys\n", r"sys\.run, line 1: rank .* is too large"),
])
def test_bad_run_lines_are_found_before_anything_is_stored(tmp_path, line, why):
    _refused(_rewritten(tmp_path, "runs/sys.run", line), why)


# --- folders --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_link_in_a_folder_release_is_refused(tmp_path):
    folder = release.write_release(_records(), tmp_path / "folder", licence="CC0-1.0")
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes((folder / "topics.jsonl").read_bytes())  # the same bytes, elsewhere
    (folder / "topics.jsonl").unlink()
    (folder / "topics.jsonl").symlink_to(outside)
    _refused(folder, r"topics\.jsonl: a link; a release folder holds plain files and folders "
                     r"only")
    (folder / "topics.jsonl").unlink()
    (folder / "topics.jsonl").write_bytes(outside.read_bytes())
    os.symlink(tmp_path, folder / "runs" / "up")  # a link to a folder: not followed either
    _refused(folder, r"runs/up: a link")
    (folder / "runs" / "up").unlink()
    call_command("import_collection_bundle", str(folder), stdout=io.StringIO())
    assert _stored() == (1, 1)
