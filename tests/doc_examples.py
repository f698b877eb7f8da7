"""The runnable examples of the documentation, and a runner for them.

An example is a line `$ python manage.py …` in a fenced block whose info string is
`console` (a line ending in `\\` continues on the next). The lines after it, up to the
next `$` line, are output the command must print: each (whitespace collapsed) must be a
line of what it printed; a line ending in `…` need only begin one.

Run as a script (`python tests/doc_examples.py DOCS_DIR OUT.json`), from the folder the
examples' relative paths start from, it runs every page's examples with `manage.py`'s own
command line in one process, each page in a fresh copy of one migrated database, and
writes what each command printed and how it ended.
"""
import contextlib
import io
import json
import re
import shlex
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

PROMPT = "$ python manage.py "
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)")


@dataclass
class Example:
    page: str
    line: int
    argv: list[str]
    expected: list[str] = field(default_factory=list)


def examples(docs: Path) -> dict[str, list[Example]]:
    """Page (relative to DOCS) -> its examples, in page order."""
    found: dict[str, list[Example]] = {}
    for path in sorted(docs.rglob("*.md")):
        page = path.relative_to(docs).as_posix()
        lines = path.read_text(encoding="utf-8").split("\n")
        fence = None
        current = None
        i = 0
        while i < len(lines):
            line = lines[i]
            m = FENCE.match(line)
            if fence is None and m:
                fence = (m.group(2), m.group(3))
            elif fence is not None and line.strip().startswith(fence[0]):
                fence, current = None, None
            elif fence is not None and fence[1] == "console":
                text = line.strip()
                if text.startswith("$ "):
                    start = i
                    while text.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        text = text[:-1] + " " + lines[i].strip()
                    if not text.startswith(PROMPT):
                        raise ValueError(f"{page}, line {start + 1}: a console example must "
                                         f"start with `{PROMPT.strip()}`: {text}")
                    current = Example(page, start + 1, shlex.split(text[len(PROMPT):]))
                    found.setdefault(page, []).append(current)
                elif current is not None and text:
                    current.expected.append(text)
            i += 1
    return found


def collapse(text: str) -> str:
    return " ".join(text.split())


def missing_output(expected: list[str], printed: str) -> list[str]:
    lines = [collapse(line) for line in printed.split("\n")]
    missing = []
    for want in map(collapse, expected):
        if want.endswith("…"):
            ok = any(line.startswith(want[:-1].rstrip()) for line in lines)
        else:
            ok = want in lines
        if not ok:
            missing.append(want)
    return missing


def _run(argv: list[str]) -> dict:
    from django.core.management import ManagementUtility

    out, err = io.StringIO(), io.StringIO()
    status = 0
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ManagementUtility(["manage.py", *argv]).execute()
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except Exception as exc:  # noqa: BLE001 - reported to the test with the command
            status = 1
            err.write(f"{type(exc).__name__}: {exc}")
    return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "seconds": round(time.monotonic() - started, 2)}


def main(docs: str, report: str) -> None:
    repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(repo))
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections

    db = Path(settings.DATABASES["default"]["NAME"])
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        raise SystemExit("the documentation examples run on the embedded SQLite default only")
    migrated = _run(["migrate", "--noinput", "-v", "0"])
    print(f"migrate: {migrated['seconds']} s", file=sys.stderr)
    if migrated["status"] != 0:
        raise SystemExit(f"migrate failed: {migrated['stderr']}")
    connections.close_all()
    template = db.with_name("template.sqlite3")
    shutil.copyfile(db, template)
    results = []
    for page, page_examples in examples(Path(docs)).items():
        connections.close_all()
        shutil.copyfile(template, db)  # every page starts from a fresh database
        for example in page_examples:
            results.append({**asdict(example), **_run(example.argv)})
    connections.close_all()
    Path(report).write_text(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:])
