"""Shared set-up for the study tests: a small topic set and a worker's path through it."""
from crowd.models import Participant
from crowd.services import study_create
from topics.models import Statement, Topic, TopicSet

ATTENTION = ("Ignore the description and type the word purple.", "purple")


def make_topic_set(n=6, name="ts"):
    ts = TopicSet.objects.create(name=name)
    for i in range(1, n + 1):
        t = Topic.objects.create(topic_set=ts, topic_id=f"UQV100.{i:03d}", title=f"topic title {i}")
        Statement.objects.create(
            topic=t, position=0,
            text=f"Statement number {i}: you want to learn about subject {i} for a school project.",
        )
    return ts


def make_study(ts=None, *, attention=True, **options):
    ts = ts or make_topic_set()
    defaults = dict(responses_per_statement=3, statements_per_worker=2, min_seconds_per_answer=0)
    defaults.update(options)
    return study_create(
        topic_set=ts, name="Study", consent_text="Consent: you agree.", completion_code="C0DE-1234",
        attention_checks=[ATTENTION] if attention else [], **defaults,
    )


def entry_url(study):
    return f"/crowd/s/{study.slug}/"


def arrive(client, study, pid, **extra):
    params = {"PROLIFIC_PID": pid, "STUDY_ID": "st", "SESSION_ID": "se"}
    params.update(extra)
    return client.get(entry_url(study), params, follow=True)


def consent(client, study):
    return client.post(f"/crowd/s/{study.slug}/consent/", {"agree": "on"}, follow=True)


def participant(study, pid) -> Participant:
    return Participant.objects.get(study=study, worker_id=pid)


def answer_for(assignment, pid):
    if assignment.item.kind == "attention":
        return "purple"
    return f"query {assignment.item.statement.topic.topic_id} by {pid}"


def item_url(study, position):
    return f"/crowd/s/{study.slug}/q/{position}/"


def finish(client, study, pid, answer=answer_for, estimate=None):
    """Answer every item of worker ``pid`` through the views; returns the last response."""
    p = participant(study, pid)
    r = None
    for a in p.assignments.select_related("item__statement__topic").order_by("position"):
        data = {"query": answer(a, pid)}
        if estimate is not None:
            data["estimate"] = estimate
        r = client.post(item_url(study, a.position), data, follow=True)
    return r
