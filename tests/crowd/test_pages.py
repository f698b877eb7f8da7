"""First contact: the crowd section's pages, signing in and out, the admin, topic order."""
import pytest
from django.test import Client
from django.urls import NoReverseMatch, reverse

from common.naturalsort import natural_key
from tests.crowd.study_helpers import arrive, consent, finish, make_study
from topics.models import QueryVariant, Statement, Topic, TopicSet

pytestmark = pytest.mark.django_db

SHUFFLED_IDS = ["9", "15", "1", "12", "2", "UQV100.10", "UQV100.2", "01"]
NATURAL_IDS = ["01", "1", "2", "9", "12", "15", "UQV100.2", "UQV100.10"]


def test_natural_key():
    assert sorted(SHUFFLED_IDS, key=natural_key) == NATURAL_IDS
    assert sorted(["a10", "A2", "a1"], key=natural_key) == ["a1", "A2", "a10"]
    assert sorted(["x", "1", "", "x1"], key=natural_key) == ["", "1", "x", "x1"]


def test_natural_key_imports_no_django():
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, common.naturalsort, common.spreadsheet; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parents[2], env={"PATH": ""})


@pytest.fixture
def shuffled_set():
    ts = TopicSet.objects.create(name="nat")
    for tid in SHUFFLED_IDS:
        t = Topic.objects.create(topic_set=ts, topic_id=tid, title=f"title {tid}")
        Statement.objects.create(topic=t, position=0, text=f"statement about thing {tid} for work")
        QueryVariant.objects.create(topic=t, raw=f"q {tid}", normalised=f"q {tid}", count=2)
    return ts


def test_crowd_selectors_sort_topics_naturally(shuffled_set):
    from crowd.selectors import study_export_rows, study_variant_summary
    from topics.selectors import topic_list, topic_page, variant_groups, variant_list_by_topic

    assert [t.topic_id for t in topic_list("nat")] == NATURAL_IDS
    assert [t.topic_id for t in topic_page(shuffled_set)[0]] == NATURAL_IDS
    assert [g.topic_id for g in variant_groups("nat")] == NATURAL_IDS
    assert [v.topic.topic_id for v in variant_list_by_topic("nat")] == NATURAL_IDS
    study = make_study(shuffled_set, attention=False, statements_per_worker=len(SHUFFLED_IDS))
    c = Client()
    arrive(c, study, "N")
    consent(c, study)
    finish(c, study, "N")
    assert [r["topic"] for r in study_export_rows(study)] == NATURAL_IDS
    assert [t["topic_id"] for t in study_variant_summary(study)] == NATURAL_IDS


def test_topic_set_page_lists_topics_naturally(shuffled_set, admin_client):
    r = admin_client.get(reverse("topics:topic_set_detail", args=[shuffled_set.pk]))
    assert r.status_code == 200
    body = r.content.decode()
    cells = [body.index(f'<td class="topic-id">{tid}</td>') for tid in NATURAL_IDS]
    assert cells == sorted(cells)


def test_crowd_index_is_a_page_for_everyone(shuffled_set, admin_client, django_user_model):
    anonymous = Client().get("/crowd/")
    assert anonymous.status_code == 200 and b"recruitment platform" in anonymous.content
    assert b"nat" not in anonymous.content.split(b"<main>")[1]
    worker = Client()
    worker.force_login(django_user_model.objects.create_user("w", password="pw-w-12345"))
    r = worker.get("/crowd/")
    assert r.status_code == 200 and b"organisers" in r.content
    r = admin_client.get("/crowd/")
    assert r.status_code == 200
    assert reverse("topics:topic_set_detail", args=[shuffled_set.pk]).encode() in r.content
    assert Client().get(reverse("topics:topic_set_detail", args=[shuffled_set.pk])).status_code == 302


def test_sign_in_lands_on_a_page_and_sign_out_is_a_post(django_user_model):
    django_user_model.objects.create_user("org", password="pw-org-12345", is_staff=True)
    c = Client()
    r = c.post(reverse("login"), {"username": "org", "password": "pw-org-12345"})
    assert r.status_code == 302 and r["Location"] == reverse("home")
    home = c.get(r["Location"])
    assert home.status_code == 200 and b'id="sign-out"' in home.content
    assert c.get(reverse("logout")).status_code == 405  # never by a link
    r = c.post(reverse("logout"))
    assert r.status_code == 302 and r["Location"] == reverse("home")
    assert b'id="sign-in"' in c.get("/").content
    r = c.post(reverse("login") + "?next=/crowd/", {"username": "org", "password": "pw-org-12345",
                                                     "next": "/crowd/"})
    assert r["Location"] == "/crowd/"


def _resolves(name):
    try:
        reverse(name)
        return True
    except NoReverseMatch:
        return False


def test_home_page_links_only_to_what_exists(client):
    body = client.get("/").content.decode()
    for name, label in [("judging:index", "Judging"), ("evaluation:index", "Evaluation")]:
        assert (f'href="{reverse(name)}"' in body) if _resolves(name) else (label not in body)
    for name in ["crowd:index", "retrieval:index", "pooling:index"]:
        assert f'href="{reverse(name)}"' in body


def test_admin_lists_retrieval_models(admin_client):
    r = admin_client.get("/admin/")
    assert b"Retrieval models" in r.content
    for url in ["/admin/retrieval/retrievalmodel/", "/admin/retrieval/retrievalmodel/add/",
                "/admin/retrieval/collection/", "/admin/retrieval/run/"]:
        assert admin_client.get(url).status_code == 200, url
    r = admin_client.post("/admin/retrieval/retrievalmodel/add/", {
        "name": "bm25-tuned", "kind": "bm25", "k1": "1.2", "b": "0.75", "mu": "1000",
        "sdm_base": "bm25", "term_weight": "0.85", "ordered_weight": "0.1",
        "unordered_weight": "0.05", "description": "",
    })
    assert r.status_code == 302
    from retrieval.models import RetrievalModel

    assert RetrievalModel.objects.get(name="bm25-tuned").k1 == 1.2
