"""A test collection as a release: the files, written and read. Plain Python; no Django.

A release is a function of the data: the same records give the same bytes (sorted keys,
records in a fixed order, no time stamps, no random salt; the ``.tar.gz`` has fixed
mtimes, owners and modes and a gzip header with mtime 0). :func:`write_release` writes a
:class:`dict` of records (see :func:`records_check` for its parts; a run's ``queries`` are
listed and its ``rankings`` is a function yielding ``(qid, docids, scores)`` in their
order, so a run is written one batch at a time) as a folder or archive;
:func:`read_release` reads such a folder back into the same records, after checking the
manifest (its runs' rankings are read from their files when used). The database side (what the records are made from, and how they are stored
again) is :mod:`projects.services`.

Layout (every path in ``MANIFEST.sha256``, ``sha256sum -c`` format)::

    README.md             datasheet after Gebru et al., "Datasheets for Datasets"
    CITATION.cff          how to cite the release
    LICENSE.md            the licence's name, SPDX id and address (not its text)
    release.json          topic set, licence, studies, collections, retrieval models,
                          runs, pools and judgment sets (their parameters)
    topics.jsonl          topics with statements and intents
    variants.jsonl        query variants: raw and normalised text, count, worker pseudonym
    runs/NAME.run         TREC run (query id: the topic, or topic:label for variant runs)
    runs/NAME.queries.jsonl   the run's queries: text, weight, users (pseudonyms)
    pools/NAME.tsv        pooled documents per topic in priority order with their weights
    judgments/NAME/labels.jsonl        raw labels per assessor (pseudonyms, ``simulated``)
    judgments/NAME/qrels.adhoc.txt     aggregated qrels (``release.json`` names the rule)
    judgments/NAME/qrels.diversity.txt
    judgments/NAME/agreement.json      evaluation.agreement.agreement_summary
    judgments/NAME/intents.json        evaluation.intents.intent_properties

Worker and assessor ids are pseudonyms (:func:`pseudonym`): ``anon-`` and 16 hex digits
of an HMAC-SHA256 of the id under a per-installation salt that is never written. An id
that already is a pseudonym (it came in with a release) goes out unchanged.
"""
from __future__ import annotations

import gzip
import hashlib
import hmac
import io
import json
import math
import re
import shutil
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from evaluation import agreement, intents
from judging.aggregate import aggregate

FORMAT = "ir-test-collection-release/1"
MANIFEST = "MANIFEST.sha256"
AGGREGATION = "majority"
NO_INTENT = ""
PSEUDONYM_RE = re.compile(r"^anon-[0-9a-f]{16}$")
ORGANISER = "[ORGANISER: to complete]"

# The licences offered at export: SPDX id -> (name, address). Only their names and
# addresses go into a release, never their texts.
LICENCES = {
    "CC-BY-4.0": ("Creative Commons Attribution 4.0 International",
                  "https://creativecommons.org/licenses/by/4.0/"),
    "CC-BY-SA-4.0": ("Creative Commons Attribution Share Alike 4.0 International",
                     "https://creativecommons.org/licenses/by-sa/4.0/"),
    "CC-BY-NC-4.0": ("Creative Commons Attribution Non Commercial 4.0 International",
                     "https://creativecommons.org/licenses/by-nc/4.0/"),
    "CC-BY-NC-SA-4.0": ("Creative Commons Attribution Non Commercial Share Alike 4.0 "
                        "International", "https://creativecommons.org/licenses/by-nc-sa/4.0/"),
    "CC0-1.0": ("Creative Commons Zero v1.0 Universal",
                "https://creativecommons.org/publicdomain/zero/1.0/"),
    "ODC-By-1.0": ("Open Data Commons Attribution License v1.0",
                   "https://opendatacommons.org/licenses/by/1-0/"),
    "ODbL-1.0": ("Open Data Commons Open Database License v1.0",
                 "https://opendatacommons.org/licenses/odbl/1-0/"),
    "PDDL-1.0": ("Open Data Commons Public Domain Dedication & License 1.0",
                 "https://opendatacommons.org/licenses/pddl/1-0/"),
    "CDLA-Permissive-2.0": ("Community Data License Agreement Permissive 2.0",
                            "https://cdla.dev/permissive-2-0/"),
}


class ReleaseError(ValueError):
    """A release that cannot be written or read; the message names the file (and line)."""


# --- pseudonyms ------------------------------------------------------------------------------


def pseudonym(worker_id: str, salt: bytes) -> str:
    """``anon-`` + 16 hex digits of HMAC-SHA256(salt, id); a pseudonym stays as it is;
    the empty id stays empty."""
    if not worker_id or PSEUDONYM_RE.match(worker_id):
        return worker_id
    return "anon-" + hmac.new(salt, worker_id.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def licence_get(spdx: str) -> dict:
    """``{"spdx", "name", "url"}`` of an offered licence; ReleaseError listing them."""
    for key, (name, url) in LICENCES.items():
        if key.casefold() == str(spdx).casefold():
            return {"spdx": key, "name": name, "url": url}
    raise ReleaseError(f"unknown licence {spdx!r}: choose one of {', '.join(LICENCES)}")


# --- natural order (as common.naturalsort, without Django) ------------------------------------


def _natural(text: str):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p]


# --- writing ---------------------------------------------------------------------------------


def _plain(value):
    """JSON for numpy scalars and arrays, tuples and sets (sorted)."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _clean_floats(value):
    """NaN and infinities as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_floats(v) for v in value]
    return value


def dumps(value) -> str:
    """Canonical JSON: sorted keys, UTF-8 text, two-space indent, a final newline."""
    plain = json.loads(json.dumps(value, default=_plain))
    return json.dumps(_clean_floats(plain), ensure_ascii=False, sort_keys=True, indent=2,
                      allow_nan=False) + "\n"


def _jsonl(rows: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n"
                   for r in rows)


def _file_name(name: str, what: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith("."):
        raise ReleaseError(f"{what} name {name!r} cannot be a file name")
    return name


def safe_name(name: str) -> str:
    """``name`` with every character but letters, digits, ``.``, ``_`` and ``-`` as ``_``
    (no leading dot): a file name on every system."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "_"


def run_qid(run: dict, query: dict) -> str:
    return f"{query['topic_id']}:{query['label']}" if run["source"] == "variants" \
        else query["topic_id"]


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


def _yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML string


def _citation(rec: dict, lic: dict, title: str | None, authors: list[str] | None) -> str:
    title = title or f"{rec['topic_set']}: a test collection"
    lines = ["cff-version: 1.2.0",
             "message: If you use this test collection, please cite it as below.",
             "type: dataset", f"title: {_yaml_str(title)}", "authors:"]
    for a in authors or [ORGANISER]:
        lines.append(f"  - name: {_yaml_str(a)}")
    lines += [f"license: {lic['spdx']}",
              f"abstract: {_yaml_str(_abstract(rec))}",
              "keywords:", "  - information retrieval", "  - test collection",
              "  - query variants", "  - relevance judgments"]
    return "\n".join(lines) + "\n"


def _abstract(rec: dict) -> str:
    n_var = sum(v["count"] for v in rec["variants"])
    n_labels = sum(len(js["labels"]) for js in rec["judgment_sets"])
    return (f"{len(rec['topics'])} topics with {n_var} query variants, "
            f"{len(rec['runs'])} runs, {len(rec['pools'])} pools and {n_labels} relevance "
            "labels.")


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.strip().splitlines()) or "> (empty)"


def datasheet(rec: dict, lic: dict, files: dict[str, str], figures: dict,
              *, title: str | None = None) -> str:
    """The release's README: a datasheet after Gebru et al. (2021), "Datasheets for
    Datasets" (CACM 64(12)), filled from the records; what only the organiser knows is
    marked ``[ORGANISER: to complete]``."""
    topics, variants = rec["topics"], rec["variants"]
    workers = {v["worker"] for v in variants if v["worker"]}
    statements = sum(len(t["statements"]) for t in topics)
    n_intents = sum(len(t["intents"]) for t in topics)
    answers = sum(v["count"] for v in variants)
    sources = Counter(v["source"] for v in variants)
    labels = [lb for js in rec["judgment_sets"] for lb in js["labels"]]
    assessors = {lb["assessor"] for lb in labels}
    simulated = sum(1 for lb in labels if lb["simulated"])
    sim_assessors = {lb["assessor"] for lb in labels if lb["simulated"]}
    w = []
    say = w.append
    say(f"# {title or rec['topic_set']}: a test collection\n")
    say(f"A release of the topic set `{rec['topic_set']}`: {_abstract(rec)} This datasheet "
        "follows Gebru et al., \"Datasheets for Datasets\" (Communications of the ACM 64(12), "
        f"2021). Places marked `{ORGANISER}` are for the organiser to fill in before "
        "publishing.\n")
    say("## Motivation\n")
    say(f"- For what purpose was the collection created? {ORGANISER}")
    say(f"- Who created it, on behalf of whom, and who funded it? {ORGANISER}\n")
    say("## Composition\n")
    say(f"- Topics: {len(topics)}, with {statements} information-need statements and "
        f"{n_intents} intents (subtopics) — `topics.jsonl`.")
    say(f"- Query variants: {len(variants)} rows, {answers} answers in all (a row's `count` "
        f"says how often its text was given), from {len(workers)} pseudonymous workers — "
        "`variants.jsonl`. "
        + (", ".join(f"{n} {'collected here' if s == 'crowd' else 'imported'}"
                     for s, n in sorted(sources.items())) + "." if sources else ""))
    for run in rec["runs"]:
        what = ("system run" if run["kind"] == "system" else
                f"retrieved with {run['model']} over {run['collection']} from {run['source']}")
        say(f"- Run `{run['name']}` ({what}, depth {run['depth']}): {len(run['queries'])} "
            f"queries — `runs/{run['name']}.run`.")
    for pool in rec["pools"]:
        docs = sum(len(tp["docids"]) for tp in pool["topics"])
        say(f"- Pool `{pool['name']}` ({pool['strategy']}, depth {pool['depth']}, sources "
            f"{pool['sources']}): {docs} documents over {len(pool['topics'])} topics, built "
            f"from {', '.join('`' + r + '`' for r in pool['runs']) or 'no recorded run'} — "
            f"`pools/{pool['name']}.tsv`.")
    for js in rec["judgment_sets"]:
        n_ass = len({lb["assessor"] for lb in js["labels"]})
        n_sim = sum(1 for lb in js["labels"] if lb["simulated"])
        qrels = [p for p in sorted(files) if p.startswith(f"judgments/{js['name']}/qrels.")]
        say(f"- Judgment set `{js['name']}`: {len(js['labels'])} labels by {n_ass} "
            f"pseudonymous assessor(s), {n_sim} of them simulated — "
            f"`judgments/{js['name']}/labels.jsonl`; qrels aggregated by {AGGREGATION} vote "
            f"(ties to the higher grade): {', '.join('`' + q + '`' for q in qrels) or 'none'}.")
        fig = figures.get(js["name"], {})
        summary = fig.get("agreement", {}).get("overall") if isinstance(
            fig.get("agreement"), dict) else None
        if isinstance(summary, dict):
            shown = {k: v for k, v in sorted(summary.items())
                     if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if shown:
                say("  Agreement (overall): " + ", ".join(
                    f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in shown.items()) + ".")
        for key, why in sorted(fig.get("not computed", {}).items()):
            say(f"  {key.capitalize()} not computed: {why}.")
    say(f"- Documents: not included; the collections are named in `release.json` with their "
        f"document counts and checksums. Where to obtain them: {ORGANISER}\n")
    say("## Collection process\n")
    if rec["studies"]:
        for n, s in enumerate(rec["studies"], 1):
            say(f"### Study {n}: {s['title'] or '(untitled)'}\n")
            say(f"Each statement was to be answered by {s['responses_per_statement']} "
                f"workers; each worker was given up to {s['statements_per_worker']} "
                f"statements. Answers were limited to {s['max_query_chars']} characters; "
                f"answers given in under {s['min_seconds_per_answer']:g} seconds were marked "
                f"too fast; near-copies of the statement (Jaccard ≥ "
                f"{s['copy_jaccard_threshold']:g} over at least {s['copy_min_tokens']} tokens) "
                "were refused"
                + ("; spelling was corrected towards the topic's words." if s["spell_correct"]
                   else "."))
            say("\nThe consent text shown to workers:\n")
            say(_quote(s["consent_text"]) + "\n")
            if s["instructions"].strip():
                say("Instructions:\n")
                say(_quote(s["instructions"]) + "\n")
            if s["question_text"].strip():
                say(f"Question asked beside each statement: {s['question_text']}\n")
    else:
        say("No crowd study of this topic set is recorded here (variants and labels were "
            f"imported). How they were collected: {ORGANISER}\n")
    say(f"- Pay: not recorded by the application. {ORGANISER} (pay per task, hourly rate, "
        "platform fees).")
    say(f"- Recruitment (platform, eligibility, countries): {ORGANISER}")
    say(f"- Ethical review: {ORGANISER}\n")
    say("## Preprocessing\n")
    say("- `raw` is the text as typed; `normalised` is the text runs were retrieved with "
        "(`uncorrected`: before spelling correction, where it was on).")
    say(f"- Qrels combine the labels that count (the latest revision of each assessor) by "
        f"{AGGREGATION} vote; `labels.jsonl` keeps every revision (`current`, `withdrawn`).\n")
    say("## Privacy\n")
    say("Worker and assessor ids are pseudonyms: `anon-` and 16 hex digits of a keyed hash "
        "(HMAC-SHA256) whose key stays with the installation that made the release. No "
        "platform id (Prolific, MTurk), assignment or session id and no address-derived data "
        "is part of the release. The same person has the same pseudonym throughout it.\n")
    say("## Known limitations\n")
    if simulated:
        say(f"- {simulated} of {len(labels)} labels were given by simulated assessors "
            f"({', '.join(sorted(sim_assessors))}), not people; they are flagged "
            "`simulated` in `labels.jsonl`.")
    if labels and len(assessors) == 1:
        say("- Every label comes from one assessor: no agreement figure can be given.")
    if any(js["source"] == "task" for js in rec["judgment_sets"]):
        say("- The judging scale and task settings are not part of the files. "
            f"The scale's grades: {ORGANISER}")
    say("- Whether a query variant came from a simulated worker is not recorded per "
        "variant; the study texts above say when a study was simulated.")
    say(f"- Other limitations: {ORGANISER}\n")
    say("## Distribution and maintenance\n")
    say(f"- Licence: {lic['name']} (`{lic['spdx']}`), <{lic['url']}>; see `LICENSE.md`.")
    say("- Cite as in `CITATION.cff`. `MANIFEST.sha256` lists the SHA-256 of every file "
        "(`sha256sum -c MANIFEST.sha256`).")
    say(f"- Maintainer and contact: {ORGANISER}\n")
    return "\n".join(w)


def records_check(rec: dict) -> None:
    """ReleaseError naming a missing part of the records."""
    for key in ("topic_set", "topics", "variants", "studies", "collections", "models",
                "runs", "pools", "judgment_sets"):
        if key not in rec:
            raise ReleaseError(f"release records lack {key!r}")


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


# --- reading ---------------------------------------------------------------------------------


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
