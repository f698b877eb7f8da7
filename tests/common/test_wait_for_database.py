"""`manage.py wait_for_database`, which the image runs before every command: it returns at
once on a database that answers, waits (bounded) and names the database when it does not,
and with --migrated also waits for `migrate`. Run as processes, as the image runs it."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path, *args, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    e.update(DEBUG="1", DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", **env)
    started = time.monotonic()
    r = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=e,
                       capture_output=True, text=True, timeout=300)
    return r, time.monotonic() - started


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when this returns: nothing listens there


def test_waits_then_names_a_database_that_never_answers(tmp_path):
    port = _closed_port()
    r, took = _run(tmp_path, "wait_for_database", "--timeout", "2",
                   DATABASE_URL=f"postgres://qv:secret-pw@127.0.0.1:{port}/ledger")
    assert r.returncode == 1
    assert f"database ledger (postgresql at 127.0.0.1:{port}) still not accepting connections" \
        in r.stderr
    assert "secret-pw" not in r.stderr
    assert 2 <= took < 60  # it tried for the whole timeout, and not much longer


def test_migrated_waits_for_migrate(tmp_path):
    r, _ = _run(tmp_path, "wait_for_database")  # an empty SQLite file answers at once
    assert r.returncode == 0, r.stderr
    r, _ = _run(tmp_path, "wait_for_database", "--migrated", "--timeout", "1")
    assert r.returncode == 1
    assert "migration(s) not applied yet (`manage.py migrate`)" in r.stderr
    assert _run(tmp_path, "migrate", "--noinput", "-v", "0")[0].returncode == 0
    r, _ = _run(tmp_path, "wait_for_database", "--migrated", "--timeout", "1", "-v", "2")
    assert r.returncode == 0, r.stderr
    assert "is up and migrated (after 1 tries)" in r.stdout
