"""Aggregation rules and their ties, by hand; Dawid-Skene through crowd-kit."""
import pytest

from judging import aggregate as agg


@pytest.mark.parametrize("rule, grades, expected", [
    ("majority", [0, 1, 1], 1), ("majority", [0, 1], 1), ("majority", [-2, 0], 0),
    ("majority", [2, 2, 1, 1, 0], 2),
    ("max", [0, -2, 3], 3),
    ("mean", [0, 1], 1), ("mean", [0, 0, 1], 0), ("mean", [-2, 1], 0), ("mean", [-2, -1], -1),
    ("median", [0, 1], 1), ("median", [0, 1, 2], 1), ("median", [0, 0, 2, 2], 2),
])
def test_rules_and_ties(rule, grades, expected):
    labels = {"k": [(f"a{i}", g) for i, g in enumerate(grades)]}
    assert agg.aggregate(labels, rule) == {"k": expected}


def test_assessor_rule_leaves_out_unlabelled_items():
    labels = {"x": [("ann", 1), ("bob", 0)], "y": [("bob", 2)]}
    assert agg.aggregate(labels, "assessor:ann") == {"x": 1}


def test_unknown_rule():
    with pytest.raises(ValueError, match="aggregate must be one of"):
        agg.aggregate({}, "mode")


def test_dawid_skene_downweights_a_contrary_worker():
    # three workers agree on 4 items; "odd" always answers the opposite. On item i5 only
    # odd and one good worker answer, 1 against 0: DS trusts the good worker.
    labels = {f"i{k}": [("a", k % 2), ("b", k % 2), ("c", k % 2), ("odd", 1 - k % 2)]
              for k in range(4)}
    labels["i5"] = [("a", 0), ("odd", 1)]
    out = agg.aggregate(labels, "dawid-skene")
    assert out == {"i0": 0, "i1": 1, "i2": 0, "i3": 1, "i5": 0}
    assert agg.aggregate({"i5": labels["i5"]}, "majority") == {"i5": 1}
