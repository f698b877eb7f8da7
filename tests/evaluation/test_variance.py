"""Variance components against R's lme4 on per-intent scores of the TREC Web 2011 runs;
the allocation table by hand; seeded subsampling; the variance_components command."""
from __future__ import annotations

import json
import shutil
import subprocess
from io import StringIO

import numpy as np
import pandas as pd
import pytest

from common.fileio import InputError
from evaluation import variance

RUNS = ["good", "fair", "weak", "noisy"]

LME4_SCRIPT = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], colClasses = c("character", "character", "character", "numeric"))
m <- aggregate(score ~ system + query, d, mean)
ctl <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e6),
                   check.conv.singular = "ignore")
show <- function(name, f) {
  v <- as.data.frame(VarCorr(f))
  for (k in seq_len(nrow(v))) cat(name, v$grp[k], sprintf("%.12f", v$sdcor[k]), "\n")
}
show("model1", lmer(score ~ system + (1|query), m, REML = TRUE, control = ctl))
show("model2", lmer(score ~ system + (1|query) + (1|query:system), d, REML = TRUE, control = ctl))
show("model3", lmer(score ~ system + (1|query) + (1|query:intent), d, REML = TRUE, control = ctl))
show("full", lmer(score ~ system + (1|query) + (1|query:system) + (1|query:intent), d,
                  REML = TRUE, control = ctl))
"""
LME4_NAMES = {"query": "sd_query", "Residual": "sd_residual", "query:system": "sd_query_system",
              "query:intent": "sd_query_intent"}


@pytest.fixture(scope="module")
def web_scores(shared_data):
    from evaluation.analysis import intent_scores_from_runs

    runs = [str(shared_data / "eval-oracles" / "web2011" / "runs" / f"{r}.run") for r in RUNS]
    qrels = shared_data / "trec-web-diversity" / "2011" / "qrels.diversity.txt"
    return intent_scores_from_runs(runs, str(qrels), "P@10")


def test_intent_scores_from_runs(web_scores):
    assert sorted(web_scores["system"].unique()) == sorted(RUNS)
    assert web_scores["query"].nunique() == 50
    cells = web_scores.groupby(["query", "intent"]).size()
    assert (cells == len(RUNS)).all()
    assert web_scores["score"].between(0, 1).all()


@pytest.mark.slow
@pytest.mark.parametrize("measure,runs", [
    ("P@10", RUNS),
    # a small query:system component, where a gradient optimiser alone stops early
    ("nDCG@10", RUNS + ["partial", "tied"]),
])
def test_variance_components_equal_lme4(tmp_path, shared_data, measure, runs):
    from evaluation.analysis import intent_scores_from_runs

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not found: install Debian's r-base-core and r-cran-lme4")
    probe = subprocess.run(["Rscript", "-e", "library(lme4)"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip("R's lme4 is not installed: install Debian's r-cran-lme4")
    web_scores = intent_scores_from_runs(
        [str(shared_data / "eval-oracles" / "web2011" / "runs" / f"{r}.run") for r in runs],
        str(shared_data / "trec-web-diversity" / "2011" / "qrels.diversity.txt"), measure)
    web_fit = variance.fit_models(web_scores, full=True)
    data = tmp_path / "scores.csv"
    web_scores.to_csv(data, index=False)
    script = tmp_path / "fit.R"
    script.write_text(LME4_SCRIPT)
    out = subprocess.run(["Rscript", str(script), str(data)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lme4 = {}
    for line in out.stdout.splitlines():
        model, group, sd = line.split()
        lme4.setdefault(model, {})[LME4_NAMES[group]] = float(sd)
    assert set(lme4) == {"model1", "model2", "model3", "full"}
    for model, expected in lme4.items():
        ours = web_fit[model]
        assert set(ours) == set(expected)
        scale = max(expected.values())
        for key, value in expected.items():
            # 2e-4 relative (the fits agree to ~2e-5); a component lme4 puts on the
            # boundary (0) must be within 2e-4 of the model's largest SD
            assert ours[key] == pytest.approx(value, rel=2e-4, abs=2e-4 * scale), (model, key)


@pytest.mark.slow
def test_models_recover_simulated_components():
    rng = np.random.default_rng(4)
    s_n, q_n, i_n = 3, 30, 3
    u = rng.normal(0, 0.2, q_n)
    qi = rng.normal(0, 0.1, (q_n, i_n))
    rows = [(f"s{s}", f"q{q}", str(i), 0.1 * s + u[q] + qi[q, i] + rng.normal(0, 0.05))
            for s in range(s_n) for q in range(q_n) for i in range(i_n)]
    fit = variance.fit_models(pd.DataFrame(rows, columns=["system", "query", "intent", "score"]), full=False)
    m3 = fit["model3"]
    assert m3["sd_query"] == pytest.approx(0.2, rel=0.3)
    assert m3["sd_query_intent"] == pytest.approx(0.1, rel=0.3)
    assert m3["sd_residual"] == pytest.approx(0.05, rel=0.2)
    assert fit["model2"]["sd_query_system"] < 0.02  # there is no query:system effect
    assert "full" not in fit


def test_allocation_table_hand_computed():
    comps = {"sd_query": 0.2, "sd_query_system": 0.1, "sd_query_intent": 0.3, "sd_residual": 0.4}
    rows = variance.allocation_table(comps, 12, max_intents=4)
    assert [(r["queries"], r["intents"]) for r in rows] == [(12, 1), (6, 2), (4, 3), (3, 4)]
    r = rows[1]  # N 6, M 2
    assert r["var_mean"] == pytest.approx((0.04 + 0.01) / 6 + (0.09 + 0.16) / 12)
    assert r["var_difference"] == pytest.approx(2 * (0.01 / 6 + 0.16 / 12))
    with pytest.raises(ValueError, match="budget"):
        variance.allocation_table(comps, 0)


def test_subsample_taus_seeded(web_scores):
    a = variance.subsample_taus(web_scores, [0.5, 1.0], repeats=5, seed=9)
    b = variance.subsample_taus(web_scores, [0.5, 1.0], repeats=5, seed=9)
    assert a == b
    full = [r for r in a if r["fraction"] == 1.0]
    assert all(r["mean"] == 1.0 and r["sd"] == 0.0 for r in full)
    assert {r["kind"] for r in a} == {"queries", "intents"}


def test_read_intent_scores_errors(tmp_path):
    path = tmp_path / "s.tsv"
    path.write_text("A q1 1 0.5\nA q1 1 0.4\n")
    with pytest.raises(InputError, match=r"s.tsv, line 2: .*already scored on line 1"):
        variance.read_intent_scores(path)
    path.write_text("A q1 0.5\n")
    with pytest.raises(InputError, match=r"line 1: expected 4 columns"):
        variance.read_intent_scores(path)
    path.write_text("A q1 1 0.5\nB q1 1 0.5\nA q2 1 0.5\nA q3 1 0.2\nB q3 1 0.1\n")
    with pytest.raises(ValueError, match="query q2 intent 1 is not scored for every system"):
        variance.fit_models(variance.read_intent_scores(path))


@pytest.mark.slow
def test_variance_components_command(tmp_path, web_scores):
    from django.core.management import call_command

    web_scores = web_scores[web_scores["query"].isin(sorted(web_scores["query"].unique())[:15])]
    web_fit = variance.fit_models(web_scores, full=True)
    path = tmp_path / "scores.tsv"
    path.write_text("".join(f"{r.system}\t{r.query}\t{r.intent}\t{r.score!r}\n" for r in web_scores.itertuples()))
    out = StringIO()
    call_command("variance_components", "--scores", str(path), "--budget", "12", "--json", stdout=out)
    got = json.loads(out.getvalue())
    for model in ("model1", "model2", "model3", "full"):
        for key, value in web_fit[model].items():
            assert got[model][key] == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert [r["queries"] * r["intents"] for r in got["allocation"]] == [12] * 6
    for row, expected in zip(got["allocation"], variance.allocation_table(web_fit["full"], 12)):
        assert row == pytest.approx(expected)


@pytest.mark.slow
def test_merged_intents(shared_data):
    from evaluation import measures
    from evaluation.analysis import merged_intent_taus
    from evaluation.ranking import kendall_tau_b

    runs = [str(shared_data / "eval-oracles" / "web2011" / "runs" / f"{r}.run") for r in RUNS + ["tied"]]
    qrels_path = shared_data / "trec-web-diversity" / "2011" / "qrels.diversity.txt"
    # every intent its own group: the ordering is unchanged
    same = merged_intent_taus(runs, str(qrels_path), "nDCG@10", fractions=[1.0], repeats=2, seed=1)
    assert same[0]["mean"] == pytest.approx(1.0) and same[0]["kind"] == "merged"
    # one group per topic: the topic's intents merged by their largest grade, computed here
    qrels = measures.read_qrels(qrels_path, "diversity")
    merged = {}
    per_intent = {}
    for topic, intents in qrels.judgments.items():
        for intent, docs in intents.items():
            if any(g > 0 for g in docs.values()):
                for d, g in docs.items():
                    merged.setdefault(topic, {})[d] = max(g, merged.get(topic, {}).get(d, g))
                per_intent.setdefault(intent, {})[topic] = docs
    specs = measures.parse_measures("nDCG@10")
    runset = measures.read_runs(runs)
    one = measures.evaluate_runs(runset, measures.Qrels("adhoc", merged), specs, complete=True)
    merged_order = {tag: np.mean([v["nDCG@10"] for v in r["per_topic"].values()]) for tag, r in one.items()}
    full_scores = []
    for intent, adhoc in per_intent.items():
        res = measures.evaluate_runs(runset, measures.Qrels("adhoc", adhoc), specs, complete=True)
        full_scores += [(tag, t, intent, v["nDCG@10"]) for tag, r in res.items() for t, v in r["per_topic"].items()]
    frame = pd.DataFrame(full_scores, columns=["system", "query", "intent", "score"])
    full_order = frame.groupby(["system", "query"])["score"].mean().groupby("system").mean()
    tags = sorted(merged_order)
    expected = kendall_tau_b([full_order[t] for t in tags], [merged_order[t] for t in tags])
    got = merged_intent_taus(runs, str(qrels_path), "nDCG@10", fractions=[0.01], repeats=1, seed=1)
    assert got[0]["mean"] == pytest.approx(expected)


def test_read_intent_scores_header_rows(tmp_path, web_scores):
    """Files written from R or pandas start with a header naming the columns: read them
    as the plain file (columns in any order, quoted names, commas, R's row names)."""
    small = web_scores[web_scores["query"].isin(sorted(web_scores["query"].unique())[:3])]
    plain = tmp_path / "plain.tsv"
    plain.write_text("".join(f"{r.system} {r.query} {r.intent} {r.score!r}\n" for r in small.itertuples()))
    want = variance.read_intent_scores(plain)
    tab = tmp_path / "header.tsv"
    tab.write_text("system\tquery\tintent\tscore\n" + plain.read_text().replace(" ", "\t"))
    csv = tmp_path / "pandas.csv"
    small[["score", "system", "query", "intent"]].to_csv(csv, index=False)
    r_table = tmp_path / "r.txt"  # write.table(d): quoted strings, a row name on every row
    r_table.write_text('"system" "query" "intent" "score"\n' + "".join(
        f'"{i}" "{r.system}" "{r.query}" "{r.intent}" {r.score!r}\n'
        for i, r in enumerate(small.itertuples(), 1)))
    for path in (tab, csv, r_table):
        pd.testing.assert_frame_equal(variance.read_intent_scores(path), want, obj=path.name)
    bad = tmp_path / "bad.tsv"
    bad.write_text("system query topic score\nA q1 1 0.5\n")
    with pytest.raises(InputError,
                       match=r"bad.tsv, line 1: a header must name the columns"):
        variance.read_intent_scores(bad)
    bad.write_text("system query intent score\nA q1 1 high\n")
    with pytest.raises(InputError, match=r"line 2: score 'high' is not a number"):
        variance.read_intent_scores(bad)


def test_variance_components_order_option(tmp_path, shared_data):
    """--order picks the convention for tied scores on the --run path: rank follows the
    file's rank column, trec_eval re-sorts; on a run with ties some per-intent AP differ."""
    from django.core.management import call_command

    from evaluation.analysis import intent_scores_from_runs

    runs = [str(shared_data / "eval-oracles" / "web2011" / "runs" / f"{r}.run") for r in ("good", "tied")]
    qrels = str(shared_data / "trec-web-diversity" / "2011" / "qrels.diversity.txt")
    saved = {}
    for order in ("trec_eval", "rank"):
        path = tmp_path / f"{order}.tsv"
        call_command("variance_components", *[a for r in runs for a in ("--run", r)],
                     "--qrels", qrels, "--measure", "AP", "--order", order,
                     "--save-scores", str(path), "--json", stdout=StringIO())
        saved[order] = variance.read_intent_scores(path)
        direct = intent_scores_from_runs(runs, qrels, "AP", order=order)
        pd.testing.assert_frame_equal(saved[order], variance.intent_scores_frame(direct))
    joined = saved["trec_eval"].merge(saved["rank"], on=["system", "query", "intent"])
    tied = joined[joined["system"] == "tied"]
    assert (tied["score_x"] != tied["score_y"]).any()
