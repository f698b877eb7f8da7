"""Assessor agreement: hand-computed values, scikit-learn's Cohen's κ, statsmodels' Fleiss'
κ and the krippendorff package, each computed here independently of evaluation.agreement,
on Krippendorff's published example and the TREC 2010 crowd judgments."""
from __future__ import annotations

import csv
import itertools
import json
import random
import warnings
from collections import defaultdict
from io import StringIO

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from common.fileio import InputError
from evaluation import agreement

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 coders × 12
# units example with missing values; published: nominal .743, ordinal .815, interval .849.
K2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def k2011_labels() -> pd.DataFrame:
    rows = [("t", "1", f"u{u:02d}", coder, g) for coder, values in K2011.items()
            for u, g in enumerate(values) if g is not None]
    return agreement.label_table(rows)


def test_krippendorff_published_example():
    s = agreement.agreement_summary(k2011_labels(), categories=[1, 2, 3, 4, 5])
    alpha = s["overall"]["krippendorff_alpha"]
    assert round(alpha["nominal"], 3) == 0.743
    assert round(alpha["ordinal"], 3) == 0.815
    assert round(alpha["interval"], 3) == 0.849
    # unit 12 has one value (not pairable): it counts as an item but not in any pair
    assert s["overall"]["items"] == 12


def test_cohen_kappa_hand_computed():
    # 10 items, two raters; agreement on 7: observed 0.7, expected (0.5·0.6 + 0.5·0.4) = 0.5
    a = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 1, 1, 0, 0, 1]
    # confusion: (1,1)=4 (1,0)=1 (0,1)=3 (0,0)=2; po = .6, pe = .5*.7 + .5*.3 = .5 → κ = .2
    assert agreement.cohen_kappa(a, b, [0, 1]) == pytest.approx(0.2)
    assert agreement.cohen_kappa([1, 1], [1, 1], [0, 1]) is None  # 0/0


def test_cohen_kappa_equals_sklearn_on_random_labels():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(2, 30)
        cats = [0, 1, 2, 3]
        a = [rng.choice(cats) for _ in range(n)]
        b = [x if rng.random() < 0.5 else rng.choice(cats) for x in a]
        for weights in (None, "linear"):
            ours = agreement.cohen_kappa(a, b, cats, weights)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = cohen_kappa_score(a, b, labels=cats, weights=weights)
            if np.isnan(ref):
                assert ours is None
            else:
                assert ours == pytest.approx(ref, abs=1e-12)


def test_fleiss_equals_statsmodels_with_equal_raters():
    rng = np.random.default_rng(3)
    table = rng.multinomial(6, [0.5, 0.3, 0.2], size=40)
    assert agreement.fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_fleiss_unequal_raters_hand_computed():
    # items: [2,0], [1,1], [0,3], [1,0] (one rating: only in π)
    counts = np.array([[2, 0], [1, 1], [0, 3], [1, 0]])
    pa = (1 + 0 + 1) / 3
    pi = np.array([(1 + .5 + 0 + 1) / 4, (0 + .5 + 1 + 0) / 4])
    pe = (pi ** 2).sum()
    assert agreement.fleiss_kappa(counts) == pytest.approx((pa - pe) / (1 - pe))


def test_labels_tsv_errors_name_the_line(tmp_path):
    bad = tmp_path / "labels.tsv"
    bad.write_text("1 a d1 w1 1\n1 a d1 w2 x\n")
    with pytest.raises(InputError, match=r"labels.tsv, line 2: grade 'x'"):
        agreement.read_labels_tsv(bad)
    bad.write_text("1 a d1 w1 1\n1 a d1 w1 0\n")
    with pytest.raises(InputError, match=r"line 2: .*already labelled.*line 1"):
        agreement.read_labels_tsv(bad)
    bad.write_text("1 a d1 w1\n")
    with pytest.raises(InputError, match=r"line 1: expected 5 columns"):
        agreement.read_labels_tsv(bad)


# ------------------------------------------------------ TREC 2010 crowd judgments

def read_crowd_independently(path) -> dict:
    """{(topic, docid): {worker: grade}}: a repeated judgment keeps the last in file
    order, and -2 (broken link) is no label."""
    last: dict = {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        for row in reader:
            last[(row["topicID"], row["docID"], row["workerID"])] = int(row["label"])
    items: dict = defaultdict(dict)
    for (t, d, w), g in last.items():
        if g != -2:
            items[(t, d)][w] = g
    return items


@pytest.fixture(scope="module")
def crowd(shared_data):
    path = shared_data / "inter-assessor" / "trec-rf10-crowd" / "trec-rf10-data.txt"
    return path, read_crowd_independently(path)


@pytest.fixture(scope="module")
def crowd_summary(crowd):
    path = crowd[0]
    return agreement.agreement_summary(agreement.read_trec_rf10_crowd(path))


def test_crowd_reader(crowd):
    path, items = crowd
    labels = agreement.read_trec_rf10_crowd(path)
    assert len(labels) == sum(len(w) for w in items.values())
    assert set(labels["intent"]) == {"0"}
    assert sorted(labels["grade"].unique()) == [0, 1, 2]


def test_crowd_fleiss_equals_statsmodels_on_items_with_five_labels(crowd):
    path, items = crowd
    five = {k: v for k, v in items.items() if len(v) == 5}
    table = np.array([[list(v.values()).count(g) for g in (0, 1, 2)] for v in five.values()])
    expected = sm_fleiss_kappa(table)
    labels = agreement.label_table(
        (t, "0", d, w, g) for (t, d), v in five.items() for w, g in v.items())
    s = agreement.agreement_summary(labels)
    assert s["overall"]["fleiss_kappa"] == pytest.approx(expected, abs=1e-12)


def test_crowd_fleiss_overall_and_per_topic(crowd, crowd_summary):
    _, items = crowd

    def gwet(group):
        pa_terms, pis = [], []
        for workers in group:
            grades = list(workers.values())
            r = len(grades)
            n = [grades.count(g) for g in (0, 1, 2)]
            if r >= 2:
                pa_terms.append(sum(x * (x - 1) for x in n) / (r * (r - 1)))
            pis.append([x / r for x in n])
        pa = sum(pa_terms) / len(pa_terms)
        pe = sum(p * p for p in np.mean(pis, axis=0))
        return (pa - pe) / (1 - pe)

    assert crowd_summary["overall"]["fleiss_kappa"] == pytest.approx(gwet(items.values()), abs=1e-12)
    by_topic = defaultdict(list)
    for (t, _d), workers in items.items():
        by_topic[t].append(workers)
    for t in ["20002", "20644", "21086"]:
        if t in by_topic:
            assert crowd_summary["per_topic"][t]["fleiss_kappa"] == pytest.approx(gwet(by_topic[t]), abs=1e-12)


def test_crowd_krippendorff_from_reliability_matrix(crowd, crowd_summary):
    _, items = crowd
    workers = sorted({w for v in items.values() for w in v})
    col = {w: i for i, w in enumerate(workers)}
    keys = sorted(items)
    matrix = np.full((len(workers), len(keys)), np.nan)
    for j, k in enumerate(keys):
        for w, g in items[k].items():
            matrix[col[w], j] = g
    for level in ("nominal", "ordinal", "interval"):
        ref = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        assert crowd_summary["overall"]["krippendorff_alpha"][level] == pytest.approx(ref, abs=1e-10)
    # one topic at all three levels
    topic = "20002"
    sub = [j for j, k in enumerate(keys) if k[0] == topic]
    for level in ("nominal", "ordinal", "interval"):
        ref = krippendorff.alpha(reliability_data=matrix[:, sub], level_of_measurement=level,
                                 value_domain=[0, 1, 2])
        assert crowd_summary["per_topic"][topic]["krippendorff_alpha"][level] == pytest.approx(ref, abs=1e-10)


def test_crowd_cohen_and_jaccard_per_topic_pairs(crowd, crowd_summary):
    _, items = crowd
    for topic in ["20002", "20644"]:
        by_worker = defaultdict(dict)
        for (t, d), workers in items.items():
            if t == topic:
                for w, g in workers.items():
                    by_worker[w][d] = g
        kappas, linear, jaccards = [], [], []
        for a, b in itertools.combinations(sorted(by_worker), 2):
            shared = sorted(set(by_worker[a]) & set(by_worker[b]))
            if not shared:
                continue
            ra = {d for d in shared if by_worker[a][d] >= 1}
            rb = {d for d in shared if by_worker[b][d] >= 1}
            if ra | rb:
                jaccards.append(len(ra & rb) / len(ra | rb))
            if len(shared) < 2:
                continue
            x = [by_worker[a][d] for d in shared]
            y = [by_worker[b][d] for d in shared]
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                k = cohen_kappa_score(x, y, labels=[0, 1, 2])
                kl = cohen_kappa_score(x, y, labels=[0, 1, 2], weights="linear")
            if not np.isnan(k):
                kappas.append(k)
                linear.append(kl)
        got = crowd_summary["per_topic"][topic]
        assert got["cohen_kappa"]["pairs"] == len(kappas)
        assert got["cohen_kappa"]["unweighted"] == pytest.approx(np.mean(kappas), abs=1e-12)
        assert got["cohen_kappa"]["linear"] == pytest.approx(np.mean(linear), abs=1e-12)
        assert got["jaccard"]["mean"] == pytest.approx(np.mean(jaccards), abs=1e-12)
        assert got["jaccard"]["pairs"] == len(jaccards)
        coherent = np.mean(jaccards) >= 0.5
        assert crowd_summary["per_intent"][topic]["0"]["coherence"]["coherent"] == coherent


def test_crowd_coherence_counts(crowd_summary):
    per = crowd_summary["per_intent"]
    flags = [s["coherence"]["coherent"] for d in per.values() for s in d.values()]
    assert crowd_summary["overall"]["coherence"]["coherent_intents"] == sum(flags)
    assert crowd_summary["overall"]["coherence"]["intents"] == len(flags) == 100


# -------------------------------------------------------------------- the command

@pytest.mark.slow
def test_agreement_command_on_crowd_file(crowd, crowd_summary):
    from django.core.management import call_command

    out = StringIO()
    call_command("agreement", "--labels", str(crowd[0]), "--format", "trec-rf10", "--json", stdout=out)
    got = json.loads(out.getvalue())
    assert set(got["overall"]) >= {"fleiss_kappa", "krippendorff_alpha", "cohen_kappa", "jaccard"}
    assert set(got["overall"]["krippendorff_alpha"]) == {"nominal", "ordinal", "interval"}
    assert got["overall"]["fleiss_kappa"] == pytest.approx(crowd_summary["overall"]["fleiss_kappa"])
    assert len(got["per_topic"]) == 100


def test_agreement_command_labels_tsv_intent_and_relevant_from(tmp_path):
    from django.core.management import call_command

    path = tmp_path / "labels.tsv"
    lines = ["# topic intent docid assessor grade"]
    for coder, values in K2011.items():
        for u, g in enumerate(values):
            if g is not None:
                lines.append(f"t\t1\tu{u:02d}\t{coder}\t{g}")
    lines += ["t\t2\tu00\tA\t1", "t\t2\tu00\tB\t2"]
    path.write_text("\n".join(lines) + "\n")
    out = StringIO()
    call_command("agreement", "--labels", str(path), "--intent", "1", "--relevant-from", "3",
                 "--json", stdout=out)
    got = json.loads(out.getvalue())
    assert list(got["per_intent"]["t"]) == ["1"]
    assert got["relevant_from"] == 3
    # A and B share units 0..8; relevant (≥3): A {2,3,6}, B {2,3,6} → Jaccard 1
    out = StringIO()
    call_command("agreement", "--labels", str(path), stdout=out)
    assert "Fleiss' kappa" in out.getvalue()


def test_agreement_command_errors(tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="either a stored judgment set"):
        call_command("agreement", "--json")
    path = tmp_path / "l.tsv"
    path.write_text("1 0 d w 1\n")
    with pytest.raises(CommandError, match="no labels for intent 9"):
        call_command("agreement", "--labels", str(path), "--intent", "9")
    with pytest.raises(CommandError, match="no such file"):
        call_command("agreement", "--labels", str(tmp_path / "none.tsv"))
