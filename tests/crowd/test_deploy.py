"""With DEBUG off: `check --deploy` is clean by default, HTTPS is enforced (behind a proxy
too), and static files (the admin's CSS) are served by gunicorn itself."""
import http.client
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = ROOT / ".venv" / "bin" / "gunicorn"


def _env(tmp_path, **overrides):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "HTTPS", "SECURE_COOKIES",
                        "SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER", "SECURE_HSTS_SECONDS",
                        "DJANGO_SETTINGS_MODULE"}}
    env.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), DATA_DIR=str(tmp_path),
               DJANGO_SETTINGS_MODULE="config.settings")
    env.update(overrides)
    return env


def test_check_deploy_is_clean_by_default(tmp_path):
    r = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                       cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout


def _settings(tmp_path, **overrides):
    code = ("import django; from django.conf import settings as s; django.setup(); "
            "print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path, **overrides),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_https_settings_from_the_environment(tmp_path):
    assert _settings(tmp_path) == "True True True 31536000 None"
    assert _settings(tmp_path, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https") == (
        "True True True 31536000 ('HTTP_X_FORWARDED_PROTO', 'https')")
    assert _settings(tmp_path, HTTPS="0") == "False False False 0 None"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": "127.0.0.1", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Location", ""), resp.read()
    finally:
        conn.close()


@pytest.fixture
def gunicorn(tmp_path):
    """Start gunicorn with DEBUG off on a loopback port; yields a function(**env) -> port."""
    if not GUNICORN.exists():
        pytest.skip("gunicorn is not installed in .venv")
    procs = []

    def start(**overrides):
        port = _free_port()
        proc = subprocess.Popen(
            [str(GUNICORN), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", "1", "--log-level", "warning"],
            cwd=ROOT, env=_env(tmp_path, ALLOWED_HOSTS="127.0.0.1", **overrides),
            start_new_session=True)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, "gunicorn exited"
            try:
                _get(port, "/static/admin/css/base.css")
                return port
            except OSError:
                time.sleep(0.2)
        pytest.fail("gunicorn did not answer within 30 s")

    yield start
    for proc in procs:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_gunicorn_serves_static_files_and_enforces_https(gunicorn):
    port = gunicorn(SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")
    # plain HTTP is sent to HTTPS; what the proxy marks as HTTPS is served, with HSTS
    status, location, _ = _get(port, "/static/admin/css/base.css")
    assert status == 301 and location.startswith("https://")
    status, _, body = _get(port, "/static/admin/css/base.css", {"X-Forwarded-Proto": "https"})
    assert status == 200 and len(body) > 1000
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/", headers={"Host": "127.0.0.1", "X-Forwarded-Proto": "https"})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status == 200
    assert "max-age=31536000" in resp.getheader("Strict-Transport-Security", "")


def test_gunicorn_serves_static_files_over_plain_http_when_asked(gunicorn):
    port = gunicorn(HTTPS="0")
    status, _, body = _get(port, "/static/admin/css/base.css")
    assert status == 200 and b"{" in body
