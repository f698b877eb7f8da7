"""A topic set as a release: export, load into an empty database, export again, same bytes;
nothing that identifies a worker leaves. The project is built the way the demo builds one
(CACM indexed with Anserini, simulated workers through the study services, retrieval run
in this process by the service the worker task calls, pools and judging through their
services), small enough to take seconds."""
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from crowd.models import Participant, Study
from crowd.services import participant_arrive, participant_consent, response_submit, study_create
from judging import services as judging_services
from judging.models import JudgmentSet, Label
from pooling import services as pooling_services
from pooling.models import Pool, PoolRun
from projects import release
from projects.demo import simulated_workers_answer
from retrieval import services as retrieval_services
from retrieval.models import Collection, Run, RunChunk, RunQuery
from retrieval.selectors import run_rankings
from retrieval.services import vocabulary_cache_clear
from common.trec import write_run
from topics.models import QueryVariant, TopicSet
from topics.services import topics_import, variants_import
from topics.topicfiles import IntentRecord, TopicRecord, read_topics
from topics.variantfiles import VariantRecord

NAME = "cacm-rel"
PROLIFIC = {"worker_id": "5f1e2d3c4b5a697887960a1b", "external_study_id": "64ab00cd11ef2233",
            "external_session_id": "sess-9d8c7b6a5f4e"}


# --- the plain module ----------------------------------------------------------------------


def test_the_release_module_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    code = ("import sys, projects.release\n"
            "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
            "assert not bad, bad\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr


def test_pseudonyms_are_keyed_and_stable_and_kept_once_made():
    a = release.pseudonym("A1B2C3D4E5", b"salt-1")
    assert release.PSEUDONYM_RE.match(a) and a == release.pseudonym("A1B2C3D4E5", b"salt-1")
    assert a != release.pseudonym("A1B2C3D4E5", b"salt-2")
    assert release.pseudonym(a, b"salt-2") == a  # came in as a pseudonym: unchanged
    assert release.pseudonym("", b"salt-1") == ""


def test_licence_is_one_of_the_offered_ones():
    assert release.licence_get("cc-by-4.0")["spdx"] == "CC-BY-4.0"
    with pytest.raises(release.ReleaseError, match="CC0-1.0"):
        release.licence_get("GPL-3.0")


def _records() -> dict:
    return {"topic_set": "t", "topics": [{"topic_id": "1", "title": "x", "description": "",
                                          "narrative": "", "kind": "", "statements": ["s"],
                                          "intents": []}],
            "variants": [], "studies": [], "collections": [], "models": [], "runs": [],
            "pools": [], "judgment_sets": []}


def test_archive_is_byte_stable_and_manifest_catches_a_changed_file(tmp_path):
    one = release.write_release(_records(), tmp_path / "a.tar.gz", licence="CC0-1.0")
    two = release.write_release(_records(), tmp_path / "b.tar.gz", licence="CC0-1.0")
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes()[4:8] == b"\0\0\0\0"  # gzip mtime 0
    with tarfile.open(one) as tar:
        members = tar.getmembers()
    assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in members)
    assert members[0].name == "t" and "t/MANIFEST.sha256" in {m.name for m in members}
    folder = release.write_release(_records(), tmp_path / "dir", licence="CC0-1.0")
    rec, meta = release.read_release(folder)
    assert rec["topics"] == _records()["topics"] and meta["licence"]["spdx"] == "CC0-1.0"
    (folder / "topics.jsonl").write_text('{"topic_id": "2"}\n')
    with pytest.raises(release.ReleaseError, match=r"topics.jsonl: SHA-256 differs"):
        release.read_release(folder)
    (folder / "extra.txt").write_text("x")
    (folder / "topics.jsonl").unlink()
    with pytest.raises(release.ReleaseError, match="topics.jsonl: no such file"):
        release.read_release(folder)


# --- a project out and back in -------------------------------------------------------------


@pytest.fixture
def cacm_dir(shared_data) -> Path:
    d = shared_data / "small-corpora" / "cacm"
    if not (d / "cacm.all").is_file():
        pytest.skip(f"CACM not found in {d}")
    return d


def _qrels(cacm_dir: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in (cacm_dir / "qrels.text").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.setdefault(str(int(parts[0])), {})[f"{int(parts[1])}"] = 1
    return out


def _retrieve(run: Run) -> None:
    for chunk in RunChunk.objects.filter(run=run).order_by("index"):
        retrieval_services.chunk_retrieve(chunk.pk)
    run.refresh_from_db()
    assert run.status == "done", run.error


def _judge(task, assessor: str, grade_of, *, simulated: bool) -> int:
    n = 0
    while batch := judging_services.batch_lease(task, assessor):
        for item in batch:
            judging_services.judgment_submit(
                task, assessor, item.item_id,
                {i: grade_of(item.topic_id, item.docid, i) for i in item.intents},
                submit_key=f"{assessor}-{item.slot_id}", simulated=simulated)
            n += 1
    return n


def _build_project(cacm_dir: Path, tmp_path: Path, settings) -> None:
    settings.INDEX_ROOT = tmp_path / "indexes"
    vocabulary_cache_clear()
    call_command("import_collection", "cacm", str(cacm_dir / "cacm.all"), "--format", "smart",
                 stdout=io.StringIO())
    qrels = _qrels(cacm_dir)
    topics = [r for r in read_topics(cacm_dir / "query.text", "smart") if r.topic_id in qrels]
    topics = sorted(topics, key=lambda r: int(r.topic_id))[:4]
    topics_import(NAME, [TopicRecord(
        topic_id=r.topic_id, title=r.title, description=r.description,
        statements=r.statements,
        intents=(IntentRecord("1", "papers on the subject"), IntentRecord("2", "surveys")))
        for r in topics])
    study = study_create(
        topic_set=TopicSet.objects.get(name=NAME), name="internal name SIMULATED",
        title="Search queries for CACM", consent_text="I agree that my queries are published.",
        completion_code="C0MPL3T3", responses_per_statement=4, statements_per_worker=4,
        min_seconds_per_answer=0, instructions="Type the query you would use.")
    simulated_workers_answer(study, workers=3, seed=7)
    # a person from Prolific: ids that must never leave
    p = participant_arrive(study=study, platform=Participant.PLATFORM_PROLIFIC, **PROLIFIC)
    p = participant_consent(participant=p, seed=99)
    for a in p.assignments.select_related("item__statement").order_by("position"):
        words = a.item.statement.text.split()
        r = response_submit(participant_id=p.pk, position=a.position,
                            raw=" ".join(words[1:4]) + " papers",
                            session_token=p.session_token)
        assert r.accepted, r

    # imported answers: one with no searchable term (an empty ranking), one text shared by
    # two topics (one ranking, shared by key), counted answers, an MTurk worker id
    variants_import(NAME, [
        VariantRecord(topic_id=topics[0].topic_id, raw="The of and", worker_id="A3MTURKID42"),
        VariantRecord(topic_id=topics[1].topic_id, raw="Computer programs", count=3,
                      worker_id="A3MTURKID42"),
        VariantRecord(topic_id=topics[2].topic_id, raw="computer  programs!", variant_id="x7")])
    for source in ("titles", "variants"):
        run = retrieval_services.run_create(topic_set_name=NAME, collection_name="cacm",
                                            model_name="bm25", depth=20, source=source)
        _retrieve(run)
    titles = Run.objects.get(topic_set__name=NAME, source="titles")
    path = tmp_path / "sys.run"
    with open(path, "w", encoding="utf-8") as f:
        write_run(f, run_rankings(titles), "sys-bm25")
    retrieval_services.system_run_import(path, topic_set_name=NAME, tag="sys-bm25")
    for sources in (Pool.SOURCES_USERS, Pool.SOURCES_COMBINED):
        pool = pooling_services.pool_create(
            topic_set_name=NAME, sources=sources, depth=5, model_name="bm25",
            collection_name="cacm", name=f"{NAME}-{sources}" if sources == "users" else None)
        pooling_services.pool_build(pool.id)
        pool.refresh_from_db()
        assert pool.status == "done", pool.error
    users_pool, combined = Pool.objects.get(sources="users"), Pool.objects.get(sources="combined")

    def known(t, d, _i):
        return qrels.get(t, {}).get(d, 0)

    task = judging_services.judging_task_create(pool=combined, name=f"{NAME}-topic",
                                                mode="topic", scale="binary", redundancy=2)
    _judge(task, "sim-assessor-a", known, simulated=True)
    _judge(task, "sim-assessor-b", lambda t, d, i: 1 - known(t, d, i) if d.endswith("7") else known(t, d, i),
           simulated=True)
    task2 = judging_services.judging_task_create(pool=users_pool, name=f"{NAME}-intents",
                                                 mode="intent", scale="binary", redundancy=2)
    _judge(task2, "assessor-alice", lambda t, d, i: known(t, d, i) if i == "1" else 0, simulated=False)
    _judge(task2, "assessor-bob", known, simulated=False)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_release_round_trip_is_byte_identical_and_anonymous(cacm_dir, tmp_path, settings):
    _build_project(cacm_dir, tmp_path, settings)
    secrets_stored = set(PROLIFIC.values())
    for p in Participant.objects.all():
        secrets_stored |= {p.worker_id, p.session_token, p.external_study_id,
                           p.external_session_id}
    for s in Study.objects.all():
        secrets_stored |= {s.slug, s.completion_code, s.name}
    secrets_stored |= set(QueryVariant.objects.values_list("worker_id", flat=True))
    secrets_stored |= set(Label.objects.values_list("assessor", flat=True))
    secrets_stored.discard("")

    first = tmp_path / "first"
    call_command("export_collection", "--topic-set", NAME, "--out", str(first),
                 "--licence", "CC-BY-4.0", "--author", "A. Organiser", stdout=io.StringIO())
    archive = tmp_path / "first.tar.gz"
    call_command("export_collection", "--topic-set", NAME, "--out", str(archive),
                 "--licence", "CC-BY-4.0", "--author", "A. Organiser", stdout=io.StringIO())
    files = _tree(first)

    # what is in it
    meta = json.loads(files["release.json"])
    assert meta["licence"] == {"spdx": "CC-BY-4.0", "name": release.LICENCES["CC-BY-4.0"][0],
                               "url": release.LICENCES["CC-BY-4.0"][1]}
    assert sorted((r["kind"], r["source"]) for r in meta["runs"]) == [
        ("retrieval", "titles"), ("retrieval", "variants"), ("system", "system")]
    (vrun,) = [r["name"] for r in meta["runs"] if r["source"] == "variants"]
    pools = {p["sources"]: p for p in meta["pools"]}
    assert pools["users"]["runs"] == [r["name"] for r in meta["runs"] if r["source"] == "variants"]
    assert len(pools["combined"]["runs"]) == 2
    assert {p["name"] for p in meta["pools"]} == {f"{NAME}-users", "pool-2"}
    assert {"topics.jsonl", "variants.jsonl", "README.md", "CITATION.cff", "LICENSE.md",
            f"judgments/{NAME}-topic/qrels.adhoc.txt",
            f"judgments/{NAME}-topic/agreement.json",
            f"judgments/{NAME}-intents/qrels.diversity.txt",
            f"judgments/{NAME}-intents/intents.json"} <= set(files)
    manifest = files["MANIFEST.sha256"].decode().splitlines()
    assert sorted(line.split("  ")[1] for line in manifest) == sorted(
        set(files) - {"MANIFEST.sha256"})
    for line in manifest:
        digest, rel = line.split("  ")
        assert hashlib.sha256(files[rel]).hexdigest() == digest
    readme = files["README.md"].decode()
    assert "I agree that my queries are published." in readme and release.ORGANISER in readme
    assert "simulated" in readme and "Pay: not recorded" in readme
    labels = [json.loads(x) for x in files[f"judgments/{NAME}-topic/labels.jsonl"].splitlines()]
    assert labels and all(lb["simulated"] for lb in labels)
    assert len({lb["assessor"] for lb in labels}) == 2
    assert all(release.PSEUDONYM_RE.match(lb["assessor"]) for lb in labels)
    human = [json.loads(x) for x in files[f"judgments/{NAME}-intents/labels.jsonl"].splitlines()]
    assert human and not any(lb["simulated"] for lb in human)
    variants = [json.loads(x) for x in files["variants.jsonl"].splitlines()]
    assert len(variants) == QueryVariant.objects.count() == 19
    assert len({v["worker"] for v in variants}) == 5 + 1  # and the empty one
    assert all(v["variant_id"] == f"S1-{v['worker']}-{v['variant_id'].rsplit('-', 1)[1]}"
               for v in variants if v["source"] == "crowd")  # no participant row id
    queries = [json.loads(x) for x in files[f"runs/{vrun}.queries.jsonl"].splitlines()]
    empty = [q for q in queries if q["query_text"] == "the of and"]
    assert len(empty) == 1 and empty[0]["ranked"] and empty[0]["empty_reason"]
    assert f"{empty[0]['qid']} Q0".encode() not in files[f"runs/{vrun}.run"]
    shared = [q for q in queries if q["query_text"] == "computer programs"]
    assert len(shared) == 2 and shared[0]["label"] == shared[1]["label"]
    assert "cff-version: 1.2.0" in files["CITATION.cff"].decode()
    assert 'name: "A. Organiser"' in files["CITATION.cff"].decode()

    # nothing identifying: no stored worker id, session, assignment, study link or code
    with tarfile.open(archive) as tar:
        packed = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    blob = b"".join(files.values())
    assert packed == b"".join(files[k] for k in sorted(files, key=lambda k: k.split("/")))
    for secret in sorted(secrets_stored):
        assert secret.encode() not in blob, f"{secret!r} is in the release"

    # into an empty database, and out again: the same bytes
    call_command("flush", "--no-input", verbosity=0)
    vocabulary_cache_clear()
    assert not TopicSet.objects.exists() and not Collection.objects.exists()
    call_command("import_collection_bundle", str(archive), stdout=io.StringIO())
    assert Pool.objects.count() == 2 and PoolRun.objects.count() == 3
    assert JudgmentSet.objects.count() == 2
    ts = TopicSet.objects.get(name=NAME)
    assert (ts.topics_count, ts.statements_count) == (4, 4)  # kept by the topic import
    shared = RunQuery.objects.filter(query_text="computer programs")
    assert shared.count() == 2 and len({q.ranking_id for q in shared}) == 1
    assert RunQuery.objects.get(query_text="the of and").ranking.length == 0
    assert Collection.objects.get(name="cacm").status == "failed"  # no documents came
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_collection_bundle", str(first), stdout=io.StringIO())
    second = tmp_path / "second"
    call_command("export_collection", "--topic-set", NAME, "--out", str(second),
                 "--licence", "CC-BY-4.0", "--author", "A. Organiser", stdout=io.StringIO())
    again = _tree(second)
    assert sorted(again) == sorted(files)
    for rel in files:
        assert again[rel] == files[rel], f"{rel} differs after the round trip"
    archive2 = tmp_path / "second.tar.gz"
    call_command("export_collection", "--topic-set", NAME, "--out", str(archive2),
                 "--licence", "CC-BY-4.0", "--author", "A. Organiser", stdout=io.StringIO())
    assert archive2.read_bytes() == archive.read_bytes()


# --- the organiser's page and the API ------------------------------------------------------


@pytest.fixture
def small_project(db):
    ts = TopicSet.objects.create(name="small set")
    topics_import("small set", [TopicRecord(topic_id="T1", title="cheap flights",
                                            statements=("You want a cheap flight.",))])
    study = study_create(topic_set=ts, name="s", consent_text="Consent: your queries are kept.",
                         completion_code="SECRETCODE", min_seconds_per_answer=0)
    p = participant_arrive(study=study, platform=Participant.PLATFORM_MTURK,
                           worker_id="A2MTURKWORKER9", external_study_id="3HITID0001",
                           external_session_id="3ASSIGNMENT77")
    p = participant_consent(participant=p, seed=1)
    assert response_submit(participant_id=p.pk, position=1, raw="cheap flights to rome",
                           session_token=p.session_token).accepted
    return ts


def test_release_page_and_api_are_for_staff_and_give_the_command_s_archive(
        small_project, client, admin_client, django_user_model, tmp_path):
    from rest_framework.test import APIClient

    url = f"/crowd/topic-sets/{small_project.pk}/release/"
    api_url = "/api/topic-sets/small set/release/"
    assert client.get(url).status_code == 302  # to the login page
    plain = django_user_model.objects.create_user("plain", password="x")
    client.force_login(plain)
    assert client.post(url, {"licence": "CC0-1.0"}).status_code == 302
    api = APIClient()
    assert api.get(api_url, {"licence": "CC0-1.0"}).status_code in (401, 403)
    api.force_authenticate(plain)
    assert api.get(api_url, {"licence": "CC0-1.0"}).status_code == 403

    out = tmp_path / "small.tar.gz"
    call_command("export_collection", "--topic-set", "small set", "--out", str(out),
                 "--licence", "CC0-1.0", stdout=io.StringIO())
    page = admin_client.get(f"/crowd/topic-sets/{small_project.pk}/project/")
    assert url in page.content.decode()
    assert "CC-BY-4.0" in admin_client.get(url).content.decode()
    r = admin_client.post(url, {"licence": "CC0-1.0", "title": "", "authors": ""})
    assert r.status_code == 200 and r["Content-Type"] == "application/gzip"
    assert 'filename="small_set-release.tar.gz"' in r["Content-Disposition"]
    assert r.getvalue() == out.read_bytes()
    assert admin_client.post(url, {"licence": "WTFPL"}).status_code == 400

    api.force_authenticate(django_user_model.objects.get(username="admin"))
    r = api.get(api_url, {"licence": "CC0-1.0"})
    assert r.status_code == 200 and r.getvalue() == out.read_bytes()
    assert api.get(api_url).status_code == 400
    assert "CC0-1.0" in api.get(api_url, {"licence": "nope"}).content.decode()
    assert api.get("/api/topic-sets/none/release/", {"licence": "CC0-1.0"}).status_code == 404

    with tarfile.open(out) as tar:
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    for secret in ("A2MTURKWORKER9", "3HITID0001", "3ASSIGNMENT77", "SECRETCODE",
                   Study.objects.get().slug, Participant.objects.get().session_token):
        assert secret.encode() not in blob
    assert QueryVariant.objects.get().variant_id.encode() not in blob  # S<study>-P<row>-<n>
    assert b"Consent: your queries are kept." in blob and b"cheap flights to rome" in blob


def test_commands_name_what_is_wrong(small_project, tmp_path):
    with pytest.raises(CommandError, match="unknown licence 'MIT-0'"):
        call_command("export_collection", "--topic-set", "small set", "--out",
                     str(tmp_path / "x"), "--licence", "MIT-0", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no topic set|does not exist|nope"):
        call_command("export_collection", "--topic-set", "nope", "--out",
                     str(tmp_path / "x"), "--licence", "CC0-1.0", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no such release folder or archive"):
        call_command("import_collection_bundle", str(tmp_path / "missing"), stdout=io.StringIO())
    (tmp_path / "bad.tar.gz").write_bytes(b"not gzip")
    with pytest.raises(CommandError, match="bad.tar.gz: not a readable .tar.gz"):
        call_command("import_collection_bundle", str(tmp_path / "bad.tar.gz"),
                     stdout=io.StringIO())
