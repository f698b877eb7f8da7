"""§2 user query variability: a small topic set with stored variant rankings (two models) and
system runs, scored with P@2 so every number is checked by hand."""
from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from evaluation import variance
from evaluation.variability import spread, variability
from judging.services import judgments_import
from judging.services import qrels_import
from retrieval.models import Ranking, RetrievalModel, Run, RunQuery
from retrieval.rankings import pack
from retrieval.services import docids_ensure
from topics.models import Topic, TopicSet

pytestmark = pytest.mark.django_db

QRELS = {"1": ["d1", "d2"], "2": ["d3"], "3": ["d4", "d5"]}  # relevant documents; d6 judged 0
# model -> topic -> label -> (people, ranking); P@2 in the comment
VARIANTS = {
    "bm25": {
        "1": {"v1": (3, ["d1", "d2", "d3"]),   # 1
              "v2": (1, ["d3", "d1"]),         # 0.5
              "v3": (1, ["d6", "d5"])},        # 0
        "2": {"v1": (2, ["d3", "d1"]),         # 0.5
              "v2": (1, ["d1", "d2"])},        # 0
        "3": {"v1": (1, ["d4", "d5"]),         # 1
              "v2": (1, ["d4", "d1"]),         # 0.5
              "v3": (1, ["d6", "d4"])},        # 0.5
    },
    "sdm": {
        "1": {"v1": (3, ["d1", "d6"]), "v2": (1, ["d2", "d1"]), "v3": (1, ["d6", "d5"])},  # .5 1 0
        "2": {"v1": (2, ["d3", "d2"]), "v2": (1, ["d3", "d1"])},                          # .5 .5
        "3": {"v1": (1, ["d5", "d4"]), "v2": (1, ["d1", "d2"]), "v3": (1, [])},           # 1 0 0
    },
}
SYSTEMS = {
    "sysA": {"1": ["d1", "d6"], "2": ["d3", "d4"], "3": ["d4", "d5"]},  # .5 .5 1
    "sysB": {"1": ["d6", "d5"], "2": ["d1", "d3"], "3": ["d6", "d1"]},  # 0 .5 0
    "sysC": {"1": ["d2", "d1"], "3": ["d5", "d6"]},                     # 1 - .5
}
P2 = {  # (model, topic, label) -> P@2, computed by hand from the lists above
    ("bm25", "1", "v1"): 1, ("bm25", "1", "v2"): .5, ("bm25", "1", "v3"): 0,
    ("bm25", "2", "v1"): .5, ("bm25", "2", "v2"): 0,
    ("bm25", "3", "v1"): 1, ("bm25", "3", "v2"): .5, ("bm25", "3", "v3"): .5,
    ("sdm", "1", "v1"): .5, ("sdm", "1", "v2"): 1, ("sdm", "1", "v3"): 0,
    ("sdm", "2", "v1"): .5, ("sdm", "2", "v2"): .5,
    ("sdm", "3", "v1"): 1, ("sdm", "3", "v2"): 0, ("sdm", "3", "v3"): 0,
}
SYSTEM_P2 = {"1": {"sysA": .5, "sysB": 0, "sysC": 1}, "2": {"sysA": .5, "sysB": .5},
             "3": {"sysA": 1, "sysB": 0, "sysC": .5}}


def _ranking(ids, docids):
    d, s = pack(np.array([ids[x] for x in docids], dtype=np.int64),
                np.array([float(len(docids) - i) for i in range(len(docids))]))
    return Ranking.objects.create(docids=d, scores=s, length=len(docids), depth=1000)


def build(tmp_path, models=("bm25", "sdm")):
    ids = docids_ensure([f"d{i}" for i in range(1, 7)])
    ts = TopicSet.objects.create(name="small")
    topics = {t: Topic.objects.create(topic_set=ts, topic_id=t, title=f"topic {t}") for t in QRELS}
    for name in models:
        run = Run.objects.create(kind=Run.KIND_RETRIEVAL, topic_set=ts, source="variants", status="done",
                                 model=RetrievalModel.objects.get(name=name))
        for topic, variants in VARIANTS[name].items():
            for label, (people, docids) in variants.items():
                RunQuery.objects.create(run=run, topic=topics[topic], label=label, query_text=label,
                                        weight=people, ranking=_ranking(ids, docids))
    for tag, per in SYSTEMS.items():
        run = Run.objects.create(kind=Run.KIND_SYSTEM, topic_set=ts, source="system", tag=tag, status="done")
        for topic, docids in per.items():
            RunQuery.objects.create(run=run, topic=topics[topic], label=tag, ranking=_ranking(ids, docids))
    lines = [f"{t} 0 d{i} {int(f'd{i}' in rel)}" for t, rel in QRELS.items() for i in range(1, 7)]
    path = tmp_path / "qrels.txt"
    path.write_text("\n".join(lines) + "\n")
    judgments_import(path, format="adhoc", name="nist", topic_set_name="small")
    qrels_import(path, format="adhoc", name="nist-qrels")
    return ts


def test_spread_summary_by_hand():
    s = spread([1, 0.5, 0])
    assert (s["n"], s["min"], s["q1"], s["median"], s["q3"], s["max"]) == (3, 0, 0.25, 0.5, 0.75, 1)
    assert s["sd"] == pytest.approx(0.5) and s["iqr"] == 0.5 and s["mean"] == 0.5
    assert spread([0.3])["sd"] is None and spread([])["n"] == 0


def test_scores_and_spreads_equal_the_hand_computed_values(tmp_path):
    build(tmp_path)
    r = variability("small", measure="P@2", judgments="nist", model="bm25", decompose=False)
    assert (r["measure"], r["model"], r["systems"]) == ("P@2", "bm25", ["sysA", "sysB", "sysC"])
    got = {(x["topic"], x["kind"], x["name"]): x["score"] for x in r["scores"]}
    want = {(t, "variant", lab): v for (m, t, lab), v in P2.items() if m == "bm25"}
    want.update({(t, "system", tag): v for t, per in SYSTEM_P2.items() for tag, v in per.items()})
    assert got == want
    people = {(x["topic"], x["name"]): x["people"] for x in r["scores"] if x["kind"] == "variant"}
    assert people[("1", "v1")] == 3 and people[("2", "v1")] == 2
    t1 = r["per_topic"][0]
    assert t1["topic"] == "1"
    assert t1["variants"]["sd"] == pytest.approx(0.5)                  # sd of 1, .5, 0
    assert t1["systems"]["sd"] == pytest.approx(0.5)                   # sd of .5, 0, 1
    t2 = r["per_topic"][1]
    assert t2["variants"]["sd"] == pytest.approx(math.sqrt(0.125))     # .5, 0
    assert t2["systems"]["sd"] == 0 and t2["sd_ratio"] is None
    t3 = r["per_topic"][2]
    assert t3["variants"]["sd"] == pytest.approx(np.std([1, .5, .5], ddof=1))
    assert t3["sd_ratio"] == pytest.approx(np.std([1, .5, .5], ddof=1) / 0.5)
    ov = r["overall"]
    assert (ov["topics"], ov["variants"], ov["systems"], ov["topics_compared"]) == (3, 8, 3, 3)
    assert ov["topics_variants_wider"] == 1  # topic 2 only (topic 1 ties, topic 3 narrower)
    # the same numbers from imported qrels
    again = variability("small", measure="P@2", qrels="nist-qrels", model="bm25", decompose=False)
    assert again["scores"] == r["scores"] and again["qrels"] != r["qrels"]


def test_system_scores_equal_evaluate_on_the_stored_runs(tmp_path):
    build(tmp_path)
    out = io.StringIO()
    call_command("evaluate", "--topic-set", "small", "--tag", "sysA", "--tag", "sysB", "--tag", "sysC",
                 "--judgments", "nist", "--measures", "nDCG@5", "--json", stdout=out)
    runs = json.loads(out.getvalue())["runs"]
    r = variability("small", measure="nDCG@5", judgments="nist", model="bm25", decompose=False)
    got = {(x["topic"], x["name"]): x["score"] for x in r["scores"] if x["kind"] == "system"}
    assert got == {(t, tag): v["nDCG@5"] for tag, run in runs.items() for t, v in run["per_topic"].items()}


def test_decomposition_is_the_variance_modules_fit_of_these_scores(tmp_path):
    build(tmp_path)
    r = variability("small", measure="P@2", judgments="nist", model="sdm")
    d = r["decomposition"]
    assert d["models"] == ["bm25", "sdm"] and r["decomposition_note"] == ""
    frame = variance.intent_scores_frame([(m, t, lab, v) for (m, t, lab), v in P2.items()])
    assert d["components"] == variance.fit_models(frame, full=True)["full"]
    assert d["data"] == {"systems": 2, "queries": 3, "scores": 16}
    assert sum(d["shares"].values()) == pytest.approx(1)
    assert d["system_means"] == {"bm25": pytest.approx(4 / 8), "sdm": pytest.approx(3.5 / 8)}
    # the empty sdm ranking (topic 3, v3) scores 0, like trec_eval -c
    assert {(x["topic"], x["name"]): x["score"] for x in r["scores"]}[("3", "v3")] == 0


def test_one_model_has_no_decomposition_and_says_why(tmp_path):
    build(tmp_path, models=("bm25",))
    r = variability("small", measure="P@2", judgments="nist")
    assert r["decomposition"] is None and "at least two retrieval models" in r["decomposition_note"]
    out = io.StringIO()
    call_command("variability", "--topic-set", "small", "--judgments", "nist", "--measure", "P@2", stdout=out)
    assert "no decomposition: the decomposition needs variant rankings of at least two" in out.getvalue()


def test_errors_name_what_to_fix(tmp_path):
    build(tmp_path)
    with pytest.raises(ValueError, match=r"more than one model \(bm25, sdm\); choose one with --model"):
        variability("small", measure="P@2", judgments="nist")
    with pytest.raises(ValueError, match="no finished variants run of model 'qld'"):
        variability("small", measure="P@2", judgments="nist", model="qld")
    with pytest.raises(ValueError, match="adhoc qrels and the measure needs diversity qrels"):
        variability("small", measure="alpha_nDCG@10", qrels="nist-qrels", model="bm25")
    with pytest.raises(ValueError, match="exactly one measure"):
        variability("small", measure="P@2 AP", judgments="nist", model="bm25")
    with pytest.raises(ValueError, match="either a stored judgment set"):
        variability("small", measure="P@2", model="bm25")
    with pytest.raises(ValueError, match="no finished variants run"):
        variability("other", measure="P@2", judgments="nist")


def test_command_json_text_and_csv(tmp_path):
    build(tmp_path)
    out = io.StringIO()
    call_command("variability", "--topic-set", "small", "--judgments", "nist", "--measure", "P@2",
                 "--model", "bm25", "--no-decomposition", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data == json.loads(json.dumps(variability("small", measure="P@2", judgments="nist", model="bm25",
                                                     decompose=False)))
    out = io.StringIO()
    csv_path = tmp_path / "spread.csv"
    call_command("variability", "--topic-set", "small", "--qrels", "nist-qrels", "--measure", "P@2",
                 "--model", "bm25", "--no-decomposition", "--csv", str(csv_path), stdout=out)
    assert "1\t3\t0.5000\t0.5000\t3\t0.5000\t0.5000" in out.getvalue()
    header, first = csv_path.read_text().splitlines()[:2]
    assert header.startswith("topic,variants_n,variants_min") and first.startswith("1,3,0.0,")
    with pytest.raises(CommandError, match="choose one with --model"):
        call_command("variability", "--topic-set", "small", "--judgments", "nist", "--measure", "P@2")
