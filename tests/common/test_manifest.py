"""common.manifest without Django: git revision from .git, argument lists, comparisons."""
import argparse
import json
import subprocess

import pytest

from common import manifest
from common.manifest_command import _argv


def test_git_revision_reads_head_loose_and_packed(tmp_path):
    assert manifest.git_revision(tmp_path) == "unknown"
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text("# pack-refs\n" + "a" * 40 + " refs/heads/main\n")
    assert manifest.git_revision(tmp_path) == "a" * 40
    (git / "refs" / "heads" / "main").write_text("b" * 40 + "\n")
    assert manifest.git_revision(tmp_path) == "b" * 40
    (git / "HEAD").write_text("c" * 40 + "\n")  # detached
    assert manifest.git_revision(tmp_path) == "c" * 40


def test_git_revision_equals_git_rev_parse(tmp_path):
    try:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-q", "--allow-empty", "-m", "x"], check=True)
        want = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not available")
    assert manifest.git_revision(tmp_path) == want


def test_argv_rebuilds_every_kind_of_option():
    p = argparse.ArgumentParser()
    p.add_argument("--name")
    p.add_argument("--flag", action="store_true")
    p.add_argument("--many", action="append", default=[])
    p.add_argument("--unset")
    sub = p.add_subparsers(dest="what")
    s = sub.add_parser("sizes")
    s.add_argument("pool")
    s.add_argument("--out")
    s.add_argument("--depths", nargs="+", type=int)
    argv = ["--name", "a b", "--flag", "--many", "x", "--many", "y",
            "sizes", "--depths", "1", "2", "--out", "o.csv", "P"]
    options = vars(p.parse_args(argv))
    rebuilt = _argv(p, options)
    assert vars(p.parse_args(rebuilt)) == options
    assert "--unset" not in rebuilt
    assert rebuilt[rebuilt.index("sizes"):] == ["sizes", "P", "--out", "o.csv", "--depths", "1", "2"]


def test_first_difference_names_the_line(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("1 x\n2 y\n3 z\n")
    b.write_text("1 x\n2 Y\n3 z\n")
    assert manifest.first_difference(a, b) == "line 2: '2 y' recorded, '2 Y' now"
    b.write_text("1 x\n2 y\n")
    assert manifest.first_difference(a, b) == "line 3: only the recorded output has it ('3 z')"


def test_compare_names_output_inputs_and_versions(tmp_path):
    out, inp, again = tmp_path / "out.txt", tmp_path / "in.txt", tmp_path / "again.txt"
    out.write_text("a\nb\n")
    inp.write_text("input\n")
    env = {"project_version": "r1", "python": "3.11", "anserini": "1", "java": "21",
           "libraries": {"numpy": "1"}}
    m = manifest.manifest_build(command="c", argv=["--in", str(inp), "--out", str(out)],
                                parameters={"seed": 3}, output_option="--out", output=str(out),
                                env=env)
    assert m["inputs"] == {str(inp): manifest.file_sha256(inp)} and m["seeds"] == {"seed": 3}
    path = manifest.manifest_write(m)
    assert path == tmp_path / "out.txt.manifest.json"
    assert json.loads(path.read_text())["output"]["sha256"] == manifest.file_sha256(out)
    assert manifest.argv_with_output(m, "/x") == ["--in", str(inp), "--out", "/x"]

    again.write_text("a\nb\n")
    assert manifest.manifest_compare(m, again, env) == []
    assert manifest.manifest_compare(m, again, dict(env, python="3.12")) == []  # same output

    inp.write_text("other\n")
    again.write_text("a\nc\n")
    problems = manifest.manifest_compare(m, again, dict(env, libraries={"numpy": "2"}))
    text = "\n".join(problems)
    assert "output sha256 differs" in text
    assert "line 2: 'b' recorded, 'c' now" in text
    assert f"input {inp} changed" in text
    assert "library numpy changed: 1 then, 2 now" in text


def test_manifest_read_rejects_other_files(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{")
    with pytest.raises(manifest.ManifestError, match="line 1: not JSON"):
        manifest.manifest_read(p)
    p.write_text("{}")
    with pytest.raises(manifest.ManifestError, match="not a manifest"):
        manifest.manifest_read(p)


def test_manifest_module_imports_no_django():
    import sys
    from pathlib import Path

    code = "import sys, common.manifest; assert 'django' not in sys.modules, 'django imported'"
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(manifest.__file__).resolve().parents[1],
                   env={"PATH": "/usr/bin:/bin"})
