"""Static files carry the Content-Security-Policy the pages carry: WhiteNoise answers a
static file before the CSP middleware runs, so common.static_headers adds it, under
gunicorn (DEBUG off) and under the development server (DEBUG=1 bin/serve) alike."""
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STATIC = ("/static/ui/site.css", "/static/ui/tables.js", "/static/admin/css/base.css")


def _policy(header) -> set[str]:
    assert header, "no Content-Security-Policy header"
    return {d.strip() for d in header.split(";") if d.strip()}


@pytest.mark.django_db
def test_static_files_carry_the_pages_policy(client):
    page = client.get("/")
    assert page.status_code == 200
    policy = _policy(page["Content-Security-Policy"])
    assert {"script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} <= policy
    for path in STATIC:
        response = client.get(path)
        assert response.status_code == 200, path
        assert _policy(response["Content-Security-Policy"]) == policy, path
        assert response["X-Content-Type-Options"] == "nosniff"
        response.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status, resp.getheader("Content-Security-Policy")
    finally:
        conn.close()


@pytest.mark.slow
def test_the_development_server_serves_static_files_with_the_policy(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DEBUG="1", DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload",
                             f"127.0.0.1:{port}"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            try:
                status, page_policy = _get(port, "/")
                break
            except OSError:
                assert time.monotonic() < deadline, "runserver did not answer within 120 s"
                time.sleep(0.3)
        assert status == 200
        for path in STATIC:
            status, policy = _get(port, path)
            assert status == 200, path
            assert _policy(policy) == _policy(page_policy), path
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
