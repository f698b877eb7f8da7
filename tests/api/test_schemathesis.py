"""Property-based run of schemathesis against the live server on loopback.

Every operation of /api/schema/ gets generated requests (valid ones, invalid ones, and
valid ones aimed at the seeded objects), sent with a staff token so writes are exercised
too; every response must be no 5xx and must match the schema (status code, content type,
body). A name that passes the schema but names nothing (``{"topic_set": "0"}``) is a 400
naming the field, by the product's rule, so schemathesis's check that schema-valid data
is accepted is left out; every other check runs (schemathesis also resends requests
without the token and expects a 401).

Bounded and deterministic: ``MAX_EXAMPLES`` per operation, derandomised, no example
database, no shrinking. Workers are not woken: the wake-up functions are replaced, so
created runs, pools, evaluations and uploads stay queued rows.
"""
from __future__ import annotations

import pytest

from .seed import seed, users

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

MAX_EXAMPLES = 10


def _known_path_parameters(pool) -> dict[str, dict[str, str]]:
    """Path parameters of the seeded objects, by operation path."""
    from crowd.services import study_create
    from evaluation.services import analysis_create
    from retrieval.models import Run
    from topics.models import TopicSet
    from uploads.models import Upload

    study = study_create(topic_set=TopicSet.objects.get(name="UQV"), name="s", consent_text="ok",
                         completion_code="C")
    analysis = analysis_create("evaluate", {"topic_set": "UQV", "tags": ["r1"], "judgments": "nist",
                                            "measures": "AP"})
    run = Run.objects.filter(tag="r1").get()
    return {
        "/api/topic-sets/{name}/": {"name": "UQV"},
        "/api/topic-sets/{name}/topics/": {"name": "UQV"},
        "/api/topic-sets/{name}/topics/{topic_id}/": {"name": "UQV", "topic_id": "UQV100.001"},
        "/api/topic-sets/{name}/intents/": {"name": "UQV"},
        "/api/topic-sets/{name}/variants/": {"name": "UQV"},
        "/api/topic-sets/{name}/release/": {"name": "UQV"},
        "/api/collections/{name}/": {"name": "c1"},
        "/api/models/{name}/": {"name": "bm25"},
        "/api/runs/{id}/": {"id": str(run.pk)},
        "/api/runs/{id}/rankings/": {"id": str(run.pk)},
        "/api/pools/{ref}/": {"ref": pool.name},
        "/api/pools/{ref}/documents/": {"ref": str(pool.pk)},
        "/api/qrels/{name}/": {"name": "q"},
        "/api/judging-tasks/{name}/": {"name": "jt"},
        "/api/judgment-sets/{name}/": {"name": "nist"},
        "/api/judgment-sets/{name}/judgments/": {"name": "nist"},
        "/api/judgment-sets/{name}/qrels/": {"name": "nist"},
        "/api/studies/{id}/": {"id": str(study.pk)},
        "/api/analyses/{id}/": {"id": str(analysis.pk)},
        "/api/evaluations/{id}/": {"id": str(analysis.pk)},
        "/api/uploads/{id}/": {"id": str(Upload.objects.create(
            kind="topics", params={}, filename="t.tsv", path="t.tsv").pk)},
    }


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_no_server_errors_and_every_response_matches_the_schema(live_server, tmp_path, monkeypatch,
                                                                settings):
    monkeypatch.setattr("jobs.registry.wake", lambda kind, pk: None)  # no broker here
    settings.DATA_DIR = tmp_path / "data"  # uploaded files land here, not in the checkout
    data = seed(tmp_path)
    token = users()["staff"]
    known = _known_path_parameters(data["pool"])
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")
    headers = {"Authorization": f"Token {token}"}

    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        strategies = [operation.as_strategy(schemathesis.GenerationMode.POSITIVE),
                      operation.as_strategy(schemathesis.GenerationMode.NEGATIVE)]
        if operation.path in known:
            strategies.append(operation.as_strategy(schemathesis.GenerationMode.POSITIVE,
                                                    path_parameters=known[operation.path]))

        @given(case=st.one_of(strategies))
        @hypothesis_settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, deadline=None,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        def check(case):
            case.call_and_validate(base_url=live_server.url, headers=headers,
                                   excluded_checks=[positive_data_acceptance])

        try:
            check()
        except (Exception, BaseExceptionGroup) as exc:  # every operation's failures, reported together
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:3000])
    assert operations >= 30
    assert not failures, "\n\n".join(failures)
