"""A topic set and everything built on it, out as a release and back in.

:func:`release_records` reads the stored rows into the plain records that
:mod:`projects.release` writes (worker and assessor ids pseudonymised there and then);
:func:`release_export` writes them; :func:`release_import` stores a release read back by
:func:`projects.release.open_release` into a database that does not have its topic set, so
that exporting it again gives the same bytes.

What a release leaves out (it could identify people, or it is the installation's own):
participants with their platform, study, session and assignment ids, study links and
completion codes, time stamps, lease holders, and the documents themselves.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import tempfile
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from common import fileio
from common.fileio import clean_name
from common.naturalsort import natural_key
from common.trec import write_run
from crowd.models import Study
from judging.models import JudgmentSet, Label
from judging.selectors import qrels_file_sets
from pooling.models import Pool, PoolRun, PoolTopic
from pooling.selectors import COUNT_DTYPE, ID_DTYPE, WEIGHT_DTYPE, pool_topic_arrays
from projects import release
from retrieval.models import Collection, Ranking, RetrievalModel, Run, RunQuery
from retrieval.rankings import pack, unpack
from retrieval.selectors import docid_strings
from retrieval.services import docids_ensure, ranking_key
from topics.models import QueryVariant, Topic, TopicSet
from topics.selectors import topic_set_get
from topics.services import topics_import
from topics.topicfiles import IntentRecord, TopicRecord

STUDY_FIELDS = ("title", "consent_text", "instructions", "question_text", "question_choices",
                "responses_per_statement", "statements_per_worker", "max_query_chars",
                "min_seconds_per_answer", "copy_jaccard_threshold", "copy_min_tokens",
                "spell_correct")
COLLECTION_FIELDS = ("name", "format", "doc_count", "checksum", "anserini_version", "analyzer")
MODEL_FIELDS = ("name", "kind", "k1", "b", "mu", "sdm_base", "term_weight", "ordered_weight",
                "unordered_weight", "description")
LABEL_FIELDS = ("topic_id", "intent_id", "docid", "grade", "cannot_judge", "rationale",
                "seconds", "revision", "current", "withdrawn", "simulated")
CROWD_VARIANT_ID = re.compile(r"^S(\d+)-P(\d+)-(\d+)$")  # crowd.services.studies
IMPORTED_COLLECTION_ERROR = ("its documents are not part of the release it came with: "
                             "import the collection under this name to retrieve from it")


def pseudonym_salt() -> bytes:
    """The installation's secret salt: ``settings.RELEASE_PSEUDONYM_SALT`` when set, else
    derived from ``SECRET_KEY``. Never written into a release."""
    stored = getattr(settings, "RELEASE_PSEUDONYM_SALT", "")
    if stored:
        return str(stored).encode("utf-8")
    return hmac.new(settings.SECRET_KEY.encode("utf-8"), b"projects.release.pseudonyms",
                    hashlib.sha256).digest()


def _unique(name: str, taken: set[str]) -> str:
    out, n = name, 1
    while out in taken:
        n += 1
        out = f"{name}-{n}"
    taken.add(out)
    return out


# --- out ------------------------------------------------------------------------------------


def release_records(topic_set_name: str, *, salt: bytes | None = None) -> dict:
    """The records of a topic set's release (see :mod:`projects.release`), ids pseudonymised."""
    ts = topic_set_get(topic_set_name)
    salt = pseudonym_salt() if salt is None else salt

    def anon(worker_id: str) -> str:
        return release.pseudonym(worker_id, salt)

    topics = sorted(Topic.objects.filter(topic_set=ts).prefetch_related("statements", "intents"),
                    key=lambda t: natural_key(t.topic_id))
    rec: dict = {"topic_set": ts.name, "topics": [
        {"topic_id": t.topic_id, "title": t.title, "description": t.description,
         "narrative": t.narrative, "kind": t.kind,
         "statements": [s.text for s in sorted(t.statements.all(), key=lambda s: s.position)],
         "intents": [{"intent_id": i.intent_id, "description": i.description, "kind": i.kind}
                     for i in sorted(t.intents.all(), key=lambda i: natural_key(i.intent_id))]}
        for t in topics]}
    variants = list(QueryVariant.objects.filter(topic__topic_set=ts).order_by("id").values_list(
        "topic__topic_id", "variant_id", "raw", "normalised", "uncorrected", "worker_id",
        "count", "estimate", "source"))
    variants.sort(key=lambda v: natural_key(v[0]))  # stable: id order within a topic
    studies = list(Study.objects.filter(topic_set=ts).order_by("id"))
    study_no = {s.pk: n for n, s in enumerate(studies, 1)}

    def variant_id(vid: str, worker: str) -> str:
        """A collected answer's id names the study and participant rows
        (``S<study>-P<participant>-<position>``): the release says ``S<n>-<pseudonym>-
        <position>`` instead, n counting the release's studies."""
        m = CROWD_VARIANT_ID.match(vid)
        if m is None:
            return vid
        return f"S{study_no.get(int(m[1]), 0)}-{anon(worker) or 'anon'}-{m[3]}"

    rec["variants"] = [
        {"topic_id": t, "variant_id": variant_id(vid, w), "raw": raw, "normalised": norm,
         "uncorrected": unc, "worker": anon(w), "count": n, "estimate": est, "source": src}
        for t, vid, raw, norm, unc, w, n, est, src in variants]
    rec["studies"] = [{f: getattr(s, f) for f in STUDY_FIELDS} for s in studies]

    runs = list(Run.objects.filter(topic_set=ts, status="done")
                .select_related("collection", "model").order_by("id"))
    collections = {r.collection for r in runs if r.collection_id}
    models = {r.model for r in runs if r.model_id}
    pools = list(Pool.objects.filter(topic_set=ts, status=Pool.STATUS_DONE)
                 .select_related("collection", "model").order_by("id"))
    collections |= {p.collection for p in pools if p.collection_id}
    models |= {p.model for p in pools if p.model_id}
    rec["collections"] = [{f: getattr(c, f) for f in COLLECTION_FIELDS}
                          for c in sorted(collections, key=lambda c: c.name)]
    rec["models"] = [{f: getattr(m, f) for f in MODEL_FIELDS}
                     for m in sorted(models, key=lambda m: m.name)]

    run_names: dict[int, str] = {}
    taken: set[str] = set()
    rec["runs"] = []
    for run in runs:
        base = run.tag if run.kind == Run.KIND_SYSTEM and run.tag else "-".join(
            x for x in (run.model.name if run.model_id else "", run.source,
                        run.collection.name if run.collection_id else "", f"d{run.depth}") if x)
        name = run_names[run.id] = _unique(release.safe_name(base), taken)
        rec["runs"].append({
            "name": name, "kind": run.kind, "source": run.source, "tag": run.tag,
            "depth": run.depth,
            "collection": run.collection.name if run.collection_id else None,
            "model": run.model.name if run.model_id else None})
        rec["runs"][-1]["queries"], rec["runs"][-1]["rankings"] = _run_queries(run, anon)

    rec["pools"] = []
    taken = set()
    for n, pool in enumerate(pools, 1):
        name = _unique(release.safe_name(pool.name) if pool.name else f"pool-{n}", taken)
        pool_runs = sorted(PoolRun.objects.filter(pool=pool).values_list("run_id", flat=True))
        missing = [r for r in pool_runs if r not in run_names]
        if missing:
            raise release.ReleaseError(f"pool {pool.label}: built from run(s) {missing} that "
                                       "are not finished runs of the topic set")
        rec["pools"].append({
            "name": name, "pool_name": pool.name, "sources": pool.sources,
            "strategy": pool.strategy, "depth": pool.depth, "p": pool.p, "budget": pool.budget,
            "budget_scope": pool.budget_scope,
            "collection": pool.collection.name if pool.collection_id else None,
            "model": pool.model.name if pool.model_id else None,
            "runs": [run_names[r] for r in pool_runs], "topics": _pool_topics(pool)})

    rec["judgment_sets"] = []
    qrels_files = qrels_file_sets().values("pk")  # imported qrels stay out (cite them)
    for js in JudgmentSet.objects.filter(topic_set=ts).exclude(pk__in=qrels_files).order_by(
            "name"):
        labels = []
        for row in Label.objects.filter(judgment_set=js).order_by("id").values_list(
                "assessor", *LABEL_FIELDS).iterator(chunk_size=10000):
            lb = dict(zip(LABEL_FIELDS, row[1:]))
            lb["assessor"] = anon(row[0])
            labels.append(lb)
        rec["judgment_sets"].append({"name": js.name, "source": js.source, "format": js.format,
                                     "labels": labels})
    return rec


RANKINGS_BATCH = 500  # rankings read (and stored) together


def _run_queries(run: Run, anon) -> tuple[list[dict], object]:
    """The run's queries in natural topic order then label, and a function yielding
    ``(qid, docids, scores)`` of its ranked queries in that order, ``RANKINGS_BATCH``
    rankings read at a time."""
    rows = list(RunQuery.objects.filter(run=run).values_list(
        "topic__topic_id", "label", "query_text", "weight", "users", "note",
        "ranking__empty_reason", "ranking_id"))
    rows.sort(key=lambda r: (natural_key(r[0]), r[1]))
    queries = [{"topic_id": t, "label": label, "query_text": text, "weight": weight,
                "users": sorted(anon(u) for u in users.splitlines() if u.strip()),
                "note": note, "ranked": rid is not None, "empty_reason": empty or ""}
               for t, label, text, weight, users, note, empty, rid in rows]
    ranked = [(release.run_qid({"source": run.source}, q), rid)
              for q, (*_r, rid) in zip(queries, rows) if rid is not None]

    def rankings():
        for start in range(0, len(ranked), RANKINGS_BATCH):
            batch = ranked[start:start + RANKINGS_BATCH]
            stored = {pk: unpack(d, s) for pk, d, s in Ranking.objects.filter(
                pk__in={rid for _, rid in batch}).values_list("pk", "docids", "scores")}
            ids = [p.docids for p in stored.values() if len(p)]
            names = docid_strings(np.concatenate(ids)) if ids else {}
            for qid, rid in batch:
                p = stored[rid]
                if len(p):
                    yield qid, [names[int(i)] for i in p.docids], p.scores.tolist()

    return queries, rankings


def _pool_topics(pool: Pool) -> list[dict]:
    arrays = list(pool_topic_arrays(pool))
    ids = [a.docids for a in arrays if len(a.docids)]
    names = docid_strings(np.concatenate(ids)) if ids else {}
    return [{"topic_id": a.topic_id, "docids": [names[int(i)] for i in a.docids],
             "weights": a.weights.tolist(), "min_rank": a.min_rank.tolist(),
             "users": a.users.tolist(), "systems": a.systems.tolist()} for a in arrays]


def release_export(topic_set_name: str, out: str | Path, *, licence: str,
                   title: str | None = None, authors: list[str] | None = None) -> Path:
    """Write the release of a topic set to the folder or ``.tar.gz`` ``out``."""
    release.licence_get(licence)  # refuse an unknown licence before reading anything
    return release.write_release(release_records(topic_set_name), out, licence=licence,
                                 title=title, authors=authors)


def release_archive(topic_set_name: str, folder: str | Path, *, licence: str,
                    title: str | None = None, authors: list[str] | None = None) -> Path:
    """The topic set's release as ``<name>-release.tar.gz`` in ``folder`` (the bytes
    ``export_collection --out NAME.tar.gz`` writes); its path."""
    release.licence_get(licence)
    rec = release_records(topic_set_name)
    out = Path(folder) / f"{release.safe_name(rec['topic_set'])}-release.tar.gz"
    return release.write_release(rec, out, licence=licence, title=title, authors=authors)


# --- in -------------------------------------------------------------------------------------


def _models_check(rows: list[dict]) -> None:
    for row in rows:
        m = RetrievalModel.objects.filter(name=row["name"]).first()
        if m is not None:
            differ = [f for f in MODEL_FIELDS if f != "description" and getattr(m, f) != row[f]]
            if differ:
                raise release.ReleaseError(
                    f"release.json: retrieval model {m.name!r} differs from the stored one "
                    f"in {', '.join(differ)}")


def _models_ensure(rows: list[dict]) -> dict[str, RetrievalModel]:
    out = {}
    for row in rows:
        m = RetrievalModel.objects.filter(name=row["name"]).first()
        if m is None:
            m = RetrievalModel.objects.create(**{f: row[f] for f in MODEL_FIELDS})
        out[m.name] = m
    return out


def _collections_check(rows: list[dict]) -> None:
    for row in rows:
        c = Collection.objects.filter(name=row["name"]).first()
        if c is not None and row["checksum"] and c.checksum and c.checksum != row["checksum"]:
            raise release.ReleaseError(
                f"release.json: collection {c.name!r} is stored with another checksum "
                f"({c.checksum[:12]}…, the release's is {row['checksum'][:12]}…)")


def _collections_ensure(rows: list[dict]) -> dict[str, Collection]:
    out = {}
    for row in rows:
        c = Collection.objects.filter(name=row["name"]).first()
        if c is None:
            c = Collection.objects.create(**{f: row[f] for f in COLLECTION_FIELDS},
                                          source_path="", status="failed",
                                          error=IMPORTED_COLLECTION_ERROR)
        out[c.name] = c
    return out


def _names_check(rec: dict) -> None:
    """Every check of release records against the database, before anything is written:
    the topic set, judgment sets and pools must be new (their names are checked as the
    web and API check them), retrieval models and collections the same as stored ones."""
    name = rec["topic_set"]
    try:
        clean_name(name, "topic set name")
        for js in rec["judgment_sets"]:
            clean_name(js["name"], "judgment set name")
        for pool in rec["pools"]:
            if pool["pool_name"]:
                clean_name(pool["pool_name"], "pool name")
    except ValueError as exc:
        raise release.ReleaseError(f"release.json: {exc}") from None
    if TopicSet.objects.filter(name=name).exists():
        raise release.ReleaseError(f"topic set {name!r} already exists: a release loads into "
                                   "a database without it")
    for js in rec["judgment_sets"]:
        if JudgmentSet.objects.filter(name=js["name"]).exists():
            raise release.ReleaseError(f"judgment set {js['name']!r} already exists")
    for pool in rec["pools"]:
        if pool["pool_name"] and Pool.objects.filter(name=pool["pool_name"]).exists():
            raise release.ReleaseError(f"pool {pool['pool_name']!r} already exists")
    _models_check(rec["models"])
    _collections_check(rec["collections"])


@transaction.atomic
def release_store(rec: dict) -> TopicSet:
    """Store release records into a database without their topic set; all or nothing,
    and nothing written before every check has passed (:func:`_names_check` here, the
    files' own checks in :func:`projects.release.read_release`)."""
    name = rec["topic_set"]
    _names_check(rec)
    topics_import(name, [TopicRecord(
        topic_id=t["topic_id"], title=t["title"], description=t["description"],
        narrative=t["narrative"], kind=t["kind"], statements=tuple(t["statements"]),
        intents=tuple(IntentRecord(**i) for i in t["intents"])) for t in rec["topics"]])
    ts = TopicSet.objects.get(name=name)
    topics = {t.topic_id: t for t in Topic.objects.filter(topic_set=ts)}

    def topic_of(topic_id: str, where: str) -> Topic:
        try:
            return topics[topic_id]
        except KeyError:
            raise release.ReleaseError(f"{where}: topic {topic_id!r} is not in topics.jsonl") \
                from None

    QueryVariant.objects.bulk_create(
        [QueryVariant(topic=topic_of(v["topic_id"], "variants.jsonl"),
                      **{k: v[k] for k in ("variant_id", "raw", "normalised", "uncorrected",
                                           "count", "estimate", "source")},
                      worker_id=v["worker"]) for v in rec["variants"]], batch_size=2000)
    for n, s in enumerate(rec["studies"], 1):
        Study.objects.create(topic_set=ts, name=f"{name}: study {n} (from a release)",
                             completion_code=secrets.token_urlsafe(12), is_open=False,
                             **{f: s[f] for f in STUDY_FIELDS})

    models = _models_ensure(rec["models"])
    collections = _collections_ensure(rec["collections"])
    now = timezone.now()
    runs: dict[str, Run] = {}
    for r in rec["runs"]:
        runs[r["name"]] = _run_store(r, ts, topic_of, collections, models, now)

    for p in rec["pools"]:
        missing = [r for r in p["runs"] if r not in runs]
        if missing:
            raise release.ReleaseError(f"release.json: pool {p['name']!r} names runs "
                                       f"{missing} the release does not have")
        pool = Pool.objects.create(
            name=p["pool_name"], topic_set=ts, sources=p["sources"], strategy=p["strategy"],
            depth=p["depth"], p=p["p"], budget=p["budget"], budget_scope=p["budget_scope"],
            collection=collections[p["collection"]] if p["collection"] else None,
            model=models[p["model"]] if p["model"] else None, status=Pool.STATUS_DONE,
            progress=1.0, topics_count=len(p["topics"]),
            documents_count=sum(len(tp["docids"]) for tp in p["topics"]), finished=now)
        PoolRun.objects.bulk_create([PoolRun(pool=pool, run=runs[r]) for r in p["runs"]])
        docids = docids_ensure(sorted({d for tp in p["topics"] for d in tp["docids"]}))
        PoolTopic.objects.bulk_create([PoolTopic(
            pool=pool, topic_id=tp["topic_id"], size=len(tp["docids"]),
            docids=np.asarray([docids[d] for d in tp["docids"]], dtype=ID_DTYPE).tobytes(),
            weights=np.asarray(tp["weights"], dtype=WEIGHT_DTYPE).tobytes(),
            min_rank=np.asarray(tp["min_rank"], dtype=COUNT_DTYPE).tobytes(),
            users=np.asarray(tp["users"], dtype=COUNT_DTYPE).tobytes(),
            systems=np.asarray(tp["systems"], dtype=COUNT_DTYPE).tobytes())
            for tp in p["topics"]], batch_size=200)

    for js in rec["judgment_sets"]:
        jset = JudgmentSet.objects.create(name=js["name"], source=js["source"], topic_set=ts,
                                          format=js["format"], labels_count=len(js["labels"]))
        Label.objects.bulk_create(
            [Label(judgment_set=jset, assessor=lb["assessor"], created=now,
                   **{f: lb[f] for f in LABEL_FIELDS}) for lb in js["labels"]],
            batch_size=5000)
    return ts


def _run_store(r: dict, ts: TopicSet, topic_of, collections, models, now) -> Run:
    """One run of a release with its queries, its rankings stored ``RANKINGS_BATCH`` at a
    time; a retrieved ranking is shared by key as retrieval shares it."""
    collection = collections[r["collection"]] if r["collection"] else None
    model = models[r["model"]] if r["model"] else None
    run = Run.objects.create(
        kind=r["kind"], topic_set=ts, collection=collection, model=model,
        source=r["source"], tag=r["tag"], depth=r["depth"], status="done",
        total=len(r["queries"]), completed=sum(1 for q in r["queries"] if q["ranked"]),
        started=now, finished=now)
    where = f"runs/{r['name']}.queries.jsonl"
    by_qid = {release.run_qid(r, q): q for q in r["queries"]}
    keyed = collection is not None and model is not None and r["kind"] == Run.KIND_RETRIEVAL
    key_of = {qid: ranking_key(collection.id, model, r["depth"], q["query_text"]) if keyed else ""
              for qid, q in by_qid.items()}
    ranking_of: dict[str, int] = {}  # qid -> Ranking id
    by_key: dict[str, int] = {}

    def store(batch: list[tuple[str, list[str], list[float]]]) -> None:
        keys = [key_of[qid] for qid, _, _ in batch if key_of[qid]]
        by_key.update(Ranking.objects.filter(key__in=keys).values_list("key", "id"))
        ids = docids_ensure({d for _, docids, _ in batch for d in docids})
        new: dict[str, Ranking] = {}
        for qid, docids, scores in batch:
            q, key = by_qid[qid], key_of[qid]
            if not q["ranked"]:
                raise release.ReleaseError(f"runs/{r['name']}.run: query {qid!r} has "
                                           f"lines but is not ranked in {where}")
            if key and key in by_key:
                ranking_of[qid] = by_key[key]
                continue
            d, s = pack([ids[x] for x in docids], scores)
            new[key or qid] = Ranking(key=key or None, collection=collection, model=model,
                                      query_text=q["query_text"], depth=r["depth"],
                                      length=len(docids), docids=d, scores=s,
                                      empty_reason=q["empty_reason"])
            new_qids.setdefault(key or qid, []).append(qid)
        for k, ranking in zip(new, Ranking.objects.bulk_create(list(new.values()))):
            if ranking.key:
                by_key[ranking.key] = ranking.pk
            for qid in new_qids.pop(k):
                ranking_of[qid] = ranking.pk

    new_qids: dict[str, list[str]] = {}
    batch: list = []
    for item in r["rankings"]():
        if item[0] not in by_qid:
            raise release.ReleaseError(f"runs/{r['name']}.run: query {item[0]!r} is not in "
                                       f"{where}")
        batch.append(item)
        if len(batch) >= RANKINGS_BATCH:
            store(batch)
            batch = []
    if batch:
        store(batch)
    # ranked queries without lines: an empty ranking (no searchable terms)
    store_empty = [(qid, [], []) for qid, q in by_qid.items() if q["ranked"] and qid not in ranking_of]
    if store_empty:
        store(store_empty)
    RunQuery.objects.bulk_create([RunQuery(
        run=run, topic=topic_of(q["topic_id"], where), label=q["label"],
        query_text=q["query_text"], key=key_of[qid], weight=q["weight"],
        users="\n".join(q["users"]), note=q["note"], ranking_id=ranking_of.get(qid))
        for qid, q in by_qid.items()], batch_size=2000)
    return run


def release_limits() -> release.Limits:
    """The caps on a release read from elsewhere, from the settings named in their
    errors (``RELEASE_MAX_MEMBERS``, ``RELEASE_MAX_MEMBER_BYTES``, ``RELEASE_MAX_BYTES``,
    ``MAX_EXPANSION_RATIO``)."""
    return release.Limits(members=settings.RELEASE_MAX_MEMBERS,
                          member_bytes=settings.RELEASE_MAX_MEMBER_BYTES,
                          total_bytes=settings.RELEASE_MAX_BYTES,
                          ratio=settings.MAX_EXPANSION_RATIO)


def release_digest(path: str | Path) -> str:
    """The SHA-256 that identifies a release: of its ``.tar.gz``, or of a folder's
    ``MANIFEST.sha256`` (which holds the digest of every other file)."""
    path = Path(path)
    target = path / release.MANIFEST if path.is_dir() else path
    try:
        return fileio.file_sha256(fileio.require_file(target))
    except fileio.InputError as exc:
        raise release.ReleaseError(str(exc)) from None


def release_digest_check(path: str | Path, sha256: str) -> None:
    """Compare a release with the SHA-256 published beside it: ``sha256`` is 64 hex
    digits or a ``sha256sum`` file (``DIGEST  NAME``) naming the release. The digest of an
    archive is that of the ``.tar.gz`` file; of a folder, that of its ``MANIFEST.sha256``
    (which holds the digest of every other file)."""
    path = Path(path)
    text = sha256.strip()
    if not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        try:
            lines = fileio.read_bytes(fileio.require_file(text), max_bytes=1 << 20).decode(
                "utf-8").splitlines()
        except (fileio.InputError, UnicodeDecodeError) as exc:
            raise release.ReleaseError(f"--sha256 {text!r}: neither 64 hex digits nor a "
                                       f"readable digest file ({exc})") from None
        found = [ln.split()[0] for ln in lines if len(ln.split()) == 2 and
                 Path(ln.split()[1].lstrip("*")).name == path.name]
        if len(lines) == 1 and len(lines[0].split()) == 1:
            found = [lines[0].strip()]  # a file holding the digest alone
        if len(found) != 1 or not re.fullmatch(r"[0-9a-fA-F]{64}", found[0]):
            raise release.ReleaseError(f"--sha256 {text}: no digest of {path.name} in it")
        text = found[0]
    actual = release_digest(path)
    if actual != text.lower():
        raise release.ReleaseError(f"{path}: SHA-256 {actual}, not the published "
                                   f"{text.lower()}: this is not the release that was "
                                   "published (or the digest belongs to another file)")


def release_import(path: str | Path, *, sha256: str | None = None) -> TopicSet:
    """Load the release folder or ``.tar.gz`` at ``path``: its digest compared with
    ``sha256`` first when given (:func:`release_digest_check`), then every file checked
    (:func:`projects.release.open_release`, into a temporary folder removed afterwards)
    before anything is stored."""
    if sha256 is not None:
        release_digest_check(path, sha256)
    with tempfile.TemporaryDirectory(prefix="release-") as work:
        rec, _meta = release.open_release(path, work, release_limits())
        try:
            return release_store(rec)
        except IntegrityError as exc:  # a concurrent import of the same names
            raise release.ReleaseError(f"{path}: {exc}".strip()) from None


# --- title runs as the system side of a new collection -----------------------------------

#: the topic fields whose retrieval runs may stand as system runs (the demo's title runs)
SYSTEM_RUN_SOURCES = {"titles": "title", "descriptions": "description"}


def system_run_sources(topic_set_name: str) -> list[str]:
    """``titles``, and ``descriptions`` when a topic of the set has one: what a new
    collection's system runs are retrieved from."""
    topics = Topic.objects.filter(topic_set__name=topic_set_name)
    return [source for source, field in SYSTEM_RUN_SOURCES.items()
            if topics.exclude(**{field: ""}).exists()]


def system_runs_launch(*, topic_set_name: str, collection_name: str, model_name: str,
                       depth: int, skip: str | None = None) -> list[Run]:
    """Retrieval runs of a model over the topic titles (and descriptions, where the set has
    them), to be taken as system runs once finished (:func:`system_run_from_retrieval`);
    ``skip`` is a source already launched."""
    from retrieval.services import run_create

    return [run_create(topic_set_name=topic_set_name, collection_name=collection_name,
                       model_name=model_name, depth=depth, source=source)
            for source in system_run_sources(topic_set_name) if source != skip]


def system_run_tag(run: Run) -> str:
    """The tag of the system run a retrieval run becomes: model, source and run id."""
    return f"{run.model.name}-{run.source}-run{run.pk}"


def system_run_from_retrieval(run_id: int) -> Run:
    """The system run holding a finished title or description run's rankings, imported
    the way the demo keeps its title runs (its TREC run file, through
    :func:`retrieval.services.system_run_import`); the one already made, if any."""
    from retrieval.selectors import run_get, run_rankings
    from retrieval.services import system_run_import

    run = run_get(run_id)
    if run.kind != Run.KIND_RETRIEVAL or run.source not in SYSTEM_RUN_SOURCES:
        raise ValueError(f"run {run.pk} is not a retrieval run over topic titles or "
                         "descriptions")
    if run.status != "done":
        raise ValueError(f"run {run.pk} is {run.status}: wait until it is done")
    tag = system_run_tag(run)
    found = Run.objects.filter(topic_set=run.topic_set, kind=Run.KIND_SYSTEM, tag=tag).first()
    if found is not None:
        return found
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / f"{tag}.run"
        with open(path, "w", encoding="utf-8") as f:
            write_run(f, run_rankings(run), tag)
        return system_run_import(path, topic_set_name=run.topic_set.name, tag=tag)


def project_pool_create(*, topic_set_name: str, system_runs: list[int] | None = None,
                        **params) -> Pool:
    """Queue a pool of the topic set over the chosen system runs: a chosen title or
    description run is kept as a system run first (:func:`system_run_from_retrieval`).
    With none chosen, every system run, as :func:`pooling.services.pool_create` does."""
    from pooling.services import pool_create

    chosen = None
    if system_runs:
        runs = Run.objects.filter(pk__in=system_runs, topic_set__name=topic_set_name)
        kinds = dict(runs.values_list("pk", "kind"))
        missing = sorted(set(system_runs) - set(kinds))
        if missing:
            raise ValueError(f"run {missing[0]} is not a run of topic set {topic_set_name!r}")
        chosen = sorted({i if kinds[i] == Run.KIND_SYSTEM else system_run_from_retrieval(i).pk
                         for i in system_runs})
    return pool_create(topic_set_name=topic_set_name, system_run_ids=chosen, enqueue=True,
                       **params)
