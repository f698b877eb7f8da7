"""Measures are declared once, in the registry; topics come in one natural order."""
import numpy as np
import pytest

from common.fileio import InputError
from evaluation.measures import Qrels, RunSet, evaluate_runs, parse_measures
from evaluation.measures.registry import REGISTRY, Measure, Param, register


def test_every_measure_declares_its_reference_tool_and_parameters():
    assert len(REGISTRY) == 20
    for name, m in REGISTRY.items():
        assert m.name == name and m.family in ("adhoc", "ndeval", "ntcir") and callable(m.compute)
        assert m.tool.split()[0] in ("trec_eval", "gdeval", "ndeval", "NTCIREVAL"), name
        for p in m.params:
            assert p.type in (int, float) and p.want and (p.default is None or p.check(p.default))
    assert [p.name for p in REGISTRY["RBP"].params] == ["p", "rel"]
    assert REGISTRY["RBP"].also == ("RBP_resid",)


def test_a_measure_registered_in_one_place_is_parsed_and_evaluated():
    """A made-up measure (relevant documents in the top k at a level) needs one declaration."""
    hits = Measure("Hits", "adhoc", "required", "none (a test measure)",
                   lambda x, s: (x.grades[..., : s.cutoff] >= s.get("rel")).sum(axis=-1).astype(float),
                   (Param("rel", int, 1, lambda v: v >= 1, "a whole number ≥ 1"),))
    register(hits)
    try:
        specs = parse_measures("Hits@2 Hits(rel=2)@3 Hits(rel=1)@2")
        assert [s.key for s in specs] == ["Hits@2", "Hits(rel=2)@3"]  # rel=1 is the default
        runs = RunSet.from_rankings([("r", "x", {"1": (["a", "b", "c"], [3.0, 2.0, 1.0], [1, 2, 3])})])
        got = evaluate_runs(runs, Qrels("adhoc", {"1": {"a": 1, "b": 0, "c": 2}}), specs)["r"]["mean"]
        assert got == {"Hits@2": 1.0, "Hits(rel=2)@3": 1.0}
        with pytest.raises(InputError, match="Hits needs a cutoff"):
            parse_measures("Hits")
        with pytest.raises(InputError, match=r"rel in 'Hits\(rel=0\)@2' must be a whole number ≥ 1"):
            parse_measures("Hits(rel=0)@2")
        with pytest.raises(ValueError, match="registered twice"):
            register(hits)
    finally:
        del REGISTRY["Hits"]


def test_parameters_are_typed_and_defaults_filled():
    (rbp,) = parse_measures("RBP(p=0.95,rel=2)")
    assert rbp.get("p") == 0.95 and rbp.get("rel") == 2
    assert rbp.keys == ["RBP(p=0.95,rel=2)", "RBP_resid(p=0.95,rel=2)"]
    (graded,) = parse_measures("RBP")
    assert graded.get("p") == 0.8 and graded.get("rel") is None and graded.key == "RBP(p=0.8)"
    (ap,) = parse_measures("AP(rel=2)")
    assert ap.get("rel") == 2 and ap.qrels_kind == "adhoc"
    with pytest.raises(InputError, match=r"rel in 'AP\(rel=two\)' must be a whole number"):
        parse_measures("AP(rel=two)")
    assert parse_measures("alpha_nDCG@5")[0].qrels_kind == "diversity"


def test_topics_and_intents_in_natural_order():
    topics = ["UQV100.10", "UQV100.2", "UQV100.1", "9", "10"]
    runs = RunSet.from_rankings([("r", "x", {t: (["a"], [1.0], [1]) for t in topics})])
    natural = ["9", "10", "UQV100.1", "UQV100.2", "UQV100.10"]
    assert runs.topics == natural
    qrels = Qrels("adhoc", {t: {"a": 1} for t in topics})
    assert qrels.topics == natural
    assert list(evaluate_runs(runs, qrels, parse_measures("AP"))["r"]["per_topic"]) == natural
    # intents too: the per-intent columns of a diversity topic follow the same order
    from evaluation.measures.engine import _intents
    assert _intents({"10": {}, "2": {}, "x.10": {}, "x.9": {}}) == ["2", "10", "x.9", "x.10"]


def test_values_of_native_measures_do_not_depend_on_declaration_order():
    """One spec evaluated alone or with others gives the same values (shared inputs are cached
    per level and cutoff, never mixed up)."""
    rng = np.random.default_rng(3)
    docs = [f"d{i}" for i in range(30)]
    per = {str(t): (docs, list(rng.random(30)), list(range(1, 31))) for t in range(1, 6)}
    runs = RunSet.from_rankings([("r", "x", per)])
    qrels = Qrels("adhoc", {str(t): {d: int(rng.integers(-1, 4)) for d in docs[::2]} for t in range(1, 6)})
    text = "AP AP(rel=2) RR(rel=3) Rprec(rel=2) nDCG nDCG@10 P(rel=2)@5 R@10 RBP(p=0.5,rel=2) ERR@10"
    together = evaluate_runs(runs, qrels, parse_measures(text))["r"]["per_topic"]
    for word in text.split():
        alone = evaluate_runs(runs, qrels, parse_measures(word))["r"]["per_topic"]
        for topic, values in alone.items():
            for key, v in values.items():
                assert together[topic][key] == v, (word, topic, key)


def test_measure_modules_import_without_django():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(root)
    code = ("import sys, evaluation.measures.registry, evaluation.measures.engine, evaluation.measures.fallback\n"
            "from evaluation.measures import parse_measures\n"
            "assert parse_measures('Judged@10')[0].family == 'ir_measures'\n"
            "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
            "assert not bad, bad\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("text, message", [
    ("P@99999999999999999999", r"cutoff of 'P@99999999999999999999' is too large \(at most 1000000\)"),
    ("P@1000001", "is too large"),
    ("P(rel=99999999999999999999)@10", "rel in .* must be a whole number from 1 to 1000"),
    ("RBP(p=0.5,rel=1001)", "rel in .* must be a whole number from 1 to 1000"),
    ("P(rel=" + "9" * 5000 + ")@5", "must be a whole number from 1 to 1000"),
])
def test_cutoffs_and_levels_are_bounded(text, message):
    with pytest.raises(InputError, match=message):
        parse_measures(text)
    assert parse_measures("P(rel=1000)@1000000")[0].key == "P(rel=1000)@1000000"
