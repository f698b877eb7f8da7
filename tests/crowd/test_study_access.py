"""Who can read what: workers only their own items; organisers need staff. CSRF; escaping."""
import json

import pytest
from django.test import Client

from crowd.models import Response
from topics.models import QueryVariant
from tests.crowd.study_helpers import (
    arrive, consent, item_url, make_study, participant,
)

pytestmark = pytest.mark.django_db
HOSTILE = '<script>alert("x")</script> & <b>bold</b>'


@pytest.fixture
def study():
    return make_study(attention=False)


def test_no_session_reads_nothing(client, study):
    for url in [item_url(study, 1), f"/crowd/s/{study.slug}/next/",
                f"/crowd/s/{study.slug}/consent/", f"/crowd/s/{study.slug}/done/"]:
        assert client.get(url).status_code == 404
    assert client.get("/crowd/s/not-a-study/").status_code == 404


def test_worker_cannot_reach_another_workers_items(study):
    a, b = Client(), Client()
    arrive(a, study, "A")
    consent(a, study)
    a.post(item_url(study, 1), {"query": "secret query of a"})
    arrive(b, study, "B")
    consent(b, study)
    # B's position 1 is B's own item; A's answer never shows up
    r = b.get(item_url(study, 1))
    assert r.status_code == 200 and b"secret query of a" not in r.content
    assert b.get(item_url(study, 99)).status_code == 404
    assert b.post(item_url(study, 99), {"query": "x"}).status_code == 404
    # a forged cookie pointing at A's participant reads nothing: signed with a guessed
    # token, or A's id with B's (valid) signature and token
    from django.core import signing

    name = f"crowd_{study.slug}"
    a_pk = participant(study, "A").pk
    b_token = participant(study, "B").session_token
    for value in [f"{a_pk}.guess", f"{a_pk}.{b_token}"]:
        b.cookies[name] = signing.get_cookie_signer(salt=name + "crowd.participant").sign(value)
        assert b.get(item_url(study, 2)).status_code == 404
        assert b.post(item_url(study, 2), {"query": "hijack"}).status_code == 404
    b.cookies[name] = f"{a_pk}.guess"  # unsigned
    assert b.get(item_url(study, 2)).status_code == 404
    assert b.post(item_url(study, 2), {"query": "hijack"}).status_code == 404
    assert Response.objects.filter(raw="hijack").count() == 0


def test_knowing_a_worker_id_is_not_enough(study):
    a = Client()
    arrive(a, study, "A")
    # before consent a second opening of the link (another tab) shares the participant
    tab = Client()
    r = arrive(tab, study, "A")
    assert r.status_code == 200 and r.redirect_chain[-1][0].endswith("/consent/")
    consent(a, study)
    intruder = Client()
    r = arrive(intruder, study, "A")
    assert r.status_code == 403 and b"another browser" in r.content
    assert intruder.get(item_url(study, 1)).status_code == 404


def test_csrf_is_enforced_on_worker_forms(study):
    c = Client(enforce_csrf_checks=True)
    r = arrive(c, study, "A")
    assert b"csrfmiddlewaretoken" in r.content
    assert c.post(f"/crowd/s/{study.slug}/consent/", {"agree": "on"}).status_code == 403
    token = c.cookies["csrftoken"].value
    r = c.post(f"/crowd/s/{study.slug}/consent/", {"agree": "on", "csrfmiddlewaretoken": token})
    assert r.status_code == 302
    page = c.get(item_url(study, 1))
    assert b"csrfmiddlewaretoken" in page.content
    assert c.post(item_url(study, 1), {"query": "no token"}).status_code == 403
    assert not Response.objects.exists()


def test_organiser_pages_need_staff(study, django_user_model):
    urls = ["/crowd/studies/", f"/crowd/studies/{study.pk}/", f"/crowd/studies/{study.pk}/variants/",
            f"/crowd/studies/{study.pk}/export.tsv"]
    anon = Client()
    for url in urls:
        r = anon.get(url)
        assert r.status_code == 302 and "/accounts/login/" in r["Location"]
    worker = Client()
    worker.force_login(django_user_model.objects.create_user("w", password="pw-123456789"))
    for url in urls:
        assert worker.get(url).status_code == 302
    staff = Client()
    staff.force_login(django_user_model.objects.create_user("s", password="pw-123456789", is_staff=True))
    for url in urls:
        assert staff.get(url).status_code == 200


def test_html_in_a_query_is_stored_verbatim_and_escaped(study, admin_client):
    w = Client()
    arrive(w, study, "A")
    consent(w, study)
    w.post(item_url(study, 1), {"query": HOSTILE})
    assert QueryVariant.objects.get().raw == HOSTILE
    # re-shown in the worker's form (refused as a duplicate): escaped
    r = w.post(item_url(study, 2), {"query": HOSTILE})
    assert b"already given" in r.content
    assert b"<script>alert" not in r.content and b"&lt;script&gt;alert" in r.content
    # organiser pages
    r = admin_client.get(f"/crowd/studies/{study.pk}/variants/")
    assert b"<script>alert" not in r.content and b"&lt;script&gt;alert" in r.content
    r = admin_client.get("/admin/crowd/participant/")
    assert r.status_code == 200 and b"<script>alert" not in r.content
    # exports are data, not HTML: verbatim, served as non-HTML types
    r = admin_client.get(f"/crowd/studies/{study.pk}/export.json")
    assert r["Content-Type"].startswith("application/json")
    assert json.loads(r.content)[0]["raw"] == HOSTILE
    r = admin_client.get(f"/crowd/studies/{study.pk}/export.csv")
    assert r["Content-Type"].startswith("text/csv")
