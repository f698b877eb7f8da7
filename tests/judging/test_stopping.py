"""The stopping estimators (judging.stopping) against small cases computed by hand."""
from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from judging import stopping as st

ROOT = Path(__file__).resolve().parents[2]


def test_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import sys, judging.stopping\n"
            "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
            "assert not bad, bad\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_hypergeometric_cdf_by_hand():
    # 4 draws from 10 balls, 3 marked: P(X=0) = C(7,4)/C(10,4) = 35/210;
    # P(X≤1) = (35 + 3·C(7,3)) / 210 = 140/210
    assert st.hypergeom_cdf(0, 10, 3, 4) == pytest.approx(1 / 6)
    assert st.hypergeom_cdf(1, 10, 3, 4) == pytest.approx(2 / 3)
    assert st.hypergeom_cdf(3, 10, 3, 4) == 1.0
    assert st.hypergeom_cdf(-1, 10, 3, 4) == 0.0


def test_recall_p_value_by_hand():
    # judged R R N N of 10: r = 2, U = 6; windows (n, k) = (2, 0), (3, 1), (4, 2);
    # "recall < 0.5" means K_τ = ⌊2/0.5⌋ + 1 − (2 − k) = 3 + k relevant in the urn of n + 6
    # (2, 0): C(5,2)/C(8,2) = 10/28; (3, 1): (C(5,3) + 4·C(5,2))/C(9,3) = 50/84;
    # (4, 2): (C(5,4) + 5·C(5,3) + C(5,2)²)/C(10,4) = 155/210; the smallest is 10/28
    seq = [True, True, False, False]
    assert st.recall_p_value(seq, 10, 0.5) == pytest.approx(float(Fraction(10, 28)))
    assert st.fires(st.Rule("recall", 0.5, 0.6), seq, 10) is True  # 0.357 < α = 0.4
    assert st.fires(st.Rule("recall", 0.5, 0.65), seq, 10) is False  # not < α = 0.35
    assert st.recall_p_value([False, False], 10, 0.9) == 1.0  # nothing found: no measure


def test_estimate_by_hand():
    # judged R N N N of 6: r = 1, U = 2; windows (n, k, M) = (3, 0, 5) and (4, 1, 6).
    # α = 0.25. (3, 0): P(X=0|K) = C(5−K,3)/C(5,3) = 1, 0.4, 0.1 for K = 0, 1, 2 → K_hi = 1.
    # (4, 1): P(X≤1|K) = 1, 1 − 6/15 = 0.6, 3/15 = 0.2 for K = 1, 2, 3 → K_hi = 2.
    # Both leave at most 1 relevant unfound; the longer window (4, 1) is shown: point
    # 1·2/4 = 0.5; recall 1/1.5, at least 1/2 (one-sided: at most 1).
    e = st.estimate([True, False, False, False], 6, confidence=0.75)
    assert (e.judged, e.found, e.pool, e.window) == (4, 1, 6, 4)
    assert (e.remaining, e.remaining_low, e.remaining_high) == (0.5, 0, 1)
    assert (e.recall, e.recall_low, e.recall_high) == pytest.approx((2 / 3, 1 / 2, 1.0))
    # all judged: recall 1 exactly; nothing judged or nothing found: no recall
    assert st.estimate([True, False], 2).recall == 1.0
    assert st.estimate([], 5).recall is None and st.estimate([], 5).remaining is None
    both = st.combine([e, st.estimate([True, False], 2)])
    assert (both.found, both.remaining, both.remaining_high) == (2, 0.5, 1)
    assert (both.recall, both.recall_low, both.recall_high) == pytest.approx((0.8, 2 / 3, 1))
    assert st.estimate([False] * 3, 5).recall is None
    with pytest.raises(ValueError, match="3 judgments for a pool of 2"):
        st.estimate([True] * 3, 2)


def test_lower_bound_reaches_the_target_exactly_when_the_rule_fires():
    rng = np.random.default_rng(3)
    rule = st.Rule("recall", 0.8, 0.9)
    seen = 0
    for _ in range(300):
        n = int(rng.integers(5, 80))
        seq = list(rng.random(int(rng.integers(1, n))) < rng.random())
        e = st.estimate(seq, n, confidence=0.9)
        if e.recall_low is not None:
            seen += st.fires(rule, seq, n)
            assert (e.recall_low >= 0.8) == st.fires(rule, seq, n), (seq, n)
    assert seen > 10


def test_knee_by_hand():
    # ten relevant then non-relevant: the knee is at 10 and ρ = (10/10) / (1/(s − 10)) =
    # s − 10, which reaches 156 − 10 = 146 at s = 156
    seq = [True] * 10 + [False] * 300
    assert st.knee_ratio(seq[:150]) == (10, 140.0)
    assert not st.knee_fires(seq[:155])
    assert st.knee_fires(seq[:156])
    assert st.first_stop(st.parse_rule("knee"), seq, 1000) == 156
    assert st.first_stop(st.parse_rule("knee"), seq, 1000, every=10) == 160
    # never before 150 judgments, however steep the knee
    assert not st.knee_fires([True] * 100 + [False] * 49)
    # a whole pool judged: nothing left to stop
    assert st.first_stop(st.parse_rule("knee"), seq, len(seq[:156])) is None


def test_first_stop_matches_the_estimate():
    seq = [True] * 30 + [False] * 20 + [True] * 10 + [False] * 200 + [True] + [False] * 700
    s = st.first_stop(st.parse_rule("recall:0.9:0.95"), seq, 1000)
    assert s is not None
    assert st.estimate(seq[:s], 1000).recall_low >= 0.9
    assert st.estimate(seq[:s - 1], 1000).recall_low < 0.9


def test_parse_rule():
    assert st.parse_rule("recall:0.9:0.95") == st.Rule("recall", 0.9, 0.95)
    assert st.parse_rule("recall:0.8") == st.Rule("recall", 0.8, 0.95)
    assert st.parse_rule("knee") == st.Rule("knee", 0.9)
    assert str(st.parse_rule("knee:0.8")) == "knee:0.8"
    assert str(st.parse_rule("recall:0.9")) == "recall:0.9:0.95"
    for bad, msg in (("quantile", "must be 'recall' or 'knee'"), ("recall:x", "target 'x'"),
                     ("recall:0.9:1.5", "confidence must be between"),
                     ("knee:0.9:0.9", "too many")):
        with pytest.raises(ValueError, match=msg):
            st.parse_rule(bad)
