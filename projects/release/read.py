"""Reading a release: its manifest checked, its files read back into the records
(:func:`read_release`), a ``.tar.gz`` unpacked first (:func:`open_release`). Plain Python;
no Django."""
from __future__ import annotations

import hashlib
import json
import re
import tarfile
from pathlib import Path
from typing import Iterator

from .base import FORMAT, MANIFEST, ReleaseError, _file_name

TOPIC_KEYS = ("topic_id", "title", "description", "narrative", "kind", "statements", "intents")
VARIANT_KEYS = ("topic_id", "variant_id", "raw", "normalised", "uncorrected", "worker", "count",
                "estimate", "source")
QUERY_KEYS = ("qid", "topic_id", "label", "query_text", "weight", "users", "note", "ranked",
              "empty_reason")
LABEL_KEYS = ("topic_id", "intent_id", "docid", "assessor", "grade", "cannot_judge", "rationale",
              "seconds", "revision", "current", "withdrawn", "simulated")


def _read_jsonl(path: Path, keys: tuple[str, ...]) -> list[dict]:
    """The objects of a JSON-lines file, each with every key of ``keys``."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReleaseError(f"{path}:{n}: not JSON ({exc.msg})") from None
            missing = [k for k in keys if not isinstance(row, dict) or k not in row]
            if missing:
                raise ReleaseError(f"{path}:{n}: missing {', '.join(missing)}")
            rows.append(row)
    return rows


def manifest_check(root: Path) -> list[str]:
    """The paths the manifest lists, after checking each file's SHA-256 and that no file
    is missing from it; ReleaseError naming the first file that differs."""
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise ReleaseError(f"{root}: no {MANIFEST}: not a release folder")
    listed = []
    for n, line in enumerate(mpath.read_text(encoding="utf-8").splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest) or not rel:
            raise ReleaseError(f"{mpath}:{n}: expected 'SHA256  PATH'")
        path = root / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute() or not path.is_file():
            raise ReleaseError(f"{mpath}:{n}: {rel}: no such file in the release")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise ReleaseError(f"{path}: SHA-256 differs from {MANIFEST} line {n}")
        listed.append(rel)
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    extra = sorted(present - set(listed) - {MANIFEST})
    if extra:
        raise ReleaseError(f"{root}: files not in {MANIFEST}: {', '.join(extra[:5])}")
    return listed


def _read_run(path: Path, run: dict, queries: list[dict]) -> None:
    """``run["queries"]``, and ``run["rankings"]``: a function that reads the TREC file
    again each time it is called, yielding ``(qid, docids, scores)`` per query (a run is
    never held whole); a query must be one block of lines ranked 1, 2, …"""
    if not path.is_file():
        raise ReleaseError(f"{path}: no such file in the release")
    known = {q["qid"] for q in queries}

    def rankings() -> Iterator[tuple[str, list[str], list[float]]]:
        seen: set[str] = set()
        qid, docids, scores = None, [], []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != 6:
                    raise ReleaseError(f"{path}:{n}: expected 6 columns, found {len(parts)}")
                q, _q0, docid, rank, score, _tag = parts
                if q != qid:
                    if qid is not None:
                        yield qid, docids, scores
                    if q not in known:
                        raise ReleaseError(f"{path}:{n}: query {q!r} is not in "
                                           f"{run['name']}.queries.jsonl")
                    if q in seen:
                        raise ReleaseError(f"{path}:{n}: the lines of query {q!r} are not "
                                           "together")
                    seen.add(q)
                    qid, docids, scores = q, [], []
                if rank != str(len(docids) + 1):
                    raise ReleaseError(f"{path}:{n}: rank {rank} out of order for query {q!r}")
                try:
                    scores.append(float(score))
                except ValueError:
                    raise ReleaseError(f"{path}:{n}: score {score!r} is not a number") from None
                docids.append(docid)
        if qid is not None:
            yield qid, docids, scores

    run["queries"] = queries
    run["rankings"] = rankings


def _read_pool(path: Path, pool: dict) -> None:
    topics: dict[str, dict] = {}
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        if header != ["topic", "position", "docid", "weight", "min_rank", "users", "systems"]:
            raise ReleaseError(f"{path}:1: not a pool file header")
        for n, line in enumerate(f, 2):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 7:
                raise ReleaseError(f"{path}:{n}: expected 7 columns, found {len(parts)}")
            t, pos, d, w, r, u, s = parts
            tp = topics.setdefault(t, {"topic_id": t, "docids": [], "weights": [],
                                       "min_rank": [], "users": [], "systems": []})
            if pos != str(len(tp["docids"]) + 1):
                raise ReleaseError(f"{path}:{n}: position {pos} out of order for topic {t!r}")
            try:
                tp["weights"].append(float(w))
                tp["min_rank"].append(int(r))
                tp["users"].append(int(u))
                tp["systems"].append(int(s))
            except ValueError:
                raise ReleaseError(f"{path}:{n}: weight, min_rank, users and systems must "
                                   "be numbers") from None
            tp["docids"].append(d)
    pool["topics"] = list(topics.values())


def read_release(root: str | Path) -> tuple[dict, dict]:
    """``(records, release.json)`` of a release folder, its manifest checked first."""
    root = Path(root)
    manifest_check(root)
    try:
        meta = json.loads((root / "release.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReleaseError(f"{root / 'release.json'}: {exc}") from None
    if meta.get("format") != FORMAT:
        raise ReleaseError(f"{root / 'release.json'}: format {meta.get('format')!r}, "
                           f"expected {FORMAT!r}")
    try:
        rec = {"topic_set": meta["topic_set"], "studies": meta["studies"],
               "collections": meta["collections"], "models": meta["models"],
               "topics": _read_jsonl(root / "topics.jsonl", TOPIC_KEYS),
               "variants": _read_jsonl(root / "variants.jsonl", VARIANT_KEYS), "runs": [],
               "pools": [], "judgment_sets": []}
        for run in meta["runs"]:
            run = dict(run)
            name = _file_name(run["name"], "run")
            _read_run(root / "runs" / f"{name}.run", run,
                      _read_jsonl(root / "runs" / f"{name}.queries.jsonl", QUERY_KEYS))
            rec["runs"].append(run)
        for pool in meta["pools"]:
            pool = dict(pool)
            _read_pool(root / "pools" / f"{_file_name(pool['name'], 'pool')}.tsv", pool)
            rec["pools"].append(pool)
        for js in meta["judgment_sets"]:
            js = {k: v for k, v in js.items() if k not in ("qrels_lines", "not_computed")}
            js["labels"] = _read_jsonl(
                root / "judgments" / _file_name(js["name"], "judgment set") / "labels.jsonl",
                LABEL_KEYS)
            rec["judgment_sets"].append(js)
    except KeyError as exc:
        raise ReleaseError(f"{root / 'release.json'}: missing {exc.args[0]!r}") from None
    except (TypeError, AttributeError) as exc:
        raise ReleaseError(f"{root / 'release.json'}: not a release description ({exc})") \
            from None
    return rec, meta


def unpack_archive(path: str | Path, into: str | Path) -> Path:
    """Unpack a release ``.tar.gz`` into ``into`` (regular files and folders only, no
    path outside it) and return the folder that holds its manifest."""
    path, into = Path(path), Path(into)
    try:
        with tarfile.open(path, "r:gz") as tar:
            for m in tar.getmembers():
                if not (m.isfile() or m.isdir()) or m.name.startswith("/") or \
                        ".." in Path(m.name).parts:
                    raise ReleaseError(f"{path}: entry {m.name!r} is not a plain file or folder")
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ReleaseError(f"{path}: not a readable .tar.gz ({exc})") from None
    found = sorted(p.parent for p in into.rglob(MANIFEST))
    if not found:
        raise ReleaseError(f"{path}: no {MANIFEST} in the archive")
    return found[0]


def open_release(path: str | Path, work: str | Path) -> tuple[dict, dict]:
    """:func:`read_release` of a folder, or of a ``.tar.gz`` unpacked into ``work`` (which
    must outlive the records: their run rankings are read from the files when used)."""
    path = Path(path)
    if path.is_dir():
        return read_release(path)
    if not path.is_file():
        raise ReleaseError(f"{path}: no such release folder or archive")
    return read_release(unpack_archive(path, work))
