"""Writing a release: the files of the records (:func:`release_files`), their manifest,
and the folder or deterministic ``.tar.gz`` they go into (:func:`write_release`). Plain
Python; no Django."""
from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Iterator

from evaluation import agreement, intents
from judging.aggregate import aggregate

from .base import (
    AGGREGATION,
    FORMAT,
    MANIFEST,
    NO_INTENT,
    ReleaseError,
    _file_name,
    _jsonl,
    _natural,
    dumps,
    licence_get,
    records_check,
    run_qid,
    safe_name,
)
from .datasheet import _citation, datasheet

def _trec_run(run: dict) -> Iterator[str]:
    """The run's TREC lines, one query's lines a chunk; ``run["rankings"]()`` yields
    ``(qid, docids, scores)`` in the order of ``run["queries"]``."""
    tag = run["tag"] or run["name"]
    for qid, docids, scores in run["rankings"]():
        yield "".join(f"{qid} Q0 {d} {rank} {float(sc)!r} {tag}\n"
                      for rank, (d, sc) in enumerate(zip(docids, scores), 1))


def aggregated_qrels(labels: list[dict], fmt: str, rule: str = AGGREGATION) -> list[tuple]:
    """``(topic, intent-or-0, docid, grade)`` of the labels that count (current, graded),
    combined per item by ``rule`` (judging.aggregate), in natural topic order then intent
    and docid. ``adhoc``: labels made against the topic as a whole; ``diversity``: per
    intent."""
    items: dict[tuple, list] = {}
    for lb in labels:
        if not lb["current"] or lb["grade"] is None:
            continue
        if (fmt == "adhoc") != (lb["intent_id"] == NO_INTENT):
            continue
        items.setdefault((lb["topic_id"], lb["intent_id"], lb["docid"]), []).append(
            (lb["assessor"], lb["grade"]))
    grades = aggregate(items, rule) if items else {}
    rows = [(t, i if fmt == "diversity" else "0", d, int(g)) for (t, i, d), g in grades.items()]
    rows.sort(key=lambda r: (_natural(r[0]), _natural(r[1]), r[2]))
    return rows


def label_figures(labels: list[dict]) -> dict[str, Any]:
    """The agreement summary and intent properties of the labels that count, through
    evaluation's own functions; a figure that does not apply (one assessor, no intents)
    is left out, with the reason under ``"not computed"``."""
    rows = [(lb["topic_id"], lb["intent_id"] or agreement.CROWD_INTENT, lb["docid"],
             lb["assessor"], lb["grade"])
            for lb in labels if lb["current"] and lb["grade"] is not None]
    out: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    if not rows:
        return {"not computed": {"agreement": "no graded labels",
                                 "intents": "no graded labels"}}
    table = agreement.label_table(rows)
    if len({r[3] for r in rows}) < 2:
        skipped["agreement"] = "one assessor: agreement needs two or more"
    else:
        try:
            out["agreement"] = agreement.agreement_summary(table, relevant_from=1)
        except ValueError as exc:
            skipped["agreement"] = str(exc)
    per_intent = [r for r in rows if r[1] != agreement.CROWD_INTENT]
    if not per_intent:
        skipped["intents"] = "no labels made per intent"
    else:
        try:
            out["intents"] = intents.intent_properties(agreement.label_table(per_intent))
        except ValueError as exc:
            skipped["intents"] = str(exc)
    if skipped:
        out["not computed"] = skipped
    return out


def _tsv_pool(pool: dict) -> str:
    out = io.StringIO()
    out.write("topic\tposition\tdocid\tweight\tmin_rank\tusers\tsystems\n")
    for tp in pool["topics"]:
        for n, row in enumerate(zip(tp["docids"], tp["weights"], tp["min_rank"], tp["users"],
                                    tp["systems"]), 1):
            d, w, r, u, s = row
            out.write(f"{tp['topic_id']}\t{n}\t{d}\t{float(w)!r}\t{int(r)}\t{int(u)}\t{int(s)}\n")
    return out.getvalue()


def release_files(rec: dict, *, licence: str, title: str | None = None,
                  authors: list[str] | None = None) -> dict[str, Any]:
    """``{relative path: text}`` of the release of the records ``rec``, the manifest
    excepted; a run file's value is a function that yields its text in chunks (a run
    holds millions of lines: it is written one batch of queries at a time)."""
    records_check(rec)
    lic = licence_get(licence)
    files: dict[str, Any] = {}
    files["topics.jsonl"] = _jsonl(rec["topics"])
    files["variants.jsonl"] = _jsonl(rec["variants"])
    runs_meta = []
    for run in rec["runs"]:
        name = _file_name(run["name"], "run")
        files[f"runs/{name}.run"] = (lambda run=run: _trec_run(run))
        files[f"runs/{name}.queries.jsonl"] = _jsonl(dict(q, qid=run_qid(run, q))
                                                     for q in run["queries"])
        runs_meta.append({k: v for k, v in run.items() if k not in ("queries", "rankings")})
    pools_meta = []
    for pool in rec["pools"]:
        name = _file_name(pool["name"], "pool")
        files[f"pools/{name}.tsv"] = _tsv_pool(pool)
        pools_meta.append({k: v for k, v in pool.items() if k != "topics"})
    sets_meta = []
    figures: dict[str, dict] = {}
    for js in rec["judgment_sets"]:
        name = _file_name(js["name"], "judgment set")
        base = f"judgments/{name}"
        files[f"{base}/labels.jsonl"] = _jsonl(js["labels"])
        qrels = {}
        for fmt in ("adhoc", "diversity"):
            lines = aggregated_qrels(js["labels"], fmt)
            if lines:
                files[f"{base}/qrels.{fmt}.txt"] = "".join(f"{t} {i} {d} {g}\n"
                                                           for t, i, d, g in lines)
            qrels[fmt] = len(lines)
        figures[name] = label_figures(js["labels"])
        for key in ("agreement", "intents"):
            if key in figures[name]:
                files[f"{base}/{key}.json"] = dumps(figures[name][key])
        sets_meta.append({**{k: v for k, v in js.items() if k != "labels"},
                          "qrels_lines": qrels,
                          "not_computed": figures[name].get("not computed", {})})
    meta = {
        "format": FORMAT, "topic_set": rec["topic_set"], "licence": lic,
        "aggregation": {"rule": AGGREGATION, "module": "judging.aggregate",
                        "labels": "current, graded labels of each (topic, intent, docid)"},
        "pseudonyms": "anon- + 16 hex digits of HMAC-SHA256 under a salt kept by the "
                      "installation that made the release (not part of it)",
        "studies": rec["studies"], "collections": rec["collections"], "models": rec["models"],
        "runs": runs_meta, "pools": pools_meta, "judgment_sets": sets_meta,
    }
    files["release.json"] = dumps(meta)
    files["LICENSE.md"] = (
        f"# Licence\n\nThis release is made available under the {lic['name']} "
        f"(SPDX: `{lic['spdx']}`).\n\nThe licence text: <{lic['url']}>\n\n"
        "The documents of the collection the runs were retrieved from are not part of this "
        "release; their own licence applies to them.\n")
    files["CITATION.cff"] = _citation(rec, lic, title, authors)
    files["README.md"] = datasheet(rec, lic, files, figures, title=title)
    return files


def manifest_text(digests: dict[str, str]) -> str:
    """``sha256  path`` of every file but the manifest, sorted by path."""
    return "".join(f"{digests[p]}  {p}\n" for p in sorted(digests) if p != MANIFEST)


def _write_file(path: Path, content) -> str:
    """Write a text or the chunks a function yields; the SHA-256 of the bytes."""
    digest = hashlib.sha256()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for chunk in ([content] if isinstance(content, str) else content()):
            data = chunk.encode("utf-8")
            digest.update(data)
            f.write(data)
    return digest.hexdigest()


def write_release(rec: dict, out: str | Path, *, licence: str, title: str | None = None,
                  authors: list[str] | None = None) -> Path:
    """The release as a folder ``out`` (made; must not exist or be empty) or, for a name
    ending in ``.tar.gz``, a deterministic archive whose top folder is the topic set's
    name (:func:`write_tar`). Either appears complete or not at all. Returns ``out``."""
    out = Path(out)
    archive = out.name.endswith(".tar.gz")
    if not archive and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out}: exists and is not an empty folder")
    files = release_files(rec, licence=licence, title=title, authors=authors)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        digests = {rel: _write_file(work / rel, files[rel]) for rel in sorted(files)}
        _write_file(work / MANIFEST, manifest_text(digests))
        for d in [work, *work.rglob("*")]:
            d.chmod(0o755 if d.is_dir() else 0o644)
        if archive:
            part = work.with_name(work.name + ".tar.gz")
            try:
                write_tar(work, part, safe_name(rec["topic_set"]))
                part.replace(out)
            finally:
                part.unlink(missing_ok=True)
            shutil.rmtree(work)
        else:
            if out.exists():
                out.rmdir()
            work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


def write_tar(root: Path, dest: Path, top: str) -> None:
    """A ``.tar.gz`` of the files under ``root`` as ``top/…``: entries sorted, folders
    before their files, mtime 0, owner 0/0 without names, modes 0644/0755, gzip mtime 0
    and no file name in the gzip header."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    dirs = {top}
    for rel in files:
        parts = rel.split("/")[:-1]
        for n in range(1, len(parts) + 1):
            dirs.add(top + "/" + "/".join(parts[:n]))
    entries = sorted([(d, None) for d in dirs] + [(f"{top}/{p}", p) for p in files],
                     key=lambda e: e[0].split("/"))
    with open(dest, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, rel in entries:
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if rel is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                path = root / rel
                info.mode, info.size = 0o644, path.stat().st_size
                with open(path, "rb") as f:
                    tar.addfile(info, f)
