"""Settings come from the environment; production refuses to start without a secret."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _settings(env_overrides):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "SECRET_KEY", "SECRET_KEY_CREATE", "DATABASE_URL"}}
    env.update(env_overrides)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return subprocess.run(
        [sys.executable, "-c",
         "import django; from django.conf import settings; django.setup();"
         "print(settings.DATABASES['default']['ENGINE']); print(settings.CELERY_BROKER_URL)"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )


def test_secret_key_required_without_debug(tmp_path):
    r = _settings({"DEBUG": "0", "DATA_DIR": str(tmp_path)})  # no secret_key file there
    assert r.returncode != 0
    assert "SECRET_KEY must be set" in r.stderr


def test_embedded_defaults_are_sqlite_and_filesystem_broker(tmp_path):
    r = _settings({"DEBUG": "1", "DATA_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    engine, broker = r.stdout.split()
    assert engine == "django.db.backends.sqlite3"
    assert broker == "filesystem://localhost/"  # a host keeps kombu from warning


def test_database_and_broker_from_environment(tmp_path):
    r = _settings({
        "SECRET_KEY": "s3cret", "DEBUG": "0", "DATA_DIR": str(tmp_path),
        "DATABASE_URL": "postgres://u@127.0.0.1:5432/x",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/3",
    })
    assert r.returncode == 0, r.stderr
    engine, broker = r.stdout.split()
    assert engine == "django.db.backends.postgresql"
    assert broker == "redis://127.0.0.1:6379/3"
