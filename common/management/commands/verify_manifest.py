"""python manage.py verify_manifest OUT.manifest.json"""
import contextlib
import io
import tempfile
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from common import manifest
from common.manifest_command import java_home


class Command(BaseCommand):
    help = (
        "Recompute an export from the stored data: run the manifest's command again with "
        "the same parameters into a temporary file and compare sha256s. Exits 0 only when "
        "the output is reproduced; otherwise names what differs (the first differing line, "
        "changed input files, changed versions)."
    )

    def add_arguments(self, parser):
        parser.add_argument("manifest", help="an OUT.manifest.json written with --manifest")

    def handle(self, *args, **o):
        from django.conf import settings

        try:
            m = manifest.manifest_read(o["manifest"])
        except manifest.ManifestError as exc:
            raise CommandError(str(exc)) from None
        with tempfile.TemporaryDirectory(prefix="verify-") as tmp:
            recomputed = Path(tmp) / Path(m["output"]["path"]).name
            # relative paths in the arguments are relative to where the export ran
            where = Path(m.get("working_directory") or ".")
            try:
                argv = manifest.argv_with_output(m, str(recomputed))
                with contextlib.chdir(where if where.is_dir() else "."):
                    call_command(m["command"], *argv, stdout=io.StringIO(),
                                 stderr=io.StringIO())
            except (manifest.ManifestError, CommandError) as exc:
                raise CommandError(f"cannot recompute {m['output']['path']} with "
                                   f"{m['command']}: {exc}") from None
            env = manifest.environment(root=settings.BASE_DIR, java_home=java_home())
            problems = manifest.manifest_compare(m, recomputed, env)
        if problems:
            raise CommandError(f"{m['output']['path']} is not reproduced by "
                               f"{m['command']} {' '.join(m['argv'])}:\n  "
                               + "\n  ".join(problems))
        self.stdout.write(f"OK: {m['command']} reproduces {m['output']['path']} "
                          f"(sha256 {m['output']['sha256']})")
