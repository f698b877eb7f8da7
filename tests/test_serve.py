"""bin/serve, run for real on the embedded defaults (a SQLite file and the filesystem broker
in a temporary DATA_DIR), as a user starts it: no DEBUG, no SECRET_KEY.

- gunicorn serves with DEBUG off: another task's address is the plain 404 page, not the
  debug page listing every URL pattern; static files carry the pages' CSP;
- the smoke test (tests/smoke.py: a run, a pool, a judgment) passes against it;
- web, worker and beat are three processes: beat is restarted, with a message, when it
  dies, and TERM stops all three;
- the secret key is made once in DATA_DIR, readable by its owner only, and a second start
  reads it instead of making another: a session signed in before the restart still holds.
"""
import os
import re
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.smoke import Smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ORGANISER, ASSESSOR, PASSWORD = "org", "someone", "pw-serve-0123456789"


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


def _policy(header: str) -> set[str]:
    """A Content-Security-Policy as a set of directives (their order is not fixed)."""
    return {d.strip() for d in header.split(";") if d.strip()}


class Serve:
    """bin/serve in a process group of its own, its output in a log file."""

    def __init__(self, tmp_path: Path, env: dict, name: str):
        self.log = tmp_path / f"{name}.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([str(ROOT / "bin" / "serve")], cwd=ROOT, env=env,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.children: list[int] = []

    def started(self, port: int) -> tuple[int, int, int]:
        found = _wait_for(self.log, r"bin/serve: web \(pid (\d+)\), worker \(pid (\d+)\) and "
                                    r"beat \(pid (\d+)\) started", 300)
        web, worker, beat = (int(p) for p in found.groups())
        self.children += [web, worker, beat]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # gunicorn answers once its workers booted
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    return web, worker, beat
            except OSError:
                assert self.proc.poll() is None, self.log.read_text()[-4000:]
                time.sleep(0.3)
        pytest.fail("the web server did not answer:\n" + self.log.read_text()[-4000:])

    def stop(self, children) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 143
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not [p for p in children if _alive(p)], self.log.read_text()[-4000:]

    def kill(self) -> None:
        for pid in [self.proc.pid, *self.children]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


def test_serve_defaults_smoke_beat_restart_and_a_kept_secret(tmp_path):
    if not (ROOT / ".venv" / "bin" / "gunicorn").exists():
        pytest.skip("bin/serve needs .venv (run bin/setup)")
    data = tmp_path / "data"
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "SECRET_KEY",
                        "SECRET_KEY_CREATE", "HTTPS", "DJANGO_SETTINGS_MODULE")}
    env.update(DATA_DIR=str(data), PORT=str(port), JOB_RECONCILE_SECONDS="2",
               ADMIN_USER=ORGANISER, ADMIN_PASSWORD=PASSWORD)
    base = f"http://127.0.0.1:{port}/"

    serve = Serve(tmp_path, env, "serve")
    try:
        web, worker, beat = serve.started(port)
        assert "Listening at: http://127.0.0.1:" in serve.log.read_text()  # gunicorn
        key_file = data / "secret_key"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        key = key_file.read_text()

        organiser = Smoke(base, ORGANISER, PASSWORD, timeout=240)
        made = organiser.run()
        assert made["task"]["progress"]["total"]["done"] == 1

        # another account opens the organiser's task: the plain 404, no URL patterns
        subprocess.run(
            [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "shell", "-c",
             "from django.contrib.auth.models import User; "
             f"User.objects.create_user({ASSESSOR!r}, password={PASSWORD!r})"],
            cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
        assessor = Smoke(base, ASSESSOR, PASSWORD)
        assessor.sign_in()
        other = assessor.get(f"judging/tasks/{organiser.name}/")
        assert other.status == 404
        assert "No such judging task." in other.text
        for page in (other, assessor.get("no/such/page/")):
            assert page.status == 404
            assert "URLconf" not in page.text and "urlpatterns" not in page.text
            assert "DEBUG = True" not in page.text and "Traceback" not in page.text

        # static files (WhiteNoise) carry the pages' Content-Security-Policy
        home = assessor.get("")
        css = assessor.get("static/ui/site.css")
        assert home.status == css.status == 200
        policy = _policy(home.headers["Content-Security-Policy"])
        assert "script-src 'self'" in policy
        assert _policy(css.headers["Content-Security-Policy"]) == policy

        # beat is restarted when it dies; TERM stops everything
        _wait_for(serve.log, r"Sending due task jobs-reconcile", 60)  # beat sends on schedule
        os.kill(beat, signal.SIGKILL)
        _wait_for(serve.log, rf"celery beat \(pid {beat}\) exited with status 137; restarting it",
                  30)
        restarted = _wait_for(serve.log, r"bin/serve: celery beat restarted \(pid (\d+)\)", 30)
        new_beat = int(restarted.group(1))
        serve.children.append(new_beat)
        assert new_beat != beat and _alive(new_beat) and _alive(web) and _alive(worker)
        serve.stop([web, worker, new_beat])
    finally:
        serve.kill()

    # a second start reads the key it made: nothing regenerated, sessions still hold
    again = Serve(tmp_path, env, "serve-again")
    try:
        children = again.started(port)
        assert key_file.read_text() == key
        assert [p.name for p in data.iterdir() if "secret_key" in p.name] == ["secret_key"]
        still = assessor.get("judging/")
        assert still.status == 200 and ASSESSOR in still.text, still.text[:2000]
        again.stop(list(children))
    finally:
        again.kill()
