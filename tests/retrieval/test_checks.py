"""retrieval.E001 is a database check: a plain ``check`` (which every command runs first)
reads no table; ``check --database default`` reads the collections and reports it."""
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from retrieval.models import Collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def lost_index(tmp_path):
    return Collection.objects.create(name="lost", format="trec", source_path="x",
                                     status="ready", index_path=str(tmp_path / "gone"))


def test_a_plain_check_reads_no_table(lost_index, django_assert_num_queries):
    with django_assert_num_queries(0):
        call_command("check")


def test_check_database_reports_a_missing_index(lost_index, tmp_path):
    Collection.objects.create(name="kept", format="trec", source_path="x", status="ready",
                              index_path=str(tmp_path))
    with pytest.raises(SystemCheckError) as info:
        call_command("check", databases=["default"])
    message = str(info.value)
    assert "retrieval.E001" in message
    assert f"index path does not exist: {tmp_path / 'gone'}" in message
    assert "'kept'" not in message and "re-import collection 'lost'" in message
