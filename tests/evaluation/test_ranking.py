"""System-ordering agreement: τ_b, τ_ap and the tie-aware τ_ap forms against hand-computed
values and the published test values of Urbano & Marrero's ircor package; the randomised
Tukey HSD against scipy's exact paired permutation test; the rank_correlation command."""
from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from common.fileio import InputError
from evaluation import ranking

# ircor's tests/testthat/helper_data.R and test_tauAP.R (x: the true scores, y: estimated)
SETS = {
    "set1": dict(x=[0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
                 y=[0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
                 x_ties=[0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
                 y_ties=[0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1]),
    "set2": dict(x=[0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
                 y=[0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
                 x_ties=[0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
                 y_ties=[0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6]),
    "set3": dict(x=[0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
                 y=[0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
                 x_ties=[0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
                 y_ties=[0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2]),
}
IRCOR = {  # tauAP, tauAP_a(x, y.ties), tauAP_b(x, y), tauAP_b(x.ties, y.ties)
    "set1": (.8519, .7454, .8333, .7321),
    "set2": (.2504, .2692, .2880, .297),
    "set3": (-.6971, -.5558, -.668, -.7047),
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_tau_ap_forms_equal_ircor_published_values(name):
    s, (ap, ap_a_ties, ap_b, ap_b_ties) = SETS[name], IRCOR[name]
    assert ranking.tau_ap(s["x"], s["y"]) == pytest.approx(ap, abs=5e-5)
    assert ranking.tau_ap_a(s["x"], s["y"]) == pytest.approx(ap, abs=5e-5)  # no ties: τ_ap
    assert ranking.tau_ap_a(s["x"], s["y_ties"]) == pytest.approx(ap_a_ties, abs=5e-5)
    assert ranking.tau_ap_b(s["x"], s["y"]) == pytest.approx(ap_b, abs=5e-5)
    assert ranking.tau_ap_b(s["x_ties"], s["y_ties"]) == pytest.approx(ap_b_ties, abs=5e-5)
    assert ranking.tau_ap_b(s["y_ties"], s["x_ties"]) == pytest.approx(ap_b_ties, abs=5e-5)


def test_tau_ap_hand_computed_and_asymmetric():
    reference = [4, 3, 2, 1]          # a > b > c > d
    other = [4, 2, 3, 1]              # a, c, b, d
    # c at 2: {a} above, a above c in the reference → 1/1; b at 3: {a, c}, only a → 1/2;
    # d at 4: all three → 3/3; τ_ap = 2/3 · 2.5 − 1
    assert ranking.tau_ap(reference, other) == pytest.approx(2 / 3 * 2.5 - 1)
    # swapping the last two instead: a, b, d, c → c at 4 has 2 of 3 above it → 2/3
    assert ranking.tau_ap(reference, [4, 3, 1, 2]) == pytest.approx(2 / 3 * (1 + 1 + 2 / 3) - 1)
    # Kendall's τ is the same for both swaps; τ_ap punishes the swap at the top more
    assert ranking.kendall_tau_b(reference, other) == pytest.approx(4 / 6)
    assert ranking.kendall_tau_b(reference, [4, 3, 1, 2]) == pytest.approx(4 / 6)
    with pytest.raises(ValueError, match="without ties"):
        ranking.tau_ap([1, 1, 2], [1, 2, 3])


def test_kendall_tau_b_with_ties_hand_computed():
    x, y = [1, 2, 2, 3], [1, 2, 3, 4]
    # pairs: concordant 5, tied in x 1 → τ_b = 5 / sqrt(5 · 6)
    assert ranking.kendall_tau_b(x, y) == pytest.approx(5 / np.sqrt(30))


def test_correlations_names_missing_systems_and_ties():
    out = ranking.correlations({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 1, "c": 2})
    assert out["systems"] == 3 and out["tau_ap"] is None and out["tau_ap_a"] is not None
    with pytest.raises(ValueError, match="only in the first: c"):
        ranking.correlations({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2})


def test_intent_pair_taus_hand_computed():
    rows = []
    for s, (i1, i2, i3) in {"A": (3, 1, 3), "B": (2, 2, 2), "C": (1, 3, 1)}.items():
        rows += [(s, "q1", "1", i1), (s, "q1", "2", i2), (s, "q1", "3", i3)]
    frame = pd.DataFrame(rows, columns=["system", "query", "intent", "score"])
    got = ranking.intent_pair_taus(frame)["q1"]
    assert got == {"min": -1.0, "mean": pytest.approx(-1 / 3), "max": 1.0, "pairs": 3}


def test_tukey_two_systems_equals_exact_paired_permutation_test():
    rng = np.random.default_rng(11)
    a = rng.normal(0.5, 0.1, 9)
    b = a - 0.05 + rng.normal(0, 0.06, 9)
    p = ranking.tukey_hsd_pvalues(np.column_stack([a, b]), trials=20_000, seed=5)
    exact = stats.permutation_test((a, b), lambda x, y: np.mean(x) - np.mean(y), permutation_type="samples",
                                   alternative="two-sided", n_resamples=np.inf).pvalue
    assert p[0, 1] == p[1, 0]
    assert p[0, 1] == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-3)


def test_tukey_seeded_and_sensible():
    rng = np.random.default_rng(1)
    base = rng.normal(0.4, 0.1, (30, 1))
    matrix = base + np.array([0.0, 0.001, 0.2, 0.0]) + rng.normal(0, 0.03, (30, 4))
    p1 = ranking.tukey_hsd_pvalues(matrix, trials=2000, seed=3)
    assert (p1 == ranking.tukey_hsd_pvalues(matrix, trials=2000, seed=3)).all()  # seeded
    p2 = ranking.tukey_hsd_pvalues(matrix, trials=2000, seed=3, chunk=7)  # another stream
    assert np.abs(p1 - p2).max() < 0.05
    assert p1[2, 0] < 0.001 and p1[2, 1] < 0.001 and p1[2, 3] < 0.001
    assert p1[0, 1] > 0.5 and p1[0, 3] > 0.5
    # Tukey's HSD controls the family: its p-values are at least the two-system ones
    two = ranking.tukey_hsd_pvalues(matrix[:, [0, 1]], trials=2000, seed=3)
    assert p1[0, 1] >= two[0, 1] - 0.05


def test_significance_agreement_counts():
    rng = np.random.default_rng(2)
    topics = [f"t{i}" for i in range(25)]
    base = rng.normal(0.4, 0.1, (25, 1))
    first = pd.DataFrame(base + np.array([0.3, 0.15, 0.0]) + rng.normal(0, 0.02, (25, 3)),
                         index=topics, columns=["A", "B", "C"])
    second = pd.DataFrame(base + np.array([0.3, 0.0, 0.0]) + rng.normal(0, 0.02, (25, 3)),
                          index=topics, columns=["A", "B", "C"])
    got = ranking.significance_agreement(first, second, trials=2000, seed=1)
    # first: A>B>C all significant (3 pairs); second: A>B, A>C significant, B~C not
    assert got["TR"] == 3 and got["PS"] == 2
    assert got["TR&PS"] == 2 and got["TR-PS"] == 1 and got["PS-TR"] == 0 and got["opposite"] == 0


# ----------------------------------------------------------------- files, command

def _evaluate_json(path, means: dict, per_topic: dict | None = None):
    runs = {}
    for tag, mean in means.items():
        runs[tag] = {"mean": {"AP": mean, "P@10": mean / 2},
                     "per_topic": {t: {"AP": v, "P@10": v / 2} for t, v in (per_topic or {}).get(tag, {}).items()}}
    path.write_text(json.dumps({"runs": runs}))


def test_read_scores_formats_and_errors(tmp_path):
    a = tmp_path / "a.json"
    _evaluate_json(a, {"s1": 0.3, "s2": 0.2})
    with pytest.raises(ValueError, match=r"choose a measure with --measure \(AP, P@10\)"):
        ranking.read_scores(a)
    assert ranking.system_means(ranking.read_scores(a, "P@10")) == {"s1": 0.15, "s2": 0.1}
    tsv = tmp_path / "b.tsv"
    tsv.write_text("s1\t0.3\ns2\tx\n")
    with pytest.raises(InputError, match=r"b.tsv, line 2: score 'x'"):
        ranking.read_scores(tsv)
    tsv.write_text("s1 t1 0.3\ns1 t1 0.4\n")
    with pytest.raises(InputError, match=r"line 2: system s1 topic t1 is scored twice"):
        ranking.read_scores(tsv)


def test_rank_correlation_command(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    a, b = tmp_path / "a.json", tmp_path / "b.tsv"
    topics = [f"t{i}" for i in range(6)]
    rng = np.random.default_rng(0)
    per = {s: dict(zip(topics, m + rng.normal(0, 0.01, 6))) for s, m in
           {"s1": 0.5, "s2": 0.4, "s3": 0.3, "s4": 0.2}.items()}
    _evaluate_json(a, {s: float(np.mean(list(v.values()))) for s, v in per.items()}, per)
    lines = [f"{s}\t{t}\t{v * (1 if s != 's4' else 3)}" for s, d in per.items() for t, v in d.items()]
    b.write_text("\n".join(lines) + "\n")
    out = StringIO()
    call_command("rank_correlation", str(a), str(b), "--measure", "AP", "--significance",
                 "--trials", "500", "--json", stdout=out)
    got = json.loads(out.getvalue())
    # b puts s4 (0.6) first, the others in a's order: one system moved from last to first
    assert got["systems"] == 4
    assert got["tau_b"] == pytest.approx(0.0)
    assert got["tau_ap"] == pytest.approx(ranking.tau_ap([0.5, 0.4, 0.3, 0.2], [0.5, 0.4, 0.3, 0.6]), abs=1e-9)
    assert set(got["significance"]) >= {"TR", "PS", "TR-PS", "TR&PS", "PS-TR"}
    with pytest.raises(CommandError, match="give two evaluations"):
        call_command("rank_correlation", str(a))
