"""import_topics, import_qrels and import_collection with --ir-datasets: Cranfield read by
the real ir_datasets code from its cache layout, offline (see test_demo_ir_datasets for
why the shared archive is the one ir_datasets downloads)."""
import io
import shutil

import pytest
from django.core.management import CommandError, call_command

from judging.models import JudgmentSet, Label
from retrieval.models import Collection
from topics.models import Statement, Topic

from .test_demo_ir_datasets import cranfield, irds_home  # noqa: F401  (fixtures)

pytest.importorskip("ir_datasets")


@pytest.fixture
def cached(irds_home, cranfield):  # noqa: F811
    (irds_home / "cranfield").mkdir()
    shutil.copyfile(cranfield / "cran.tar.gz", irds_home / "cranfield" / "cran.tar.gz")
    return irds_home


@pytest.mark.django_db
def test_topics_and_qrels_from_the_cache(cached, cranfield):  # noqa: F811
    out = io.StringIO()
    call_command("import_topics", "--ir-datasets", "cranfield", "--topic-set", "cran", stdout=out)
    assert "cran: 225 topic(s) created" in out.getvalue()
    first = Topic.objects.get(topic_set__name="cran", topic_id="1")
    assert first.title.startswith("what similarity laws must be obeyed when")
    assert first.description == first.title
    assert Statement.objects.get(topic=first).text == first.description
    assert Topic.objects.filter(topic_set__name="cran").count() == 225

    call_command("import_qrels", "--ir-datasets", "cranfield", "--name", "cranq",
                 "--topic-set", "cran", stdout=io.StringIO())
    raw = [line.split() for line in (cranfield / "cranqrel").read_text().splitlines() if line.strip()]
    qrels = JudgmentSet.objects.get(name="cranq")
    assert qrels.labels_count == len(raw) == 1837
    stored = {(j.topic_id, j.docid): j.grade for j in Label.objects.filter(judgment_set=qrels)}
    assert stored == {(q, d): int(code) for q, d, code in raw}  # the dataset's own codes


@pytest.mark.django_db
@pytest.mark.slow
def test_collection_from_the_cache(cached, settings, tmp_path):
    settings.INDEX_ROOT = tmp_path / "indexes"  # its own index folder
    out = io.StringIO()
    call_command("import_collection", "cran", "--ir-datasets", "cranfield", "--skip-empty",
                 stdout=out)
    c = Collection.objects.get(name="cran")
    assert c.doc_count == 1398  # Cranfield's documents 471 and 995 are empty


@pytest.mark.django_db
def test_without_the_files_the_commands_name_what_ir_datasets_needs(irds_home):  # noqa: F811
    for command, args in (("import_topics", ["--topic-set", "x"]),
                          ("import_qrels", ["--name", "x"]),
                          ("import_collection", ["x"])):
        with pytest.raises(CommandError) as info:
            call_command(command, *args, "--ir-datasets", "cranfield", stdout=io.StringIO())
        message = str(info.value)
        assert "could not read" in message and "from its cache" in message, message
        assert str(irds_home / "cranfield" / "cran.tar.gz") in message
        assert "cran.tar.gz)" in message and "http" in message  # where it comes from
    assert not Topic.objects.exists() and not JudgmentSet.objects.exists()
    with pytest.raises(CommandError, match="has no dataset 'no-such-set'"):
        call_command("import_topics", "--ir-datasets", "no-such-set", "--topic-set", "x")
    with pytest.raises(CommandError, match=r"give a topic file \(PATH --format F\) or --ir-datasets ID"):
        call_command("import_topics", "--topic-set", "x")
