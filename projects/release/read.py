"""Reading a release: its manifest checked, its files read back into the records
(:func:`read_release`), a ``.tar.gz`` unpacked first (:func:`unpack_archive`); every
check made before anything is stored (:func:`open_release`). Plain Python; no Django.

A release comes from elsewhere, so it is read as hostile input:

- an archive is streamed, never extracted whole: a first pass reads only as far as its
  ``MANIFEST.sha256``; the second writes the files the manifest lists, and only those,
  into a temporary folder, each hashed while it is written. A member the manifest does not
  list, a link, a device, a path outside the release folder, a name that comes twice or
  clashes with a folder, more members than :attr:`Limits.members`, a member larger than
  :attr:`Limits.member_bytes`, more than :attr:`Limits.total_bytes` in all, or gzip data
  that expands more than :attr:`Limits.ratio` times is refused as soon as it is seen,
  naming the setting;
- a folder release is read without following links (a link anywhere in it is refused)
  and each file hashed in blocks;
- ``release.json`` and the JSON-lines files are read with bounded sizes and depth; a
  file they name must be one the manifest lists; names must be unique;
- runs are read by the project's one TREC run reader (:func:`common.trec.run_lines`,
  :data:`common.trec.RUN_RELEASE`: six columns, finite scores, ids checked, ranks 1, 2, …
  in one block of lines per query), and every run is read through once before the
  records are handed back, so that a bad line is found before anything is stored.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

from common import fileio, trec
from common.fileio import InputError

from .base import FORMAT, MANIFEST, ReleaseError, _file_name

TOPIC_KEYS = ("topic_id", "title", "description", "narrative", "kind", "statements", "intents")
VARIANT_KEYS = ("topic_id", "variant_id", "raw", "normalised", "uncorrected", "worker", "count",
                "estimate", "source")
QUERY_KEYS = ("qid", "topic_id", "label", "query_text", "weight", "users", "note", "ranked",
              "empty_reason")
LABEL_KEYS = ("topic_id", "intent_id", "docid", "assessor", "grade", "cannot_judge", "rationale",
              "seconds", "revision", "current", "withdrawn", "simulated")

#: the largest manifest, extended tar header, release.json and JSON line read
MANIFEST_BYTES = 16 << 20
HEADER_BYTES = 1 << 20
JSON_BYTES = fileio.MAX_FILE_BYTES
JSON_LINE_BYTES = 16 << 20
COPY_BYTES = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Caps on a release read from elsewhere; each is named in its error by the Django
    setting that sets it (:func:`projects.services.release_limits`)."""

    #: entries of an archive (files and folders), files of a folder: RELEASE_MAX_MEMBERS
    members: int = 10_000
    #: bytes of one file: RELEASE_MAX_MEMBER_BYTES
    member_bytes: int = 1 << 30
    #: bytes of all files together: RELEASE_MAX_BYTES
    total_bytes: int = 4 << 30
    #: how many times its stored size an archive may expand to: MAX_EXPANSION_RATIO
    ratio: int = fileio.MAX_EXPANSION_RATIO


def _relative(rel: str) -> str | None:
    """``rel`` as a clean relative POSIX path, or ``None`` when it is not one (absolute,
    empty, with ``..``, ``.`` or empty parts, a backslash or a NUL)."""
    if not rel or "\\" in rel or "\0" in rel or rel.startswith("/"):
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return rel


def _manifest(text: bytes, where: str) -> dict[str, tuple[str, int]]:
    """``{path: (sha256, line)}`` of a manifest's lines."""
    try:
        lines = text.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ReleaseError(f"{where}: not UTF-8 text") from None
    out: dict[str, tuple[str, int]] = {}
    for n, line in enumerate(lines, 1):
        digest, sep, rel = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest) or not rel:
            raise ReleaseError(f"{where}:{n}: expected 'SHA256  PATH'")
        if _relative(rel) is None or rel == MANIFEST:
            raise ReleaseError(f"{where}:{n}: {rel!r} is not a path inside the release")
        if rel in out:
            raise ReleaseError(f"{where}:{n}: {rel} is listed twice (first on line "
                               f"{out[rel][1]})")
        out[rel] = (digest, n)
    return out


# --- a folder ---------------------------------------------------------------------------------


def _digest(path: Path) -> str:
    """SHA-256 of a regular file read in blocks (never through a link)."""
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(COPY_BYTES), b""):
            h.update(block)
    return h.hexdigest()


def manifest_check(root: Path, limits: Limits = Limits()) -> set[str]:
    """The paths the folder's manifest lists, after checking that each is a regular file
    (no link anywhere in the folder) with the listed SHA-256, that no file is missing from
    the manifest, and the caps of ``limits``; ReleaseError naming the first file that
    differs."""
    root = Path(root)
    mpath = root / MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(mpath).st_mode):
            raise ReleaseError(f"{mpath}: not a regular file")
    except FileNotFoundError:
        raise ReleaseError(f"{root}: no {MANIFEST}: not a release folder") from None
    present: dict[str, os.stat_result] = {}
    total = 0
    for folder, dirs, files in os.walk(root):  # os.walk does not follow links
        for name in dirs + files:
            path = Path(folder) / name
            st = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                raise ReleaseError(f"{path}: a link; a release folder holds plain files and "
                                   "folders only")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise ReleaseError(f"{path}: not a plain file")
            present[rel] = st
            total += st.st_size
            if len(present) > limits.members:
                raise ReleaseError(f"{root}: more than {limits.members} files "
                                   "(RELEASE_MAX_MEMBERS)")
            if st.st_size > limits.member_bytes:
                raise ReleaseError(f"{path}: larger than {limits.member_bytes} bytes "
                                   "(RELEASE_MAX_MEMBER_BYTES)")
            if total > limits.total_bytes:
                raise ReleaseError(f"{root}: more than {limits.total_bytes} bytes in all "
                                   "(RELEASE_MAX_BYTES)")
    if present[MANIFEST].st_size > MANIFEST_BYTES:
        raise ReleaseError(f"{mpath}: larger than {MANIFEST_BYTES} bytes")
    listed = _manifest(mpath.read_bytes(), str(mpath))
    for rel, (digest, n) in listed.items():
        if rel not in present:
            raise ReleaseError(f"{mpath}:{n}: {rel}: no such file in the release")
        if _digest(root / rel) != digest:
            raise ReleaseError(f"{root / rel}: SHA-256 differs from {MANIFEST} line {n}")
    extra = sorted(set(present) - set(listed) - {MANIFEST})
    if extra:
        raise ReleaseError(f"{root}: files not in {MANIFEST}: {', '.join(extra[:5])}")
    return set(listed)


# --- an archive -------------------------------------------------------------------------------


class _Refused(Exception):
    """Raised inside tarfile's reading to stop it; carries the ReleaseError message."""


class _TarInfo(tarfile.TarInfo):
    """Extended headers (long names, pax records, sparse maps) are read whole by tarfile:
    one larger than :data:`HEADER_BYTES` is refused before it is read (``_proc_member`` is
    the hook tarfile documents for subclasses)."""

    def _proc_member(self, tarfile_):
        if self.type not in tarfile.REGULAR_TYPES + (tarfile.DIRTYPE,) and \
                self.size > HEADER_BYTES:
            raise _Refused(f"an extended header of {self.size} bytes (at most {HEADER_BYTES})")
        return super()._proc_member(tarfile_)


def _archive_each(path: Path, limits: Limits, visit) -> None:
    """One streaming pass over a release ``.tar.gz``: ``visit(tar, member, name)`` for
    each file member in archive order (folders are checked and passed over; the name
    without a leading ``./``), every cap checked before the member's data is read;
    ``visit`` returns true to stop. Every failure, ``visit``'s own reading included, is a
    ReleaseError naming the archive."""
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with raw:
        try:
            # the tar stream holds the files and, for each entry, a header and padding
            guard = fileio.ExpansionGuard(
                raw, path, limit=limits.total_bytes + limits.members * 2048 + (1 << 20),
                ratio=limits.ratio, what="the archive", limit_name="RELEASE_MAX_BYTES")
            with tarfile.open(fileobj=guard, mode="r|", tarinfo=_TarInfo,
                              bufsize=COPY_BYTES) as tar:
                count = total = 0
                for m in tar:
                    count += 1
                    if count > limits.members:
                        raise ReleaseError(f"{path}: more than {limits.members} entries "
                                           "(RELEASE_MAX_MEMBERS)")
                    name = m.name[2:] if m.name.startswith("./") else m.name
                    plain = m.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and not m.sparse
                    if _relative(name) is None or not (plain or m.isdir()):
                        raise ReleaseError(f"{path}: entry {m.name!r} is not a plain file or "
                                           "folder inside the release")
                    if m.isdir():
                        continue
                    if m.size > limits.member_bytes:
                        raise ReleaseError(f"{path}: {name} is {m.size} bytes (at most "
                                           f"{limits.member_bytes}: RELEASE_MAX_MEMBER_BYTES)")
                    total += m.size
                    if total > limits.total_bytes:
                        raise ReleaseError(f"{path}: more than {limits.total_bytes} bytes in "
                                           "all (RELEASE_MAX_BYTES)")
                    if visit(tar, m, name):
                        return
        except _Refused as exc:
            raise ReleaseError(f"{path}: {exc}") from None
        except InputError as exc:
            raise ReleaseError(str(exc)) from None
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            raise ReleaseError(f"{path}: not a readable .tar.gz ({exc})") from None


def unpack_archive(path: str | Path, into: str | Path, limits: Limits = Limits()
                   ) -> tuple[Path, set[str]]:
    """Unpack a release ``.tar.gz`` into the (empty) folder ``into``: the folder that
    holds its manifest, and the paths the manifest lists, each written and checked
    against its SHA-256 (see the module docstring for what is refused)."""
    path, into = Path(path), Path(into)
    found: dict = {}

    def manifest(tar, m, name) -> bool:  # the first pass: as far as the manifest
        if PurePosixPath(name).name != MANIFEST:
            return False
        if m.size > MANIFEST_BYTES:
            raise ReleaseError(f"{path}: {name} is larger than {MANIFEST_BYTES} bytes")
        found["prefix"] = name[:-len(MANIFEST)]
        found["listed"] = _manifest(tar.extractfile(m).read(), f"{path}: {name}")
        return True

    _archive_each(path, limits, manifest)
    if not found:
        raise ReleaseError(f"{path}: no {MANIFEST} in the archive")
    prefix, listed = found["prefix"], found["listed"]
    root = into / prefix if prefix else into
    written: set[str] = set()

    def write(tar, m, name) -> bool:  # the second pass: the listed files
        if not name.startswith(prefix):
            raise ReleaseError(f"{path}: entry {name!r} is outside the release folder "
                               f"{prefix.rstrip('/') or '.'}")
        rel = name[len(prefix):]
        if rel in written:
            raise ReleaseError(f"{path}: entry {name!r} comes twice")
        if rel != MANIFEST and rel not in listed:
            raise ReleaseError(f"{path}: {name} is not in {MANIFEST}")
        digest = _write_member(tar, m, root, rel, path)
        if rel != MANIFEST and digest != listed[rel][0]:
            raise ReleaseError(f"{path}: {name}: SHA-256 differs from {MANIFEST} line "
                               f"{listed[rel][1]}")
        written.add(rel)
        return False

    _archive_each(path, limits, write)
    missing = sorted(set(listed) - written)
    if missing:
        raise ReleaseError(f"{path}: {missing[0]} is listed in {MANIFEST} (line "
                           f"{listed[missing[0]][1]}) but not in the archive")
    return root, set(listed)


def _write_member(tar: tarfile.TarFile, m: tarfile.TarInfo, root: Path, rel: str,
                  path: Path) -> str:
    """Write one member to ``root/rel`` (a new file in folders made here), hashing it."""
    dest = root / rel
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                     | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        raise ReleaseError(f"{path}: entry {m.name!r} clashes with another entry of that "
                           "name or folder") from None
    h = hashlib.sha256()
    src = tar.extractfile(m)
    with os.fdopen(fd, "wb") as out:
        for block in iter(lambda: src.read(COPY_BYTES), b""):
            h.update(block)
            try:
                out.write(block)
            except OSError as exc:
                raise ReleaseError(f"cannot write {dest}: {exc.strerror or exc}") from None
    return h.hexdigest()


# --- the files --------------------------------------------------------------------------------


def _listed(root: Path, listed: set[str], rel: str, what: str) -> Path:
    if rel not in listed:
        raise ReleaseError(f"{root / 'release.json'}: names {what}, but {rel} is not in the "
                           "release")
    return root / rel


def _read_jsonl(path: Path, keys: tuple[str, ...]) -> list[dict]:
    """The objects of a JSON-lines file, each with every key of ``keys``."""
    rows = []
    try:
        for n, line in fileio.open_lines(path, max_line_bytes=JSON_LINE_BYTES):
            row = fileio.parse_json(line, path, n)
            missing = [k for k in keys if not isinstance(row, dict) or k not in row]
            if missing:
                raise ReleaseError(f"{path}:{n}: missing {', '.join(missing)}")
            rows.append(row)
    except InputError as exc:
        raise ReleaseError(str(exc)) from None
    return rows


def _read_run(path: Path, run: dict, queries: list[dict]) -> None:
    """``run["queries"]``, and ``run["rankings"]``: a function that reads the TREC file
    again each time it is called, yielding ``(qid, docids, scores)`` per query (a run is
    never held whole); a query must be one block of lines ranked 1, 2, …"""
    known = {q.get("qid") for q in queries}

    def rankings() -> Iterator[tuple[str, list[str], list[float]]]:
        seen: set[str] = set()
        qid, docids, scores = None, [], []
        try:
            for e in trec.run_lines(path, trec.RUN_RELEASE):
                if e.query_id != qid:
                    if qid is not None:
                        yield qid, docids, scores
                    if e.query_id not in known:
                        raise ReleaseError(f"{path}:{e.line}: query {e.query_id!r} is not in "
                                           f"{run['name']}.queries.jsonl")
                    if e.query_id in seen:
                        raise ReleaseError(f"{path}:{e.line}: the lines of query "
                                           f"{e.query_id!r} are not together")
                    seen.add(e.query_id)
                    qid, docids, scores = e.query_id, [], []
                if e.rank != len(docids) + 1:
                    raise ReleaseError(f"{path}:{e.line}: rank {e.rank} out of order for "
                                       f"query {e.query_id!r}")
                docids.append(e.doc_id)
                scores.append(e.score)
        except InputError as exc:
            raise ReleaseError(str(exc)) from None
        if qid is not None:
            yield qid, docids, scores

    run["queries"] = queries
    run["rankings"] = rankings


def _read_pool(path: Path, pool: dict) -> None:
    topics: dict[str, dict] = {}
    try:
        lines = fileio.open_lines(path)
        header = next(lines, (1, ""))[1].split("\t")
        if header != ["topic", "position", "docid", "weight", "min_rank", "users", "systems"]:
            raise ReleaseError(f"{path}:1: not a pool file header")
        for n, line in lines:
            parts = line.split("\t")
            if len(parts) != 7:
                raise ReleaseError(f"{path}:{n}: expected 7 columns, found {len(parts)}")
            t, pos, d, w, r, u, s = parts
            tp = topics.setdefault(t, {"topic_id": t, "docids": [], "weights": [],
                                       "min_rank": [], "users": [], "systems": []})
            if pos != str(len(tp["docids"]) + 1):
                raise ReleaseError(f"{path}:{n}: position {pos} out of order for topic {t!r}")
            try:
                weight = float(w)
                counts = [fileio.parse_int(x, what, low=0)
                          for x, what in ((r, "min_rank"), (u, "users"), (s, "systems"))]
            except ValueError as exc:
                raise ReleaseError(f"{path}:{n}: weight, min_rank, users and systems must "
                                   f"be numbers ({exc})") from None
            tp["weights"].append(weight)
            tp["min_rank"].append(counts[0])
            tp["users"].append(counts[1])
            tp["systems"].append(counts[2])
            tp["docids"].append(fileio.checked_id(d, "document id", path, n))
    except InputError as exc:
        raise ReleaseError(str(exc)) from None
    pool["topics"] = list(topics.values())


def _unique(rows: list, what: str, where: Path) -> None:
    seen: set[str] = set()
    for row in rows:
        name = row["name"]
        if name in seen:
            raise ReleaseError(f"{where}: two {what}s are named {name!r}")
        seen.add(name)


def read_release(root: str | Path, limits: Limits = Limits(), *,
                 listed: set[str] | None = None) -> tuple[dict, dict]:
    """``(records, release.json)`` of a release folder, its manifest checked first (or
    ``listed``: the paths of a manifest already checked, as :func:`unpack_archive` checks
    them while writing), every file read and checked before they are returned (a run's
    rankings are read again when used)."""
    root = Path(root)
    if listed is None:
        listed = manifest_check(root, limits)
    where = root / "release.json"
    if "release.json" not in listed:
        raise ReleaseError(f"{root}: no release.json in the release")
    try:
        meta = fileio.parse_json(fileio.read_bytes(where, max_bytes=JSON_BYTES), where)
    except InputError as exc:
        raise ReleaseError(str(exc)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ReleaseError(f"{where}: format {found!r}, expected {FORMAT!r}")
    try:
        rec = {"topic_set": meta["topic_set"], "studies": meta["studies"],
               "collections": meta["collections"], "models": meta["models"],
               "topics": _read_jsonl(_listed(root, listed, "topics.jsonl", "topics"),
                                     TOPIC_KEYS),
               "variants": _read_jsonl(_listed(root, listed, "variants.jsonl", "variants"),
                                       VARIANT_KEYS),
               "runs": [], "pools": [], "judgment_sets": []}
        for key, what in (("runs", "run"), ("pools", "pool"), ("judgment_sets", "judgment set")):
            _unique(meta[key], what, where)
        for run in meta["runs"]:
            run = dict(run)
            name = _file_name(run["name"], "run")
            queries = _read_jsonl(_listed(root, listed, f"runs/{name}.queries.jsonl",
                                          f"run {name!r}"), QUERY_KEYS)
            _read_run(_listed(root, listed, f"runs/{name}.run", f"run {name!r}"), run, queries)
            rec["runs"].append(run)
        for pool in meta["pools"]:
            pool = dict(pool)
            name = _file_name(pool["name"], "pool")
            _read_pool(_listed(root, listed, f"pools/{name}.tsv", f"pool {name!r}"), pool)
            rec["pools"].append(pool)
        for js in meta["judgment_sets"]:
            js = {k: v for k, v in js.items() if k not in ("qrels_lines", "not_computed")}
            name = _file_name(js["name"], "judgment set")
            js["labels"] = _read_jsonl(_listed(root, listed, f"judgments/{name}/labels.jsonl",
                                               f"judgment set {name!r}"), LABEL_KEYS)
            rec["judgment_sets"].append(js)
        records_verify(rec, where)
    except KeyError as exc:
        raise ReleaseError(f"{where}: missing {exc.args[0]!r}") from None
    except (TypeError, AttributeError) as exc:
        raise ReleaseError(f"{where}: not a release description ({exc})") from None
    return rec, meta


def records_verify(rec: dict, where: Path) -> None:
    """The checks of records read back that need no database: every topic a variant,
    query or pool names is in ``topics.jsonl``; a pool's runs are in the release; every
    run's file is read through once (each line checked), and a query with lines is one
    its queries file says is ranked."""
    topics = {t["topic_id"] for t in rec["topics"]}

    def known(topic_id, what: str) -> None:
        if topic_id not in topics:
            raise ReleaseError(f"{what}: topic {topic_id!r} is not in topics.jsonl")

    for v in rec["variants"]:
        known(v["topic_id"], "variants.jsonl")
    names = set()
    for run in rec["runs"]:
        names.add(run["name"])
        ranked = {q["qid"]: q["ranked"] for q in run["queries"]}
        for q in run["queries"]:
            known(q["topic_id"], f"runs/{run['name']}.queries.jsonl")
        for qid, _, _ in run["rankings"]():
            if not ranked[qid]:
                raise ReleaseError(f"runs/{run['name']}.run: query {qid!r} has lines but is "
                                   f"not ranked in runs/{run['name']}.queries.jsonl")
    for pool in rec["pools"]:
        missing = [r for r in pool["runs"] if r not in names]
        if missing:
            raise ReleaseError(f"{where}: pool {pool['name']!r} names runs {missing} the "
                               "release does not have")
        for tp in pool["topics"]:
            known(tp["topic_id"], f"pools/{pool['name']}.tsv")


def open_release(path: str | Path, work: str | Path, limits: Limits = Limits()
                 ) -> tuple[dict, dict]:
    """:func:`read_release` of a folder, or of a ``.tar.gz`` unpacked into ``work`` (which
    must outlive the records: their run rankings are read from the files when used)."""
    path = Path(path)
    if path.is_dir():
        return read_release(path, limits)
    if not path.is_file():
        raise ReleaseError(f"{path}: no such release folder or archive")
    root, listed = unpack_archive(path, work, limits)
    try:
        return read_release(root, limits, listed=listed)
    except ReleaseError as exc:  # name the archive and the file in it, not the work folder
        raise ReleaseError(str(exc).replace(f"{Path(work)}/", f"{path}: ")) from None
