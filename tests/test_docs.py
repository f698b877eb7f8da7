"""The documentation site builds offline without warnings, holds what the README held,
and its command examples run."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.doc_examples import examples, missing_output

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# Every section the README had before the guide moved to the site; each must stay a
# heading of some page.
MOVED_SECTIONS = [
    "Try it: the demo", "Two commands", "Using it", "Collections, topics, runs (retrieval)",
    "Crowd: topics, statements, variants, studies", "Pools, overlap, coverage", "Judging",
    "Judging pages", "Evaluating runs", "User query variability in effectiveness",
    "Evaluation pages (`/evaluation/`, staff)", "Figures", "Assessor agreement",
    "Intent properties (Radlinski, Szummer & Craswell 2010)", "Comparing system orderings",
    "Variance components and the query/intent allocation",
    "Pseudo-qrels from subtopic strings (Sakai et al. 2013)",
    "Running a project in the browser", "API for scripts", "Bad input",
    "Recovery: work never stalls", "Scaling: many workers on many machines",
    "Scaling across machines", "Reproducibility", "Releasing a collection",
    "Roles: who may see what", "Crowd studies: identity and safety", "Benchmarks",
    "Configuration (environment)", "Java and Anserini",
]


def _headings() -> set[str]:
    found = set()
    for path in DOCS.rglob("*.md"):
        in_code = False
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.lstrip().startswith(("```", "~~~")):
                in_code = not in_code
            elif not in_code and (m := re.match(r"#{1,6} (.+)", line)):
                found.add(m.group(1).strip())
    return found


def test_every_readme_section_is_a_heading_of_the_docs():
    missing = [title for title in MOVED_SECTIONS if title not in _headings()]
    assert not missing, f"sections missing from docs/: {missing}"


def test_the_site_builds_strictly_and_fetches_nothing(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (bin/setup installs them "
                    "from requirements-dev.txt)")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["NO_MKDOCS_2_WARNING"] = "1"
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # a reference page per command, listing every option its parser has
    from django.core.management import get_commands, load_command_class

    commands = {p.stem: p.parts[-4] for p in
                (q.relative_to(ROOT) for q in ROOT.glob("*/management/commands/[a-z]*.py"))}
    assert len(commands) > 20 and all(get_commands().get(n) == a for n, a in commands.items())
    for name, app in commands.items():
        page = (site / "reference" / "commands" / f"{name}.html").read_text(encoding="utf-8")
        assert f"python manage.py {name}" in page, name
        parser = load_command_class(app, name).create_parser("manage.py", name)
        for action in parser._actions:
            if action.option_strings:
                assert action.option_strings[-1] in page, (name, action.option_strings)
    evaluate = (site / "reference" / "commands" / "evaluate.html").read_text(encoding="utf-8")
    assert "--measures MEASURES" in evaluate and "trec_eval -c" in evaluate
    assert "--verbosity" not in evaluate.split("Every command also takes")[0]
    # nothing a browser would load from elsewhere: fonts, styles and scripts are the site's
    remote = re.compile(r"<(?:link|script|img)[^>]+(?:href|src)=\"(?:https?:)?//", re.I)
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert not remote.search(text), f"{html.relative_to(site)} loads a remote resource"
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text


def test_console_examples_are_marked_right():
    found = examples(DOCS)
    assert sum(len(v) for v in found.values()) >= 10, found.keys()
    for page_examples in found.values():
        for example in page_examples:
            assert example.argv and not any(
                token in ("|", ">", "<", "&&", ";") for token in example.argv
            ), f"{example.page}, line {example.line}: no shell in a runnable example"


def test_the_console_examples_run(tmp_path, shared_data):
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    data.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)  # the docs say ../shared/data
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DEBUG="1", DATA_DIR=str(data), INDEX_ROOT=str(data / "indexes"),
               DJANGO_SETTINGS_MODULE="config.settings")
    report = tmp_path / "report.json"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "doc_examples.py"), str(DOCS), str(report)],
        cwd=work, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(report.read_text())
    assert len(results) == sum(len(v) for v in examples(DOCS).values())
    failures = []
    for r in results:
        where = f"{r['page']}, line {r['line']}: manage.py {' '.join(r['argv'])}"
        if r["status"] != 0:
            failures.append(f"{where}\n  exit {r['status']}: {r['stderr'][-1500:]}")
        elif missing := missing_output(r["expected"], r["stdout"] + r["stderr"]):
            failures.append(f"{where}\n  did not print: {missing}\n  printed:\n{r['stdout'][-1500:]}")
    assert not failures, "\n".join(failures)
    print(f"{len(results)} documented commands ran in {time.monotonic() - started:.1f} s")


def test_the_readme_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) >= 10
    assert not [link for link in links if not (ROOT / link).is_file()]
