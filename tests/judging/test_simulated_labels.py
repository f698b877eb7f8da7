"""Labels the demo's simulated assessor gives are flagged in the database (as crowd's
simulated workers are), come out flagged in the raw export and the API, and a person's
labels are not."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from judging import services
from judging.models import Label

from .conftest import make_pool

pytestmark = pytest.mark.django_db


def test_a_demo_like_submit_is_flagged_and_a_persons_is_not(tmp_path, django_user_model):
    from rest_framework.test import APIClient

    task = services.judging_task_create(pool=make_pool(tmp_path, topics=("1",)), name="t",
                                        mode="topic", redundancy=2, batch=1)
    # as projects.demo's step 8 does
    sim = services.batch_lease(task, "sim-assessor")[0]
    services.judgment_submit(task, "sim-assessor", sim.item_id, {"": 1},
                             submit_key=f"sim-{sim.slot_id}", simulated=True)
    ann = services.batch_lease(task, "ann")[0]
    assert ann.item_id == sim.item_id  # the same document, judged by a person too
    services.judgment_submit(task, "ann", ann.item_id, {"": 0}, submit_key="ann-1")
    services.judgment_submit(task, "ann", ann.item_id, {"": 1}, submit_key="ann-2")  # revision
    assert sorted(Label.objects.filter(judgment_set=task.judgment_set).values_list(
        "assessor", "revision", "simulated")) == [
        ("ann", 1, False), ("ann", 2, False), ("sim-assessor", 1, True)]
    # a retried simulated submit writes nothing and returns the flagged label
    again = services.judgment_submit(task, "sim-assessor", sim.item_id, {"": 1},
                                     submit_key=f"sim-{sim.slot_id}", simulated=True)
    assert [lab.simulated for lab in again] == [True]

    out = tmp_path / "raw.tsv"
    call_command("export_qrels", "--judgments", "t", "--format", "raw", "--out", str(out),
                 stdout=StringIO())
    header, *lines = (line.split("\t") for line in out.read_text().splitlines())
    assert header[-1] == "simulated"
    rows = [dict(zip(header, line)) for line in lines]
    assert [(r["assessor"], r["revision"], r["simulated"]) for r in rows] == [
        ("sim-assessor", "1", "1"), ("ann", "1", "0"), ("ann", "2", "0")]

    api = APIClient()
    # an organiser: an assessor's token reads only their own labels (common.roles)
    api.force_authenticate(django_user_model.objects.create_user("u", password="pw", is_staff=True))
    got = api.get("/api/judgment-sets/t/judgments/").json()["results"]  # those that count
    assert sorted((j["assessor"], j["revision"], j["simulated"]) for j in got) == [
        ("ann", 2, False), ("sim-assessor", 1, True)]
