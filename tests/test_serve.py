"""bin/serve runs web, worker and celery beat as three processes: beat is restarted, with a
message, when it dies, and TERM stops all three. Runs the script for real on the embedded
defaults (a SQLite file and the filesystem broker in a temporary DATA_DIR)."""
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, pattern: str, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        time.sleep(0.3)
    pytest.fail(f"{pattern!r} not in bin/serve's output after {timeout} s:\n"
                + log.read_text(errors="replace")[-4000:])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", "rb") as f:  # a zombie is not alive
        return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"


def test_serve_restarts_beat_and_stops_everything_on_term(tmp_path):
    if not (ROOT / ".venv" / "bin" / "celery").exists():
        pytest.skip("bin/serve needs .venv (run bin/setup)")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(DATA_DIR=str(tmp_path / "data"), PORT=str(_free_port()), DEBUG="1",
               JOB_RECONCILE_SECONDS="2")
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        serve = subprocess.Popen([str(ROOT / "bin" / "serve")], cwd=ROOT, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    children: list[int] = []  # each in a process group of its own
    try:
        started = _wait_for(log, r"bin/serve: web \(pid (\d+)\), worker \(pid (\d+)\) and "
                                 r"beat \(pid (\d+)\) started", 180)
        web, worker, beat = (int(p) for p in started.groups())
        children += [web, worker, beat]
        _wait_for(log, r"Sending due task jobs-reconcile", 60)  # beat sends on schedule
        os.kill(beat, signal.SIGKILL)
        _wait_for(log, rf"celery beat \(pid {beat}\) exited with status 137; restarting it", 30)
        restarted = _wait_for(log, r"bin/serve: celery beat restarted \(pid (\d+)\)", 30)
        new_beat = int(restarted.group(1))
        children.append(new_beat)
        assert new_beat != beat and _alive(new_beat) and _alive(web) and _alive(worker)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 143
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in (web, worker, new_beat)) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not [p for p in (web, worker, new_beat) if _alive(p)], log.read_text()[-4000:]
    finally:
        for pid in [serve.pid, *children]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        serve.wait()
