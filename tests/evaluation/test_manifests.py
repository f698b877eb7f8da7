"""The evaluation and analysis commands with --out and --manifest: the file holds what the
command prints, verify_manifest recomputes it (exit 0), and names a tampered output, a
changed input file or changed stored data."""
from __future__ import annotations

import io
import json
from io import StringIO
import shutil

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tests.common.manifest_checks import fails as _fails, verify as _verify

from .test_intents import INTENT_LABELS, USER_LABELS


def _call(command, *args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _export(command, *args, out, printed: bool = True) -> dict:
    """Run with --out and --manifest; the file equals what the command prints without
    --out (unless ``printed`` is false, to save a slow run), the manifest names the
    command and verify_manifest reproduces it."""
    written, err = _call(command, *args, "--out", str(out), "--manifest")
    assert written == "" and f"wrote {out}" in err
    if printed:
        text = _call(command, *args)[0]
        assert out.read_text(encoding="utf-8") == text and text.endswith("\n")
    m = out.with_name(out.name + ".manifest.json")
    data = json.loads(m.read_text())
    assert data["command"] == command and data["output"]["path"] == str(out)
    assert "OK" in _verify(m)
    return data


def _manifest(out):
    return out.with_name(out.name + ".manifest.json")


def _write_labels(path, rows):
    path.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))


# ------------------------------------------------------------------------- evaluate


def test_evaluate_round_trip_on_trec_files_and_a_changed_run_is_named(shared_data, tmp_path):
    runs = shared_data / "eval-oracles" / "web2011" / "runs"
    qrels = shared_data / "trec-web-diversity" / "2011" / "qrels.adhoc.txt"
    run = tmp_path / "tied.run"
    shutil.copy(runs / "tied.run", run)
    out = tmp_path / "eval.json"
    data = _export("evaluate", "--run", str(runs / "partial.run"), "--run", str(run),
                   "--qrels", str(qrels), "--measures", "AP nDCG@20 RBP(p=0.8)", "--complete",
                   "--json", out=out)
    assert set(data["inputs"]) == {str(runs / "partial.run"), str(run), str(qrels)}
    assert data["parameters"]["run"] == [str(runs / "partial.run"), str(run)]
    assert set(json.loads(out.read_text())["runs"]) == {"partial", "tied"}
    # another run in place of tied.run: the input and the recomputed output differ
    shutil.copy(runs / "good.run", run)
    msg = _fails(_manifest(out))
    assert f"input {run} changed" in msg and "output sha256 differs" in msg


def test_evaluate_text_tampered_output_is_named(tmp_path):
    run, qrels = tmp_path / "r.run", tmp_path / "q.txt"
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 c 1 1.0 sys\n")
    qrels.write_text("1 0 b 1\n2 0 c 1\n")
    out = tmp_path / "eval.txt"
    _export("evaluate", "--run", str(run), "--qrels", str(qrels), "--measures", "RR P@1",
            "--per-topic", out=out)
    assert out.read_text().splitlines()[-2:] == ["sys\tRR \tall\t0.7500", "sys\tP@1\tall\t0.5000"]
    out.write_text(out.read_text().replace("0.7500", "0.8000"))
    msg = _fails(_manifest(out))
    assert f"the output file {out} changed" in msg
    assert "output sha256 differs" not in msg  # the recomputation still matches the manifest


@pytest.mark.django_db
def test_evaluate_recomputes_from_stored_judgments(tmp_path):
    from judging.models import Label
    from judging.services import judgments_import
    from retrieval.services import system_run_import
    from topics.models import Topic, TopicSet

    ts = TopicSet.objects.create(name="m")
    for tid in ("1", "2"):
        Topic.objects.create(topic_set=ts, topic_id=tid, title=f"title {tid}")
    run = tmp_path / "a.run"
    run.write_text("".join(f"{t} Q0 d{d} {r} {10 - r}.5 sysA\n"
                           for t in ("1", "2") for r, d in enumerate((1, 2, 3), 1)))
    system_run_import(run, topic_set_name="m")
    (tmp_path / "j.qrels").write_text("1 0 d1 1\n1 0 d3 0\n2 0 d2 2\n")
    judgments_import(tmp_path / "j.qrels", format="adhoc", name="j", topic_set_name="m")
    out = tmp_path / "stored.txt"
    data = _export("evaluate", "--topic-set", "m", "--tag", "sysA", "--judgments", "j",
                   "--measures", "P@1", "--per-topic", out=out)
    assert data["inputs"] == {}
    assert out.read_text() == "sysA\tP@1\t1\t1.0000\nsysA\tP@1\t2\t0.0000\nsysA\tP@1\tall\t0.5000\n"
    Label.objects.filter(docid="d1").update(grade=0)
    msg = _fails(_manifest(out))
    assert "line 1: 'sysA\\tP@1\\t1\\t1.0000' recorded, 'sysA\\tP@1\\t1\\t0.0000' now" in msg


# ------------------------------------------------------------------------- agreement


def test_agreement_round_trip_then_changed_labels_and_tampered_output(tmp_path):
    labels = tmp_path / "labels.tsv"
    rows = [("t", "1", f"u{u}", coder, g) for coder, grades in
            {"A": [0, 1, 2, 1, 0, 2], "B": [0, 1, 1, 1, 0, 2], "C": [1, 1, 2, 0, 0, 2]}.items()
            for u, g in enumerate(grades)]
    _write_labels(labels, rows)
    out = tmp_path / "agreement.txt"
    data = _export("agreement", "--labels", str(labels), "--relevant-from", "2", out=out)
    assert data["inputs"] == {str(labels): data["inputs"][str(labels)]}
    assert data["parameters"]["relevant_from"] == 2
    assert out.read_text().startswith("items 6  labels 18  categories [0, 1, 2]\n")
    js = tmp_path / "agreement.json"
    _export("agreement", "--labels", str(labels), "--json", out=js)
    # a changed label: the input is named and the first differing line shown
    _write_labels(labels, [r if r[2:4] != ("u0", "A") else ("t", "1", "u0", "A", 2) for r in rows])
    msg = _fails(_manifest(out))
    assert f"input {labels} changed" in msg and "output sha256 differs" in msg
    assert "first difference: line 2: \"Fleiss' kappa" in msg
    # the labels as they were, the output edited by hand
    _write_labels(labels, rows)
    assert "OK" in _verify(_manifest(out))
    out.write_text(out.read_text() + "edited\n")
    assert f"the output file {out} changed" in _fails(_manifest(out))


# ------------------------------------------------------------------------- intent properties


def test_intent_properties_round_trip(tmp_path):
    a, u = tmp_path / "intents.tsv", tmp_path / "users.tsv"
    _write_labels(a, INTENT_LABELS)
    _write_labels(u, USER_LABELS)
    out = tmp_path / "intents.txt"
    data = _export("intent_properties", "--labels", str(a), "--user-labels", str(u),
                   "--beta", "0.6", out=out)
    assert set(data["inputs"]) == {str(a), str(u)}
    assert out.read_text().startswith("topics 1  intents 2  coherent ")
    _export("intent_properties", "--labels", str(a), "--json", out=tmp_path / "intents.json")
    _write_labels(u, USER_LABELS[:-1])
    assert f"input {u} changed" in _fails(_manifest(out))


# ------------------------------------------------------------------------- rank correlation


def _score_files(tmp_path):
    rng = np.random.default_rng(0)
    topics = [f"t{i}" for i in range(6)]
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    means = {"s1": 0.5, "s2": 0.4, "s3": 0.3, "s4": 0.2}
    per = {s: dict(zip(topics, m + rng.normal(0, 0.05, 6))) for s, m in means.items()}
    a.write_text("".join(f"{s}\t{t}\t{v!r}\n" for s, d in per.items() for t, v in d.items()))
    b.write_text("".join(f"{s}\t{t}\t{v * (3 if s == 's4' else 1)!r}\n"
                         for s, d in per.items() for t, v in d.items()))
    return a, b


def test_rank_correlation_records_its_seed_and_reproduces_the_randomisation(tmp_path):
    a, b = _score_files(tmp_path)
    out = tmp_path / "tau.json"
    data = _export("rank_correlation", str(a), str(b), "--significance", "--trials", "200",
                   "--seed", "3", "--json", out=out)
    assert data["seeds"] == {"seed": 3} and data["parameters"]["trials"] == 200
    assert data["argv"][:2] == [str(a), str(b)] and set(data["inputs"]) == {str(a), str(b)}
    assert json.loads(out.read_text())["significance"]["seed"] == 3
    text = tmp_path / "tau.txt"
    _export("rank_correlation", str(a), str(b), "--significance", "--trials", "200", out=text)


def test_rank_correlation_intent_scores_only(tmp_path):
    scores = tmp_path / "intents.tsv"
    scores.write_text("".join(f"{s}\tq{q}\t{i}\t{(k * 7 + q * 3 + i * 5) % 11 / 10}\n"
                              for k, s in enumerate(("A", "B", "C")) for q in (1, 2)
                              for i in (1, 2, 3)))
    out = tmp_path / "pairs.txt"
    data = _export("rank_correlation", "--intent-scores", str(scores), out=out)
    assert data["argv"][0] == "--trials" and "None" not in data["argv"]  # no absent positionals
    assert [line.split("\t")[0] for line in out.read_text().splitlines()] == ["q1", "q2"]


# ------------------------------------------------------------------------- variance components


def test_variance_components_round_trip_with_seeded_subsampling(tmp_path):
    rng = np.random.default_rng(1)
    system = {"A": 0.1, "B": 0.0, "C": -0.1}
    query = {f"q{q}": rng.normal(0.5, 0.15) for q in range(8)}
    lines = [f"{s}\t{q}\t{i}\t{min(1.0, max(0.0, sv + qv + rng.normal(0, 0.1)))!r}\n"
             for s, sv in system.items() for q, qv in query.items() for i in (1, 2, 3)]
    scores = tmp_path / "scores.tsv"
    scores.write_text("".join(lines))
    saved = tmp_path / "saved.tsv"
    out = tmp_path / "var.txt"
    data = _export("variance_components", "--scores", str(scores), "--budget", "6", "--subsample",
                   "--fractions", "0.5", "--repeats", "4", "--seed", "5",
                   "--save-scores", str(saved), out=out, printed=False)
    assert data["seeds"] == {"seed": 5}
    # the second output is not the manifest's: verifying does not rewrite it
    assert "--save-scores" not in data["argv"] and "save_scores" not in data["parameters"]
    assert str(saved) not in data["inputs"] and saved.is_file()
    lines = out.read_text().splitlines()
    assert [line.split("\t")[0] for line in lines[:4]] == ["model1", "model2", "model3", "full"]
    assert sum(line.startswith("N ") for line in lines) == 4  # 6 pairs: N x M with M ≤ 3 intents
    assert [line.split("\t")[:2] for line in lines[-2:]] == [["queries", "0.5"], ["intents", "0.5"]]


# ------------------------------------------------------------------------- variability


@pytest.mark.django_db
def test_variability_round_trip_and_changed_judgments(tmp_path):
    from judging.models import Label

    from .test_variability import build

    build(tmp_path)
    spread = tmp_path / "spread.csv"
    out = tmp_path / "variability.txt"
    data = _export("variability", "--topic-set", "small", "--judgments", "nist", "--measure", "P@2",
                   "--model", "bm25", "--no-decomposition", "--csv", str(spread), out=out)
    assert "--csv" not in data["argv"] and spread.read_text().startswith("topic,")
    assert "1\t3\t0.5000\t0.5000\t3\t0.5000\t0.5000" in out.read_text()
    _export("variability", "--topic-set", "small", "--qrels", "nist-qrels", "--measure", "P@2",
            "--model", "bm25", "--no-decomposition", "--json", out=tmp_path / "variability.json")
    Label.objects.filter(docid="d3").update(grade=0)
    assert "output sha256 differs" in _fails(_manifest(out))


def test_out_refuses_an_unwritable_place_and_manifest_needs_out(tmp_path):
    run, qrels = tmp_path / "r.run", tmp_path / "q.txt"
    run.write_text("1 Q0 a 1 2.0 sys\n")
    qrels.write_text("1 0 a 1\n")
    args = ("--run", str(run), "--qrels", str(qrels), "--measures", "P@1")
    with pytest.raises(CommandError, match=f"cannot write {tmp_path / 'no' / 'e.txt'}"):
        _call("evaluate", *args, "--out", str(tmp_path / "no" / "e.txt"))
    with pytest.raises(CommandError, match="--manifest needs an output file"):
        _call("evaluate", *args, "--manifest")
    assert _call("evaluate", *args, "--out", "-")[0] == "sys\tP@1\tall\t1.0000\n"


def test_rank_correlation_compares_two_measures(tmp_path, shared_data):
    """AP of one evaluation against alpha-nDCG@20 of another (the seed's question): each
    file is read with its own measure, and the taus are those of the two mean columns."""
    from evaluation import ranking

    web = shared_data / "trec-web-diversity" / "2011"
    runs = [a for r in ("good", "fair", "weak", "noisy", "tied")
            for a in ("--run", str(shared_data / "eval-oracles" / "web2011" / "runs" / f"{r}.run"))]
    adhoc, div = tmp_path / "ap.json", tmp_path / "andcg.json"
    call_command("evaluate", *runs, "--qrels", str(web / "qrels.adhoc.txt"), "--measures", "AP",
                 "--json", "--out", str(adhoc), stdout=StringIO())
    call_command("evaluate", *runs, "--qrels", str(web / "qrels.diversity.txt"), "--qrels-format",
                 "diversity", "--measures", "alpha_nDCG@20", "--json", "--out", str(div),
                 stdout=StringIO())
    out = StringIO()
    call_command("rank_correlation", str(adhoc), str(div), "--measure-a", "AP",
                 "--measure-b", "alpha_nDCG@20", "--json", stdout=out)
    got = json.loads(out.getvalue())
    a = json.loads(adhoc.read_text())["runs"]
    b = json.loads(div.read_text())["runs"]
    tags = sorted(a)
    want = ranking.kendall_tau_b([a[t]["mean"]["AP"] for t in tags],
                                 [b[t]["mean"]["alpha_nDCG@20"] for t in tags])
    assert got["systems"] == 5 and got["tau_b"] == pytest.approx(want)
    with pytest.raises(CommandError, match="andcg.json: run good topic 101 has no AP"):
        call_command("rank_correlation", str(adhoc), str(div), "--measure", "AP", stdout=StringIO())
