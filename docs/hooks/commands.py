"""MkDocs hook: one reference page per management command, from its argument parser.

`command_reference.py` builds the parsers through Django in a process of its own, on the
embedded defaults (no DATABASE_URL, DEBUG on, a throw-away DATA_DIR): nothing is read
from a database and nothing is fetched. The pages appear under `reference/commands/` and
replace the nav entry "Command reference".
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.structure.files import File

NAV_TITLE = "Command reference"
FOLDER = "reference/commands"
_pages: dict[str, str] = {}


def _generate(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    with tempfile.TemporaryDirectory() as data_dir:
        env.update(DEBUG="1", DATA_DIR=data_dir, DJANGO_SETTINGS_MODULE="config.settings")
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("command_reference.py"))],
            cwd=root, env=env, capture_output=True, text=True,
        )
    if done.returncode != 0:
        raise RuntimeError(f"command reference: the parsers could not be built:\n{done.stderr}")
    return json.loads(done.stdout)


def _index(pages: dict[str, str]) -> str:
    lines = [
        f"# {NAV_TITLE}",
        "",
        "One page per management command, generated from the command's own argument parser "
        "each time the site is built. Run a command as `python manage.py NAME …` from the "
        "repository root (with `DEBUG=1`, or `SECRET_KEY` set).",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for name, page in pages.items():
        summary = page.split("\n\n", 2)[1].split(". ")[0].rstrip(".").replace("|", "\\|")
        lines.append(f"| [`{name}`]({name}.md) | {summary} |")
    return "\n".join(lines) + "\n"


def on_config(config):
    global _pages
    _pages = _generate(Path(config.config_file_path).resolve().parent)
    entries = [{"Commands": f"{FOLDER}/index.md"}] + [
        {name: f"{FOLDER}/{name}.md"} for name in _pages
    ]
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and NAV_TITLE in item:
            config.nav[i] = {NAV_TITLE: entries}
    return config


def on_files(files, config):
    files.append(File.generated(config, f"{FOLDER}/index.md", content=_index(_pages)))
    for name, page in _pages.items():
        files.append(File.generated(config, f"{FOLDER}/{name}.md", content=page))
    return files
