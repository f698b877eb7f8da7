"""Agreement so far between a task's assessors (judging.overlap): hand-computed values and
scikit-learn's Cohen's kappa. No database."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judging.overlap import cohen_kappa, pairwise_agreement


def test_pairs_by_hand():
    grades = {
        "bob": {"d1": 1, "d2": 0, "d3": 2, "d4": 0},
        "alice": {"d1": 1, "d2": 1, "d3": 2, "d9": 0},
        "carol": {"d7": 1},
    }
    rows = pairwise_agreement(grades)
    assert len(rows) == 1  # carol shares nothing with anyone
    row = rows[0]
    assert (row["a"], row["b"], row["shared"], row["agreed"]) == ("alice", "bob", 3, 2)
    assert row["fraction"] == pytest.approx(2 / 3)
    assert row["binary"] == pytest.approx(2 / 3)  # d2: relevant for alice, not for bob
    # p_o = 2/3; alice 1,1,2 and bob 1,0,2: p_e = (2·1 + 1·1) / 9 = 1/3; κ = (1/3)/(2/3)
    assert row["kappa"] == pytest.approx(0.5)


def test_kappa_undefined_and_extremes():
    assert cohen_kappa([], []) is None
    assert cohen_kappa([1, 1], [1, 1]) is None  # one grade throughout: no chance correction
    assert cohen_kappa([0, 1, 0, 1], [0, 1, 0, 1]) == pytest.approx(1.0)
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa([1], [1, 2])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, 3), st.integers(-2, 3)), min_size=1, max_size=40))
def test_kappa_matches_scikit_learn(pairs):
    from sklearn.metrics import cohen_kappa_score

    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    ours = cohen_kappa(a, b)
    if ours is None:
        assert len(set(a) | set(b)) == 1
    else:
        assert ours == pytest.approx(cohen_kappa_score(a, b, labels=sorted(set(a) | set(b))),
                                     abs=1e-9)
