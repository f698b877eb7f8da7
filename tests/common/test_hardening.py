"""Sign-in throttling (django-axes), the Content-Security-Policy header (django-csp), and
API bodies nested too deep for the parser answered with a 400."""
from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from common.api import MAX_JSON_DEPTH, api_token_issue

pytestmark = pytest.mark.django_db


def _sign_in(client, password, ip="10.0.0.1"):
    return client.post("/accounts/login/", {"username": "alice", "password": password},
                       REMOTE_ADDR=ip)


def test_sign_ins_are_throttled_per_user_name_and_address():
    User.objects.create_user("alice", password="right-password")
    limit = settings.AXES_FAILURE_LIMIT
    client = Client()
    for n in range(limit - 1):
        assert _sign_in(client, f"wrong {n}").status_code == 200  # the form again, with an error
    assert _sign_in(client, "right-password").status_code == 302  # and the count starts again
    client.post("/accounts/logout/")
    for n in range(limit):
        _sign_in(client, f"wrong {n}")
    locked = _sign_in(client, "right-password")
    assert locked.status_code == 429, locked.status_code  # even the right password now
    assert "_auth_user_id" not in client.session
    # another address is not locked out by this one's failures
    assert _sign_in(Client(), "right-password", ip="10.0.0.2").status_code == 302


def test_pages_carry_a_content_security_policy_without_inline_script():
    response = Client().get("/")
    policy = dict(d.strip().split(" ", 1) for d in response["Content-Security-Policy"].split(";"))
    assert policy["script-src"] == "'self'"  # no 'unsafe-inline', no other host
    assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert "https://www.mturk.com" in policy["form-action"]  # a finished MTurk worker posts there


def test_a_deeply_nested_body_is_a_400_not_a_server_error():
    User.objects.create_user("organiser", password="x", is_staff=True)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue('organiser')}")
    for depth in (MAX_JSON_DEPTH + 1, 5000, 200_000):
        body = "[" * depth + "]" * depth
        response = api.post("/api/runs/", body, content_type="application/json")
        assert response.status_code == 400, (depth, response.status_code)
        assert f"nested more than {MAX_JSON_DEPTH} deep" in response.json()["detail"]
    body = {"topic_set": {"a": [[["x"]]]}}  # shallow: the ordinary field validation answers
    response = api.post("/api/runs/", json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and "topic_set" in response.json()
