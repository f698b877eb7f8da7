"""The image built and run for real: docker/compose.yml with compose.debian.yml under
podman-compose (web, a worker, a retrieval worker, beat, Redis and PostgreSQL, the last two
from Debian's packages on the same local base), and the smoke test of bin/serve
(tests/smoke.py: a run, a pool, a judgment) against its web server; every process of the
app runs as the image's unprivileged user, with DEBUG off.

Downloading is an install step, not a test's: `docker/build-local` makes the base and the
images (`.ci/run` runs it). This test rebuilds them from the current code with no network
(`docker/build-local --offline`: only the code's layers change), and skips, saying which
command to run, where podman or the images are absent.
"""
import os
import secrets
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.smoke import Smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PODMAN = str(ROOT / "docker" / "podman")
APP_SERVICES = ("web", "worker", "retrieval-worker", "beat")
ORGANISER, PASSWORD = "org", "pw-image-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args, env, timeout, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited with {r.returncode}:\n"
                    f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


class Stack:
    """One compose project, named for this run, removed with its volumes at the end."""

    def __init__(self, env: dict):
        self.env = env
        self.project = "qvtest" + uuid.uuid4().hex[:8]
        self.compose = ["podman-compose", "--podman-path", PODMAN, "-p", self.project,
                        "-f", "docker/compose.yml", "-f", "docker/compose.debian.yml"]

    def up(self) -> None:
        _run([*self.compose, "up", "-d", "--no-build"], self.env, timeout=600)

    def container(self, service: str) -> str:
        r = _run([PODMAN, "ps", "-a", "--format", "{{.Names}}",
                  "--filter", f"label=com.docker.compose.project={self.project}",
                  "--filter", f"label=com.docker.compose.service={service}"], self.env, 60)
        names = r.stdout.split()
        assert len(names) == 1, f"{service}: containers {names}"
        return names[0]

    def podman(self, *args, timeout=120, check=True) -> subprocess.CompletedProcess:
        return _run([PODMAN, *args], self.env, timeout=timeout, check=check)

    def logs(self) -> str:
        out = []
        for service in (*APP_SERVICES, "redis", "postgres"):
            try:
                name = self.container(service)
            except (AssertionError, pytest.fail.Exception):
                continue
            r = self.podman("logs", "--tail", "40", name, check=False)
            out.append(f"--- {service}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        return "\n".join(out)

    def down(self) -> None:
        _run([*self.compose, "down", "-v"], self.env, timeout=600, check=False)
        self.podman("network", "rm", "-f", f"{self.project}_default", check=False)


@pytest.fixture(scope="module")
def stack():
    missing = [p for p in ("podman", "podman-compose") if shutil.which(p) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (apt-get install -y podman runc "
                    "mmdebstrap podman-compose; then docker/build-local)")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG")}
    rebuilt = _run([str(ROOT / "docker" / "build-local"), "--offline"], env, 1800, check=False)
    if rebuilt.returncode == 3:
        pytest.skip(rebuilt.stderr.strip())
    if rebuilt.returncode != 0:
        pytest.fail(f"docker/build-local --offline failed:\n{rebuilt.stderr[-5000:]}")
    port = _free_port()
    env.update(SECRET_KEY=secrets.token_urlsafe(50), HTTPS="0", WEB_PORT=str(port),
               ALLOWED_HOSTS="127.0.0.1,localhost")
    s = Stack(env)
    s.base = f"http://127.0.0.1:{port}/"
    try:
        s.up()
        deadline = time.monotonic() + 600  # migrations first: minutes on a loaded machine
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    pass
                page = Smoke(s.base, "", "").get("accounts/login/")
                if page.status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the web container did not answer within 600 s:\n" + s.logs())
            time.sleep(1)
        s.podman("exec", "-e", f"DJANGO_SUPERUSER_PASSWORD={PASSWORD}", s.container("web"),
                 "python", "manage.py", "createsuperuser", "--noinput",
                 "--username", ORGANISER, "--email", "org@example.org")
        yield s
    finally:
        s.down()


def test_smoke_passes_against_the_compose_stack(stack):
    smoke = Smoke(stack.base, ORGANISER, PASSWORD, timeout=300)
    try:
        made = smoke.run()
    except AssertionError as exc:
        pytest.fail(f"{exc}\n{chr(10).join(smoke.log)}\n{stack.logs()}")
    assert made["run"]["status"] == made["pool"]["status"] == "done"
    assert made["task"]["progress"]["total"]["done"] == 1
    # DEBUG is off in the image: the plain 404, never the list of URL patterns
    missing = smoke.get("no/such/page/")
    assert missing.status == 404 and "URLconf" not in missing.text


def test_the_app_runs_as_an_unprivileged_user(stack):
    image = stack.env.get("QV_IMAGE", "localhost/qv:latest")
    user = stack.podman("image", "inspect", "--format", "{{.Config.User}}", image).stdout.strip()
    assert user == "10001:10001"
    for service in APP_SERVICES:
        name = stack.container(service)
        assert stack.podman("exec", name, "id", "-u").stdout.strip() == "10001", service
        # every process of the container, not only what `exec` starts
        users = stack.podman("top", name, "user").stdout.split()[1:]
        assert users and set(users) == {"qv"}, (service, users)
    # it may write its data volume and its home, not the code or the virtualenv
    web = stack.container("web")
    probe = ("for d in /data /home/qv /app /opt/venv; do "
             "touch $d/.w 2>/dev/null && echo $d=yes && rm $d/.w || echo $d=no; done")
    assert stack.podman("exec", web, "sh", "-c", probe).stdout.split() == [
        "/data=yes", "/home/qv=yes", "/app=no", "/opt/venv=no"]
