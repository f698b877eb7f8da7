"""Simulated workers are flagged in the database (Participant.simulated), not only by
their ids: the demo's simulation sets the flag, a person arriving through the study link
never has it."""
import pytest

from crowd.models import Participant, Response
from crowd.services import studies as study_services, study_create
from crowd.simulated import content_words
from projects.demo import simulated_workers_answer
from topics.models import TopicSet
from topics.services import topics_import
from topics.topicfiles import TopicRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    topics_import("sim", [
        TopicRecord(topic_id="1", title="parallel sorting",
                    statements=("Find papers about sorting algorithms on parallel machines.",)),
        TopicRecord(topic_id="2", title="compilers",
                    statements=("Looking for optimising compilers of Fortran programs.",)),
    ])
    return study_create(topic_set=TopicSet.objects.get(name="sim"), name="sim study",
                        consent_text="ok", completion_code="C", responses_per_statement=3,
                        statements_per_worker=2, min_seconds_per_answer=0)


def test_the_simulation_flags_its_workers_and_a_person_is_not_flagged(study):
    person = study_services.participant_arrive(study=study, platform=Participant.PLATFORM_PROLIFIC,
                                               worker_id="5f1234567890abcdef123456")
    made = simulated_workers_answer(study, workers=2, seed=7)

    assert [(p.worker_id, p.simulated) for p in made] == [("sim-01", True), ("sim-02", True)]
    flags = dict(Participant.objects.filter(study=study).values_list("worker_id", "simulated"))
    assert flags == {"5f1234567890abcdef123456": False, "sim-01": True, "sim-02": True}
    person.refresh_from_db()
    assert person.simulated is False
    # the flag survives consent and answering: every answer of a flagged worker is stored
    answers = Response.objects.filter(assignment__participant__simulated=True)
    assert answers.count() == 4
    for r in answers.select_related("assignment__item__statement"):
        assert set(r.raw.split()) <= set(content_words(r.assignment.item.statement.text))
    assert not Response.objects.filter(assignment__participant__simulated=False).exists()


def test_participants_are_not_simulated_by_default(study):
    p = Participant.objects.create(study=study, platform=Participant.PLATFORM_ACCOUNT,
                                   worker_id="account:someone", session_token="t")
    assert Participant._meta.get_field("simulated").default is False
    assert Participant.objects.get(pk=p.pk).simulated is False


def test_organiser_pages_and_exports_say_which_workers_are_simulated(study, admin_client):
    from crowd import selectors

    simulated_workers_answer(study, workers=2, seed=7)
    page = admin_client.get(f"/crowd/studies/{study.pk}/").content.decode()
    assert '<strong id="simulated">(2 simulated)</strong>' in page
    assert "(2 simulated)" in admin_client.get("/crowd/studies/").content.decode()
    rows = list(selectors.study_export_rows(study))
    assert rows and all(row["simulated"] is True for row in rows)
