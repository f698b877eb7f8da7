"""A judging task in sample mode through the API: organisers create it (with its budget,
strata and seed), assessors may not; a bad budget is a 400 naming it; the sampled set
exports TREC's prels."""
import json

import pytest

from judging.models import SampleDesign, SampleUnit

pytestmark = pytest.mark.django_db


def test_organisers_create_a_sampled_task_assessors_may_not(data, api):
    body = {"name": "st", "pool": "p", "mode": "sample", "scale": "binary", "sample_budget": "50%",
            "sample_strata": "depth:2", "sample_seed": 3}
    refused = api("plain").post("/api/judging-tasks/", json.dumps(body), content_type="application/json")
    assert refused.status_code == 403
    assert api(None).post("/api/judging-tasks/", json.dumps(body),
                          content_type="application/json").status_code in (401, 403)
    created = api("staff").post("/api/judging-tasks/", json.dumps(body), content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["mode"] == "sample"
    design = SampleDesign.objects.get(judgment_set__name="st")
    assert (design.strata, design.budget, design.seed) == ("depth:2", "50%", 3)
    units = SampleUnit.objects.filter(judgment_set__name="st")
    assert units.exists() and units.filter(drawn=True).count() == created.json()["items_count"]


@pytest.mark.parametrize("extra, word", [({"sample_budget": "x"}, "budget"),
                                         ({"sample_budget": "20%", "order": "mtf"}, "order"),
                                         ({}, "budget")])
def test_bad_sample_parameters_are_400(data, api, extra, word):
    body = {"name": "st", "pool": "p", "mode": "sample", **extra}
    response = api("staff").post("/api/judging-tasks/", json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    assert word in json.dumps(response.json())
