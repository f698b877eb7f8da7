"""The demo: a small test collection built end to end with simulated people.

Everything goes through the services the pages and commands use. Simulated rows are
labelled as such: the study is named ``<name>: SIMULATED workers``, its workers have ids
``sim-01``… and are flagged ``Participant.simulated`` in the database, the assessor is
``sim-assessor`` and the judging task is ``<name>-simulated-judging``. Query variants
follow :mod:`crowd.simulated`.

Steps: index the collection, import topics (statements) and qrels, fill a study with
simulated workers, retrieve titles and variants with BM25 and SDM through the Celery
worker, keep the title runs as system runs, build user/system/combined pools, create a
judging task and judge part of it from the collection's qrels, evaluate.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from django.conf import settings
from django.db import connection
from django.urls import reverse

from common.naturalsort import natural_key
from common.trec import read_qrels, write_run
from config.celery_app import app
from crowd.models import Participant
from crowd.services import studies as study_services
from crowd.simulated import simulated_query
from evaluation.selectors import judgment_set_qrels, stored_runs
from evaluation.measures import RunSet, evaluate_runs, parse_measures
from judging import services as judging_services
from judging.selectors import task_progress
from pooling import services as pooling_services
from pooling.models import Pool
from pooling.selectors import pool_sizes
from retrieval import services as retrieval_services
from retrieval.models import Run
from retrieval.selectors import run_rankings
from topics.models import QueryVariant
from topics.selectors import topic_set_get
from topics.services import topics_import
from topics.topicfiles import read_topics

STEPS = 9
MEASURES = "AP P@10 nDCG@10"
MODELS = ("bm25", "sdm")


class DemoError(RuntimeError):
    """The demo cannot go on; the message says what to do."""


@dataclass(frozen=True)
class DemoSource:
    """Raw files of a collection: documents (SMART), topics (SMART), TREC qrels."""

    docs: Path
    topics: Path
    qrels: Path
    qrels_format: str  # "trec" (topic iter docid rel) or "smart" (topic docid 0 0)
    skip_empty: bool = False  # leave out documents with nothing to index (else an error)


@dataclass
class DemoResult:
    collection: str = ""
    topic_set: str = ""
    study_id: int = 0
    variants: int = 0
    run_ids: dict = field(default_factory=dict)   # "bm25-titles" -> run id
    system_tags: list = field(default_factory=list)
    pools: dict = field(default_factory=dict)     # sources -> pool id
    task: str = ""
    judged: int = 0
    items: int = 0
    evaluation: dict = field(default_factory=dict)  # tag -> {measure: mean}
    mean_topics: dict = field(default_factory=dict)  # tag -> the topics its means cover
    judged_topics: list = field(default_factory=list)
    urls: list = field(default_factory=list)


def _topics_text(topics: list[str]) -> str:
    return f"{len(topics)} topic{'s' if len(topics) != 1 else ''}: {', '.join(topics)}"


def source_from_dir(path: str | Path) -> DemoSource:
    """The CACM files of a directory: ``cacm.all``, ``query.text`` and ``cacm.qrels``
    (TREC) or ``qrels.text`` (SMART)."""
    d = Path(path)
    if not d.is_dir():
        raise DemoError(f"--from {d}: not a directory (give the folder with cacm.all, "
                        "query.text and qrels.text)")
    docs, topics = d / "cacm.all", d / "query.text"
    missing = [p.name for p in (docs, topics) if not p.is_file()]
    qrels = next((p for p in (d / "cacm.qrels", d / "qrels.text") if p.is_file()), None)
    if qrels is None:
        missing.append("cacm.qrels or qrels.text")
    if missing:
        raise DemoError(f"--from {d}: missing {', '.join(missing)} (the CACM files: "
                        "cacm.all, query.text, qrels.text)")
    return DemoSource(docs, topics, qrels, "trec" if qrels.name == "cacm.qrels" else "smart")


#: The collection ``demo`` fetches without ``--from``: ir_datasets has Cranfield (CACM is
#: not among its datasets). It keeps ``cranfield/cran.tar.gz`` under ``IR_DATASETS_HOME``
#: (``~/.ir_datasets``) and downloads it only when that file is missing.
FETCHED = "cranfield"


def source_fetch(work: Path) -> DemoSource:
    """Cranfield through ``ir_datasets`` (which downloads ``cran.tar.gz`` once into its
    own cache), written out as the raw files :func:`demo_run` reads: SMART documents
    (``.T`` title, ``.W`` text) and queries, and TREC qrels. Cranfield's relevance codes
    run from 1 (a complete answer) to 4 (minimum interest), with -1 for no interest; codes
    1-4 become grade 1 (relevant) and -1 grade 0, so that no larger grade means less
    relevant."""
    try:
        import ir_datasets
    except ImportError:
        raise DemoError("no --from PATH given and the ir_datasets package is not installed: "
                        "pass --from DIR with CACM's cacm.all, query.text and qrels.text, or "
                        "install ir_datasets to fetch Cranfield") from None
    try:
        ds = ir_datasets.load(FETCHED)
        docs, topics, qrels = work / "cran.all", work / "cran.qry", work / "cran.qrels"
        with open(docs, "w", encoding="utf-8") as f:
            for doc in ds.docs_iter():
                f.write(f".I {doc.doc_id}\n.T\n{doc.title}\n.W\n{doc.text}\n")
        with open(topics, "w", encoding="utf-8") as f:
            for q in ds.queries_iter():
                f.write(f".I {q.query_id}\n.W\n{q.text}\n")
        with open(qrels, "w", encoding="utf-8") as f:
            for r in ds.qrels_iter():
                f.write(f"{r.query_id} 0 {r.doc_id} {int(r.relevance > 0)}\n")
    except Exception as exc:  # network or cache failures of the third-party fetch
        raise DemoError(f"could not fetch {FETCHED} with ir_datasets ({type(exc).__name__}: "
                        f"{exc}); pass --from DIR with CACM's cacm.all, query.text and "
                        "qrels.text") from None
    # Cranfield's documents 471 and 995 are empty (no title, no text): left out of the index
    return DemoSource(docs, topics, qrels, "trec", skip_empty=True)


def _qrels_rows(src: DemoSource, work: Path) -> tuple[Path, dict[str, dict[str, int]]]:
    """A TREC qrels file of the source (SMART qrels list relevant pairs: grade 1) and
    ``{topic: {docid: grade}}`` with topic ids without leading zeros."""
    path = src.qrels
    if src.qrels_format == "smart":
        path = work / "qrels.trec"
        lines = []
        for n, line in enumerate(src.qrels.read_text(encoding="utf-8").splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise DemoError(f"{src.qrels}, line {n}: expected 'topic docid 0 0'")
            lines.append(f"{parts[0]} 0 {parts[1]} 1\n")
        path.write_text("".join(lines), encoding="utf-8")
    judgments: dict[str, dict[str, int]] = {}
    for _, r in read_qrels(path, "adhoc", id_map="strip-zeros"):
        judgments.setdefault(r.topic_id, {})[r.docid] = r.rel
    return path, judgments


def worker_env() -> dict[str, str]:
    """The environment of a worker on this process's database, broker, queue and indexes."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        url = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    elif connection.vendor == "sqlite":
        url = f"sqlite:///{db['NAME']}"
    else:
        raise DemoError(f"cannot start a worker for a {connection.vendor} database; start one "
                        "yourself (celery -A config worker) and pass --no-worker")
    return dict(os.environ, DATABASE_URL=url, CELERY_BROKER_URL=str(app.conf.broker_url),
                CELERY_TASK_DEFAULT_QUEUE=str(app.conf.task_default_queue),
                INDEX_ROOT=str(settings.INDEX_ROOT), DATA_DIR=str(settings.DATA_DIR),
                DJANGO_SETTINGS_MODULE="config.settings")


def _queues() -> list[str]:
    """The default queue and every queue a task route names."""
    queues = {str(app.conf.task_default_queue)}
    routes = app.conf.task_routes or {}
    for route in (routes.values() if isinstance(routes, dict) else ()):
        if isinstance(route, dict) and route.get("queue"):
            queues.add(str(route["queue"]))
    return sorted(queues)


def worker_start() -> subprocess.Popen:
    """``celery -A config worker`` (2 processes) on the configured broker and queue; its
    own process group, so :func:`worker_stop` stops it and its children."""
    celery = str(Path(sys.executable).with_name("celery"))
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [celery, "-A", "config", "worker", "-c", "2", "-Q", ",".join(_queues()),
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING"],
        cwd=settings.BASE_DIR, env=worker_env(), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    proc.log = log  # read by worker_output
    return proc


def worker_stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:  # its own process group: the worker and its children
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log = getattr(proc, "log", None)
    if log is not None:
        log.close()


def worker_output(proc: subprocess.Popen) -> str:
    """The last lines the worker wrote (its log is kept in a temporary file)."""
    log = getattr(proc, "log", None)
    if log is None:
        return ""
    log.seek(0)
    return log.read().decode(errors="replace")[-3000:]


def _wait_runs(run_ids: list[int], say, timeout: float, worker: subprocess.Popen | None) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while True:
        runs = list(Run.objects.filter(id__in=run_ids).order_by("id"))
        line = "; ".join(f"run {r.id} {r.model.name}/{r.source} {r.status} "
                         f"{r.completed}/{r.total}" for r in runs)
        if line != last:
            say(f"      {line}")
            last = line
        failed = [r for r in runs if r.status == "failed"]
        if failed:
            raise DemoError("; ".join(f"run {r.id} failed: {r.error}" for r in failed))
        if all(r.status == "done" for r in runs):
            return
        if worker is not None and worker.poll() is not None:
            raise DemoError("the Celery worker the demo started exited:\n" + worker_output(worker))
        if time.monotonic() > deadline:
            raise DemoError(f"retrieval not done after {timeout:.0f} s; is a Celery worker "
                            "running on this broker? (celery -A config worker, or run the "
                            "demo without --no-worker)")
        time.sleep(0.5)


def simulated_workers_answer(study, *, workers: int, seed: int,
                             say: Callable[[str], None] = lambda msg: None) -> list[Participant]:
    """``workers`` simulated workers (``sim-01``…) take part in ``study`` through the
    services a person's visit goes through, each flagged ``simulated`` in the database
    before answering, and answer every statement they are given with
    :func:`crowd.simulated.simulated_query` (an answer the study refuses is redrawn)."""
    out = []
    for w in range(1, workers + 1):
        worker_id = f"sim-{w:02d}"
        p = study_services.participant_arrive(
            study=study, platform=Participant.PLATFORM_ACCOUNT, worker_id=worker_id,
            simulated=True)
        p = study_services.participant_consent(participant=p, seed=seed * 1000 + w)
        for a in p.assignments.select_related("item__statement__topic").order_by("position"):
            statement = a.item.statement
            for attempt in range(20):
                raw = simulated_query(statement.text, seed=seed, worker=worker_id,
                                      topic=statement.topic.topic_id, attempt=attempt)
                r = study_services.response_submit(participant_id=p.pk,
                                                   position=a.position, raw=raw)
                if r.accepted:
                    break
            else:
                raise DemoError(f"topic {statement.topic.topic_id}: no simulated answer "
                                f"of {worker_id} was accepted in 20 attempts")
        say(f"      {worker_id}: {p.assignments.count()} answers")
        p.refresh_from_db()
        out.append(p)
    return out


def demo_run(src: DemoSource, *, name: str = "demo", topics: int = 10, workers: int = 5,
             depth: int = 100, pool_depth: int = 10, judge_fraction: float = 0.5,
             seed: int = 42, base_url: str = "http://127.0.0.1:8000",
             worker: subprocess.Popen | None = None, timeout: float = 600,
             progress: Callable[[str], None] | None = None) -> DemoResult:
    """Build the demo collection under ``name`` (collection, topic set, qrels, study,
    runs, pools and judging task are all named after it). ``worker`` is the worker
    process the caller started, watched while waiting (None: a worker runs elsewhere)."""

    say = progress or (lambda msg: None)
    if not 1 <= workers <= 99:
        raise DemoError("workers must be between 1 and 99")
    if not 0 < judge_fraction <= 1:
        raise DemoError("the judged fraction must be in (0, 1]")
    result = DemoResult(collection=name, topic_set=name)
    with tempfile.TemporaryDirectory(prefix="demo-") as tmp:
        work = Path(tmp)
        qrels_path, qrels = _qrels_rows(src, work)

        say(f"[1/{STEPS}] indexing {src.docs.name} as collection {name!r}")
        try:
            collection = retrieval_services.collection_import(
                name, src.docs, "smart", progress=lambda m: say(f"      {m}"),
                skip_empty=src.skip_empty)
        except retrieval_services.RetrievalError as exc:
            raise DemoError(f"{exc} (for a fresh demo beside it, pass --name NEW)") from None
        say(f"      {collection.doc_count} documents indexed")

        say(f"[2/{STEPS}] importing topics with statements and qrels")
        records = [r for r in read_topics(src.topics, "smart") if qrels.get(r.topic_id)]
        records.sort(key=lambda r: (len(r.topic_id), r.topic_id))
        records = records[:topics]
        if not records:
            raise DemoError(f"{src.topics}: no topic has judgments in {src.qrels}")
        topics_import(name, records)
        chosen = {r.topic_id for r in records}
        topic_qrels = {t: qrels[t] for t in chosen}
        qrels_file = work / "demo.qrels"
        qrels_file.write_text("".join(f"{t} 0 {d} {g}\n" for t in sorted(topic_qrels)
                                      for d, g in sorted(topic_qrels[t].items())))
        judging_services.qrels_import(qrels_file, format="adhoc", name=f"{name}-qrels",
                                      topic_set_name=name)
        say(f"      {len(records)} topics, {sum(len(v) for v in topic_qrels.values())} "
            "judgments from the collection's qrels")

        say(f"[3/{STEPS}] a study answered by {workers} SIMULATED workers (seed {seed})")
        study = study_services.study_create(
            topic_set=topic_set_get(name), name=f"{name}: SIMULATED workers",
            title="Simulated demo study",
            consent_text="Simulated demo: no person takes part; answers are generated.",
            completion_code="SIMULATED", responses_per_statement=workers,
            statements_per_worker=len(records), min_seconds_per_answer=0,
            instructions="SIMULATED: the answers of this study were generated by the demo.")
        result.study_id = study.pk
        simulated_workers_answer(study, workers=workers, seed=seed, say=say)
        result.variants = QueryVariant.objects.filter(topic__topic_set__name=name).count()
        say(f"      {result.variants} query variants")

        say(f"[4/{STEPS}] retrieval with {' and '.join(MODELS)} at depth {depth} through the "
            "Celery worker")
        runs = []
        for model in MODELS:
            for source in ("titles", "variants"):
                run = retrieval_services.run_create(
                    topic_set_name=name, collection_name=name, model_name=model,
                    depth=depth, source=source)
                result.run_ids[f"{model}-{source}"] = run.id
                runs.append(run)
                say(f"      run {run.id} {model}/{source}: {run.total} queries, "
                    f"{run.tasks_total} task(s) queued")
        _wait_runs([r.id for r in runs], say, timeout, worker)

        say(f"[5/{STEPS}] the title runs become the system runs")
        for model in MODELS:
            run = Run.objects.get(pk=result.run_ids[f"{model}-titles"])
            path = work / f"{model}.run"
            with open(path, "w", encoding="utf-8") as f:
                n = write_run(f, run_rankings(run), f"{name}-{model}")
            sysrun = retrieval_services.system_run_import(path, topic_set_name=name,
                                                          tag=f"{name}-{model}")
            result.system_tags.append(sysrun.tag)
            say(f"      system run {sysrun.tag}: {n} lines")

        say(f"[6/{STEPS}] pools of depth {pool_depth}: users (bm25), systems, combined")
        for sources in (Pool.SOURCES_USERS, Pool.SOURCES_SYSTEMS, Pool.SOURCES_COMBINED):
            pool = pooling_services.pool_create(
                topic_set_name=name, sources=sources, depth=pool_depth, model_name="bm25",
                collection_name=name, name=f"{name}-{sources}")
            pooling_services.pool_build(pool.id)
            pool.refresh_from_db()
            if pool.status != "done":
                raise DemoError(f"pool {pool.label} is {pool.status}: {pool.error}")
            result.pools[sources] = pool.id
            sizes = pool_sizes(pool)
            say(f"      pool {pool.label}: {sum(sizes.values())} documents over "
                f"{len(sizes)} topics")

        say(f"[7/{STEPS}] a judging task over the combined pool")
        combined = Pool.objects.get(pk=result.pools[Pool.SOURCES_COMBINED])
        task = judging_services.judging_task_create(
            pool=combined, name=f"{name}-simulated-judging", mode="topic", scale="binary",
            batch=10)
        result.task, result.items = task.name, task.items_count
        say(f"      task {task.name}: {task.items_count} documents to judge")

        per_topic = task_progress(task)["topics"]
        quota = {t: max(1, round(p["items"] * judge_fraction))
                 for t, p in per_topic.items() if p["items"]}
        want = sum(quota.values())
        done = dict.fromkeys(quota, 0)
        say(f"[8/{STEPS}] the SIMULATED assessor sim-assessor judges {want} of them, "
            f"{judge_fraction:g} of every topic's documents, from the collection's qrels "
            "(unjudged there: not relevant)")
        try:
            while any(done[t] < quota[t] for t in quota):
                batch = judging_services.batch_lease(task, "sim-assessor")
                if not batch:
                    break
                for item in batch:
                    if done[item.topic_id] >= quota[item.topic_id]:
                        continue
                    grade = 1 if topic_qrels.get(item.topic_id, {}).get(item.docid, 0) > 0 else 0
                    judging_services.judgment_submit(
                        task, "sim-assessor", item.item_id, {i: grade for i in item.intents},
                        submit_key=f"sim-{item.slot_id}", simulated=True)
                    done[item.topic_id] += 1
                    result.judged += 1
                    if result.judged % 50 == 0 or result.judged == want:
                        say(f"      {result.judged}/{want} judged")
                if any(done[i.topic_id] >= quota[i.topic_id] for i in batch):
                    # the topic has its share: hand back what is left of it, go on
                    judging_services.leases_release(task, "sim-assessor", leave_topic=True)
        finally:
            judging_services.leases_release(task, "sim-assessor")
        result.judged_topics = sorted((t for t, n in done.items() if n), key=natural_key)

        say(f"[9/{STEPS}] evaluating the system runs ({MEASURES}) on the demo's judgments")
        specs = parse_measures(MEASURES)
        runset = RunSet.from_rankings(stored_runs(topic_set=name, tags=result.system_tags))
        judged = judgment_set_qrels(task.judgment_set.name, "adhoc")
        scores = evaluate_runs(runset, judged, specs)
        for tag, r in scores.items():
            result.evaluation[tag] = dict(r["mean"])
            result.mean_topics[tag] = sorted(r["per_topic"], key=natural_key)
            say("      " + tag + ": " + ", ".join(f"{k} {v:.4f}" for k, v in r["mean"].items())
                + f" (means over {_topics_text(result.mean_topics[tag])})")

    base = base_url.rstrip("/")
    result.urls = [
        ("study (simulated workers)", reverse("crowd:study_progress", args=[result.study_id])),
        ("variants", reverse("crowd:study_variants", args=[result.study_id])),
        *((f"run {k}", reverse("retrieval:run_detail", args=[v]))
          for k, v in result.run_ids.items()),
        *((f"pool {k}", reverse("pooling:pool_detail", args=[f"{name}-{k}"]))
          for k in result.pools),
        ("qrels", reverse("pooling:qrels_detail", args=[f"{name}-qrels"])),
        ("judging task", reverse("judging:manage_task", args=[result.task])),
    ]
    result.urls = [(label, base + path) for label, path in result.urls]
    return result
