"""Intent properties (Radlinski, Szummer & Craswell 2010) on a hand-computed example."""
from __future__ import annotations

import json
from io import StringIO

import pytest

from evaluation import intents

# intent 1: assessors A and B; intent 2: assessor C
INTENT_LABELS = [
    ("T", "1", "d1", "A", 1), ("T", "1", "d2", "A", 1), ("T", "1", "d3", "A", 0), ("T", "1", "d4", "A", 0),
    ("T", "1", "d1", "B", 1), ("T", "1", "d2", "B", 0), ("T", "1", "d3", "B", 0), ("T", "1", "d4", "B", 1),
    ("T", "1", "d5", "B", 1),
    ("T", "2", "d1", "C", 0), ("T", "2", "d2", "C", 1), ("T", "2", "d3", "C", 1), ("T", "2", "d6", "C", 1),
]
USER_LABELS = [
    ("T", "0", "d1", "u1", 1), ("T", "0", "d2", "u1", 1), ("T", "0", "d4", "u1", 0),
    ("T", "0", "d3", "u2", 1), ("T", "0", "d6", "u2", 1), ("T", "0", "d1", "u2", 0),
    ("T", "0", "d5", "u3", 0),
]


def test_hand_computed_properties():
    r = intents.intent_properties(INTENT_LABELS, USER_LABELS, alpha=0.5, beta=0.5, betas=[0, 0.5, 1])
    t = r["per_topic"]["T"]
    # coherence(1): A and B share d1..d4; A {d1,d2}, B {d1,d4} → 1/3; intent 2 has one assessor
    assert t["intents"]["1"]["coherence"] == pytest.approx(1 / 3)
    assert t["intents"]["1"]["coherent"] is False
    assert t["intents"]["2"]["coherence"] is None
    # R_1 = {d1, d2, d4, d5} (at least half of the assessors), R_2 = {d2, d3, d6}
    assert t["intents"]["1"]["relevant"] == 4 and t["intents"]["2"]["relevant"] == 3
    # sim(R_1, R_2) over {d1, d2, d3}: {d1, d2} vs {d2, d3} → 1/3 ≤ 1 − α: distinct
    assert t["distinctness"]["pairs"][0]["sim"] == pytest.approx(1 / 3)
    assert t["distinctness"]["min"] == pytest.approx(2 / 3)
    assert t["distinctness"]["distinct"] is True
    # users: sim(u, R_1) = 2/3, 0, 0; sim(u, R_2) = 1/2, 1, undefined
    assert t["intents"]["1"]["plausibility"] == pytest.approx(1 / 3)
    assert t["intents"]["1"]["plausible"] is False
    assert t["intents"]["2"]["plausibility"] == pytest.approx(2 / 3)
    assert t["intents"]["2"]["plausible"] is True
    assert t["completeness"] == pytest.approx(2 / 3) and t["users"] == 3
    assert r["curves"]["plausibility"]["T"]["1"] == pytest.approx([1, 1 / 3, 0])
    assert r["curves"]["plausibility"]["T"]["2"] == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert r["curves"]["completeness"]["T"] == pytest.approx([1, 2 / 3, 1 / 3])
    assert r["overall"] == {"topics": 1, "intents": 2, "coherent_intents": 0, "distinct_topics": 1,
                            "plausible_intents": 1, "mean_completeness": pytest.approx(2 / 3)}


def test_kappa_similarity_hand_computed():
    # u1 vs R_1 over {d1, d2, d4}: [1, 1, 0] vs [1, 1, 1]: po = 2/3 = pe → κ = 0
    assert intents.similarity({"d1", "d2"}, {"d1", "d2", "d4"}, {"d1", "d2", "d4", "d5"},
                              {"d1", "d2", "d3", "d4", "d5"}, "kappa") == pytest.approx(0.0)
    # identical non-trivial vectors → 1
    assert intents.similarity({"a"}, {"a", "b"}, {"a"}, {"a", "b"}, "kappa") == pytest.approx(1.0)
    assert intents.similarity({"a"}, {"a"}, {"b"}, {"b"}) is None  # nothing judged by both


def test_without_users_and_topic_filter():
    r = intents.intent_properties(INTENT_LABELS, topics=["T", "X"])
    assert "completeness" not in r["per_topic"]["T"]
    assert "plausible_intents" not in r["overall"]
    with pytest.raises(ValueError, match="no intent judgments"):
        intents.intent_properties(INTENT_LABELS, topics=["X"])


def test_intent_properties_command_with_files(tmp_path):
    from django.core.management import call_command

    a, u = tmp_path / "intents.tsv", tmp_path / "users.tsv"
    a.write_text("".join("\t".join(map(str, row)) + "\n" for row in INTENT_LABELS))
    u.write_text("".join("\t".join(map(str, row)) + "\n" for row in USER_LABELS))
    out = StringIO()
    call_command("intent_properties", "--labels", str(a), "--user-labels", str(u), "--beta", "0.6",
                 "--json", stdout=out)
    got = json.loads(out.getvalue())
    assert got["beta"] == 0.6
    assert got["per_topic"]["T"]["completeness"] == pytest.approx(2 / 3)  # 2/3 and 1 are ≥ 0.6
    assert got["per_topic"]["T"]["intents"]["2"]["plausibility"] == pytest.approx(1 / 3)
    out = StringIO()
    call_command("intent_properties", "--labels", str(a), stdout=out)
    assert "coherence" in out.getvalue()
