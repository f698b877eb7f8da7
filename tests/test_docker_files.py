"""The Docker files read and validated without an engine (`docker-compose config`); the
image is built and run for real with podman in tests/test_image.py."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_has_web_worker_redis_postgres_sharing_indexes():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    services = compose["services"]
    assert {"web", "worker", "redis", "postgres"} <= set(services)
    for name in ("web", "worker"):
        svc = services[name]
        env = svc["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:")
        assert "data:/data" in svc["volumes"], "web and worker must share the index volume"
        assert (ROOT / svc["build"]["context"].replace("..", ".") / svc["build"]["dockerfile"]).exists()
    assert "celery -A config worker" in services["worker"]["command"]


def test_compose_runs_beat_a_retrieval_queue_and_a_persistent_redis():
    services = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())["services"]
    retrieval = services["retrieval-worker"]
    assert "-Q retrieval" in retrieval["command"]
    assert retrieval["environment"]["CELERY_RETRIEVAL_QUEUE"] == "retrieval"
    assert "-Q celery" in services["worker"]["command"], "the reconciler runs on the default queue"
    assert "celery -A config beat" in services["beat"]["command"]
    # beat's death is seen: restarted when it exits, unhealthy when its reconciler is late
    assert services["beat"]["restart"] == "unless-stopped"
    assert services["beat"]["healthcheck"]["test"][-3:] == ["manage.py", "jobs", "--check-beat"]
    assert "--appendonly yes" in services["redis"]["command"]
    assert any(v.endswith(":/data") for v in services["redis"]["volumes"])


def test_dockerignore_keeps_local_state_out_of_the_image():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "var/"} <= ignored


@pytest.mark.skipif(shutil.which("docker-compose") is None,
                    reason="docker-compose is not installed (apt-get install docker-compose)")
@pytest.mark.parametrize("files", [["compose.yml"], ["compose.yml", "compose.debian.yml"]])
def test_compose_file_validates(files):
    args = [a for f in files for a in ("-f", str(ROOT / "docker" / f))]
    r = subprocess.run(["docker-compose", *args, "config", "-q"],
                       capture_output=True, text=True, env={**os.environ, "SECRET_KEY": "x"},
                       timeout=60)
    assert r.returncode == 0, r.stderr


def test_the_image_takes_its_base_as_an_argument_and_runs_unprivileged():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim-bookworm\nFROM ${BASE}" in text
    users = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert users == ["10001:10001"]  # numeric, so a runtime can tell it is not root
    app = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())["x-app"]
    assert app["build"]["args"]["BASE"] == "${BASE_IMAGE:-python:3.11-slim-bookworm}"
    web = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())["services"]["web"]
    assert web["ports"] == ["${WEB_ADDRESS:-127.0.0.1}:${WEB_PORT:-8000}:8000"]  # loopback


def test_redis_and_postgres_can_be_built_on_the_same_base():
    services = yaml.safe_load((ROOT / "docker" / "compose.debian.yml").read_text())["services"]
    assert set(services) == {"redis", "postgres"}
    for name, svc in services.items():
        assert (ROOT / "docker" / svc["build"]["context"] / "Dockerfile").exists(), name
        assert svc["build"]["args"]["BASE"] == "${BASE_IMAGE:-python:3.11-slim-bookworm}"


def test_dockerfile_installs_pyserini_without_neural_dependencies():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert "--no-deps -r requirements-nodeps.txt" in text
    assert "-r requirements.txt" in text
