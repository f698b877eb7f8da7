"""Write a pool's documents in priority order."""
import contextlib
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.fileio import OutputError, atomic_output
from common.manifest_command import ManifestMixin
from pooling import selectors


class Command(ManifestMixin, BaseCommand):
    help = (
        "Write every pooled document, topic by topic, in priority order. Formats: "
        "txt = 'topic docid weight min_rank users systems' (space separated); "
        "csv = the same columns with a header, for spreadsheets (a cell starting with =, +, "
        "-, @, tab or CR is prefixed with an apostrophe so it is not run as a formula); "
        "trec = a TREC run-format judging list 'topic Q0 docid priority weight pool', where "
        "priority is the 1-based judging order and weight the aggregate (RBP) weight. A file "
        "appears only once complete."
    )

    def add_arguments(self, parser):
        parser.add_argument("pool", help="pool id or name")
        parser.add_argument("--out", required=True, help="output file ('-' for standard output)")
        parser.add_argument("--format", default="txt", choices=["txt", "csv", "trec"])

    def handle(self, *args, **o):
        try:
            pool = selectors.pool_done_get(o["pool"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        to_stdout = o["out"] == "-"
        try:
            with contextlib.ExitStack() as stack:
                out = self.stdout if to_stdout else stack.enter_context(
                    atomic_output(Path(o["out"]), newline=""))
                n = selectors.pool_export_write(out, pool, o["format"])
        except (OutputError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write {o['out']}: {exc.strerror}") from None
        if not to_stdout:
            self.stderr.write(f"wrote {n} documents of pool {pool.label} to {o['out']}")
