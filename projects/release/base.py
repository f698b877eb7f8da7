"""The release's vocabulary: its format, licences, pseudonyms, canonical JSON and file
names, and the check of the records it is made from. Plain Python; no Django."""
from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from typing import Iterable

FORMAT = "ir-test-collection-release/1"
MANIFEST = "MANIFEST.sha256"
AGGREGATION = "majority"
NO_INTENT = ""
PSEUDONYM_RE = re.compile(r"^anon-[0-9a-f]{16}$")
ORGANISER = "[ORGANISER: to complete]"

# The licences offered at export: SPDX id -> (name, address). Only their names and
# addresses go into a release, never their texts.
LICENCES = {
    "CC-BY-4.0": ("Creative Commons Attribution 4.0 International",
                  "https://creativecommons.org/licenses/by/4.0/"),
    "CC-BY-SA-4.0": ("Creative Commons Attribution Share Alike 4.0 International",
                     "https://creativecommons.org/licenses/by-sa/4.0/"),
    "CC-BY-NC-4.0": ("Creative Commons Attribution Non Commercial 4.0 International",
                     "https://creativecommons.org/licenses/by-nc/4.0/"),
    "CC-BY-NC-SA-4.0": ("Creative Commons Attribution Non Commercial Share Alike 4.0 "
                        "International", "https://creativecommons.org/licenses/by-nc-sa/4.0/"),
    "CC0-1.0": ("Creative Commons Zero v1.0 Universal",
                "https://creativecommons.org/publicdomain/zero/1.0/"),
    "ODC-By-1.0": ("Open Data Commons Attribution License v1.0",
                   "https://opendatacommons.org/licenses/by/1-0/"),
    "ODbL-1.0": ("Open Data Commons Open Database License v1.0",
                 "https://opendatacommons.org/licenses/odbl/1-0/"),
    "PDDL-1.0": ("Open Data Commons Public Domain Dedication & License 1.0",
                 "https://opendatacommons.org/licenses/pddl/1-0/"),
    "CDLA-Permissive-2.0": ("Community Data License Agreement Permissive 2.0",
                            "https://cdla.dev/permissive-2-0/"),
}


class ReleaseError(ValueError):
    """A release that cannot be written or read; the message names the file (and line)."""


# --- pseudonyms ------------------------------------------------------------------------------


def pseudonym(worker_id: str, salt: bytes) -> str:
    """``anon-`` + 16 hex digits of HMAC-SHA256(salt, id); a pseudonym stays as it is;
    the empty id stays empty."""
    if not worker_id or PSEUDONYM_RE.match(worker_id):
        return worker_id
    return "anon-" + hmac.new(salt, worker_id.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def licence_get(spdx: str) -> dict:
    """``{"spdx", "name", "url"}`` of an offered licence; ReleaseError listing them."""
    for key, (name, url) in LICENCES.items():
        if key.casefold() == str(spdx).casefold():
            return {"spdx": key, "name": name, "url": url}
    raise ReleaseError(f"unknown licence {spdx!r}: choose one of {', '.join(LICENCES)}")


# --- natural order (as common.naturalsort, without Django) ------------------------------------


def _natural(text: str):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p]


# --- JSON and file names -------------------------------------------------------------------


def _plain(value):
    """JSON for numpy scalars and arrays, tuples and sets (sorted)."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _clean_floats(value):
    """NaN and infinities as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_floats(v) for v in value]
    return value


def dumps(value) -> str:
    """Canonical JSON: sorted keys, UTF-8 text, two-space indent, a final newline."""
    plain = json.loads(json.dumps(value, default=_plain))
    return json.dumps(_clean_floats(plain), ensure_ascii=False, sort_keys=True, indent=2,
                      allow_nan=False) + "\n"


def _jsonl(rows: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n"
                   for r in rows)


def _file_name(name: str, what: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith("."):
        raise ReleaseError(f"{what} name {name!r} cannot be a file name")
    return name


def safe_name(name: str) -> str:
    """``name`` with every character but letters, digits, ``.``, ``_`` and ``-`` as ``_``
    (no leading dot): a file name on every system."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "_"


def run_qid(run: dict, query: dict) -> str:
    return f"{query['topic_id']}:{query['label']}" if run["source"] == "variants" \
        else query["topic_id"]


def records_check(rec: dict) -> None:
    """ReleaseError naming a missing part of the records."""
    for key in ("topic_set", "topics", "variants", "studies", "collections", "models",
                "runs", "pools", "judgment_sets"):
        if key not in rec:
            raise ReleaseError(f"release records lack {key!r}")
