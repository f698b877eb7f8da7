"""Many machines, proven on one: network namespaces (tests/netns.py) as six hosts.

    db       PostgreSQL (its own cluster: initdb, postgres on the host's address)
    broker   redis-server on the host's address
    web      gunicorn, the management commands and an API client (curl)
    worker1  celery worker ┐
    worker2  celery worker ├ the same INDEX_ROOT directory (a shared volume)
    worker3  celery worker ┘

The web host imports CACM (index, 64 topics, three query variants a topic) and asks the
API for an SDM run of the variants. Each worker reserves one message at a time, so the
first three chunks go one to each worker host, which holds its chunk while its JVM
starts; then worker1 is cut off the network (its port on the bridge: ``ip link set
    p-worker1 down``) and worker2 is
killed (SIGKILL to the whole worker). Their leases expire, ``recover`` on the web host
(what beat does every minute) re-queues the chunks, and worker3 finishes the run; a pool
is built through the API. worker1 then comes back: the search it was doing ends and
stores nothing, because its chunk is done. At the end every query of the run is ranked,
each ranking is stored exactly once, the two chunks show the takeover (attempt 2, the
first lost with its holder's name), and the pool equals one built in-process from the
same rankings.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests import netns

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
LEASE = 10  # JOB_LEASE_SECONDS on every host: a lost holder is noticed within seconds
TIME_BUDGET = 180  # seconds for the whole test; every wait below is bounded by it
WORKERS = ("worker1", "worker2", "worker3")


def _postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian layout)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def _missing() -> str:
    """Why the hosts cannot be built here ("" when they can)."""
    reason = netns.unavailable()
    if reason:
        return reason
    pg = _postgres_bin()
    if pg is None:
        return "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb)"
    for tool in ("redis-server", "curl"):
        if shutil.which(tool) is None:
            return f"{tool!r} is not installed"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "no 'postgres' account to run the database cluster as"
    return ""


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def wait(self, what: str, check, *, every: float = 0.2, at_most: float | None = None,
             logs: "Logs | None" = None):
        """Poll ``check()`` until it returns something true; fail naming ``what``."""
        end = min(self.end, time.monotonic() + at_most) if at_most else self.end
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > end:
                pytest.fail(f"timed out waiting for {what}" + (logs.tails() if logs else ""))
            time.sleep(every)


class Logs:
    """One log file per process, in a folder; their ends go into failure messages."""

    def __init__(self, folder: Path):
        self.folder = folder

    def __call__(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def text(self, name: str) -> str:
        path = self(name)
        return path.read_text(errors="replace") if path.exists() else ""

    def tails(self, chars: int = 1500) -> str:
        return "".join(f"\n--- {p.name} ---\n{p.read_text(errors='replace')[-chars:]}"
                       for p in sorted(self.folder.glob("*.log")))


def _variants_tsv(path: Path, topics) -> int:
    """Three query variants a topic (its first, middle and last content words), as three
    people would type them; returns the number of rows."""
    rows = ["topic\tquery\tworker"]
    for t in topics:
        words = [w for w in re.findall(r"[A-Za-z]+", t.title) if len(w) > 3]
        for worker, chosen in (("u1", words[:3]), ("u2", words[1:5]), ("u3", words[-3:])):
            if chosen:
                rows.append(f"{t.topic_id}\t{' '.join(chosen)}\t{worker}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return len(rows) - 1


def test_a_run_and_a_pool_survive_a_cut_off_and_a_killed_worker_host(shared_data, tmp_path):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("runs once, in the suite's PostgreSQL pass (its hosts run a PostgreSQL "
                    "cluster of their own whatever the suite's database)")
    reason = _missing()
    if reason:
        pytest.skip(f"cannot build hosts from network namespaces here: {reason}")
    cacm = shared_data / "small-corpora" / "cacm"
    if not (cacm / "cacm.all").is_file():
        pytest.skip(f"CACM not found in {cacm}")
    from crowd.topicfiles import read_topics
    from pooling.models import PoolTopic
    from retrieval.models import Ranking, RunChunk, RunQuery

    deadline = Deadline(TIME_BUDGET)
    logs = Logs(tmp_path)
    topics = read_topics(cacm / "query.text", "smart")
    variants = tmp_path / "variants.tsv"
    _variants_tsv(variants, topics)
    pgdata = Path(tempfile.mkdtemp(prefix="qv-hosts-db-"))  # the postgres account owns it
    shutil.chown(pgdata, "postgres", "postgres")
    pg = _postgres_bin()
    try:
        with netns.Network() as net:
            db, broker, web = net.host("db"), net.host("broker"), net.host("web")
            workers = {name: net.host(name) for name in WORKERS}
            for host in net.hosts.values():
                # retransmit at least every second, so a host that comes back is heard at once
                host.sysctl("net.ipv4.tcp_rto_max_ms", "1000")

            # --- db: a cluster of its own, listening on its address only -------------------
            subprocess.run([pg / "initdb", "-D", pgdata, "-U", "postgres", "--auth=trust",
                            "--no-sync", "-E", "UTF8"], user="postgres", cwd=pgdata,
                           check=True, capture_output=True, timeout=120)
            with open(pgdata / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {net.subnet}.0/24 trust\n")
            db.spawn([str(pg / "postgres"), "-D", str(pgdata), "-c",
                      f"listen_addresses={db.address}", "-c", f"unix_socket_directories={pgdata}",
                      "-c", "fsync=off", "-c", "max_connections=200"],
                     log=logs("db"), user="postgres")
            deadline.wait("PostgreSQL on the db host", lambda: web.run(
                [str(pg / "pg_isready"), "-h", db.address, "-U", "postgres"],
                check=False).returncode == 0, logs=logs)
            web.run([str(pg / "createdb"), "-h", db.address, "-U", "postgres", "qv"])

            # --- broker: redis on its address, nothing on disk -----------------------------
            broker.spawn(["redis-server", "--bind", broker.address, "--port", "6379",
                          "--protected-mode", "no", "--save", "", "--appendonly", "no",
                          "--dir", str(tmp_path)], log=logs("broker"))
            deadline.wait("Redis on the broker host", lambda: web.run(
                ["redis-cli", "-h", broker.address, "ping"], check=False).stdout.strip()
                == "PONG", logs=logs)

            shared = tmp_path / "shared-indexes"
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "config.settings",
                "DEBUG": "0", "SECRET_KEY": uuid.uuid4().hex * 2, "HTTPS": "0",
                "ALLOWED_HOSTS": web.address,
                "DATABASE_URL": f"postgres://postgres@{db.address}:5432/qv",
                "CELERY_BROKER_URL": f"redis://{broker.address}:6379/0",
                "INDEX_ROOT": str(shared), "RETRIEVAL_CHUNK_SIZE": "4",
                "JOB_LEASE_SECONDS": str(LEASE), "LOG_LEVEL": "INFO",
            }

            def host_env(host) -> dict:
                data = tmp_path / f"data-{host.name}"  # DATA_DIR is per host, indexes shared
                data.mkdir(exist_ok=True)
                return {**env, "DATA_DIR": str(data)}

            def manage(*args, timeout=120) -> str:
                return web.run([sys.executable, "manage.py", *args], env=host_env(web), cwd=ROOT,
                               timeout=max(1, min(timeout, deadline.left()))).stdout

            def sql(query: str) -> list[list[str]]:
                out = web.run([str(pg / "psql"), "-h", db.address, "-U", "postgres", "-d", "qv",
                               "-AtF", "\t", "-c", query])
                return [line.split("\t") for line in out.stdout.splitlines() if line]

            manage("migrate", "--noinput", "-v", "0")

            # --- workers and the web server boot while the web host imports ----------------
            procs = {}
            for name, host in workers.items():
                procs[name] = host.spawn([sys.executable, "-m", "celery", "-A", "config", "worker", "-P",
                            "prefork", "-c", "1", "-n", "celery@%h", "--without-gossip",
                            "--without-mingle", "--without-heartbeat", "-l", "INFO"],
                           log=logs(name), env=host_env(host), cwd=ROOT)
            web_server = web.spawn(
                [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
                 f"{web.address}:8000", "--workers", "2", "--timeout", "60"],
                log=logs("web"), env=host_env(web), cwd=ROOT)

            manage("import_collection", "cacm", str(cacm / "cacm.all"), "--format", "smart")
            manage("import_topics", str(cacm / "query.text"), "--format", "smart",
                   "--topic-set", "cacm")
            manage("import_variants", str(variants), "--format", "tsv", "--topic-set", "cacm")
            manage("createsuperuser", "--noinput", "--username", "ops",
                   "--email", "ops@example.org")  # an organiser, with no password
            token = manage("create_api_token", "ops").strip()

            def api(method: str, path: str, body: dict | None = None) -> dict:
                argv = ["curl", "-sS", "-m", "20", "-X", method, "-H",
                        f"Authorization: Token {token}", "-H", "Accept: application/json"]
                if body is not None:
                    argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
                out = web.run(argv + [f"http://{web.address}:8000{path}"])
                try:
                    return json.loads(out.stdout)
                except ValueError:
                    pytest.fail(f"{method} {path}: not JSON: {out.stdout[:500]}" + logs.tails())

            for name in WORKERS:
                deadline.wait(f"{name} to be ready", lambda name=name: re.search(
                    rf"celery@{name} ready", logs.text(name)), logs=logs)
            deadline.wait("gunicorn on the web host", lambda: web_server.poll() is None and (
                web.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                         f"http://{web.address}:8000/api/"], check=False).stdout == "401"),
                logs=logs)

            # --- a run through the API; cut worker1 and kill worker2 while they hold chunks -
            run = api("POST", "/api/runs/", {"topic_set": "cacm", "collection": "cacm",
                                              "model": "sdm", "source": "variants",
                                              "depth": 1000})
            assert "id" in run, run
            chunks = RunChunk._meta.db_table

            def held() -> dict[str, str]:
                """host -> chunk id, for the chunks held right now."""
                rows = sql(f"SELECT holder, id FROM {chunks} WHERE status = 'running' "
                           f"AND run_id = {int(run['id'])}")
                return {holder.split(":")[0]: pk for holder, pk in rows}

            holding = deadline.wait("worker1 and worker2 to hold a chunk each",
                                    lambda: (lambda h: h if {"worker1", "worker2"} <= set(h)
                                             else None)(held()), every=0.1, logs=logs)
            workers["worker1"].cut()
            cut = time.monotonic()
            cut_at = len(logs.text("worker1"))
            os.killpg(procs["worker2"].pid, signal.SIGKILL)  # the worker and its child
            procs["worker2"].wait(timeout=10)
            taken = {"worker1": holding["worker1"], "worker2": holding["worker2"]}

            # the leases of both run out; recover on the web host re-queues their chunks
            # (beat does it every minute), and worker3 finishes the run
            last_recover = time.monotonic()
            while True:
                run = api("GET", f"/api/runs/{run['id']}/")
                assert run["status"] != "failed", run["error"] + logs.tails()
                if run["status"] == "done":
                    recovered = time.monotonic() - cut
                    break
                if deadline.left() < 0:
                    pytest.fail(f"run not done: {run}" + logs.tails())
                if time.monotonic() - last_recover > LEASE:
                    manage("recover")
                    last_recover = time.monotonic()
                time.sleep(0.5)
            assert run["completed"] == run["total"] > 150, run

            # --- a pool through the API, built by the worker host that is left -------------
            pool = api("POST", "/api/pools/", {"topic_set": "cacm", "sources": "users",
                                                "depth": 10, "name": "users-d10"})
            assert pool.get("status") in ("queued", "running", "done"), pool
            pool = deadline.wait("the pool build", lambda: (lambda p: p if p["status"] in (
                "done", "failed") else None)(api("GET", "/api/pools/users-d10/")),
                every=0.5, logs=logs)
            assert pool["status"] == "done", pool["error"] + logs.tails()

            # --- worker1 comes back: its search ends and stores nothing --------------------
            workers["worker1"].reconnect()
            ended = deadline.wait("worker1's cut-off task to end", lambda: re.search(
                r"chunk_retrieve_task\[[^\]]+\] (succeeded in [\d.]+s: (\d+)|retry|raised)",
                logs.text("worker1")[cut_at:]), every=0.5, at_most=60, logs=logs)
            assert ended.group(2) in (None, "0"), ended.group(0)  # stored no ranking

            # --- every query ranked, each ranking stored exactly once -----------------------
            jobs = json.loads(manage("jobs", "--json"))
            (listed,) = [r for r in jobs["runs"] if r["id"] == run["id"]]
            assert (listed["state"], listed["done"]) == ("done", listed["total"]), listed
            assert [(p["name"], p["state"]) for p in jobs["pools"]] == [("users-d10", "done")]
            queries, rankings = RunQuery._meta.db_table, Ranking._meta.db_table
            ((unranked, keys, stored, all_stored),) = sql(
                f"SELECT (SELECT count(*) FROM {queries} WHERE run_id = {int(run['id'])} "
                f"AND ranking_id IS NULL), "
                f"(SELECT count(DISTINCT key) FROM {queries} WHERE run_id = {int(run['id'])}), "
                f"(SELECT count(*) FROM {rankings} WHERE key IN (SELECT key FROM {queries} "
                f"WHERE run_id = {int(run['id'])})), (SELECT count(*) FROM {rankings})")
            assert unranked == "0" and keys == stored == all_stored, (
                unranked, keys, stored, all_stored)
            states = dict(sql(f"SELECT status, count(*) FROM {chunks} "
                              f"WHERE run_id = {int(run['id'])} GROUP BY status"))
            assert set(states) == {"done"}, states
            for host, pk in taken.items():
                ((status, attempts, error),) = sql(
                    f"SELECT status, attempts, error FROM {chunks} WHERE id = {int(pk)}")
                assert status == "done" and int(attempts) >= 2, (host, status, attempts, error)
                assert re.match(rf"attempt 1 lost: the lease of {host}:\d+ expired", error), error
            assert re.search(rf"run {run['id']} chunk \d+: \d+ queries searched",
                             logs.text("worker3"))

            # --- the pool equals one built in-process on the web host from the same rankings
            here = json.loads(manage("build_pool", "--topic-set", "cacm", "--sources", "users",
                                     "--depth", "10", "--name", "users-d10-here", "--json"))
            sizes = {t: int(n) for t, n in sql(
                f"SELECT t.topic_id, t.size FROM {PoolTopic._meta.db_table} t "
                f"WHERE t.pool_id = {int(pool['id'])}")}
            assert sizes == here["sizes"] and len(sizes) == len(topics)
            assert pool["documents_count"] == sum(sizes.values())
            print(f"many hosts: {run['total']} queries, {int(keys)} rankings in "
                  f"{sum(map(int, states.values()))} chunks, done {recovered:.0f} s after the "
                  f"cut and the kill; pool {pool['documents_count']} documents; "
                  f"{TIME_BUDGET - deadline.left():.0f} s in all")
    finally:
        shutil.rmtree(pgdata, ignore_errors=True)
