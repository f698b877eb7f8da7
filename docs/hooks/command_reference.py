"""Render a reference page for each of the project's management commands.

Run as a script from the repository root, it sets Django up on the embedded defaults,
builds each command's own argument parser and prints a JSON object
`{command name: Markdown page}`. The MkDocs hook beside it (`commands.py`) runs it in a
process of its own, so the pages are always what `manage.py COMMAND --help` says.
"""
import argparse
import html
import json
import os
import sys
from pathlib import Path

# Options every Django command has; the pages say so once instead of listing them.
DJANGO_COMMON = {
    "help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color",
    "force_color", "skip_checks",
}


def project_commands() -> dict[str, str]:
    """Command name -> app name, for the commands of this project's own apps."""
    from django.apps import apps
    from django.core.management import get_commands

    root = Path(__file__).resolve().parents[2]
    ours = {
        config.name
        for config in apps.get_app_configs()
        if Path(config.path).resolve().parent == root
    }
    return {name: app for name, app in sorted(get_commands().items()) if app in ours}


def _escape(text: str) -> str:
    """Plain help text as Markdown that shows it as written, in a table cell or not."""
    text = html.escape(text, quote=False)
    for char in "\\`*_[]|":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def _cell(markdown: str) -> str:
    """Markdown (code spans included) inside a table cell."""
    return markdown.replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    if action.default in (None, argparse.SUPPRESS, False) or isinstance(
        action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction)
    ):
        return ""
    if action.default == [] or action.default == "":
        return ""
    return f"`{action.default}`"


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = ""
    if action.nargs != 0:
        metavar = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper()
        )
        if isinstance(metavar, tuple):
            metavar = " ".join(metavar)
    return ", ".join(f"`{o}{' ' + str(metavar) if metavar else ''}`" for o in action.option_strings)


def render(name: str, app: str) -> str:
    from django.core.management import load_command_class

    command = load_command_class(app, name)
    parser = command.create_parser("manage.py", name)
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=88)
    own = [a for a in parser._actions if a.dest not in DJANGO_COMMON]
    formatter = argparse.HelpFormatter(f"python manage.py {name}", width=88)
    formatter.add_usage(None, own, parser._mutually_exclusive_groups, prefix="")
    usage = formatter.format_help().strip()
    lines = [
        f"# {name}",
        "",
        _escape(command.help or "").strip() or f"The `{name}` command.",
        "",
        f"Defined in `{app}/management/commands/{name}.py`. This page is generated from the "
        "command's own argument parser: it says what `python manage.py "
        f"{name} --help` says.",
        "",
        "## Usage",
        "",
        "```text",
        usage,
        "```",
        "",
    ]
    positional = [a for a in own if not a.option_strings]
    optional = [a for a in own if a.option_strings]
    for title, actions in (("Arguments", positional), ("Options", optional)):
        if not actions:
            continue
        lines += [f"## {title}", "", "| argument | choices | default | meaning |", "|---|---|---|---|"]
        for action in actions:
            choices = ", ".join(f"`{c}`" for c in action.choices) if action.choices else ""
            choices = _cell(choices)
            helptext = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
            if "%(" in helptext:
                helptext = helptext % {**vars(action), "prog": parser.prog}
            if action.required and action.option_strings:
                helptext = (helptext + " (required)").strip()
            lines.append(
                f"| {_cell(_names(action))} | {choices} | {_cell(_default(action))} "
                f"| {_escape(helptext)} |"
            )
        lines.append("")
    groups = [g for g in parser._mutually_exclusive_groups if g._group_actions]
    if groups:
        lines += ["## Mutually exclusive", ""]
        for group in groups:
            names = " / ".join(
                f"`{a.option_strings[0] if a.option_strings else a.dest}`" for a in group._group_actions
            )
            lines.append(f"- {'exactly one' if group.required else 'at most one'} of {names}")
        lines.append("")
    lines += [
        "Every command also takes Django's common options (`--help`, `--version`, "
        "`--verbosity`, `--settings`, `--pythonpath`, `--traceback`, `--no-color`, "
        "`--force-color`, `--skip-checks`).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    pages = {name: render(name, app) for name, app in project_commands().items()}
    json.dump(pages, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
