"""Organiser pages and exports, and the submit view's query budget."""
import csv
import io
import json

import pytest
from django.core.management import call_command
from django.test import Client

from crowd.models import Study
from tests.crowd.study_helpers import arrive, consent, finish, item_url, make_study, make_topic_set

pytestmark = pytest.mark.django_db


def _title_answer(a, pid):
    # worker W1 types the topic title, the others their own words
    if pid == "W1":
        return a.item.statement.topic.title.upper() + "!"
    return f"own words {a.item.statement.topic.topic_id} {pid}"


@pytest.fixture
def done_study():
    study = make_study(make_topic_set(2), attention=False, responses_per_statement=3,
                       statements_per_worker=2)
    for pid in ["W1", "W2", "W3"]:
        c = Client()
        arrive(c, study, pid)
        consent(c, study)
        finish(c, study, pid, answer=_title_answer)
    return study


def test_progress_page(done_study, admin_client):
    r = admin_client.get(f"/crowd/studies/{done_study.pk}/")
    body = r.content.decode()
    assert "completed 3" in body and "Answers: 6" in body
    assert "Median time per answer:" in body and f"/crowd/s/{done_study.slug}/" in body
    from crowd.selectors import study_progress

    p = study_progress(done_study)
    assert [it.n_answers for it in p["items"]] == [3, 3]
    assert [it.n_in_flight for it in p["items"]] == [0, 0]
    assert p["n_workers"] == 3 and p["median_seconds"] is not None


def test_variants_page_share_matching_title(done_study, admin_client):
    from crowd.selectors import study_variant_summary

    topics = study_variant_summary(done_study)
    assert [t["topic_id"] for t in topics] == ["UQV100.001", "UQV100.002"]
    for t in topics:
        assert t["total"] == 3 and t["title_matches"] == 1
        assert t["title_share"] == pytest.approx(1 / 3)
        assert [v[:2] for v in t["variants"]] == sorted(
            [(t["title_norm"], 1)] + [(f"own words {t['topic_id'].lower().replace('.', ' ')} {w}", 1)
                                      for w in ("w2", "w3")])
    r = admin_client.get(f"/crowd/studies/{done_study.pk}/variants/")
    assert b"title share 0.333 (1/3)" in r.content


def test_exports(done_study, admin_client):
    rows = json.loads(admin_client.get(f"/crowd/studies/{done_study.pk}/export.json").content)
    assert len(rows) == 6
    assert set(rows[0]) == {"topic", "variant_id", "worker", "raw", "normalised", "count", "estimate",
                           "uncorrected", "simulated"}
    assert not any(r["simulated"] for r in rows)  # people, not the demo's simulation
    assert [r["topic"] for r in rows] == ["UQV100.001"] * 3 + ["UQV100.002"] * 3
    assert all(isinstance(r["topic"], str) and r["count"] == 1 for r in rows)
    for fmt, delim in [("tsv", "\t"), ("csv", ",")]:
        r = admin_client.get(f"/crowd/studies/{done_study.pk}/export.{fmt}")
        text = b"".join(r.streaming_content).decode()
        parsed = list(csv.DictReader(io.StringIO(text), delimiter=delim))
        assert parsed[0].keys() == rows[0].keys()
        assert [dict(p) for p in parsed] == [{k: str(v) for k, v in row.items()} for row in rows]


def test_create_study_command(capsys):
    ts = make_topic_set(3, name="uqv")
    call_command("create_study", "uqv", "--name", "pilot", "--completion-code", "ABC",
                 "--consent", "We ask you to type queries.", "--responses", "4", "--per-worker", "2",
                 "--choices", "uqv100", "--question", "How many useful documents?",
                 "--attention", "Type the word purple.=purple", "--gold", "UQV100.003=subject 3|school project")
    study = Study.objects.get(name="pilot")
    kinds = sorted(study.items.values_list("kind", flat=True))
    assert kinds == ["attention", "gold", "statement", "statement"]
    assert study.question_choice_list() == ["0", "1", "2", "3-5", "6-10", "11-100", "101+"]
    assert f"/crowd/s/{study.slug}/?PROLIFIC_PID=" in capsys.readouterr().out
    assert ts.pk == study.topic_set_id
