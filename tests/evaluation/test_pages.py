"""Evaluation pages: staff only; a form records an analysis and queues it on commit; the
Celery task function (called directly, not in eager mode) runs it once; the page shows
progress, the tables and figures, or the error; downloads have the right types."""
from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from evaluation import reports, services
from evaluation.models import Analysis
from evaluation.ranking import correlations
from evaluation.tasks import analysis_run_task
from evaluation.variability import variability
from judging.services import judgments_import
from judging.services import qrels_import
from tests.evaluation.test_variability import SYSTEM_P2, build

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = User.objects.create_user("org", password="pw", is_staff=True)
    client.force_login(user)
    return client


@pytest.fixture
def small(tmp_path):
    build(tmp_path)
    # diversity qrels: two intents per topic (for variance components)
    div = tmp_path / "div.txt"
    div.write_text("".join(f"{t} {i} d{d} {int((d + i + int(t)) % 3 == 0)}\n"
                           for t in ("1", "2", "3") for i in (1, 2) for d in range(1, 7)))
    qrels_import(div, format="diversity", name="div")
    # a second adhoc judgment set: topic 1 finds d6 relevant instead of d2
    other = tmp_path / "other.txt"
    other.write_text("1 0 d1 1\n1 0 d6 1\n1 0 d2 0\n2 0 d3 1\n3 0 d4 1\n3 0 d5 1\n")
    judgments_import(other, format="adhoc", name="other", topic_set_name="small")
    # three assessors with intents (agreement, intent properties)
    labels = tmp_path / "labels.tsv"
    grades = {"a": [1, 1, 0, 0, 1, 0], "b": [1, 0, 0, 0, 1, 0], "c": [1, 1, 0, 1, 1, 0]}
    labels.write_text("".join(f"{t}\t{i}\td{d + 1}\t{a}\t{g[(d + i) % 6]}\n" for t in ("1", "2")
                              for i in (1, 2) for a, g in grades.items() for d in range(6)))
    judgments_import(labels, format="tsv", name="crowd")
    return tmp_path


def _submit(client, kind, data, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(f"/evaluation/new/{kind}/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    analysis = Analysis.objects.get()
    assert response["Location"] == f"/evaluation/analyses/{analysis.pk}/"
    assert analysis.status == "queued" and len(callbacks) == 1  # the wake-up, once committed
    return analysis


def _run(analysis):
    analysis_run_task(analysis.pk)  # the task function itself, in this process
    analysis.refresh_from_db()
    return analysis


def test_staff_only(client, small):
    for url in ("/evaluation/", "/evaluation/new/variability/"):
        assert client.get(url).status_code == 302
    user = User.objects.create_user("worker", password="pw")
    client.force_login(user)
    assert client.get("/evaluation/").status_code == 302
    a = services.analysis_create("variability", {"topic_set": "small"})
    assert client.get(f"/evaluation/analyses/{a.pk}/").status_code == 302


def test_index_lists_every_analysis_kind(staff, small):
    page = staff.get("/evaluation/").content.decode()
    assert '<a href="/evaluation/">Evaluation</a>' in page  # the navigation links the section
    for kind, _ in Analysis.KIND_CHOICES:
        assert f"/evaluation/new/{kind}/" in page
    assert staff.get("/evaluation/new/nope/").status_code == 404
    form = staff.get("/evaluation/new/variability/").content.decode()
    assert '<option value="judgments:nist">' in form and '<option value="qrels:nist-qrels">' in form
    assert '<option value="small">' in form


def test_variability_page_tables_figures_downloads(staff, small, django_capture_on_commit_callbacks):
    analysis = _submit(staff, "variability", {"topic_set": "small", "source": "judgments:nist",
                                              "measure": "P@2", "model": "bm25", "decompose": "on"},
                       django_capture_on_commit_callbacks)
    assert analysis.params == {"topic_set": "small", "judgments": "nist", "measure": "P@2", "model": "bm25",
                               "decompose": True}
    queued = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Queued" in queued and 'http-equiv="refresh"' in queued
    analysis = _run(analysis)
    assert analysis.status == "done" and analysis.progress == 1.0 and analysis.attempts == 1
    expected = json.loads(json.dumps(variability("small", measure="P@2", judgments="nist", model="bm25",
                                                 decompose=False)))
    assert analysis.result["decomposition"]["models"] == ["bm25", "sdm"]
    assert {k: v for k, v in analysis.result.items() if not k.startswith("decomposition")} == {
        k: v for k, v in expected.items() if not k.startswith("decomposition")}
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert page.count("<svg") == 2 and 'role="img"' in page and "refresh" not in page
    assert "Per topic: P@2 over user variants (bm25) and systems" in page
    assert '<td class="num">0.5000</td>' in page  # topic 1: sd over variants and systems
    # headings and components in words, the same in the table as in the figure; the CSV's
    # names stay on the headings' titles
    assert "<td>variant within topic</td>" in page and "<td>query_intent</td>" not in page
    assert '<th scope="col" title="sd_ratio in the CSV">SD ratio (variants / systems)</th>' in page
    assert '<th scope="col" title="variants_sd in the CSV">variants SD</th>' in page
    assert not re.search(r"<th[^>]*>[^<]*_[^<]*</th>", page)
    # parameters as a key/value list, not JSON
    assert '<dl class="stats" id="params">' in page and "<dt>topic set</dt><dd>small</dd>" in page
    assert "<dt>measure</dt><dd>P@2</dd>" in page and '{"' not in page
    base = f"/evaluation/analyses/{analysis.pk}/figures/spread"
    for fmt, ctype, magic in (("png", "image/png", b"\x89PNG"), ("pdf", "application/pdf", b"%PDF"),
                              ("svg", "image/svg+xml", b"<?xml")):
        r = staff.get(f"{base}.{fmt}")
        assert r.status_code == 200 and r["Content-Type"] == ctype and r.content.startswith(magic)
        assert r["Content-Disposition"] == f'attachment; filename="variability-{analysis.pk}-spread.{fmt}"'
    r = staff.get(f"{base}.csv")
    assert r["Content-Type"] == "text/csv; charset=utf-8"
    lines = r.content.decode().splitlines()
    assert lines[0] == "topic,kind,name,people,score" and "1,systems,sysC,,1.0" in lines
    assert len(lines) == 1 + 8 + sum(len(v) for v in SYSTEM_P2.values())
    assert staff.get(f"{base}.gif").status_code == 404
    assert staff.get(f"/evaluation/analyses/{analysis.pk}/figures/nope.png").status_code == 404
    table = staff.get(f"/evaluation/analyses/{analysis.pk}/tables/1.csv")
    assert table["Content-Type"] == "text/csv; charset=utf-8"
    assert table.content.decode().splitlines()[0].startswith("component,sd,share")
    r = staff.get(f"/evaluation/analyses/{analysis.pk}/result.json")
    assert r["Content-Type"] == "application/json" and json.loads(r.content) == analysis.result


def test_a_second_delivery_does_nothing(staff, small):
    analysis = services.analysis_create("variability", {"topic_set": "small", "judgments": "nist",
                                                        "measure": "P@2", "model": "bm25", "decompose": False})
    analysis = _run(analysis)
    finished = analysis.finished
    analysis = _run(analysis)
    assert (analysis.status, analysis.attempts, analysis.finished) == ("done", 1, finished)


def test_a_bad_parameter_fails_the_analysis_with_a_readable_error(staff, small):
    analysis = services.analysis_create("variability", {"topic_set": "small", "judgments": "nist",
                                                        "measure": "P@2"})
    analysis = _run(analysis)  # the task records the error and does not raise
    assert analysis.status == "failed"
    assert analysis.error.startswith("Topic set 'small' has variant rankings of more than one model")
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert 'role="alert"' in page and "choose one with --model" in page
    assert staff.get(f"/evaluation/analyses/{analysis.pk}/figures/spread.png").status_code == 404


def test_form_errors_name_the_field(staff, small):
    r = staff.post("/evaluation/new/variability/", {"topic_set": "small", "source": "", "measure": "P@2 AP"})
    page = r.content.decode()
    assert r.status_code == 200 and "give exactly one measure" in page
    assert "This field is required" in page  # the judgments
    r = staff.post("/evaluation/new/evaluate/", {"topic_set": "small", "source": "judgments:nist",
                                                 "measures": "XYZ@3", "order": "trec_eval"})
    assert r.status_code == 200 and "XYZ" in r.content.decode()
    assert not Analysis.objects.exists()


def test_evaluate_page(staff, small, django_capture_on_commit_callbacks):
    analysis = _submit(staff, "evaluate", {"topic_set": "small", "runs": ["small/sysA", "small/sysB"],
                                           "source": "qrels:nist-qrels", "measures": "P@2 AP",
                                           "order": "trec_eval"}, django_capture_on_commit_callbacks)
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    out = io.StringIO()
    call_command("evaluate", "--topic-set", "small", "--tag", "sysA", "--tag", "sysB", "--judgments", "nist",
                 "--measures", "P@2 AP", "--json", stdout=out)
    assert analysis.result["runs"] == json.loads(out.getvalue())["runs"]
    assert analysis.result["runs"]["sysA"]["mean"]["P@2"] == pytest.approx((.5 + .5 + 1) / 3)
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Mean over topics" in page and "<svg" in page and '<td class="num">0.6667</td>' in page
    r = staff.get(f"/evaluation/analyses/{analysis.pk}/tables/0.csv")
    assert r.content.decode().splitlines()[1] == f"sysA,{2 / 3!r},{analysis.result['runs']['sysA']['mean']['AP']!r}"


def test_evaluate_refuses_runs_of_another_topic_set(staff, small):
    r = staff.post("/evaluation/new/evaluate/", {"topic_set": "small", "runs": ["elsewhere/x"],
                                                 "source": "judgments:nist", "measures": "AP", "order": "trec_eval"})
    assert r.status_code == 200 and "Select a valid choice" in r.content.decode()


def _options(page: str) -> set[str]:
    return set(re.findall(r'<option value="([^"]*)"', page))


def test_judgment_menus_offer_the_chosen_topic_sets_own(staff, small):
    """Once a topic set is chosen (preset by a link, submitted, or read from the runs
    submitted) the menus of judgments list only its judgment sets, as a project's page
    does, and another topic set's is refused naming both; before, they list every one."""
    from topics.services import topics_import
    from topics.topicfiles import TopicRecord

    topics_import("far", [TopicRecord("1", title="elsewhere")])
    theirs = small / "theirs.txt"
    theirs.write_text("1 0 d1 1\n")
    qrels_import(theirs, format="adhoc", name="theirs", topic_set_name="far")
    # topic 1 only: both "small" and "far" hold it, so the import chose no topic set
    judgments_import(theirs, format="adhoc", name="loose")
    everything = _options(staff.get("/evaluation/new/evaluate/").content.decode())
    assert {"judgments:nist", "qrels:nist-qrels", "qrels:theirs", "judgments:loose"} <= everything
    own = _options(staff.get("/evaluation/new/evaluate/?topic_set=small").content.decode())
    # crowd: imported without --topic-set, its topics are held by "small" alone
    assert {"judgments:nist", "judgments:other", "qrels:nist-qrels", "qrels:div",
            "judgments:crowd"} <= own
    assert "qrels:theirs" not in own and "judgments:loose" not in own  # loose: no topic set
    far = _options(staff.get("/evaluation/new/variability/?topic_set=far").content.decode())
    assert "qrels:theirs" in far and "judgments:nist" not in far
    r = staff.post("/evaluation/new/evaluate/", {"topic_set": "small", "source": "qrels:theirs",
                                                 "measures": "AP", "order": "trec_eval"})
    page = r.content.decode()
    assert r.status_code == 200
    assert "judgment set &#x27;theirs&#x27; is of topic set &#x27;far&#x27;, not of &#x27;small&#x27;" in page
    assert "qrels:theirs" not in _options(page)  # the menu shown again is narrowed too
    r = staff.post("/evaluation/new/rank_correlation/", {"topic_set": "small", "source": "judgments:nist",
                                                         "source_b": "judgments:loose", "measure": "AP"})
    assert "judgment set &#x27;loose&#x27; belongs to no topic set" in r.content.decode()
    r = staff.post("/evaluation/new/variability/", {"topic_set": "small", "source": "qrels:nope", "measure": "AP"})
    assert "no judgment set &#x27;nope&#x27; of topic set &#x27;small&#x27;" in r.content.decode()
    # no topic set submitted, but runs of one: that topic set's judgment sets
    r = staff.post("/evaluation/new/evaluate/", {"runs": ["small/sysA"], "source": "qrels:theirs",
                                                 "measures": "AP", "order": "trec_eval"})
    page = r.content.decode()
    assert "is of topic set &#x27;far&#x27;, not of &#x27;small&#x27;" in page
    assert "judgments:nist" in _options(page) and "qrels:theirs" not in _options(page)
    # intent properties: all without a topic set, the chosen one's with it
    assert "theirs" in _options(staff.get("/evaluation/new/intents/").content.decode())
    r = staff.post("/evaluation/new/intents/", {"judgments": "theirs", "topic_set": "small", "alpha": "0.5",
                                                "beta": "0.5", "similarity": "jaccard"})
    page = r.content.decode()
    assert "judgment set &#x27;theirs&#x27; is of topic set &#x27;far&#x27;, not of &#x27;small&#x27;" in page
    assert "theirs" not in _options(page) and "nist" in _options(page)
    assert not Analysis.objects.exists()


def test_rank_correlation_page(staff, small, django_capture_on_commit_callbacks):
    analysis = _submit(staff, "rank_correlation", {"topic_set": "small", "source": "judgments:nist",
                                                   "source_b": "judgments:other", "measure": "P@2"},
                       django_capture_on_commit_callbacks)
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    r = analysis.result
    first = {s["system"]: s["first"] for s in r["scores"]}
    assert first == {"sysA": pytest.approx(2 / 3), "sysB": pytest.approx(1 / 6), "sysC": pytest.approx(0.5)}
    second = {s["system"]: s["second"] for s in r["scores"]}
    assert r["tau_b"] == correlations(first, second)["tau_b"]
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "tau_b" in page and "<svg" in page
    assert staff.get(f"/evaluation/analyses/{analysis.pk}/figures/scores.pdf")["Content-Type"] == "application/pdf"


def test_variance_page_has_the_allocation_plot(staff, small, django_capture_on_commit_callbacks):
    analysis = _submit(staff, "variance", {"topic_set": "small", "source": "qrels:div", "measure": "P@2",
                                           "budget": "12"}, django_capture_on_commit_callbacks)
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    r = analysis.result
    assert [(a["queries"], a["intents"]) for a in r["allocation"]] == [(12, 1), (6, 2), (4, 3), (3, 4),
                                                                      (2, 6), (1, 12)]
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Variance of the mean for N queries × M intents, N·M = 12" in page
    csv_lines = staff.get(f"/evaluation/analyses/{analysis.pk}/figures/allocation.csv").content.decode().splitlines()
    assert csv_lines[0] == "intents,queries,quantity,variance"
    tables, plots = reports.present("variance", r)
    assert len(csv_lines) == 1 + len(plots["allocation"].rows)


def test_agreement_and_intents_pages(staff, small, django_capture_on_commit_callbacks):
    analysis = _submit(staff, "agreement", {"judgments": "crowd", "relevant_from": "1"},
                       django_capture_on_commit_callbacks)
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    from evaluation import analysis as analyses

    assert analysis.result == json.loads(json.dumps(analyses.agreement_report(
        analyses.labels_from_judgments("crowd"))))
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Per intent" in page and "fleiss_kappa" in page
    Analysis.objects.all().delete()
    analysis = _submit(staff, "intents", {"judgments": "crowd", "user_judgments": "crowd", "alpha": "0.5",
                                          "beta": "0.5", "similarity": "jaccard"},
                       django_capture_on_commit_callbacks)
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Intents" in page and "<svg" in page
    r = staff.get(f"/evaluation/analyses/{analysis.pk}/figures/beta-curves.png")
    assert r["Content-Type"] == "image/png"


def test_reconciler_requeues_a_dead_workers_analysis_and_wakes_a_lost_message(small,
                                                                             django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from jobs.tasks import reconcile_all_task

    params = {"topic_set": "small", "judgments": "nist", "measure": "P@2", "model": "bm25", "decompose": False}
    lost = services.analysis_create("variability", params)
    dead = services.analysis_create("variability", params)
    long_ago = timezone.now() - timedelta(hours=1)
    Analysis.objects.filter(pk=lost.pk).update(woken=long_ago)
    Analysis.objects.filter(pk=dead.pk).update(status="running", holder="elsewhere:1", attempts=1,
                                               lease_expires=long_ago)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        counts = reconcile_all_task()
    assert counts["analyses"] == {"requeued": 1, "failed": 0, "woken": 1} and len(callbacks) == 2
    dead.refresh_from_db()
    assert dead.status == "queued" and "expired" in dead.error
    assert _run(dead).status == "done"


def test_no_tags_means_every_system_run_of_the_topic_set(small):
    analysis = services.analysis_create("evaluate", {"topic_set": "small", "tags": [], "judgments": "nist",
                                                     "measures": "P@2"})
    assert sorted(_run(analysis).result["runs"]) == ["sysA", "sysB", "sysC"]


def test_result_names_read_as_headings_and_parameters_as_a_list():
    assert reports.heading("variants_sd") == "variants SD"
    assert reports.heading("krippendorff_alpha.ordinal") == "Krippendorff's α (ordinal)"
    assert reports.heading("P@10") == "P@10" and reports.heading("topic") == "topic"
    assert reports.heading("sd_ratio") == "SD ratio (variants / systems)"
    assert reports.param_rows({"tags": ["a", "b"], "complete": False, "qrels": "q",
                               "judgments": "", "order": None}) == [
        ("complete", "no"), ("qrels", "q"), ("tags", "a, b")]
    table = reports.Table("t", ["component", "sd_query"], [], {"sd_query": "SD topic"})
    assert table.heads() == [("component", "component"), ("sd_query", "SD topic")]
