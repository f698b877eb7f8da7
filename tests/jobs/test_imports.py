"""`jobs` sits under every stage: the apps import it and register their kinds of job; it
never imports them (not even inside a function)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LATER_APPS = {"topics", "crowd", "retrieval", "pooling", "judging", "evaluation", "uploads",
              "projects"}


def test_jobs_imports_no_later_app():
    found = []
    for path in sorted((ROOT / "jobs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                      if n.split(".")[0] in LATER_APPS]
    assert not found, "\n".join(found)


def test_services_wake_work_through_the_registry_not_their_tasks():
    """No services module imports its app's tasks (the services <-> tasks circles)."""
    found = []
    for path in sorted(ROOT.glob("*/services*.py")) + sorted(ROOT.glob("*/services/*.py")):
        text = path.read_text()
        if "from .tasks import" in text or "from . import tasks" in text:
            found.append(str(path.relative_to(ROOT)))
    assert not found, found
