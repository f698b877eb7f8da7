"""No Docker engine runs here, so the Docker files are checked by reading them."""
from pathlib import Path

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


def test_dockerfile_installs_pyserini_without_neural_dependencies():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert "--no-deps -r requirements-nodeps.txt" in text
    assert "-r requirements.txt" in text
