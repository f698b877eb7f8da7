"""The shape of the house: the apps follow the pipeline and each imports only apps before
it; no two files import each other, however indirectly; no module runs past 600 lines
unless it is one concept and says which.

Every module of the apps is read with ``ast`` (imports at module level and inside
functions alike: an import inside a function is not a way around the order); migrations
are left out, since they describe history rather than use the code.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["common", "jobs", "topics", "crowd", "retrieval", "pooling", "judging", "evaluation",
         "uploads", "projects"]

#: (importing file, imported module) -> why this import against the order is allowed.
#: Empty: keep it so.
ALLOWED_FORWARD: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of the apps by dotted name (a package by its ``__init__``)."""
    found = {}
    for app in ORDER:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.relative_to(ROOT).parts:
                continue
            found[_module_name(path)] = path
    return found


def _imports(name: str, path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import in the file; relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module, [a.name for a in node.names]))
    return out


def _app(module: str) -> str:
    return module.split(".")[0]


def test_the_apps_are_the_ten_in_pipeline_order():
    from django.conf import settings

    ours = [a for a in settings.INSTALLED_APPS if (ROOT / a / "apps.py").exists()]
    assert ours == ORDER


def test_no_app_imports_an_app_after_it():
    found, used = [], set()
    for name, path in _modules().items():
        src = _app(name)
        for line, module, _ in _imports(name, path):
            dst = _app(module)
            if dst in ORDER and ORDER.index(dst) > ORDER.index(src):
                key = (str(path.relative_to(ROOT)), module)
                if key in ALLOWED_FORWARD:
                    used.add(key)
                    continue
                found.append(f"{key[0]}:{line}: {src} imports {module} ({dst} comes after {src})")
    assert not found, "\n".join(found)
    assert used == set(ALLOWED_FORWARD), f"allowed but no longer needed: {set(ALLOWED_FORWARD) - used}"


def _graph() -> dict[str, set[str]]:
    """File -> files its imports run. Importing ``a.b.c`` runs ``a``, ``a.b`` and
    ``a.b.c``; ``from a.b import c`` runs ``a.b.c`` when it is a module. The packages
    a module sits in are left out of its own edges (they are already being imported when
    it runs), except when it names one of them: ``from pkg import x`` inside ``pkg`` runs
    (or finds half-run) ``pkg/__init__``, a cycle through the package's ``__init__``."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        own_packages = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        if path.name == "__init__.py":
            own_packages.discard(name)
        for _, module, names in _imports(name, path):
            # `from pkg import sub` runs pkg.sub (pkg as its package); a name that is not a
            # submodule is read from pkg itself
            subs = {f"{module}.{n}" for n in names if f"{module}.{n}" in modules}
            named = subs if names and len(subs) == len(names) else subs | {module}
            for target in named:
                if target not in modules:
                    continue
                graph[name].add(target)  # named: counts even when it is an own package
                parts = target.split(".")
                for i in range(1, len(parts)):
                    parent = ".".join(parts[:i])
                    if parent in modules and parent not in own_packages:
                        graph[name].add(parent)
            graph[name].discard(name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def test_cycle_finder_finds_a_cycle_through_a_package_init():
    graph = {"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p"}, "q": {"p"}}
    assert _cycles(graph) == [["p", "p.a", "p.b"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_files():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


MAX_LINES = 600
ONE_CONCEPT = "One concept:"


def test_no_module_is_longer_than_600_lines_unless_it_is_one_concept():
    """A long module mixes jobs: split it by job. A module that is one concept may be
    longer when its docstring's first line says which (``One concept: ...``)."""
    found = []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text, str(path))) or ""
        if not doc.lstrip().startswith(ONE_CONCEPT):
            found.append(f"{path.relative_to(ROOT)}: {lines} lines (at most {MAX_LINES}, or a "
                         f"docstring whose first line starts with {ONE_CONCEPT!r})")
    assert not found, "\n".join(found)
