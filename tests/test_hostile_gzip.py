"""Gzip bombs cost nothing: a small .gz of valid lines that expands to gigabytes is refused
by the expansion check (common.fileio.gzip_check) in one pass that only decompresses,
before any row is parsed -- through a command, the API, a web form and the worker's
service alike -- naming the file, with bounded memory, storing nothing and leaving no file.

How little work the refusal took is read from the error itself (it says how many bytes
had been decompressed when it stopped), not from a clock."""
from __future__ import annotations

import gzip
import re
import tracemalloc
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from common import fileio
from common.fileio import InputError
from topics.models import QueryVariant, TopicSet
from topics.services import topics_import
from topics.topicfiles import TopicRecord
from uploads.models import Upload
from uploads.services import upload_run

LINE = b"T1\tcheap flights to rome in may\tw1\n"
MiB = 1 << 20


def bomb(expanded_mib: int) -> bytes:
    """A gzip file of valid variant lines that expands to ``expanded_mib`` MiB: one
    compressed MiB of lines repeated as gzip members (a gzip file may hold several),
    about a thousandth of its expanded size."""
    block = LINE * (MiB // len(LINE))
    member = gzip.compress(block, compresslevel=9)
    return member * expanded_mib


def _stopped_after(message: str) -> int:
    """The bytes decompressed when the check stopped, from its message."""
    found = re.search(r"\((\d+) bytes stored gave (\d+);", message)
    assert found, message
    return int(found.group(2))


def test_a_bomb_is_refused_by_its_expansion_ratio_in_the_first_mebibytes(tmp_path):
    path = tmp_path / "variants.tsv.gz"
    path.write_bytes(bomb(2048))  # 2 GiB of valid lines in a few MB
    assert path.stat().st_size < 8 * MiB
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as info:
            fileio.gzip_check(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert message.startswith(f"{path}: the gzip data expands more than 100 times")
    assert "MAX_EXPANSION_RATIO" in message
    assert _stopped_after(message) <= fileio.EXPANSION_FLOOR_BYTES + fileio.CHECK_BLOCK_BYTES
    assert peak < 8 * MiB  # blocks, never the file


def test_ordinary_gzip_text_passes_and_plain_files_are_not_read(tmp_path, settings):
    """Real text compresses 3 to 12 times: a TREC run of 3 MB passes; so does a bomb's
    ratio under the floor (16 MiB), where the size cap alone applies."""
    run = "".join(f"{t} Q0 doc{d:07d} {r} {1000 - r}.0 run\n"
                  for t in range(30) for r, d in enumerate(range(1000), 1)).encode()
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(run))
    assert len(run) > 10 * path.stat().st_size  # compresses about 11 times
    fileio.gzip_check(path)
    small_bomb = tmp_path / "small.tsv.gz"
    small_bomb.write_bytes(bomb(8))  # 8 MiB out of a few kB: under the floor
    fileio.gzip_check(small_bomb)
    settings.MAX_EXPANSION_RATIO = 5
    settings.MAX_DECOMPRESSED_BYTES = 4 * MiB
    with pytest.raises(InputError, match=r"small\.tsv\.gz, line \d+: the gzip data decompresses "
                                         r"to more than 4194304 bytes"):
        fileio.gzip_check(small_bomb)


@pytest.fixture
def topic_set(db):
    topics_import("ts", [TopicRecord(topic_id="T1", title="flights", statements=("s",))])
    return TopicSet.objects.get(name="ts")


@pytest.mark.django_db
def test_a_bomb_through_the_command_is_refused_and_stores_nothing(topic_set, tmp_path):
    path = tmp_path / "variants.tsv.gz"
    path.write_bytes(bomb(2048))
    with pytest.raises(CommandError) as info:
        call_command("import_variants", str(path), "--topic-set", "ts", "--format", "tsv")
    assert str(info.value).startswith(f"{path}: the gzip data expands more than 100 times")
    assert _stopped_after(str(info.value)) < 32 * MiB  # of the 2 GiB
    assert not QueryVariant.objects.exists()


@pytest.fixture
def staff(db):
    return User.objects.create_user("org", password="pw", is_staff=True)


@pytest.mark.django_db
def test_a_bomb_through_the_api_is_refused_in_the_request_leaving_no_file(
        topic_set, staff, settings, tmp_path):
    from rest_framework.test import APIClient

    settings.DATA_DIR = tmp_path / "data"
    api = APIClient()
    api.force_authenticate(staff)
    response = api.post("/api/uploads/variants/", {
        "file": SimpleUploadedFile("bomb.tsv.gz", bomb(2048)), "topic_set": "ts",
        "format": "tsv"}, format="multipart")
    assert response.status_code == 400, response.content
    message = response.json()["detail"][0]
    assert message.startswith("bomb.tsv.gz: the gzip data expands more than 100 times")
    assert _stopped_after(message) < 32 * MiB
    assert not Upload.objects.exists() and not QueryVariant.objects.exists()
    assert not any(p.is_file() for p in (tmp_path / "data").rglob("*"))


@pytest.mark.django_db
def test_a_bomb_already_recorded_fails_in_the_worker_without_parsing(topic_set, settings,
                                                                   tmp_path):
    """An upload recorded before the check existed (or with other caps) is refused by the
    worker's service the same way, and fails rather than retrying."""
    settings.DATA_DIR = tmp_path / "data"
    folder = Path(settings.DATA_DIR) / "uploads" / "x"
    folder.mkdir(parents=True)
    path = folder / "bomb.tsv.gz"
    path.write_bytes(bomb(2048))
    row = Upload.objects.create(kind="variants", params={"topic_set": "ts", "format": "tsv"},
                                filename=path.name, path=str(path), size=path.stat().st_size)
    row = upload_run(row.pk)
    assert row.status == "failed", row.error
    assert row.error.startswith("bomb.tsv.gz: the gzip data expands more than 100 times")
    assert _stopped_after(row.error) < 32 * MiB
    assert not QueryVariant.objects.exists()


@pytest.mark.django_db
def test_a_bomb_through_a_web_form_is_refused_in_the_request(topic_set, staff, client):
    client.force_login(staff)
    data = bomb(700)  # 700 MiB of lines in about 2 MB
    assert len(data) < 5 * MiB  # under the in-request threshold: imported in the request
    response = client.post(reverse("projects:organiser_variants_upload"), {
        "file": SimpleUploadedFile("bomb.tsv.gz", data), "format": "tsv", "topic_set": "ts",
        "encoding": "utf-8"})
    assert response.status_code == 400
    page = response.content.decode()
    found = re.search(r"bomb\.tsv\.gz: the gzip data expands more than 100 times \((\d+) bytes "
                      r"stored gave (\d+);", page)
    assert found, page[:2000]
    assert int(found.group(2)) < 32 * MiB
    assert not QueryVariant.objects.exists()


def test_the_bulk_and_line_readers_share_one_check(tmp_path, monkeypatch):
    """A run read in bulk and then line by line (to name the line) decompresses a refused
    file once, not once per reader."""
    from evaluation.measures import read_runs

    made = []
    guard = fileio.ExpansionGuard

    def counting(*args, **kwargs):
        made.append(args[1])
        return guard(*args, **kwargs)

    monkeypatch.setattr(fileio, "ExpansionGuard", counting)
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"1 Q0 d1 1 1.0 t\n" * (2 * MiB)) * 16)  # 512 MiB
    for _ in range(2):
        with pytest.raises(InputError, match="expands more than 100 times"):
            read_runs([path])
    assert made == [path]
