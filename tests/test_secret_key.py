"""The secret key kept in DATA_DIR: made once (by the first of several processes starting
at once), read ever after, readable by its owner only; a damaged file is an error naming
it; without SECRET_KEY_CREATE nothing is written and DEBUG off still refuses to start."""
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from config.secret_key import MIN_LENGTH, secret_key_load

ROOT = Path(__file__).resolve().parent.parent


def test_made_once_and_read_after(tmp_path):
    path = tmp_path / "data" / "secret_key"
    assert secret_key_load(path, create=False) == ""
    assert not path.exists()
    key = secret_key_load(path, create=True)
    assert len(key) >= MIN_LENGTH
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_key_load(path, create=True) == key
    assert secret_key_load(path, create=False) == key
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temporary left


def test_processes_starting_at_once_agree(tmp_path):
    path = tmp_path / "secret_key"
    code = ("import sys; from pathlib import Path; from config.secret_key import secret_key_load;"
            "print(secret_key_load(Path(sys.argv[1]), create=True))")

    def start(_):
        return subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120).stdout.strip()

    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(start, range(8)))
    assert keys == {path.read_text().strip()}
    assert len(path.read_text().strip()) >= MIN_LENGTH


def test_a_damaged_file_is_named(tmp_path):
    path = tmp_path / "secret_key"
    path.write_text("short\n")
    with pytest.raises(ValueError, match=f"{path}: not a usable secret key"):
        secret_key_load(path, create=True)
    assert path.read_text() == "short\n"  # never replaced behind the user's back


def _settings_key(env_overrides):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "SECRET_KEY", "SECRET_KEY_CREATE", "DATABASE_URL",
                        "DJANGO_SETTINGS_MODULE"}}
    env.update(env_overrides, DJANGO_SETTINGS_MODULE="config.settings")
    return subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.SECRET_KEY)"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_settings_create_read_and_refuse(tmp_path):
    data = tmp_path / "data"
    refused = _settings_key({"DEBUG": "0", "DATA_DIR": str(data)})
    assert refused.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in refused.stderr
    assert f"SECRET_KEY_CREATE=1 to keep one in {data / 'secret_key'}" in refused.stderr
    assert not (data / "secret_key").exists()

    made = _settings_key({"DEBUG": "0", "DATA_DIR": str(data), "SECRET_KEY_CREATE": "1"})
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key == (data / "secret_key").read_text().strip()
    # later processes, DEBUG on or off, asked to create or not, read the same key
    for env in ({"DEBUG": "0"}, {"DEBUG": "1"}, {"DEBUG": "0", "SECRET_KEY_CREATE": "1"}):
        again = _settings_key({"DATA_DIR": str(data), **env})
        assert (again.returncode, again.stdout.strip()) == (0, key), again.stderr
    # the environment's key wins over the file
    given = _settings_key({"DEBUG": "0", "DATA_DIR": str(data), "SECRET_KEY": "k" * 60})
    assert given.stdout.strip() == "k" * 60

    (data / "secret_key").write_text("x\n")
    broken = _settings_key({"DEBUG": "0", "DATA_DIR": str(data)})
    assert broken.returncode != 0
    assert f"SECRET_KEY: {data / 'secret_key'}: not a usable secret key" in broken.stderr
