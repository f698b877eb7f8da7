"""import_run on bad input: strict UTF-8 with --encoding, positive ranks, all or nothing."""
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from retrieval.models import Run
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db


@pytest.fixture
def topics():
    ts = TopicSet.objects.create(name="ts")
    for t in ("1", "2"):
        Topic.objects.create(topic_set=ts, topic_id=t)
    return ts


def test_latin1_run_is_refused_then_read_with_its_encoding(topics, tmp_path):
    p = tmp_path / "run.txt"
    p.write_bytes("1 Q0 d1 1 2.0 t\u00e9g\n2 Q0 d2 1 1.0 t\u00e9g\n".encode("latin-1"))
    with pytest.raises(CommandError, match=r"run\.txt, line 1: not valid utf-8"):
        call_command("import_run", str(p), "--topic-set", "ts")
    assert not Run.objects.exists()
    call_command("import_run", str(p), "--topic-set", "ts", "--encoding", "latin-1",
                 stdout=StringIO())
    assert Run.objects.get().tag == "t\u00e9g"


@pytest.mark.parametrize("rank", ["0", "-1"])
def test_zero_and_negative_ranks_import_nothing(topics, tmp_path, rank):
    p = tmp_path / "run.txt"
    p.write_text(f"1 Q0 d1 1 2.0 t\n2 Q0 d2 {rank} 1.0 t\n")
    with pytest.raises(CommandError, match=rf"run\.txt, line 2: rank '{rank}' is not positive"):
        call_command("import_run", str(p), "--topic-set", "ts")
    assert not Run.objects.exists()


def test_truncated_gzip_run_is_an_error_with_the_file(topics, tmp_path):
    import gzip

    p = tmp_path / "run.txt.gz"
    p.write_bytes(gzip.compress(b"1 Q0 d1 1 2.0 t\n")[:-10])
    with pytest.raises(CommandError, match=r"run\.txt\.gz, line 1: truncated or corrupt gzip"):
        call_command("import_run", str(p), "--topic-set", "ts")


@pytest.mark.parametrize("tag, reason", [("a b", "contains a space"),
                                         ("x" * 101, "is 101 characters (at most 100)"),
                                         ("t\u200b", "invisible format character")])
def test_tag_given_on_the_command_line_is_checked_like_any_id(topics, tmp_path, tag, reason):
    p = tmp_path / "run.txt"
    p.write_text("1 Q0 d1 1 2.0 t\n")
    with pytest.raises(CommandError, match=rf"run tag .*{re.escape(reason)}"):
        call_command("import_run", str(p), "--topic-set", "ts", "--tag", tag)
    assert not Run.objects.exists()
