"""Many machines, proven on one: network namespaces (tests/netns.py) as six hosts.

    db       PostgreSQL, a cluster of its own (initdb; postgres on the host's address)
    broker   redis-server on the host's address
    web      gunicorn, the management commands and an API client (curl)
    worker1  celery worker ┐
    worker2  celery worker ├ one INDEX_ROOT directory between them (a shared volume)
    worker3  celery worker ┘

The web host imports CACM (index, 64 topics, three query variants a topic) and asks the
API for an SDM run of the variants (183 queries, 46 chunks). A worker reserves one message
at a time, so the first chunks go one to each worker host, which holds its chunk while its
JVM starts. Then worker1 is cut off the network (its port on the bridge goes down: ``ip
link set p-worker1 down``) and worker2 is killed (SIGKILL to the whole worker). Their
leases expire, ``recover`` on the web host (what beat does every minute) re-queues the two
chunks, and worker3 finishes the run; a pool is built through the API. worker1 then comes
back: the task it was doing ends without storing anything, as its chunk is done. In the
end every query of the run is ranked, each ranking is stored exactly once, both chunks
show the takeover (a second attempt, the first lost with the lease of its host), and the
pool equals one built in-process on the web host.
"""
from __future__ import annotations

import glob
import json
import os
import pwd
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
TIME_BUDGET = 180  # seconds for the whole test; every wait is bounded by it
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
    for tool in ("postgres", "pg_isready", "createdb", "psql"):
        if not (pg / tool).is_file():
            return f"{pg / tool} not found"
    for tool in ("redis-server", "redis-cli", "curl"):
        if shutil.which(tool) is None:
            return f"{tool!r} is not installed"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no 'postgres' account to run the database cluster as"
    return ""


class Deadline:
    """The test's time budget; every wait fails, naming what it waited for, when it ends."""

    def __init__(self, seconds: float, logs: "Logs"):
        self.end, self.logs = time.monotonic() + seconds, logs

    def left(self) -> float:
        return self.end - time.monotonic()

    def wait(self, what: str, check, *, every: float = 0.2, at_most: float | None = None):
        """Poll ``check()`` until it returns something true, and return that."""
        end = min(self.end, time.monotonic() + at_most) if at_most else self.end
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > end:
                pytest.fail(f"timed out waiting for {what}" + self.logs.tails())
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


class Cluster:
    """The service on six hosts: PostgreSQL on db and Redis on broker (started here), the
    web server and the workers (started by the test); commands and API calls from web."""

    def __init__(self, net: netns.Network, folder: Path, pgdata: Path, pg: Path):
        self.net, self.folder, self.pg = net, folder, pg
        self.logs = Logs(folder)
        self.deadline = Deadline(TIME_BUDGET, self.logs)
        self.db, self.broker, self.web = net.host("db"), net.host("broker"), net.host("web")
        self.workers = {name: net.host(name) for name in WORKERS}
        self.procs: dict[str, subprocess.Popen] = {}
        self.token = ""
        for host in net.hosts.values():
            # TCP retransmits for minutes (and, from Linux 6.15, at least every second): a
            # host cut off for less keeps its connections and is heard soon after it is back
            host.sysctl("net.ipv4.tcp_retries2", "120")
            if Path("/proc/sys/net/ipv4/tcp_rto_max_ms").exists():
                host.sysctl("net.ipv4.tcp_rto_max_ms", "1000")
        self._postgres(pgdata)
        self.broker.spawn(["redis-server", "--bind", self.broker.address, "--port", "6379",
                           "--protected-mode", "no", "--save", "", "--appendonly", "no",
                           "--dir", str(folder)], log=self.logs("broker"))
        self.deadline.wait("Redis on the broker host", lambda: self.web.run(
            ["redis-cli", "-h", self.broker.address, "ping"], check=False).stdout.strip()
            == "PONG")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder),
            "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "0", "SECRET_KEY": uuid.uuid4().hex * 2, "HTTPS": "0",
            "ALLOWED_HOSTS": self.web.address,
            "DATABASE_URL": f"postgres://postgres@{self.db.address}:5432/qv",
            "CELERY_BROKER_URL": f"redis://{self.broker.address}:6379/0",
            "INDEX_ROOT": str(folder / "shared-indexes"), "RETRIEVAL_CHUNK_SIZE": "4",
            "JOB_LEASE_SECONDS": str(LEASE), "LOG_LEVEL": "INFO",
        }

    def _postgres(self, pgdata: Path) -> None:
        subprocess.run([self.pg / "initdb", "-D", pgdata, "-U", "postgres", "--auth=trust",
                        "--no-sync", "-E", "UTF8"], user="postgres", cwd=pgdata, check=True,
                       capture_output=True, timeout=120)
        with open(pgdata / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {self.net.subnet}.0/24 trust\n")
        # fsync off: a throwaway cluster; durability is not what this test is about
        self.db.spawn([str(self.pg / "postgres"), "-D", str(pgdata),
                       "-c", f"listen_addresses={self.db.address}",
                       "-c", f"unix_socket_directories={pgdata}", "-c", "fsync=off",
                       "-c", "max_connections=200"], log=self.logs("db"), user="postgres")
        self.deadline.wait("PostgreSQL on the db host", lambda: self.web.run(
            [str(self.pg / "pg_isready"), "-h", self.db.address, "-U", "postgres"],
            check=False).returncode == 0)
        self.web.run([str(self.pg / "createdb"), "-h", self.db.address, "-U", "postgres", "qv"])

    def host_env(self, host: netns.Host) -> dict:
        data = self.folder / f"data-{host.name}"  # DATA_DIR is the host's; INDEX_ROOT shared
        data.mkdir(exist_ok=True)
        return {**self.env, "DATA_DIR": str(data)}

    def manage(self, *args: str) -> str:
        """``manage.py ARGS`` on the web host; its output."""
        return self.web.run([sys.executable, "manage.py", *args], env=self.host_env(self.web),
                            cwd=ROOT, timeout=max(1.0, min(120.0, self.deadline.left()))).stdout

    def manage_all(self, *commands: list[str]) -> list[str]:
        """Several ``manage.py`` commands at once on the web host; their outputs."""
        procs = [subprocess.Popen(self.web.argv([sys.executable, "manage.py", *args]),
                                  env=self.host_env(self.web), cwd=ROOT, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for args in commands]
        outs = [p.communicate(timeout=max(1.0, min(180.0, self.deadline.left())))
                for p in procs]
        for args, p, (out, err) in zip(commands, procs, outs):
            if p.returncode != 0:
                pytest.fail(f"web$ manage.py {' '.join(args)} exited with {p.returncode}:\n"
                            f"{out[-3000:]}\n{err[-3000:]}")
        return [out for out, _ in outs]

    def sql(self, query: str) -> list[list[str]]:
        """Rows of ``query`` on the ledger (psql on the web host)."""
        out = self.web.run([str(self.pg / "psql"), "-h", self.db.address, "-U", "postgres",
                            "-d", "qv", "-AtF", "\t", "-c", query])
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        """A JSON API call from the web host, as the organiser ``ops``."""
        argv = ["curl", "-sS", "-m", "20", "-X", method, "-H", "Accept: application/json",
                "-H", f"Authorization: Token {self.token}"]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        out = self.web.run(argv + [f"http://{self.web.address}:8000{path}"])
        try:
            return json.loads(out.stdout)
        except ValueError:
            pytest.fail(f"{method} {path}: not JSON: {out.stdout[:500]}" + self.logs.tails())

    def start_workers(self) -> None:
        for name, host in self.workers.items():
            self.procs[name] = host.spawn(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "prefork",
                 "-c", "1", "-n", "celery@%h", "--without-gossip", "--without-mingle",
                 "--without-heartbeat", "-l", "INFO"],
                log=self.logs(name), env=self.host_env(host), cwd=ROOT)

    def start_web(self) -> None:
        self.procs["web"] = self.web.spawn(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
             f"{self.web.address}:8000", "--workers", "2", "--timeout", "60"],
            log=self.logs("web"), env=self.host_env(self.web), cwd=ROOT)

    def wait_ready(self) -> None:
        for name in WORKERS:
            self.deadline.wait(f"{name} to be ready", lambda name=name: re.search(
                rf"celery@{name} ready", self.logs.text(name)))
        self.deadline.wait("gunicorn on the web host", lambda: self.web.run(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
             f"http://{self.web.address}:8000/api/"], check=False).stdout == "401")


@pytest.fixture
def cluster(shared_data, tmp_path):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("runs once, in the suite's PostgreSQL pass (its hosts run a PostgreSQL "
                    "cluster of their own whatever the suite's database)")
    reason = _missing()
    if reason:
        pytest.skip(f"cannot build hosts from network namespaces here: {reason}")
    pgdata = Path(tempfile.mkdtemp(prefix="qv-hosts-db-"))  # the postgres account's
    shutil.chown(pgdata, "postgres", "postgres")
    try:
        with netns.Network() as net:
            yield Cluster(net, tmp_path, pgdata, _postgres_bin())
    finally:
        shutil.rmtree(pgdata, ignore_errors=True)


def _variants_tsv(path: Path, topics) -> None:
    """Three query variants a topic (first, middle and last content words of its text), as
    three people might type them."""
    rows = ["topic\tquery\tworker"]
    for t in topics:
        words = [w for w in re.findall(r"[A-Za-z]+", t.title) if len(w) > 3]
        for worker, chosen in (("u1", words[:3]), ("u2", words[1:5]), ("u3", words[-3:])):
            if chosen:
                rows.append(f"{t.topic_id}\t{' '.join(chosen)}\t{worker}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture
def cacm(shared_data) -> Path:
    folder = shared_data / "small-corpora" / "cacm"
    if not (folder / "cacm.all").is_file():
        pytest.skip(f"CACM not found in {folder}")
    return folder


def test_a_run_and_a_pool_survive_a_cut_off_and_a_killed_worker_host(cacm, cluster, tmp_path):
    from pooling.models import PoolTopic
    from retrieval.models import Ranking, RunChunk, RunQuery
    from topics.topicfiles import read_topics

    topics = read_topics(cacm / "query.text", "smart")
    _variants_tsv(tmp_path / "variants.tsv", topics)
    c, logs, deadline = cluster, cluster.logs, cluster.deadline
    chunks, queries, rankings = (m._meta.db_table for m in (RunChunk, RunQuery, Ranking))

    c.manage("migrate", "--noinput", "-v", "0")
    c.start_workers()  # they and the web server boot while the web host imports
    c.start_web()
    c.manage_all(
        ["import_collection", "cacm", str(cacm / "cacm.all"), "--format", "smart"],
        ["import_topics", str(cacm / "query.text"), "--format", "smart", "--topic-set", "cacm"],
        ["createsuperuser", "--noinput", "--username", "ops", "--email", "ops@example.org"])
    _, token = c.manage_all(["import_variants", str(tmp_path / "variants.tsv"), "--format",
                             "tsv", "--topic-set", "cacm"], ["create_api_token", "ops"])
    c.token = token.strip()
    c.wait_ready()

    # --- a run through the API; worker1 cut off and worker2 killed while they hold chunks
    run = c.api("POST", "/api/runs/", {"topic_set": "cacm", "collection": "cacm",
                                        "model": "sdm", "source": "variants", "depth": 1000})
    assert "id" in run, run
    run_id = int(run["id"])

    def held() -> dict[str, str] | None:
        """host -> chunk id, once worker1 and worker2 each hold a chunk of the run."""
        rows = c.sql(f"SELECT holder, id FROM {chunks} WHERE status = 'running' "
                     f"AND run_id = {run_id}")
        hosts = {holder.split(":")[0]: pk for holder, pk in rows}
        return hosts if {"worker1", "worker2"} <= set(hosts) else None

    holding = deadline.wait("worker1 and worker2 to hold a chunk each", held, every=0.1)
    c.workers["worker1"].cut()
    cut, cut_log = time.monotonic(), len(logs.text("worker1"))
    os.killpg(c.procs["worker2"].pid, signal.SIGKILL)  # the worker and its pool child
    c.procs["worker2"].wait(timeout=10)

    # both leases run out; recover on the web host re-queues the two chunks (beat does it
    # every minute) and worker3 finishes the run
    last_recover = time.monotonic()
    while (run := c.api("GET", f"/api/runs/{run_id}/"))["status"] != "done":
        assert run["status"] != "failed", run["error"] + logs.tails()
        if deadline.left() < 0:
            pytest.fail(f"run not done: {run}" + logs.tails())
        if time.monotonic() - last_recover > LEASE:
            c.manage("recover")
            last_recover = time.monotonic()
        time.sleep(0.5)
    recovered = time.monotonic() - cut
    assert run["completed"] == run["total"] > 150, run

    # --- a pool through the API, built by the worker host that is left -------------------
    pool = c.api("POST", "/api/pools/", {"topic_set": "cacm", "sources": "users",
                                          "depth": 10, "name": "users-d10"})
    assert pool.get("status") in ("queued", "running", "done"), pool
    pool = deadline.wait("the pool build", lambda: (lambda p: p if p["status"] in (
        "done", "failed") else None)(c.api("GET", "/api/pools/users-d10/")), every=0.5)
    assert pool["status"] == "done", pool["error"] + logs.tails()

    # --- worker1 comes back: the search it did while cut off finds its chunk done, and
    # the task ends storing nothing (its connections lived through the cut)
    c.workers["worker1"].reconnect()
    ended = deadline.wait("worker1's cut-off task to end", lambda: re.search(
        r"chunk_retrieve_task\[[^\]]+\] (succeeded in [\d.]+s: (\d+)|retry|raised)",
        logs.text("worker1")[cut_log:]), every=0.5, at_most=60)
    assert ended.group(2) == "0", ended.group(0)  # succeeded, 0 rankings stored

    # --- every query ranked, each ranking stored exactly once ----------------------------
    jobs = json.loads(c.manage("jobs", "--json"))
    (listed,) = [r for r in jobs["runs"] if r["id"] == run_id]
    assert (listed["state"], listed["done"]) == ("done", listed["total"]), listed
    assert [(p["name"], p["state"]) for p in jobs["pools"]] == [("users-d10", "done")]
    ((unranked, keys, stored, everything),) = c.sql(
        f"SELECT (SELECT count(*) FROM {queries} WHERE run_id = {run_id} "
        f"AND ranking_id IS NULL), "
        f"(SELECT count(DISTINCT key) FROM {queries} WHERE run_id = {run_id}), "
        f"(SELECT count(*) FROM {rankings} WHERE key IN "
        f"(SELECT key FROM {queries} WHERE run_id = {run_id})), "
        f"(SELECT count(*) FROM {rankings})")
    assert unranked == "0" and keys == stored == everything, (unranked, keys, stored,
                                                              everything)
    states = dict(c.sql(f"SELECT status, count(*) FROM {chunks} WHERE run_id = {run_id} "
                        f"GROUP BY status"))
    assert set(states) == {"done"}, states
    for host in ("worker1", "worker2"):
        ((status, attempts, error),) = c.sql(
            f"SELECT status, attempts, error FROM {chunks} WHERE id = {int(holding[host])}")
        assert status == "done" and int(attempts) >= 2, (host, status, attempts, error)
        # another host's process is never known dead here: its lease had to expire
        assert re.match(rf"attempt 1 lost: the lease of {host}:\d+ expired", error), error
    assert re.search(rf"run {run_id} chunk \d+: \d+ queries searched", logs.text("worker3"))

    # --- the pool equals one built in-process on the web host from the same rankings -----
    here = json.loads(c.manage("build_pool", "--topic-set", "cacm", "--sources", "users",
                               "--depth", "10", "--name", "users-d10-here", "--json"))
    sizes = {t: int(n) for t, n in c.sql(
        f"SELECT topic_id, size FROM {PoolTopic._meta.db_table} WHERE pool_id = "
        f"{int(pool['id'])}")}
    assert sizes == here["sizes"] and len(sizes) == len(topics)
    assert pool["documents_count"] == sum(sizes.values())
    print(f"many hosts: {run['total']} queries, {keys} rankings in "
          f"{sum(map(int, states.values()))} chunks, done {recovered:.0f} s after the cut and "
          f"the kill; pool {pool['documents_count']} documents; "
          f"{TIME_BUDGET - deadline.left():.0f} s in all")
