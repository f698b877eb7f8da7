"""The evaluation pages' significance agreement, per-topic τ between intents and subsampling
τ: the analysis a page runs (the task function itself) gives the numbers the commands print
with --json on the same stored runs and judgments, and the page shows them with figures."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from evaluation import reports
from tests.evaluation.test_pages import _run, _submit, small, staff  # noqa: F401 (fixtures)
from tests.evaluation.test_variability import SYSTEMS

pytestmark = pytest.mark.django_db


def _command(*args) -> dict:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def _evaluation_file(path, judgments, measure):
    tags = [a for tag in sorted(SYSTEMS) for a in ("--tag", tag)]
    result = _command("evaluate", "--topic-set", "small", *tags, "--judgments", judgments, "--measures", measure,
                      "--complete")
    path.write_text(json.dumps(result))
    return str(path)


def _run_files(tmp_path) -> list[str]:
    """The stored system runs as TREC run files (the scores the fixture stores: n − rank)."""
    paths = []
    for tag, per in SYSTEMS.items():
        path = tmp_path / f"{tag}.run"
        path.write_text("".join(f"{t} Q0 {d} {r} {len(docs) - r + 1} {tag}\n"
                                for t, docs in per.items() for r, d in enumerate(docs, 1)))
        paths.append(str(path))
    return paths


def test_rank_correlation_page_significance_equals_the_command(staff, small, tmp_path,  # noqa: F811
                                                                django_capture_on_commit_callbacks):
    analysis = _submit(staff, "rank_correlation", {
        "topic_set": "small", "source": "judgments:nist", "source_b": "judgments:other", "measure": "P@2",
        "significance": "on", "trials": "200", "seed": "7", "alpha": "0.5"}, django_capture_on_commit_callbacks)
    assert analysis.params["significance"] is True and analysis.params["trials"] == 200
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    expected = _command("rank_correlation", _evaluation_file(tmp_path / "a.json", "nist", "P@2"),
                        _evaluation_file(tmp_path / "b.json", "other", "P@2"), "--significance",
                        "--trials", "200", "--seed", "7", "--alpha", "0.5")
    got = analysis.result
    assert got["significance"] == expected["significance"]
    for key in ("systems", "tau_b", "tau_ap", "tau_ap_a", "tau_ap_b"):
        assert got[key] == expected[key]
    s = got["significance"]
    assert (s["trials"], s["seed"], s["pairs"]) == (200, 7, 3)
    assert s["TR"] + s["PS"] > 0  # the comparison is not of two empty sets
    assert s["TR-PS"] + s["TR&PS"] == s["TR"] and s["PS-TR"] + s["TR&PS"] == s["PS"]
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Significance agreement: randomised two-sided Tukey HSD, B = 200, seed 7" in page
    assert page.count("<svg") == 2
    csv = staff.get(f"/evaluation/analyses/{analysis.pk}/figures/significance.csv").content.decode().splitlines()
    assert csv == ["set,pairs"] + [f"{k},{s[k]}" for k in ("TR", "PS", "TR-PS", "TR&PS", "PS-TR")]
    table = staff.get(f"/evaluation/analyses/{analysis.pk}/tables/1.csv").content.decode().splitlines()
    assert table[0] == "systems,pairs,TR,PS,TR-PS,TR&PS,PS-TR,opposite"


def test_rank_correlation_without_significance_runs_no_test(staff, small,  # noqa: F811
                                                            django_capture_on_commit_callbacks):
    analysis = _run(_submit(staff, "rank_correlation", {"topic_set": "small", "source": "judgments:nist",
                                                        "source_b": "judgments:other", "measure": "P@2"},
                                                       django_capture_on_commit_callbacks))
    assert "significance" not in analysis.params and "significance" not in analysis.result
    r = staff.post("/evaluation/new/rank_correlation/", {"topic_set": "small", "source": "judgments:nist",
                                                         "source_b": "judgments:other", "measure": "P@2",
                                                         "significance": "on", "trials": "5"})
    assert r.status_code == 200 and "greater than or equal to 100" in r.content.decode()


def test_variance_page_intent_taus_and_subsampling_equal_the_commands(staff, small, tmp_path,  # noqa: F811
                                                                      django_capture_on_commit_callbacks):
    analysis = _submit(staff, "variance", {
        "topic_set": "small", "source": "qrels:div", "measure": "P@2", "intent_taus": "on", "subsample": "on",
        "fractions": "0.5, 1", "repeats": "6", "seed": "3", "budget": "6"}, django_capture_on_commit_callbacks)
    assert analysis.params["fractions"] == [0.5, 1.0] and analysis.params["repeats"] == 6
    analysis = _run(analysis)
    assert analysis.status == "done", analysis.error
    got = analysis.result
    runs = [a for p in _run_files(tmp_path) for a in ("--run", p)]
    scores = tmp_path / "scores.tsv"
    expected = _command("variance_components", *runs, "--qrels", str(small / "div.txt"), "--measure", "P@2",
                        "--subsample", "--fractions", "0.5,1", "--repeats", "6", "--seed", "3",
                        "--save-scores", str(scores))
    assert got["subsample"] == expected["subsample"]
    assert {row["kind"] for row in got["subsample"]} == {"queries", "intents", "merged"}
    for model in ("model1", "model2", "model3"):
        assert got[model] == pytest.approx(expected[model])
    per_topic = _command("rank_correlation", "--intent-scores", str(scores))["per_topic"]
    assert got["per_topic"] == per_topic and per_topic  # every topic has two intents
    page = staff.get(f"/evaluation/analyses/{analysis.pk}/").content.decode()
    assert "Per topic: Kendall&#x27;s τ_b between the system orderings" in page
    assert "Subsampled collections" in page and "fewer intents (merged)" in page
    assert 'id="figure-intent-taus"' in page and 'id="figure-subsample"' in page
    _, plots = reports.present("variance", got)
    assert sorted(plots) == ["allocation", "intent-taus", "subsample"]
    for plot in plots.values():  # each figure draws its own title
        assert plot.figure().axes[0].get_title() == plot.title
    rows = plots["intent-taus"].rows
    assert len(rows) == 3 * len(per_topic)
    means = [r["tau"] for r in rows if r["statistic"] == "mean"]
    assert means == sorted(means)
    csv = staff.get(f"/evaluation/analyses/{analysis.pk}/figures/subsample.csv").content.decode().splitlines()
    assert csv[0] == "fraction,kind,tau,sd,repeats" and len(csv) == 1 + len(got["subsample"])
    assert staff.get(f"/evaluation/analyses/{analysis.pk}/figures/intent-taus.png")["Content-Type"] == "image/png"


def test_variance_form_refuses_bad_fractions(staff, small):  # noqa: F811
    r = staff.post("/evaluation/new/variance/", {"topic_set": "small", "source": "qrels:div", "measure": "P@2",
                                                 "subsample": "on", "fractions": "0.5,1.5"})
    assert r.status_code == 200 and "each in (0, 1]" in r.content.decode()
