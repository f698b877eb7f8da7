"""CACM effectiveness of the rankings the service stores, against an independent run.

The reference side uses none of the product's code: CACM is read by the small SMART
reader below, indexed by Anserini's own ``IndexCollection`` command, searched with
Anserini's ``SimpleSearcher`` (BM25 k1=0.9 b=0.4, and SDM through its
``SdmQueryGenerator``) and scored by trec_eval -- the C trec_eval shipped inside the
Anserini jar, run through the jar's ``io.anserini.eval.TrecEval``. The product side
imports CACM with ``import_collection``, retrieves through ``run_create`` and the service
the worker calls, and exports with ``export_run``.

The stored rankings must list the same documents in the same order as SimpleSearcher for
every query, and the stored float32 scores, put through Anserini's own score adjustment,
must be SimpleSearcher's scores bit for bit. trec_eval must give the product's order
exactly the reference's per-query numbers (every measure asked for), and the product's
export (scores as stored) the reference's MAP. The MAP values here are the reference's:
these are the numbers to pin elsewhere.

About tied scores: SimpleSearcher rounds scores to four decimals and nudges tied ones apart
so that trec_eval -- which orders equal scores by docid *descending* -- keeps its order
(ascending docid). The product stores the exact float32 scores, orders ties by ascending
docid too, and exports them as they are, so on the few CACM queries with exactly tied
scores trec_eval reorders the export's ties and its per-query values differ in the fourth
decimal (query 11 BM25 AP: 0.3915 against 0.3908 for the order the product stored). The
test checks exactly that: differences only on queries where a relevant document is tied,
and the export evaluates exactly like the product's order with ties turned around.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from retrieval import anserini
from retrieval.models import Collection, RunChunk
from retrieval.services import chunk_retrieve, run_create
from topics.models import Topic, TopicSet

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

# trec_eval's "map all" on CACM (52 judged of 64 queries, the .W text of query.text,
# documents = .T + .W + .A, depth 1000), from the independent run below.
CACM_MAP = {"bm25": "0.3102", "sdm": "0.3121"}
MEASURES = ["-m", "map", "-m", "P.10", "-m", "recall.1000", "-m", "ndcg_cut.10",
            "-m", "num_rel_ret"]


def _smart_records(path: Path):
    """(docid, {field letter: text}) for each ``.I`` record of a SMART file."""
    docid, fields, field = None, {}, None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I "):
            if docid is not None:
                yield docid, fields
            docid, fields, field = line[3:].strip(), {}, None
        elif len(line) >= 2 and line[0] == "." and line[1].isupper() and not line[2:].strip():
            field = line[1]
            fields.setdefault(field, "")
        elif docid is not None and field is not None:
            fields[field] += " " + line
    if docid is not None:
        yield docid, fields


def _reference_index(cacm_dir: Path, work: Path) -> Path:
    from jnius import autoclass

    docs = work / "json"
    docs.mkdir()
    with open(docs / "cacm.jsonl", "w", encoding="utf-8") as f:
        for docid, fields in _smart_records(cacm_dir / "cacm.all"):
            contents = " ".join(fields.get(k, "") for k in "TWA")
            f.write(json.dumps({"id": docid, "contents": " ".join(contents.split())}) + "\n")
    index = work / "index"
    autoclass("io.anserini.index.IndexCollection").main([
        "-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
        "-input", str(docs), "-index", str(index), "-threads", "1",
        "-storePositions", "-storeDocvectors", "-storeRaw", "-quiet",
    ])
    return index


def _reference_run(index: Path, queries: dict[str, str], model: str, out: Path) -> None:
    """SimpleSearcher's depth-1000 rankings in TREC format."""
    from jnius import autoclass

    searcher = autoclass("io.anserini.search.SimpleSearcher")(str(index))
    try:
        searcher.set_bm25(0.9, 0.4)
        sdm = autoclass("io.anserini.search.query.SdmQueryGenerator")(0.85, 0.1, 0.05)
        with open(out, "w") as f:
            for qid, text in queries.items():
                hits = searcher.search(sdm, text, 1000) if model == "sdm" else searcher.search(
                    text, 1000)
                for rank, h in enumerate(hits, 1):
                    f.write(f"{qid} Q0 {h.docid} {rank} {float(h.score)!r} reference\n")
    finally:
        searcher.close()


def _trec_eval(qrels: Path, run: Path, *extra: str) -> list[str]:
    from jnius import autoclass

    rows = autoclass("io.anserini.eval.TrecEval")().runAndGetOutput(
        [*MEASURES, *extra, str(qrels), str(run)])
    return ["\t".join(str(cell) for cell in row) for row in rows]


def _rankings(run_file: Path) -> dict[str, list[tuple[str, float]]]:
    """{qid: [(docid, score)]} in the file's rank order."""
    out: dict[str, list[tuple[int, str, float]]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, docid, rank, score, _ = line.split()
        out.setdefault(qid, []).append((int(rank), docid, float(score)))
    return {q: [(d, s) for _, d, s in sorted(rows)] for q, rows in out.items()}


def _anserini_adjusted(scores: list[float]) -> list[float]:
    """What SimpleSearcher's ScoreTiesAdjusterReranker (as compiled in the Anserini 1.7.1
    jar: rounding in double, the rest in float) makes of a ranking's float32 scores: each
    rounded to 1e-4, ``(float) (Math.round(s * 10000.0) / 10000.0)``; a score within 1e-4f
    of the previous adjusted one is lowered by 1e-6f times the length of that run."""
    f32 = np.float32
    out: list = []
    dup = 0
    for s in scores:
        x = float(f32(s)) * 10000.0
        r = math.floor(x)
        r += 1 if x - r >= 0.5 else 0  # Math.round: half up, exactly
        v = f32(r / 10000.0)
        if not out or out[-1] - v > f32(1e-4):
            dup = 0
        else:
            dup += 1
            v = f32(v - f32(f32(1e-6) * f32(dup)))
        out.append(v)
    return [float(v) for v in out]


def _rank_encoded(rankings: dict[str, list[tuple[str, float]]], out: Path) -> Path:
    """The same rankings with score = -rank, so trec_eval evaluates exactly this order."""
    with open(out, "w") as f:
        for qid, rows in rankings.items():
            for rank, (docid, _) in enumerate(rows, 1):
                f.write(f"{qid} Q0 {docid} {rank} {-rank} ranked\n")
    return out


def _per_query(rows: list[str], measure: str = "map") -> dict[str, str]:
    out = {}
    for row in rows:
        name, qid, value = (cell.strip() for cell in row.split("\t"))
        if name == measure:
            out[qid] = value
    return out


@pytest.fixture
def product_runs(settings, tmp_path, cacm_dir, cacm_queries, django_capture_on_commit_callbacks):
    """Export files of the service's BM25 and SDM runs of CACM's 64 queries."""
    settings.INDEX_ROOT = tmp_path / "indexes"
    call_command("import_collection", "cacm", str(cacm_dir / "cacm.all"), "--format", "smart",
                 stdout=io.StringIO())
    ts = TopicSet.objects.create(name="cacm")
    Topic.objects.bulk_create([Topic(topic_set=ts, topic_id=q, title=t)
                               for q, t in cacm_queries.items()])
    files = {}
    for model in ("bm25", "sdm"):
        with django_capture_on_commit_callbacks(execute=False):
            run = run_create(topic_set_name="cacm", collection_name="cacm", model_name=model,
                             depth=1000, source="titles")
        for chunk in RunChunk.objects.filter(run=run):  # what the worker does, directly
            chunk_retrieve(chunk.pk)
        run.refresh_from_db()
        assert (run.status, run.completed, run.total) == ("done", 64, 64)
        files[model] = tmp_path / f"{model}.run"
        call_command("export_run", "--topic-set", "cacm", "--collection", "cacm",
                     "--model", model, "--out", str(files[model]), stdout=io.StringIO())
    assert Collection.objects.get(name="cacm").doc_count == 3204
    return files


def test_stored_rankings_score_like_raw_anserini_under_trec_eval(
        product_runs, cacm_dir, cacm_queries, tmp_path):
    assert anserini.jvm_started()  # the product started it; the jar is on the class path
    work = tmp_path / "reference"
    work.mkdir()
    index = _reference_index(cacm_dir, work)
    qrels = tmp_path / "cacm.qrels"  # CACM's qrels number queries 01..64; query.text 1..64
    qrels.write_text("".join(
        f"{int(q)} {it} {d} {r}\n" for q, it, d, r in
        (line.split() for line in (cacm_dir / "cacm.qrels").read_text().splitlines())))
    relevant = {tuple(line.split()[::2]) for line in qrels.read_text().splitlines()
                if int(line.split()[3]) > 0}
    for model, product_file in product_runs.items():
        reference_file = work / f"{model}.run"
        _reference_run(index, cacm_queries, model, reference_file)
        ours, theirs = _rankings(product_file), _rankings(reference_file)
        assert sorted(ours) == sorted(theirs) and len(ours) == 64
        tied_queries = set()
        for qid, rows in theirs.items():
            assert [d for d, _ in ours[qid]] == [d for d, _ in rows], (model, qid)
            # strictly decreasing, so trec_eval keeps the listed order
            assert all(a > b for (_, a), (_, b) in zip(rows, rows[1:])), (model, qid)
            # the stored float32 scores, through Anserini's adjustment, are its scores exactly
            assert _anserini_adjusted([sc for _, sc in ours[qid]]) == [sc for _, sc in rows], (
                model, qid)
            # queries where a relevant document shares its exact score with another one
            by_score: dict[float, list[str]] = {}
            for d, sc in ours[qid]:
                by_score.setdefault(sc, []).append(d)
            if any(len(g) > 1 and any((qid, d) in relevant for d in g)
                   for g in by_score.values()):
                tied_queries.add(qid)
        reference = _trec_eval(qrels, reference_file, "-q")
        # the product's order, evaluated as it is: every measure of every query equal
        assert _trec_eval(qrels, _rank_encoded(ours, work / f"{model}.ranked"), "-q") == reference
        # the export as a user gets it: trec_eval reorders exactly tied scores its own way
        exported = _trec_eval(qrels, product_file, "-q")
        ap_ref, ap_exp = _per_query(reference), _per_query(exported)
        assert len(ap_ref) == 53  # 52 judged queries and "all"
        differ = {q for q in ap_ref if q != "all" and ap_ref[q] != ap_exp[q]}
        assert differ <= tied_queries, (model, differ - tied_queries)
        # ... and that is all: the product's order with ties turned docid-descending, as
        # trec_eval documents, evaluates exactly like the export
        trec_eval_order = {
            q: sorted(sorted(rows, key=lambda r: r[0], reverse=True), key=lambda r: -r[1])
            for q, rows in ours.items()}
        assert _trec_eval(qrels, _rank_encoded(trec_eval_order, work / f"{model}.te"),
                          "-q") == exported
        assert ap_ref["all"] == ap_exp["all"] == CACM_MAP[model], (model, ap_ref["all"],
                                                                   ap_exp["all"])
        print(f"{model}: MAP {ap_ref['all']}; {len(tied_queries)} queries with a relevant "
              f"document in a tie, per-query AP differs on {sorted(differ, key=int)}")
