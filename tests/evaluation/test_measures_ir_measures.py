"""Measures evaluate does not implement go through ir_measures, on the same input, and say so."""
import io
import json

import ir_measures
import pytest
from django.core.management import CommandError, call_command

from common.fileio import InputError
from evaluation.measures import evaluate_runs, parse_measures, read_qrels, read_runs

NAMES = "Judged@10 infAP Bpref SetF NumRel"


@pytest.fixture
def web2011(shared_data):
    o = shared_data / "eval-oracles" / "web2011" / "runs"
    return [o / "partial.run", o / "tied.run"], shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"


@pytest.mark.parametrize("complete", [False, True])
def test_values_equal_ir_measures_called_directly_on_the_same_files(web2011, complete):
    runs, qrels = web2011
    specs = parse_measures("AP " + NAMES)
    assert [s.family for s in specs] == ["adhoc"] + ["ir_measures"] * 5
    ours = evaluate_runs(read_runs(runs), read_qrels(qrels, "adhoc"), specs, complete=complete)
    measures = [ir_measures.parse_measure(n) for n in NAMES.split()]
    for path in runs:
        tag = path.stem
        direct = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(
            measures, ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(path)))}
        per_topic = ours[tag]["per_topic"]
        # partial lacks three topics: ours has them only with complete (trec_eval -c)
        assert len(per_topic) == (50 if complete or tag == "tied" else 47)
        compared = 0
        for topic, values in per_topic.items():
            for name in NAMES.split():
                assert values[name] == direct[(name, topic)], (tag, topic, name)
                compared += 1
        assert compared == len(per_topic) * 5
        if complete:  # ir_measures averages over every qrels topic, as trec_eval -c
            aggregate = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(str(qrels)),
                                                   ir_measures.read_trec_run(str(path)))
            for m in measures:
                assert ours[tag]["mean"][str(m)] == pytest.approx(aggregate[m], rel=1e-12)
    # the native AP beside them is unchanged by their presence
    alone = evaluate_runs(read_runs(runs), read_qrels(qrels, "adhoc"), parse_measures("AP"), complete=complete)
    assert alone["tied"]["per_topic"] == {t: {"AP": v["AP"]} for t, v in ours["tied"]["per_topic"].items()}


def test_the_output_says_which_tool_computed_them(web2011):
    runs, qrels = web2011
    args = ["--run", str(runs[1]), "--qrels", str(qrels), "--measures", "AP Judged@10 Bpref"]
    out = io.StringIO()
    call_command("evaluate", *args, stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split("\t")[1].strip() for line in lines[:3]] == ["AP", "Judged@10", "Bpref"]
    notes = lines[3:]
    assert len(notes) == 2 and all(n.startswith("# ") for n in notes)
    assert notes[0].startswith("# Judged@10: not native; computed through ir_measures ")
    assert "by its judged provider" in notes[0]
    assert notes[1].startswith("# Bpref: not native") and "pytrec_eval provider (pytrec-eval-terrier" in notes[1]
    out = io.StringIO()
    call_command("evaluate", *args, "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["conventions"] == [n[2:] for n in notes]
    assert set(data["runs"]["tied"]["mean"]) == {"AP", "Judged@10", "Bpref"}


def test_names_neither_knows_are_refused_clearly(web2011):
    with pytest.raises(InputError,
                       match=r"unknown measure 'Nope@3'; known: AP .*; ir_measures does not know it either"):
        parse_measures("AP Nope@3")
    runs, qrels = web2011
    with pytest.raises(CommandError, match="unknown measure 'Nope@3'"):
        call_command("evaluate", "--run", str(runs[0]), "--qrels", str(qrels), "--measures", "Nope@3",
                     stdout=io.StringIO())
    # ir_measures' names for native measures point at the native name; nothing is computed twice
    with pytest.raises(InputError, match="ir_measures reads it as 'AP', which evaluate computes itself"):
        parse_measures("MAP")
    with pytest.raises(InputError, match="ir_measures cannot read it"):
        parse_measures("SetF(beta=x)")
    # native names keep their own rules (no fallback for a native name's bad cutoff)
    with pytest.raises(InputError, match="AP takes no cutoff"):
        parse_measures("AP@10")


def test_a_measure_without_an_installed_provider_says_which_it_needs():
    if ir_measures.cwl_eval.is_available():
        pytest.skip("cwl_eval is installed here")
    with pytest.raises(InputError, match=r"no provider of it is installed here \(providers: cwl_eval\)"):
        parse_measures("SDCG(max_rel=3)@10")


def test_ir_measures_measures_need_ad_hoc_qrels(shared_data):
    o = shared_data / "eval-oracles" / "web2011"
    runs = read_runs([o / "runs" / "tied.run"])
    qrels = read_qrels(shared_data / "trec-web-diversity" / "2011" / "qrels-for-ndeval.txt", "diversity")
    with pytest.raises(InputError, match="Judged@10 need ad hoc qrels"):
        evaluate_runs(runs, qrels, parse_measures("Judged@10"))


@pytest.mark.django_db
def test_stored_runs_and_judgments_give_the_values_of_the_files(shared_data):
    from judging.services import judgments_import
    from retrieval.services import system_run_import
    from topics.models import Topic, TopicSet

    ts = TopicSet.objects.create(name="web2011")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=str(t), title=f"topic {t}") for t in range(101, 151)])
    runs = shared_data / "eval-oracles" / "web2011" / "runs"
    qrels = shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"
    system_run_import(runs / "tied.run", topic_set_name="web2011")
    judgments_import(qrels, format="adhoc", name="nist-adhoc")

    def evaluate(*args):
        out = io.StringIO()
        call_command("evaluate", *args, "--measures", "Judged@10 Bpref AP", "--json", stdout=out)
        return json.loads(out.getvalue())

    from_files = evaluate("--run", str(runs / "tied.run"), "--qrels", str(qrels))
    stored = evaluate("--topic-set", "web2011", "--tag", "tied", "--judgments", "nist-adhoc")
    assert stored == from_files
    assert len(stored["conventions"]) == 2 and stored["runs"]["tied"]["mean"]["Judged@10"] > 0


def test_a_native_name_with_a_parameter_only_ir_measures_has_goes_through_it(web2011):
    runs, qrels = web2011
    names = ["AP(judged_only=True)", "RR(judged_only=True)"]
    specs = parse_measures(["AP"] + names)
    assert [(s.key, s.family) for s in specs] == [("AP", "adhoc")] + [(n, "ir_measures") for n in names]
    ours = evaluate_runs(read_runs(runs[1:]), read_qrels(qrels, "adhoc"), specs)["tied"]["per_topic"]
    measures = [ir_measures.parse_measure(n) for n in names]
    direct = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(
        measures, ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(runs[1])))}
    assert len(ours) == 50
    for topic, values in ours.items():
        for n in names:
            assert values[n] == direct[(n, topic)]
    # condensed lists differ from the native AP somewhere (the test could not pass by accident)
    assert any(v["AP"] != v["AP(judged_only=True)"] for v in ours.values())
    # a parameter neither has keeps the native message
    with pytest.raises(InputError, match="nDCG has no parameter 'rel'"):
        parse_measures("nDCG(rel=2)@5")
