"""A new collection's system side from the browser: retrieval over the topic titles (and
descriptions) launched as system runs, then chosen as the system runs of a pool."""
import json

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from pooling.models import Pool
from pooling.selectors import pool_run_ids
from pooling.services import pool_build
from retrieval.models import Run, RunChunk
from retrieval.services import chunk_retrieve, collection_import
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db

DOCS = [("a", "apples are red fruit"), ("b", "pears are green fruit"),
        ("c", "apple pie and pear tart"), ("d", "bananas grow in bunches")]


@pytest.fixture
def staff(client):
    client.force_login(User.objects.create_user("org", password="pw", is_staff=True))
    return client


@pytest.fixture
def fruit(settings, tmp_path):
    settings.INDEX_ROOT = tmp_path / "indexes"
    path = tmp_path / "fruit.jsonl"
    path.write_text("".join(json.dumps({"id": d, "contents": c}) + "\n" for d, c in DOCS),
                    encoding="utf-8")
    collection_import("fruit", path, "jsonl")
    ts = TopicSet.objects.create(name="fruit-topics")
    Topic.objects.create(topic_set=ts, topic_id="1", title="apples",
                         description="red apple fruit")
    Topic.objects.create(topic_set=ts, topic_id="2", title="pears", description="")
    return ts


def _finish(run_ids):
    for chunk in RunChunk.objects.filter(run_id__in=run_ids):
        chunk_retrieve(chunk.pk)


def test_title_runs_launched_from_the_web_become_a_pool_s_system_runs(staff, fruit):
    url = reverse("projects:organiser_retrieval_launch")
    assert 'name="system_runs"' in staff.get(url).content.decode()
    response = staff.post(url, {"topic_set": "fruit-topics", "collection": "fruit",
                                "model": "bm25", "source": "variants", "depth": 10,
                                "system_runs": "on"})
    # no variants yet: nothing is launched, and the page says why
    assert response.status_code == 400 and "no variants" in response.content.decode()
    assert not Run.objects.exists()
    response = staff.post(url, {"topic_set": "fruit-topics", "collection": "fruit",
                                "model": "bm25", "source": "titles", "depth": 10,
                                "system_runs": "on"})
    assert response.status_code == 302, response.content.decode()[:2000]
    runs = {r.source: r for r in Run.objects.filter(kind=Run.KIND_RETRIEVAL)}
    assert sorted(runs) == ["descriptions", "titles"]  # one topic has a description
    assert runs["titles"].total == 2

    # the project's pool form lists them only once they are done
    project = reverse("projects:organiser_project", args=[fruit.pk])
    assert f'value="{runs["titles"].pk}"' not in staff.get(project).content.decode()
    build = reverse("projects:organiser_pool_build", args=[fruit.pk])
    early = staff.post(build, {"sources": "systems", "strategy": "depth", "depth": 5,
                               "system_runs": [runs["titles"].pk]})
    assert early.status_code == 400
    _finish([r.pk for r in runs.values()])
    page = staff.get(project).content.decode()
    assert f'value="{runs["titles"].pk}"' in page and "bm25 over titles of fruit" in page

    response = staff.post(build, {"sources": "systems", "strategy": "depth", "depth": 5,
                                  "system_runs": [runs["titles"].pk], "name": "fruit-sys"})
    assert response.status_code == 302, response.content.decode()[:2000]
    system = Run.objects.get(kind=Run.KIND_SYSTEM)
    assert system.tag == f"bm25-titles-run{runs['titles'].pk}" and system.total == 2
    pool = Pool.objects.get(name="fruit-sys")
    assert pool_run_ids(pool) == [system.pk]  # the descriptions run was not chosen
    pool_build(pool.pk)
    pool.refresh_from_db()
    assert pool.status == Pool.STATUS_DONE, pool.error
    exported = staff.get(reverse("projects:organiser_pool_export", args=[pool.pk, "txt"]))
    pooled = {tuple(line.split()[:2]) for line in exported.content.decode().splitlines()}
    assert ("1", "a") in pooled and ("2", "b") in pooled

    # chosen again, the title run is the same system run, not a second copy
    again = staff.post(build, {"sources": "systems", "strategy": "depth", "depth": 5,
                               "system_runs": [runs["titles"].pk, runs["descriptions"].pk]})
    assert again.status_code == 302
    assert Run.objects.filter(kind=Run.KIND_SYSTEM).count() == 2
    assert len(pool_run_ids(Pool.objects.exclude(pk=pool.pk).get())) == 2


def test_a_systems_pool_without_system_runs_says_what_to_do_on_the_page(staff, fruit):
    build = reverse("projects:organiser_pool_build", args=[fruit.pk])
    queued = staff.post(build, {"sources": "systems", "strategy": "depth", "depth": 5})
    assert queued.status_code == 302
    with pytest.raises(ValueError, match=r"import a system run \(import_run\)"):
        pool_build(Pool.objects.get().pk)  # the service speaks the command line's language
    text = staff.get(queued["Location"]).content.decode()
    assert "has no finished system-run rankings" in text
    assert "import_run" not in text
    assert f'href="{reverse("projects:organiser_run_upload")}">upload a system run</a>' in text
    assert f'href="{reverse("projects:organiser_retrieval_launch")}">launch retrieval</a>' in text


def test_the_project_page_leads_to_the_evaluation_of_its_runs(staff, fruit):
    page = staff.get(reverse("projects:organiser_project", args=[fruit.pk])).content.decode()
    url = reverse("evaluation:analysis_new", args=["evaluate"]) + "?topic_set=fruit-topics"
    assert f'href="{url}"' in page
    form = staff.get(url).content.decode()
    assert '<option value="fruit-topics" selected>' in form


def test_a_title_run_with_no_model_or_collection_is_still_offered(staff, fruit):
    # a finished title run whose model and collection rows are absent (both are nullable)
    run = Run.objects.create(topic_set=fruit, kind=Run.KIND_RETRIEVAL, source="titles",
                             status="done")
    page = staff.get(reverse("projects:organiser_project", args=[fruit.pk]))
    assert page.status_code == 200
    assert f"a model over titles (run {run.pk})" in page.content.decode()
