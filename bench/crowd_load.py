"""Load bench for crowd collection: many workers arriving from Prolific links at once.

Starts the service under gunicorn on 127.0.0.1 against a scratch PostgreSQL database,
lets N simulated workers (threads, one cookie jar each) arrive with a Prolific link,
consent, and answer every item they are given, with some double submits, then checks the
database against what the clients saw:

- lost answers: an answer the server acknowledged (303/302 onwards) with no stored row;
- duplicated answers: more than one stored answer or variant for one worker and item;
- quota: answers per statement above ``responses_per_statement`` (assignment is serialised,
  so the only allowance is answers in flight, which here is zero);
- latency of the answer POST (p50/p95/p99, first submissions and repeats separately);
- CPU per answer, read from /proc: the gunicorn workers, the PostgreSQL backends of the
  scratch database and this client, with the answer rate those CPU costs allow on this
  machine's cores (``cpu_bound_answers_per_second``). Other load on the machine slows
  the wall-clock rate and latencies but hardly the CPU per answer, so compare versions
  by CPU per answer when the machine is shared.

Run from the repository root (PostgreSQL on 127.0.0.1:5432, Redis on 127.0.0.1:6379):

    .venv/bin/python bench/crowd_load.py --workers 200 --json bench/out/crowd.json

Everything targets 127.0.0.1; every loop is bounded in count and the run in time.
The scratch database (default ``qv_bench``) is dropped and recreated on each run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
STATEMENT_RE = re.compile(r'<section id="statement"><p>(.*?)</p></section>', re.S)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=200, help="simulated crowd workers")
    p.add_argument("--concurrency", type=int, default=0,
                   help="workers taking part at once (0: all of them at once); each thread "
                        "takes the next worker when its last one finished")
    p.add_argument("--statements", type=int, default=100, help="statements (one per topic)")
    p.add_argument("--responses", type=int, default=8, help="answers wanted per statement")
    p.add_argument("--per-worker", type=int, default=5, help="statements per worker")
    p.add_argument("--gunicorn-workers", type=int, default=3,
                   help="as bin/serve and the Docker image run it")
    p.add_argument("--gunicorn-threads", type=int, default=1, help=">1 uses the gthread worker")
    p.add_argument("--worker-class", choices=("sync", "gthread"), default=None,
                   help="gunicorn worker class (default: sync, or gthread with --gunicorn-threads > 1)")
    p.add_argument("--keep-alive", action=argparse.BooleanOptionalAction, default=True,
                   help="each simulated browser keeps its connection open between requests, as "
                        "browsers do (gunicorn's sync worker still closes it after each response)")
    p.add_argument("--port", type=int, default=18765)
    p.add_argument("--database", default="qv_bench")
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432",
                   help="PostgreSQL server (loopback only)")
    p.add_argument("--database-options", default="",
                   help="query string added to DATABASE_URL (e.g. prepare_threshold=5)")
    p.add_argument("--broker", default="redis://127.0.0.1:6379/13")
    p.add_argument("--think-ms", type=float, nargs=2, default=[0, 0], metavar=("MIN", "MAX"),
                   help="pause between reading an item and answering it")
    p.add_argument("--double-submit", type=float, default=0.2,
                   help="share of answers posted twice in a row")
    p.add_argument("--time-limit", type=float, default=600, help="seconds for the whole run")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--access-log", type=Path,
                   help="gunicorn access log with the server-side time per request (ms)")
    return p.parse_args(argv)


# --- a tiny HTTP client with a cookie jar ------------------------------------------------


class Browser:
    """A lean HTTP/1.1 client over a plain socket (one cookie jar): the load generator shares
    the server's cores, so it spends as little CPU per request as it can (http.client parses
    every response's headers with the email package).

    ``keep_alive``: one connection for all of the browser's requests while the server keeps
    it open (as browsers do), else a new connection per request."""

    def __init__(self, port: int, timeout: float, keep_alive: bool = False):
        self.port = port
        self.timeout = timeout
        self.keep_alive = keep_alive
        self.sock: socket.socket | None = None
        self.cookies: dict[str, str] = {}
        self._host = f"Host: {HOST}:{port}\r\n".encode()

    def _connect(self) -> socket.socket:
        s = socket.create_connection((HOST, self.port), timeout=self.timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _exchange(self, sock: socket.socket, request: bytes):
        """Send ``request``; (status, headers, body, server keeps the connection)."""
        sock.sendall(request)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed before the response")
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]
        fields = {k.lower(): v for k, v in headers}
        close = fields.get("connection", "").lower() == "close"
        if "content-length" in fields:
            need = int(fields["content-length"])
            while len(body) < need:
                chunk = sock.recv(max(65536, need - len(body)))
                if not chunk:
                    raise ConnectionError("connection closed inside the response body")
                body += chunk
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            raise RuntimeError("chunked responses are not read by this client")
        else:  # the body runs to the end of the connection
            close = True
            while chunk := sock.recv(65536):
                body += chunk
        return status, headers, body, not close

    def request(self, method: str, path: str, form: dict | None = None):
        lines = [f"{method} {path} HTTP/1.1\r\n".encode(), self._host]
        if not self.keep_alive:
            lines.append(b"Connection: close\r\n")
        if self.cookies:
            lines.append(("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items())
                          + "\r\n").encode())
        body = b""
        if form is not None:
            body = urlencode(form).encode()
            lines.append(b"Content-Type: application/x-www-form-urlencoded\r\n")
        if form is not None or method == "POST":
            lines.append(f"Content-Length: {len(body)}\r\n".encode())
        request = b"".join(lines) + b"\r\n" + body
        reused = self.sock is not None
        sock, self.sock = self.sock or self._connect(), None
        try:
            t0 = time.perf_counter()
            try:
                status, headers, data, keep = self._exchange(sock, request)
            except ConnectionError:
                if not reused:
                    raise
                # the server closed the idle kept-alive connection before reading this
                # request (as browsers do: sent again on a new connection)
                sock.close()
                sock = self._connect()
                t0 = time.perf_counter()
                status, headers, data, keep = self._exchange(sock, request)
            elapsed = time.perf_counter() - t0
            if self.keep_alive and keep:
                sock, self.sock = None, sock
        finally:
            if sock is not None:
                sock.close()
        location = ""
        for name, value in headers:
            name = name.lower()
            if name == "set-cookie":
                k, _, rest = value.partition("=")
                self.cookies[k.strip()] = rest.split(";", 1)[0]
            elif name == "location":
                location = value
        return status, location, data.decode("utf-8", "replace"), elapsed

    def follow(self, path: str, limit: int = 6):
        """GET and follow redirects (bounded); returns (final path, status, body)."""
        for _ in range(limit):
            status, location, body, _ = self.request("GET", path)
            if status in (301, 302, 303) and location:
                path = location
                continue
            return path, status, body
        raise RuntimeError(f"too many redirects from {path}")


# --- the simulated worker ------------------------------------------------------------------


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.submit_ms: list[float] = []
        self.submit_at: list[float] = []  # monotonic start of each first submission
        self.last_consent = 0.0
        self.repeat_ms: list[float] = []
        self.acked: set[tuple[str, int]] = set()
        self.repeats = 0
        self.outcomes: Counter = Counter()
        self.errors: list[str] = []


def simulate_worker(i: int, slug: str, code: str, port: int, args, results: Results, deadline: float):
    rng = random.Random(i)
    pid = f"bench{i:05d}{secrets.token_hex(4)}"
    b = Browser(port, timeout=max(5.0, deadline - time.monotonic()), keep_alive=args.keep_alive)
    try:
        q = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": "bench", "SESSION_ID": f"s{i}"})
        path, status, body = b.follow(f"/crowd/s/{slug}/?{q}")
        if not path.endswith("/consent/") or status != 200:
            raise RuntimeError(f"arrival ended at {path} ({status})")
        token = CSRF_RE.search(body).group(1)
        status, location, _, _ = b.request("POST", path, {"agree": "on", "csrfmiddlewaretoken": token})
        if status != 302:
            raise RuntimeError(f"consent answered {status}")
        with results.lock:
            results.last_consent = max(results.last_consent, time.monotonic())
        path, status, body = b.follow(location)
        for _ in range(args.per_worker + 5):  # bounded: items per worker plus checks
            if time.monotonic() > deadline:
                raise RuntimeError("time limit")
            if "/q/" not in path:
                break
            position = int(path.rstrip("/").rsplit("/", 1)[1])
            token = CSRF_RE.search(body).group(1)
            statement = STATEMENT_RE.search(body).group(1)
            answer = "purple" if "purple" in statement else f"{pid} query {position} {rng.random():.6f}"
            if args.think_ms[1] > 0:
                time.sleep(rng.uniform(*args.think_ms) / 1000)
            form = {"query": answer, "csrfmiddlewaretoken": token}
            sent = time.monotonic()
            status, location, _, elapsed = b.request("POST", path, form)
            if status != 302:
                raise RuntimeError(f"answer POST answered {status}")
            with results.lock:
                results.submit_ms.append(elapsed * 1000)
                results.submit_at.append(sent)
                results.acked.add((pid, position))
            if rng.random() < args.double_submit:
                status2, location2, _, elapsed2 = b.request("POST", path, form)
                with results.lock:
                    results.repeat_ms.append(elapsed2 * 1000)
                    results.repeats += 1
                if status2 != 302 or location2 != location:
                    raise RuntimeError(f"repeat POST answered {status2} -> {location2}")
            path, status, body = b.follow(location)
        if path.endswith("/done/"):
            if code in body:
                outcome = "completed"
            elif "nothing left to do" in body:
                outcome = "full"
            else:
                outcome = "failed"
        else:
            outcome = f"stuck at {path}"
        with results.lock:
            results.outcomes[outcome] += 1
    except Exception as e:  # counted and reported; the run goes on
        with results.lock:
            results.errors.append(f"{pid}: {type(e).__name__}: {e}")
            results.outcomes["error"] += 1
    finally:
        b.close()


# --- set-up, run, verification -------------------------------------------------------------


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100 * (len(s) - 1))))
    return round(s[k], 1)


def recreate_database(pg: str, name: str):
    import psycopg

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise SystemExit("--database must be a plain lower-case identifier")
    with psycopg.connect(f"{pg}/postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")


# --- CPU accounting from /proc (Linux): what the server, database and client spent --------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of one process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def cpu_snapshot(gunicorn_pid: int, database: str) -> dict[str, dict[int, float]]:
    """CPU seconds so far of the gunicorn workers and of the PostgreSQL backends serving
    ``database`` (the server runs on this machine; read as root or the same user)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                       [database])
        backends = [pid for (pid,) in cursor.fetchall()]
    snap = {"server": {}, "database": {}}
    for kind, pids in (("server", _children(gunicorn_pid)), ("database", backends)):
        for pid in pids:
            cpu = _proc_cpu(pid)
            if cpu is not None:
                snap[kind][pid] = cpu
    return snap


def cpu_used(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds spent between two snapshots, per kind (processes new since ``before``
    count from zero)."""
    return {kind: round(sum(cpu - before[kind].get(pid, 0.0) for pid, cpu in after[kind].items()), 3)
            for kind in after}


def wait_ready(port: int, proc, limit_s: float = 30):
    t_end = time.monotonic() + limit_s
    while time.monotonic() < t_end:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited with {proc.returncode}")
        try:
            status, *_ = Browser(port, 2).request("GET", "/crowd/s/not-a-study/")
            if status == 404:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not answer in time")


def wait_settled(gunicorn_pid: int, workers: int, limit_s: float = 60):
    """Wait until every gunicorn worker has booted and gone idle, so that no worker's
    start-up CPU is counted as the cost of answers."""
    t_end = time.monotonic() + limit_s
    last = None
    while time.monotonic() < t_end:
        pids = _children(gunicorn_pid)
        cpu = sum(_proc_cpu(pid) or 0.0 for pid in pids)
        if len(pids) >= workers and last is not None and cpu - last < 0.02:
            return
        last = cpu
        time.sleep(0.5)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.pg.startswith("postgres://postgres@127.0.0.1:"):
        raise SystemExit("the bench only targets PostgreSQL on 127.0.0.1")
    started = time.monotonic()
    deadline = started + args.time_limit
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"{args.pg}/{args.database}" + (f"?{args.database_options}" if args.database_options else ""),
        CELERY_BROKER_URL=args.broker,
        DEBUG="0", HTTPS="0", SECRET_KEY=secrets.token_urlsafe(32), ALLOWED_HOSTS=HOST,
        LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    os.environ.update(env)
    recreate_database(args.pg, args.database)
    py = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)

    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from crowd.models import Response
    from crowd.services import study_create
    from topics.models import QueryVariant, Statement, Topic, TopicSet

    ts = TopicSet.objects.create(name="bench")
    topics = Topic.objects.bulk_create(
        [Topic(topic_set=ts, topic_id=f"BENCH.{i:03d}", title=f"bench topic {i}")
         for i in range(1, args.statements + 1)]
    )
    Statement.objects.bulk_create(
        [Statement(topic=t, position=0, text=f"You need to find out about bench subject number {i} "
                   "for a report you are writing at work.") for i, t in enumerate(topics, 1)]
    )
    study = study_create(
        topic_set=ts, name="bench", consent_text="Bench consent.", completion_code="BENCH-DONE",
        attention_checks=[("Ignore the description and type the word purple.", "purple")],
        responses_per_statement=args.responses, statements_per_worker=args.per_worker,
        min_seconds_per_answer=0,
    )

    gunicorn = [str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi:application",
                "--bind", f"{HOST}:{args.port}", "--workers", str(args.gunicorn_workers),
                "--backlog", "2048", "--timeout", "60", "--log-level", "warning"]
    if args.access_log:
        gunicorn += ["--access-logfile", str(args.access_log),
                     "--access-logformat", "%(m)s %(U)s %(s)s %(M)s"]
    worker_class = args.worker_class or ("gthread" if args.gunicorn_threads > 1 else "sync")
    gunicorn += ["--worker-class", worker_class]
    if worker_class == "gthread":
        gunicorn += ["--threads", str(args.gunicorn_threads)]
    proc = subprocess.Popen(gunicorn, cwd=ROOT, env=env, start_new_session=True)
    results = Results()
    try:
        wait_ready(args.port, proc)
        wait_settled(proc.pid, args.gunicorn_workers)
        cpu_before = cpu_snapshot(proc.pid, args.database)
        client_cpu0 = time.process_time()
        t0 = time.monotonic()
        # one thread per worker, all at once; or --concurrency threads, each taking the next
        # worker as soon as its last one finished (a steady stream of arrivals)
        pending = list(range(args.workers))
        pending_lock = threading.Lock()

        def stream():
            while time.monotonic() < deadline:
                with pending_lock:
                    if not pending:
                        return
                    i = pending.pop(0)
                simulate_worker(i, study.slug, study.completion_code, args.port, args, results, deadline)

        if args.concurrency:
            threads = [threading.Thread(target=stream, daemon=True) for _ in range(args.concurrency)]
        else:
            threads = [
                threading.Thread(target=simulate_worker, daemon=True,
                                 args=(i, study.slug, study.completion_code, args.port, args, results, deadline))
                for i in range(args.workers)
            ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        wall = time.monotonic() - t0
        alive = sum(t.is_alive() for t in threads)
        client_cpu = time.process_time() - client_cpu0
        cpu = cpu_used(cpu_before, cpu_snapshot(proc.pid, args.database))
        cpu["client"] = round(client_cpu, 3)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)

    # --- verify against the database ---
    stored = Counter(
        Response.objects.filter(assignment__participant__study=study)
        .values_list("assignment__participant__worker_id", "assignment__position")
    )
    stored_keys = set(stored)
    with results.lock:
        acked = set(results.acked)
    lost = acked - stored_keys
    unacked_stored = stored_keys - acked  # stored but the client saw no acknowledgement
    duplicated = sum(n - 1 for n in stored.values() if n > 1)
    variants = QueryVariant.objects.filter(source="crowd", worker_id__startswith="bench")
    dup_variants = sum(n - 1 for n in Counter(variants.values_list("variant_id", flat=True)).values() if n > 1)
    per_statement = Counter(
        Response.objects.filter(assignment__participant__study=study, assignment__item__kind="statement")
        .values_list("assignment__item_id", flat=True)
    )
    over_quota = max([n - args.responses for n in per_statement.values()] + [0])
    out = {
        "workers": args.workers,
        "concurrency": args.concurrency or args.workers,
        "gunicorn_workers": args.gunicorn_workers,
        "gunicorn_threads": args.gunicorn_threads,
        "worker_class": args.worker_class or ("gthread" if args.gunicorn_threads > 1 else "sync"),
        "keep_alive": args.keep_alive,
        "think_ms": args.think_ms,
        "wall_seconds": round(wall, 2),
        "threads_unfinished": alive,
        "outcomes": dict(results.outcomes),
        "errors": results.errors[:10],
        "n_errors": len(results.errors),
        "answers_acknowledged": len(acked),
        "answers_stored": sum(stored.values()),
        "variants_stored": variants.count(),
        "lost": len(lost),
        "stored_without_ack": len(unacked_stored),
        "duplicated_answers": duplicated,
        "duplicated_variants": dup_variants,
        "repeat_posts": results.repeats,
        "statements_answered": len(per_statement),
        "slots": args.statements * args.responses,
        "max_answers_over_quota": over_quota,
        "submit_ms": {"n": len(results.submit_ms), "p50": pct(results.submit_ms, 50),
                      "p95": pct(results.submit_ms, 95), "p99": pct(results.submit_ms, 99),
                      "max": pct(results.submit_ms, 100),
                      "mean": round(statistics.fmean(results.submit_ms), 1) if results.submit_ms else None},
        # after the arrival burst: submissions sent once every worker had consented
        "submit_ms_after_arrivals": (lambda v: {"n": len(v), "p50": pct(v, 50), "p95": pct(v, 95)})(
            [ms for ms, at in zip(results.submit_ms, results.submit_at) if at > results.last_consent]),
        "arrival_burst_seconds": round(results.last_consent - t0, 2) if results.last_consent else None,
        "repeat_ms": {"n": len(results.repeat_ms), "p50": pct(results.repeat_ms, 50),
                      "p95": pct(results.repeat_ms, 95)},
        "submits_per_second": round(len(results.submit_ms) / wall, 1) if wall else None,
        # CPU of the whole run (arrivals, consents, answers, repeats, pages) per answer
        # acknowledged, from /proc: gunicorn workers, PostgreSQL backends, this client.
        # 1000 * cores / total is the answer rate these cores could sustain if nothing
        # else ran on them (other load on the machine slows the wall-clock numbers above).
        "cpu_seconds": cpu,
        "cpu_ms_per_answer": {k: round(1000 * v / max(1, len(acked)), 2) for k, v in cpu.items()},
        "cpu_ms_per_answer_total": round(1000 * sum(cpu.values()) / max(1, len(acked)), 2),
        "cores": os.cpu_count(),
        "cpu_bound_answers_per_second": round(
            1000 * (os.cpu_count() or 1) / (1000 * sum(cpu.values()) / max(1, len(acked))), 1)
        if acked and sum(cpu.values()) else None,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    ok = (not lost and not duplicated and not dup_variants and over_quota == 0
          and not results.errors and alive == 0)
    print("OK" if ok else "PROBLEMS FOUND", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
