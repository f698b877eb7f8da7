"""The API for scripts: token authentication, staff-only writes through the apps'
services, bounded pages, 400s naming the field, 404s for unknown ids, rankings and qrels
read from the stored data, and a valid OpenAPI 3 schema with its documentation page."""
from __future__ import annotations

import json
import re

import pytest
from django.core.management import CommandError, call_command

from .seed import DOCS, TOPICS

pytestmark = pytest.mark.django_db

READS = [
    "/api/topic-sets/", "/api/topic-sets/UQV/", "/api/topic-sets/UQV/topics/",
    "/api/topic-sets/UQV/topics/UQV100.001/", "/api/topic-sets/UQV/intents/",
    "/api/topic-sets/UQV/variants/", "/api/collections/", "/api/collections/c1/",
    "/api/models/", "/api/models/bm25/", "/api/runs/", "/api/pools/", "/api/pools/p/",
    "/api/pools/p/documents/?topic=UQV100.001", "/api/qrels/", "/api/qrels/q/",
    "/api/judging-tasks/", "/api/judging-tasks/jt/", "/api/judgment-sets/",
    "/api/judgment-sets/nist/", "/api/judgment-sets/nist/judgments/",
    "/api/judgment-sets/nist/qrels/", "/api/analyses/", "/api/evaluations/",
]
WRITES = ["/api/topic-sets/UQV/topics/", "/api/topic-sets/UQV/variants/", "/api/runs/", "/api/pools/",
          "/api/judging-tasks/", "/api/evaluations/", "/api/studies/"]


ASSESSOR_READS = {"/api/judging-tasks/", "/api/judging-tasks/jt/",
                  "/api/judgment-sets/nist/judgments/"}


def test_reads_need_a_token_and_organisers_read_everything(data, api):
    for url in READS:
        assert api(None).get(url).status_code == 401, url
        response = api("staff").get(url)
        assert response.status_code == 200, (url, response.content[:300])
        # an account that is not staff reads only the judging tasks that admit it (the
        # seed's task lists no one: open to every account) and none of another's labels
        plain = api("plain").get(url)
        if url not in ASSESSOR_READS:
            assert plain.status_code == 403, (url, plain.content[:300])
    assert api("plain").get("/api/judging-tasks/jt/").status_code == 200
    assert "assessors" not in api("plain").get("/api/judging-tasks/jt/").json()
    # nist is an imported judgment set, not a task's: its labels are for organisers
    assert api("plain").get("/api/judgment-sets/nist/judgments/").status_code == 404
    bad = api(None)
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.get("/api/runs/").status_code == 401


def test_writes_are_for_organisers(data, api):
    for url in WRITES:
        assert api(None).post(url, {}, format="json").status_code == 401, url
        assert api("plain").post(url, {}, format="json").status_code == 403, url
    # studies hold completion codes: organisers only, reads too
    assert api("plain").get("/api/studies/").status_code == 403
    assert api("staff").get("/api/studies/").status_code == 200


def test_topics_by_natural_key_with_dotted_ids(data, api):
    body = api().get("/api/topic-sets/UQV/topics/UQV100.002/").json()
    assert body["topic_id"] == "UQV100.002"
    assert body["statements"] == ["statement UQV100.002"]
    assert [i["intent_id"] for i in body["intents"]] == ["1", "2"]
    listed = api().get("/api/topic-sets/UQV/topics/").json()
    assert [t["topic_id"] for t in listed["results"]] == list(TOPICS)
    assert api().get("/api/topic-sets/UQV/").json()["answers_count"] == 2 * (1 + 2)
    from topics.models import TopicSet

    TopicSet.objects.create(name="empty")
    assert api().get("/api/topic-sets/empty/").json()["answers_count"] == 0  # not null
    variants = api().get("/api/topic-sets/UQV/variants/?topic=UQV100.001").json()["results"]
    assert [(v["raw"], v["count"]) for v in variants] == [("cheap flights", 1), ("Cheap flights to Paris", 2)]


def test_topics_and_variants_are_imported_through_the_services(data, api):
    post = api("staff").post
    topics = [{"topic_id": "T.1", "title": "one", "statements": ["need one"],
               "intents": [{"intent_id": "1", "description": "first"}]},
              {"topic_id": "T.2", "title": "two"}]
    response = post("/api/topic-sets/NEW/topics/", {"topics": topics}, format="json")
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 2, "replaced": 0}
    body = api().get("/api/topic-sets/NEW/topics/T.1/").json()
    assert (body["statements"], body["intents"][0]["intent_id"]) == (["need one"], "1")
    again = post("/api/topic-sets/NEW/topics/", {"topics": topics}, format="json")
    assert again.status_code == 400 and "T.1" in again.json()["detail"][0]
    bad = post("/api/topic-sets/NEW/topics/", {"topics": [{"topic_id": "a b"}]}, format="json")
    assert bad.status_code == 400 and "topics" in bad.json()
    assert post("/api/topic-sets/NEW/topics/", {"topics": []}, format="json").status_code == 400

    variants = [{"topic_id": "T.1", "raw": "Some  Query", "worker_id": "w1"},
                {"topic_id": "T.1", "raw": "some query", "count": 3}]
    response = post("/api/topic-sets/NEW/variants/", {"variants": variants}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["variants"] == 2
    listed = api().get("/api/topic-sets/NEW/variants/").json()["results"]
    assert [(v["normalised"], v["count"], v["source"]) for v in listed] == [
        ("some query", 1, "import"), ("some query", 3, "import")]
    unknown = post("/api/topic-sets/NEW/variants/", {"variants": [{"topic_id": "T.9", "raw": "q"}]},
                   format="json")
    assert unknown.status_code == 400 and "T.9" in unknown.json()["detail"][0]
    assert post("/api/topic-sets/NONE/variants/", {"variants": variants}, format="json").status_code == 404


def test_unknown_ids_are_404_naming_them(data, api):
    for url in ["/api/topic-sets/nope/", "/api/topic-sets/nope/topics/",
                "/api/topic-sets/UQV/topics/UQV100.999/", "/api/runs/999999/", "/api/runs/abc/",
                "/api/runs/abc/rankings/", "/api/pools/nope/", "/api/collections/nope/",
                "/api/judging-tasks/nope/", "/api/judgment-sets/nope/qrels/",
                "/api/evaluations/999999/", "/api/analyses/x/"]:
        response = api().get(url)
        assert response.status_code == 404, url
        assert "detail" in response.json()
    assert "UQV100.999" in api().get("/api/topic-sets/UQV/topics/UQV100.999/").json()["detail"]


def test_pages_are_bounded(data, api):
    first = api().get("/api/topic-sets/UQV/variants/?page_size=1").json()
    assert first["count"] == 4 and len(first["results"]) == 1 and first["next"]
    second = api().get(first["next"].replace("http://testserver", "")).json()
    assert second["results"] != first["results"]
    for query, field in (("page_size=501", "page_size"), ("page_size=0", "page_size"),
                         ("page_size=x", "page_size")):
        response = api().get(f"/api/topic-sets/UQV/variants/?{query}")
        assert response.status_code == 400 and field in response.json(), query
    assert api().get("/api/topic-sets/UQV/variants/?page=99").status_code == 404


def test_rankings_read_from_the_packed_arrays_to_a_bounded_depth(data, api):
    run = api().get("/api/runs/").json()["results"]
    r2 = next(r for r in run if r["tag"] == "r2")
    body = api().get(f"/api/runs/{r2['id']}/rankings/?depth=3&topic=UQV100.001").json()
    (ranking,) = body["results"]
    assert ranking["qid"] == "UQV100.001" and ranking["length"] == DOCS
    # r2 ranks d6..d1 with scores 99, 98, ...
    assert ranking["entries"] == [{"rank": r, "docid": f"UQV100.001-d{DOCS + 1 - r}", "score": 100.0 - r}
                                  for r in (1, 2, 3)]
    default = api().get(f"/api/runs/{r2['id']}/rankings/").json()["results"]
    assert [len(x["entries"]) for x in default] == [DOCS, DOCS]  # depth 10 > 6 stored
    for depth in ("0", "1001", "ten"):
        response = api().get(f"/api/runs/{r2['id']}/rankings/?depth={depth}")
        assert response.status_code == 400 and "depth" in response.json()


def test_qrels_export_is_the_judgment_sets_lines(data, api):
    body = api().get("/api/judgment-sets/nist/qrels/?kind=adhoc&aggregate=majority").json()
    assert [(ln["topic_id"], ln["intent_id"], ln["docid"], ln["grade"]) for ln in body["lines"]] == [
        (t, "0", f"{t}-d{d}", int(d <= 2)) for t in TOPICS for d in range(1, DOCS + 1)]
    text = api().get("/api/judgment-sets/nist/qrels/", HTTP_ACCEPT="text/plain")
    assert text["Content-Type"].startswith("text/plain")
    assert text.content.decode() == "".join(f"{t} 0 {t}-d{d} {int(d <= 2)}\n"
                                            for t in TOPICS for d in range(1, DOCS + 1))
    missing = api().get("/api/judgment-sets/nope/qrels/", HTTP_ACCEPT="text/plain")
    assert missing.status_code == 404 and "nope" in missing.content.decode()
    response = api().get("/api/judgment-sets/nist/qrels/?kind=diversity")
    assert response.status_code == 400 and "per-intent" in response.json()["detail"][0]
    response = api().get("/api/judgment-sets/nist/qrels/?kind=trec")
    assert response.status_code == 400 and "kind" in response.json()
    response = api().get("/api/judgment-sets/nist/qrels/?aggregate=vote")
    assert response.status_code == 400
    judgments = api().get("/api/judgment-sets/nist/judgments/?topic=UQV100.002").json()
    assert judgments["count"] == DOCS


def test_creating_a_run_queues_retrieval_through_the_service(data, api, django_capture_on_commit_callbacks):
    from retrieval.models import Run, RunChunk

    with django_capture_on_commit_callbacks() as callbacks:
        response = api("staff").post("/api/runs/", {"topic_set": "UQV", "collection": "c1", "model": "bm25",
                                                    "source": "variants", "depth": 100}, format="json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert (run.status, run.source, run.total) == ("queued", "variants", 4)
    assert RunChunk.objects.filter(run=run).count() == len(callbacks) == 1
    assert api().get(f"/api/runs/{run.pk}/").json()["status"] == "queued"


def test_bad_writes_are_400_naming_the_field(data, api):
    post = api("staff").post
    cases = [
        ("/api/runs/", {"topic_set": "nope", "collection": "c1", "model": "bm25"}, "topic_set"),
        ("/api/runs/", {"topic_set": "UQV", "collection": "c1", "model": "bm99"}, "model"),
        ("/api/runs/", {"topic_set": "UQV", "collection": "c1", "model": "bm25", "depth": 0}, "depth"),
        ("/api/runs/", {"topic_set": "UQV", "collection": "c1", "model": "bm25", "source": "x"}, "source"),
        ("/api/pools/", {"topic_set": "UQV", "sources": "systems"}, "detail"),  # depth strategy, no depth
        ("/api/pools/", {"topic_set": "UQV", "sources": "everyone", "depth": 5}, "sources"),
        ("/api/pools/", {"topic_set": "UQV", "sources": "systems", "depth": 5, "name": "p"}, "detail"),
        ("/api/judging-tasks/", {"name": "t2", "pool": "nope"}, "pool"),
        ("/api/judging-tasks/", {"name": "t2", "pool": "p", "scale": "nine"}, "detail"),
        ("/api/judging-tasks/", {"name": "jt", "pool": "p", "mode": "topic"}, "detail"),
        ("/api/evaluations/", {"topic_set": "UQV", "judgments": "nist", "measures": "XYZ@3"}, "measures"),
        ("/api/evaluations/", {"topic_set": "UQV"}, "judgments"),
        ("/api/evaluations/", {"topic_set": "UQV", "judgments": "nist", "runs": ["r9"]}, "runs"),
        ("/api/studies/", {"name": "s", "topic_set": "UQV", "consent_text": "ok"}, "completion_code"),
    ]
    for url, body, field in cases:
        response = post(url, body, format="json")
        assert response.status_code == 400, (url, body, response.content)
        assert field in response.json(), (url, body, response.json())
    assert "a pool named 'p' already exists" in post(
        "/api/pools/", {"topic_set": "UQV", "sources": "systems", "depth": 5, "name": "p"},
        format="json").json()["detail"][0]
    response = api("staff").post("/api/runs/", "{not json", content_type="application/json")
    assert response.status_code == 400


def test_text_the_database_cannot_store_is_400_not_a_server_error(data, api):
    """Found by schemathesis: a NUL in a name reached PostgreSQL ("text fields cannot
    contain NUL") and came back as a 500."""
    post = api("staff").post
    for body in ({"name": "t\u0000", "pool": "p"}, {"name": "t", "pool": "p\u0000x"}):
        response = post("/api/judging-tasks/", json.dumps(body), content_type="application/json")
        assert response.status_code == 400, response.content
        assert "NUL" in response.json()["detail"], response.json()
    lone = '{"topic_set": "UQV", "collection": "\\udb63", "model": "bm25"}'
    response = post("/api/runs/", lone, content_type="application/json")
    assert response.status_code == 400 and "collection" in response.json()["detail"]
    response = api("staff").get("/api/pools/p%00x/")
    assert response.status_code in (400, 404), response.content


def test_pool_and_judging_task_through_the_services(data, api, django_capture_on_commit_callbacks):
    from pooling.models import Pool

    with django_capture_on_commit_callbacks() as callbacks:
        response = api("staff").post("/api/pools/", {"topic_set": "UQV", "sources": "systems", "depth": 2,
                                                     "name": "p2"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "queued" and len(callbacks) == 1  # the build is queued
    from pooling.services import pool_build

    pool_build(Pool.objects.get(name="p2").pk)  # what the worker does
    docs = api().get("/api/pools/p2/documents/?topic=UQV100.001").json()["results"]
    # depth 2 of r1 (d1, d2) and r2 (d6, d5)
    assert sorted(d["docid"] for d in docs) == [f"UQV100.001-d{d}" for d in (1, 2, 5, 6)]
    response = api("staff").post("/api/judging-tasks/", {"name": "t2", "pool": "p2", "mode": "topic",
                                                         "redundancy": 2, "assessors": ["ann"]},
                                 format="json")
    assert response.status_code == 201, response.content
    task = api().get("/api/judging-tasks/t2/").json()
    assert (task["pool"], task["items_count"], task["assessors"]) == ("p2", 8, ["ann"])
    assert task["progress"]["total"] == {"items": 8, "slots": 16, "done": 0, "leased": 0, "remaining": 16}
    response = api().get("/api/pools/p2/documents/")
    assert response.status_code == 400 and "topic" in response.json()


def test_an_evaluation_on_request_gives_the_measures(data, api, django_capture_on_commit_callbacks):
    from evaluation.services import analysis_run

    with django_capture_on_commit_callbacks() as callbacks:
        response = api("staff").post("/api/evaluations/", {"topic_set": "UQV", "judgments": "nist",
                                                           "measures": "AP P@2"}, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["status"] == "queued" and created["params"]["tags"] == ["r1", "r2"] and len(callbacks) == 1
    analysis_run(created["id"])  # what the worker does
    body = api().get(f"/api/evaluations/{created['id']}/").json()
    assert body["status"] == "done", body["error"]
    text = json.dumps(body["result"])
    assert "r1" in text and "r2" in text
    means = _means(body["result"])
    # relevant: d1, d2 of each topic. r1 ranks them 1, 2: AP 1; r2 ranks them 5, 6:
    # AP = (1/5 + 2/6) / 2; P@2 is 1 and 0.
    assert means["r1"]["AP"] == pytest.approx(1.0) and means["r1"]["P@2"] == pytest.approx(1.0)
    assert means["r2"]["AP"] == pytest.approx((1 / 5 + 2 / 6) / 2) and means["r2"]["P@2"] == 0
    assert api().get("/api/analyses/?kind=evaluate").json()["count"] == 1


def _means(result) -> dict:
    """``{tag: {measure: mean}}`` from an evaluate result (``{"runs": {tag: {"mean": …}}}``)."""
    return {tag: run["mean"] for tag, run in result["runs"].items()}


def test_studies_are_created_through_the_service(data, api):
    response = api("staff").post("/api/studies/", {
        "name": "pilot", "topic_set": "UQV", "consent_text": "I agree.", "completion_code": "C0DE",
        "statements_per_worker": 2}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["statements_per_worker"] == 2 and body["entry_url"].endswith(f"/crowd/s/{body['slug']}/")
    from crowd.models import StudyItem

    assert StudyItem.objects.filter(study_id=body["id"]).count() == len(TOPICS)  # one per statement
    assert api("staff").get(f"/api/studies/{body['id']}/").json()["name"] == "pilot"


def test_create_api_token_command(tokens, capsys):
    call_command("create_api_token", "organiser")
    assert capsys.readouterr().out.strip() == tokens["staff"]
    call_command("create_api_token", "organiser", "--rotate")
    new = capsys.readouterr().out.strip()
    assert new and new != tokens["staff"]
    with pytest.raises(CommandError, match="no account named 'ghost'"):
        call_command("create_api_token", "ghost")


def test_schema_is_valid_openapi_3(db, client):
    from openapi_spec_validator import validate

    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    validate(schema)
    assert "/api/runs/{id}/rankings/" in schema["paths"]
    assert "TokenAuth" in json.dumps(schema["components"]["securitySchemes"]) or \
        "tokenAuth" in schema["components"]["securitySchemes"]
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


def test_docs_pages_fetch_nothing_from_elsewhere(db, client):
    for url in ("/api/docs/",):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        external = re.findall(r"""(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""", html)
        external += re.findall(r"""["']((?:https?:)?//(?!testserver)[^"']+\.(?:js|css))["']""", html)
        assert external == [], (url, external)
        assert "/static/drf_spectacular_sidecar/" in html


def test_list_queries_do_not_grow_with_the_page(data, api, django_assert_max_num_queries):
    from topics.models import QueryVariant, Topic

    topic = Topic.objects.get(topic_set__name="UQV", topic_id="UQV100.001")
    QueryVariant.objects.bulk_create([QueryVariant(topic=topic, raw=f"q{n}", normalised=f"q{n}")
                                      for n in range(60)])
    run = api().get("/api/runs/").json()["results"][0]["id"]
    for url in ("/api/topic-sets/UQV/variants/?page_size=60", "/api/topic-sets/UQV/topics/",
                f"/api/runs/{run}/rankings/?depth=5", "/api/runs/", "/api/pools/",
                "/api/judging-tasks/", "/api/judgment-sets/nist/judgments/?page_size=12"):
        with django_assert_max_num_queries(8):
            assert api().get(url).status_code == 200, url
