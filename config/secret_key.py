"""The secret key kept in a file: read it, or create it once (settings.SECRET_KEY).

`bin/serve` runs with DEBUG off and no SECRET_KEY in the environment: the first of its
processes to start writes a new random key to ``DATA_DIR/secret_key`` (readable by its
owner only) and every process after it, then and on every later start, reads the same
key. Sessions, password-reset links and release pseudonyms therefore survive a restart.
Two processes starting at once cannot write two keys: the file appears whole through one
``link``, which fails for the second, and the second reads the first one's key.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

MIN_LENGTH = 50  # what Django's `check --deploy` asks of a key (security.W009)


def secret_key_load(path: Path, *, create: bool) -> str:
    """The key in ``path``; when the file is absent, a new one written there if ``create``
    is true, else the empty string. A file that holds no usable key is an error naming it."""
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            return ""
    key = secrets.token_urlsafe(64)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if another process created it first
        except FileExistsError:
            return _read(path)
    finally:
        tmp.unlink(missing_ok=True)
    return key


def _read(path: Path) -> str:
    key = path.read_text(encoding="ascii", errors="replace").strip()
    if len(key) < MIN_LENGTH or any(c.isspace() for c in key):
        raise ValueError(
            f"{path}: not a usable secret key (one line of at least {MIN_LENGTH} characters, "
            "no spaces); delete the file to have a new one made (signed-in users are signed "
            "out, and release pseudonyms change unless RELEASE_PSEUDONYM_SALT is set)")
    return key
